// flowscope-cli bench sweep: runs per second of three sweeps, serial against two workers (threads of this
// process, and mpirun -n 2 when there is one), with the dynamic hand-out against static round-robin sharding.
// Every ratio is against the serial run of the same sweep in the same invocation, and every table is checked
// to be the serial one.
#include "Commands.h"

#include "engine/core/Parallel.h"
#include "engine/sweep/SweepRunner.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <unistd.h>

namespace flowscope::cli {

namespace {

namespace fs = std::filesystem;

// cheap: 128 runs of a 16-token cloud, about a millisecond each.
constexpr const char* kCheap = R"({"name": "cheap",
  "base": {"d": 2, "n": 16, "initial": {"kind": "gaussian", "mean": 0, "cov": 1},
           "attention": {"type": "softmax", "heads": [{"V": [[1, 0.3], [0, 1]]}]},
           "integrator": {"method": "rk4", "T": 3, "steps": 12}, "output": {"every": 3, "cluster_tol": 0.05}},
  "axes": [{"pointer": "/attention/beta", "range": {"log": [0.25, 4, 8]}},
           {"name": "v", "pointer": "/attention/heads/0/V", "scale": true, "range": {"lin": [-1, 1, 8]}}],
  "measures": ["clusters", "rank", "energy"], "replicates": 2})";

// fig4: the Fig 4 rank sweep with the authors' projected Euler (step 0.02, the d = 5 column): runs stop when
// they converge, after a few hundred to tens of thousands of steps, at random.
constexpr const char* kFig4 = R"({"name": "fig4-euler", "mode": "moments",
  "base": {"d": 3, "n": 2, "initial": {"kind": "gaussian", "mean": 0, "cov": 1},
           "attention": {"type": "softmax", "heads": [{"V": 1}]},
           "moments": {"method": "paper_euler", "step": 0.02, "tol_low": 0.0001, "tol_high": 1000, "max_iter": 60000}},
  "axes": [{"pointer": "/d", "values": [3, 4, 5]}],
  "draws": [{"kind": "normal", "rows": "d/2", "targets": [{"pointer": "/attention/heads/0/Q", "over_sqrt_d": true},
                                                         {"pointer": "/attention/heads/0/K", "scale": -1}]},
            {"kind": "gram", "targets": [{"pointer": "/initial/cov"}]}],
  "measures": ["rank", "outcomes"], "replicates": 40, "seed": 40})";

// alternating: n = 16 and n = 256 alternate run by run (cost ratio about 250): static round-robin over two
// workers gives one of them every large run.
constexpr const char* kAlternating = R"({"name": "alternating",
  "base": {"d": 2, "n": 16, "initial": {"kind": "gaussian", "mean": 0, "cov": 1},
           "attention": {"type": "softmax", "heads": [{"V": [[1, 0.3], [0, 1]]}]},
           "integrator": {"method": "rk4", "T": 3, "steps": 12}, "output": {"every": 12, "entropy": false}},
  "axes": [{"pointer": "/attention/beta", "range": {"log": [0.25, 4, 12]}}, {"pointer": "/n", "values": [16, 256]}],
  "measures": ["clusters", "rank"]})";

struct Timed {
    double seconds = 0;
    std::map<long, SweepJournalEntry> rows;
};

Timed runHere(const SweepSpec& spec, int threads, bool dynamic) {
    Timed t;
    SweepQueue queue(pendingRuns(spec, {}), threads, dynamic);
    const auto start = std::chrono::steady_clock::now();
    runSweepThreads(spec, queue, threads, 0, {}, [&](const SweepJournalEntry& e) { t.rows[e.run] = e; });
    t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return t;
}

bool sameTable(const std::map<long, SweepJournalEntry>& a, const std::map<long, SweepJournalEntry>& b) {
    if (a.size() != b.size()) return false;
    for (const auto& [run, e] : a) {
        const auto it = b.find(run);
        if (it == b.end() ||
            sweepJournalLine({run, e.result, 0}) != sweepJournalLine({run, it->second.result, 0}))
            return false;
    }
    return true;
}

