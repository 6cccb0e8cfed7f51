// Sweeps (engine/sweep): the spec's validation, a run's scene and seed, its measures against closed forms,
// and the table's independence of the order and the number of workers.
#include "../TempDir.h"
#include "engine/gaussian/Cone.h"
#include "engine/io/OutputSet.h"
#include "engine/sweep/SweepRunner.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <set>

using namespace flowscope;

namespace {

// A tiny particle sweep: 2 x 3 cells, 2 replicates.
const char* kParticles = R"({
  "name": "tiny",
  "base": {"d": 2, "n": 12,
           "initial": {"kind": "gaussian", "mean": [0, 0], "cov": [[1, 0], [0, 1]]},
           "attention": {"type": "softmax", "beta": 1, "heads": [{"Q": 1, "K": 1, "V": [[1, 0.2], [0, 1]]}]},
           "integrator": {"method": "rk4", "T": 2, "steps": 10}, "output": {"every": 2, "cluster_tol": 0.05}},
  "axes": [{"pointer": "/attention/beta", "values": [0.5, 2]},
           {"name": "v", "pointer": "/attention/heads/0/V", "scale": true, "range": {"lin": [-1, 1, 3]}}],
  "measures": ["clusters", "rank", {"time_to_clusters": 3}, "divergence_time", "energy", "entropy"],
  "replicates": 2
})";

SweepSpec spec(const std::string& text) {
    return sweepFromJson(text, ".", FLOWSCOPE_PRESET_DIR);
}

// The spec text with `key`'s value replaced (one top-level key of kParticles).
std::string withKey(const std::string& key, const std::string& value) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(kParticles);
    j[key] = nlohmann::ordered_json::parse(value);
    return j.dump();
}

void expectSweepError(const std::string& text, const std::string& pointer, const std::string& fragment) {
    try {
        SweepSpec s = spec(text);
        (void)checkSweep(s);
        FAIL() << "accepted: " << text;
    } catch (const SweepError& e) {
        EXPECT_EQ(e.pointer, pointer) << e.what();
        EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
}

std::vector<std::vector<double>> tableOf(const SweepSpec& s, int threads, bool dynamic) {
    SweepQueue queue(pendingRuns(s, {}), threads, dynamic);
    std::map<long, SweepJournalEntry> done;
    runSweepThreads(s, queue, threads, 0, {}, [&](const SweepJournalEntry& e) { done[e.run] = e; });
    std::vector<std::vector<double>> rows;
    for (const auto& [run, e] : done) rows.push_back(sweepRow(s, run, e.result));
    return rows;
}

// Exact equality with NaN equal to NaN.
bool sameRows(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t r = 0; r < a.size(); ++r) {
        if (a[r].size() != b[r].size()) return false;
        for (std::size_t c = 0; c < a[r].size(); ++c)
            if (!(a[r][c] == b[r][c] || (std::isnan(a[r][c]) && std::isnan(b[r][c])))) return false;
    }
    return true;
}

} // namespace

TEST(Sweep, CellsRunsColumnsAndTheFirstAxisVariesSlowest) {
    const SweepSpec s = spec(kParticles);
    EXPECT_EQ(s.cells(), 6);
    EXPECT_EQ(s.runs(), 12);
    EXPECT_EQ(s.columns(), (std::vector<std::string>{"run", "cell", "replicate", "seed", "valid", "beta", "v",
                                                     "clusters", "rank", "time_to_clusters_3",
                                                     "divergence_time", "energy", "entropy"}));
    const SweepPoint p = sweepPoint(s, 7); // cell 3 = (beta index 1, v index 0), replicate 1
    EXPECT_EQ(p.cell, 3);
    EXPECT_EQ(p.replicate, 1);
    EXPECT_EQ(p.values, (std::vector<double>{2, -1}));
}

TEST(Sweep, ARunsSceneIsTheBaseWithTheAxesApplied) {
    const SweepSpec s = spec(kParticles);
    const Scene scene = sweepScene(s, 7);
    EXPECT_EQ(scene.attention.beta, 2);
    const Mat V = (Mat(2, 2) << -1, -0.2, 0, -1).finished(); // the base V scaled by -1
    EXPECT_EQ(scene.attention.heads[0].V, V);
    EXPECT_EQ(scene.initial.seed, sweepPoint(s, 7).seed);
}

TEST(Sweep, SeedsAreDerivedFromTheCellExactAsDoublesAndDistinct) {
    const SweepSpec s = spec(kParticles);
    std::set<std::uint64_t> seeds;
    for (long r = 0; r < s.runs(); ++r) {
        const std::uint64_t seed = sweepPoint(s, r).seed;
        EXPECT_LT(seed, std::uint64_t(1) << 53);
        EXPECT_EQ(seed, sweepPoint(s, r).seed);
        seeds.insert(seed);
    }
    EXPECT_EQ(seeds.size(), std::size_t(s.runs()));
    EXPECT_NE(sweepPoint(spec(withKey("seed", "2")), 0).seed, sweepPoint(s, 0).seed);
}

TEST(Sweep, TheTableIsTheSameOnAnyNumberOfWorkersAndEitherHandOut) {
    const SweepSpec s = spec(kParticles);
    const auto serial = tableOf(s, 1, true);
    ASSERT_EQ(serial.size(), 12u);
    EXPECT_TRUE(sameRows(serial, tableOf(s, 3, true)));
    EXPECT_TRUE(sameRows(serial, tableOf(s, 2, false)));
    // The measures are those of the run's scene: the final cluster count is at most n, rank at most d.
    for (const auto& row : serial) {
        EXPECT_GE(row[7], 1);
        EXPECT_LE(row[7], 12);
        EXPECT_LE(row[8], 2);
        EXPECT_TRUE(std::isnan(row[10])); // no divergence
    }
}

TEST(Sweep, StaticHandOutGivesWorkerWEveryWthPendingRun) {
    SweepQueue q({0, 1, 2, 3, 4}, 2, false);
    EXPECT_EQ(q.next(1), 1);
    EXPECT_EQ(q.next(1), 3);
    EXPECT_EQ(q.next(1), std::nullopt);
    EXPECT_EQ(q.next(0), 0);
    SweepQueue d({5, 6}, 2, true);
    EXPECT_EQ(d.next(1), 5);
    EXPECT_EQ(d.next(1), 6);
    EXPECT_EQ(d.next(0), std::nullopt);
}

// An MPI rank's chunks: guided (⌈left / 2W⌉, at most `most`), shrinking to single runs at the end, every
// pending run handed out exactly once, in order; static chunks keep each worker's own runs.
TEST(Sweep, ChunksAreGuidedAndHandOutEveryRunOnce) {
    std::vector<long> pending(100);
    for (long r = 0; r < 100; ++r) pending[std::size_t(r)] = 3 * r;
    SweepQueue q(pending, 2, true);
    std::vector<std::size_t> sizes;
    std::vector<long> seen;
    for (int w = 0;; w = 1 - w) {
        const std::vector<long> chunk = q.take(w, 20);
        if (chunk.empty()) break;
        sizes.push_back(chunk.size());
        seen.insert(seen.end(), chunk.begin(), chunk.end());
    }
    EXPECT_EQ(seen, pending);
    ASSERT_GE(sizes.size(), 3u);
    EXPECT_EQ(sizes[0], 20u); // ⌈100 / 4⌉ = 25, capped
    EXPECT_EQ(sizes[1], 20u); // ⌈80 / 4⌉
    EXPECT_EQ(sizes[2], 15u); // ⌈60 / 4⌉
    EXPECT_EQ(sizes.back(), 1u);
    EXPECT_TRUE(std::is_sorted(sizes.rbegin(), sizes.rend()));
    SweepQueue s({0, 1, 2, 3, 4, 5, 6}, 2, false);
    EXPECT_EQ(s.take(1, 2), (std::vector<long>{1, 3}));
    EXPECT_EQ(s.take(1, 2), (std::vector<long>{5}));
    EXPECT_TRUE(s.take(1, 2).empty());
    EXPECT_EQ(s.take(0, 8), (std::vector<long>{0, 2, 4, 6}));
    s.stop();
    EXPECT_TRUE(q.take(0, 4).empty());
}