std::string selfExe() {
    std::error_code ec;
    const fs::path p = fs::read_symlink("/proc/self/exe", ec);
    return ec ? "flowscope-cli" : p.string();
}

// mpirun -n ranks of this binary on the spec (written to dir); the work loop's seconds from results.json, or
// a negative number when mpirun is missing or this build has no MPI.
Timed runMpi(const SweepSpec& spec, const std::string& text, const fs::path& dir, int ranks, bool dynamic) {
    Timed t;
    t.seconds = -1;
    if (std::system("command -v mpirun >/dev/null 2>&1") != 0) return t;
    const fs::path specPath = dir / (spec.name + ".json"),
                   out = dir / (spec.name + (dynamic ? "-dyn" : "-static"));
    std::ofstream(specPath) << text;
    fs::remove_all(out);
    const std::string cmd =
        "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader "
        "mpirun -n " +
        std::to_string(ranks) + " --oversubscribe " + selfExe() + " sweep " + specPath.string() + " --out " +
        out.string() + " --jobs 1 --schedule " + (dynamic ? "dynamic" : "static") + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) return t;
    std::ifstream in(out / "results.json");
    const nlohmann::json record = nlohmann::json::parse(in, nullptr, false);
    if (record.is_discarded()) return t;
    t.seconds = record["execution"].value("wall_seconds", -1.0);
    t.rows = readSweepJournals(out.string(), spec);
    return t;
}

} // namespace

int benchSweep(const Args& raw) {
    ArgParser p(raw);
    const bool json = p.flag("--json");
    const int ranks = int(parseLong(p.option("--ranks", "2"), "--ranks", 2, 64));
    p.rejectUnknown();
    const fs::path dir = fs::temp_directory_path() / ("flowscope-bench-sweep-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    for (const char* text : {kCheap, kFig4, kAlternating}) {
        const SweepSpec spec = sweepFromJson(text, ".", FLOWSCOPE_PRESET_DIR);
        const int saved = threadCount();
        setThreadCount(1); // serial: one run at a time on one core
        const Timed serial = runHere(spec, 1, true);
        setThreadCount(saved);
        struct Row {
            std::string mode;
            Timed t;
        };
        std::vector<Row> rows;
        rows.push_back({"serial", serial});
        rows.push_back({"threads-" + std::to_string(ranks) + " dynamic", runHere(spec, ranks, true)});
        rows.push_back({"threads-" + std::to_string(ranks) + " static", runHere(spec, ranks, false)});
        rows.push_back(
            {"mpirun-" + std::to_string(ranks) + " dynamic", runMpi(spec, text, dir, ranks, true)});
        rows.push_back(
            {"mpirun-" + std::to_string(ranks) + " static", runMpi(spec, text, dir, ranks, false)});
        const double base = double(spec.runs()) / serial.seconds;
        for (const Row& r : rows) {
            if (r.t.seconds < 0) continue; // no mpirun here
            const double rate = double(spec.runs()) / r.t.seconds;
            const bool same = sameTable(serial.rows, r.t.rows);
            if (json)
                std::cout << nlohmann::json{{"bench", "sweep"},     {"sweep", spec.name},
                                            {"mode", r.mode},       {"runs", spec.runs()},
                                            {"runs_per_s", rate},   {"baseline_runs_per_s", base},
                                            {"ratio", rate / base}, {"seconds", r.t.seconds},
                                            {"same_table", same}}
                                 .dump()
                          << "\n";
            else
                std::cout << std::left << std::setw(12) << spec.name << std::setw(20) << r.mode << std::right
                          << std::setw(10) << std::setprecision(4) << rate << " runs/s  " << std::setw(8)
                          << r.t.seconds << " s  ratio " << std::setprecision(3) << rate / base << "x"
                          << (same ? "" : "  TABLE DIFFERS") << "\n";
        }
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
    return 0;
}

} // namespace flowscope::cli