TEST(Sweep, MalformedSpecsNameTheField) {
    expectSweepError(withKey("axs", "[]"), "/axs", "did you mean \"axes\"");
    expectSweepError(withKey("measures", "[\"clusterz\"]"), "/measures/0", "did you mean \"clusters\"");
    expectSweepError(withKey("measures", "[\"t_max\"]"), "/measures/0", "Gaussian mode");
    expectSweepError(withKey("replicates", "0"), "/replicates", "expected");
    expectSweepError(withKey("base", "\"sphere-clusterin\""), "/base", "did you mean \"sphere-clustering\"");
    expectSweepError(withKey("base", "{\"d\": 2, \"n\": -3}"), "/base/n", "expected");
    expectSweepError(withKey("axes", R"([{"pointer": "/attention/beta", "values": [1, -1]}])"),
                     "/axes/0/values/1", "/attention/beta: expected number > 0");
    expectSweepError(withKey("axes", R"([{"pointer": "attention/beta", "values": [1]}])"), "/axes/0/pointer",
                     "JSON pointer");
    expectSweepError(withKey("axes", R"([{"pointer": "/attention/beta", "range": {"log": [0, 1, 3]}}])"),
                     "/axes/0/range/log", "from > 0");
    expectSweepError(
        withKey("axes", R"([{"pointer": "/n", "values": [4]}, {"pointer": "/n", "values": [5]}])"), "/axes",
        "two columns are named \"n\"");
    expectSweepError(
        withKey("axes", R"([{"pointer": "/attention/heads/3/V", "scale": true, "values": [2]}])"),
        "/axes/0/values", "scales /attention/heads/3/V, which the scene does not have");
    expectSweepError(withKey("axes", R"([{"pointer": "/attention/type", "scale": true, "values": [2]}])"),
                     "/axes/0/values", "scales /attention/type, which holds no number");
}

TEST(Sweep, ACombinationOfValidValuesThatIsInvalidNamesTheCell) {
    // d = 3 alone is fine with the base's V = 1 (a number: 1 I); a 2 x 2 V is not.
    const std::string text =
        R"({"base": {"d": 2, "n": 8, "attention": {"type": "softmax", "heads": [{"V": 1}]}},
      "axes": [{"pointer": "/d", "values": [2, 3]},
               {"pointer": "/attention/heads/0/V", "values": [1, 2]}],
      "measures": ["rank"]})";
    EXPECT_NO_THROW(checkSweep(spec(text)));
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(text);
    j["axes"][1] = nlohmann::ordered_json::parse(R"({"name": "v01", "pointer": "/attention/heads/0/V",
        "values": [[[1, 0], [0, 1]]]})");
    // Values are numbers: a matrix is no value.
    expectSweepError(j.dump(), "/axes/1/values/0", "expected number");
}

TEST(Sweep, DrawsGiveTheFig4Matrices) {
    const std::string text =
        R"({"mode": "moments", "base": {"d": 5, "n": 2, "attention": {"type": "softmax", "heads": [{}]},
        "initial": {"kind": "gaussian", "mean": 0, "cov": 1}},
      "draws": [{"kind": "normal", "rows": "d/2", "targets": [{"pointer": "/attention/heads/0/Q", "over_sqrt_d": true},
                                                             {"pointer": "/attention/heads/0/K", "scale": -1}]},
                {"kind": "gram", "targets": [{"pointer": "/initial/cov"}]}],
      "measures": ["rank"], "replicates": 3})";
    const SweepSpec s = spec(text);
    const Scene a = sweepScene(s, 0), b = sweepScene(s, 1);
    ASSERT_EQ(a.attention.heads[0].Q.rows(), 2);
    ASSERT_EQ(a.attention.heads[0].Q.cols(), 5);
    EXPECT_TRUE(a.attention.heads[0].K.isApprox(-std::sqrt(5.0) * a.attention.heads[0].Q, 1e-14));
    EXPECT_FALSE(a.attention.heads[0].Q.isApprox(b.attention.heads[0].Q));
    EXPECT_GT(spectrum(a.initial.cov).minCoeff(), 0);
    EXPECT_EQ(a.initial.cov, sweepScene(s, 0).initial.cov); // a pure function of the run
}

TEST(Sweep, TMaxOverTheDiscMatchesProp2) {
    // Q = K = I, V = 0.1 I: B = 0.2 I commutes with every Sigma0, so Prop 2 holds: on the trace-1 disc
    // point (x, y), t_max = 1 / (0.2 lambda_max) with lambda_max = (1 + r)/2, r = |(x, y)|.
    const std::string text = R"({"mode": "moments", "base": "cone-fig1b-blowup", "skip_invalid": true,
      "axes": [{"pointer": ["/moments/grid/limits/0", "/moments/grid/limits/1"], "name": "x", "range": {"lin": [-0.9, 0.9, 4]}},
               {"pointer": ["/moments/grid/limits/2", "/moments/grid/limits/3"], "name": "y", "range": {"lin": [-0.9, 0.9, 4]}}],
      "measures": ["t_max", "prop2_t_max", "prop2_blow_up", "outcomes"]})";
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(text);
    j["base"] = nlohmann::ordered_json::parse(
        std::string(R"({"d": 2, "n": 2, "initial": {"kind": "gaussian", "mean": 0, "cov": 1},
      "attention": {"type": "softmax", "heads": [{"Q": 1, "K": 1, "V": 0.1}]},
      "integrator": {"method": "rk4", "T": 20, "steps": 20, "rtol": 1e-10, "atol": 1e-12},
      "moments": {"tol_high": 1000, "grid": {"nu": 1, "nc": 1, "limits": [0, 0, 0, 0]}}})"));
    const SweepSpec s = spec(j.dump());
    const SweepCheck check = checkSweep(s);
    EXPECT_EQ(check.invalid, 4); // the corners (|x| = |y| = 0.9) lie outside the disc
    int valid = 0;
    for (long r = 0; r < s.runs(); ++r) {
        const SweepPoint p = sweepPoint(s, r);
        const SweepRunResult res = runSweepRun(s, r);
        const bool inside = insideTraceOneDisc(p.values[0], p.values[1]);
        EXPECT_EQ(res.valid, inside);
        if (!inside) continue;
        ++valid;
        const double exact = 1 / (0.1 * (1 + std::hypot(p.values[0], p.values[1])));
        EXPECT_NEAR(res.measures[0], exact, 1e-6 * exact);
        EXPECT_NEAR(res.measures[1], exact, 1e-12 * exact);
        EXPECT_EQ(res.measures[2], 1);
        EXPECT_EQ(res.measures[3 + 1], 1); // one trajectory, blown up
    }
    EXPECT_EQ(valid, 12);
}

TEST(Sweep, JournalLinesRoundTripExactlyAndATornLineIsCutOff) {
    flowscope::test::TempDir dir;
    const SweepSpec s = spec(kParticles);
    SweepJournalEntry e;
    e.run = 5;
    e.result.measures = {1.0 / 3.0, std::nan(""), -std::numeric_limits<double>::infinity(), 4, 1e-300, 7};
    e.seconds = 0.5;
    const SweepJournalEntry back = parseSweepJournalLine(sweepJournalLine(e), 6);
    EXPECT_EQ(back.run, 5);
    EXPECT_EQ(back.result.measures[0], 1.0 / 3.0);
    EXPECT_TRUE(std::isnan(back.result.measures[1]));
    EXPECT_EQ(back.result.measures[2], e.result.measures[2]);
    EXPECT_EQ(back.result.measures[4], 1e-300);
    // The checksum: any changed character, or a line without one, is refused (the run is done again).
    const std::string line = sweepJournalLine(e);
    for (std::size_t at = 0; at < line.size(); ++at) {
        const char c = line[at];
        if (c < '0' || c > '9') continue;
        std::string changed = line;
        changed[at] = c == '9' ? '0' : char(c + 1);
        EXPECT_ANY_THROW(parseSweepJournalLine(changed, 6)) << changed;
    }
    EXPECT_ANY_THROW(parseSweepJournalLine(R"({"run": 5, "valid": 1, "measures": [1, 2, 3, 4, 5, 6]})", 6));

    prepareSweepDir(dir.str(), s);
    {
        SweepJournal j(dir.str(), "all", s);
        j.append(e);
        EXPECT_THROW(SweepJournal(dir.str(), "all", s), OutputError); // locked by j
    }
    const std::string path = dir.file("journal/all.jsonl");
    std::ofstream(path, std::ios::app) << "{\"run\": 6, \"valid\": 1, \"meas"; // killed mid-line
    std::vector<std::string> damaged;
    EXPECT_EQ(readSweepJournals(dir.str(), s, &damaged).size(), 1u);
    EXPECT_TRUE(damaged.empty()); // a torn last line is not damage: the opener cuts it
    {
        SweepJournal j(dir.str(), "all", s); // cuts the torn line
        e.run = 7;
        j.append(e);
    }
    const auto entries = readSweepJournals(dir.str(), s);
    ASSERT_EQ(entries.size(), 2u);
    EXPECT_TRUE(entries.count(5) && entries.count(7));
    // A journal of another spec is refused.
    EXPECT_THROW(readSweepJournals(dir.str(), spec(withKey("seed", "9"))), OutputError);
    EXPECT_THROW(prepareSweepDir(dir.str(), spec(withKey("seed", "9"))), OutputError);
    // A line that names no run of the spec is damage, named with its file and line.
    e.run = 1000000;
    std::ofstream(path, std::ios::app) << sweepJournalLine(e);
    EXPECT_EQ(readSweepJournals(dir.str(), s, &damaged).size(), 2u);
    ASSERT_EQ(damaged.size(), 1u);
    EXPECT_NE(damaged[0].find("all.jsonl line 4 names run 1000000"), std::string::npos) << damaged[0];
}

// The shipped metastable-beta sweep (docs/math/theory.md#metastability): the first merge comes at about the
// same time for every beta (t <= 20), and the last plateau, the two clusters' lifetime log(t_1 / t_2) in log
// t, grows linearly in beta: strictly increasing, with increments within a factor 2 of each other from
// beta = 16 on (measured: 0.48, 1.67, 3.12, 4.48, 6.09 at beta = 12 ... 28). The energy climbs at least one
// plateau in every run, and every run ends in one cluster.
TEST(Sweep, MetastablePlateausLengthenLinearlyInBeta) {
    const SweepSpec s =
        loadSweep(std::string(FLOWSCOPE_SWEEP_DIR) + "/metastable-beta.json", FLOWSCOPE_PRESET_DIR);
    const std::vector<std::string> columns = s.columns();
    const auto column = [&](const std::string& name) {
        return std::size_t(std::find(columns.begin(), columns.end(), name) - columns.begin());
    };
    const std::size_t beta = column("beta"), t2 = column("time_to_clusters_2"),
                      t1 = column("time_to_clusters_1"), plateaus = column("plateaus"),
                      clusters = column("clusters");
    ASSERT_LT(clusters, columns.size());
    const std::vector<std::vector<double>> rows = tableOf(s, 2, true);
    ASSERT_EQ(rows.size(), 5u);
    std::vector<double> lifetime;
    for (const std::vector<double>& r : rows) {
        std::cout << "[ metastab ] beta " << r[beta] << ": 2 clusters at t = " << r[t2]
                  << ", 1 at t = " << r[t1] << ", " << r[plateaus] << " plateaus\n";
        EXPECT_LE(r[t2], 20.0);
        EXPECT_GE(r[plateaus], 1.0);
        EXPECT_EQ(r[clusters], 1.0);
        lifetime.push_back(std::log(r[t1] / r[t2]));
    }
    for (std::size_t k = 1; k < lifetime.size(); ++k) EXPECT_GT(lifetime[k], lifetime[k - 1]) << k;
    for (std::size_t k = 2; k + 1 < lifetime.size(); ++k) {
        const double before = lifetime[k] - lifetime[k - 1], after = lifetime[k + 1] - lifetime[k];
        EXPECT_LT(std::max(before, after) / std::min(before, after), 2.0) << k;
    }
}

TEST(Sweep, TheShippedSweepsAreValid) {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(FLOWSCOPE_SWEEP_DIR)) {
        const SweepSpec s = loadSweep(e.path().string(), FLOWSCOPE_PRESET_DIR);
        EXPECT_EQ(s.name, e.path().stem().string());
        EXPECT_NO_THROW(checkSweep(s)) << e.path();
        ++n;
    }
    EXPECT_GE(n, 4);
}
