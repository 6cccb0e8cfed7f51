// flowscope-cli sweep end to end: the same table from any number of workers, from shards and merge, from MPI
// ranks, and after a SIGKILL and a rerun; a cell's measures are those of its scene run by `simulate`.
#include "../CliRun.h"
#include "engine/io/Npy.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/wait.h>

namespace fs = std::filesystem;
using flowscope::test::cli;
using flowscope::test::CliResult;
using flowscope::test::TempDir;

namespace {

std::string readText(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// 3 x 4 cells of a small softmax cloud, 2 replicates: 24 runs of a few milliseconds.
const char* kSpec = R"({
  "name": "cli-tiny",
  "base": {"d": 2, "n": 16,
           "initial": {"kind": "gaussian", "mean": [0, 0], "cov": [[1, 0], [0, 1]]},
           "attention": {"type": "softmax", "heads": [{"Q": 1, "K": 1, "V": [[1, 0.3], [0, 1]]}]},
           "integrator": {"method": "rk4", "T": 3, "steps": 12}, "output": {"every": 3, "cluster_tol": 0.05}},
  "axes": [{"pointer": "/attention/beta", "range": {"log": [0.25, 4, 3]}},
           {"name": "v", "pointer": "/attention/heads/0/V", "scale": true, "values": [-1, -0.5, 0.5, 1]}],
  "measures": ["clusters", "rank", {"time_to_clusters": 4}, "divergence_time", "energy", "entropy", "kinetic"],
  "replicates": 2
})";

// The table's files: the CSV and every column's .npy (results.json carries the machine and the workers).
std::string tableBytes(const fs::path& dir) {
    std::string all = readText(dir / "results.csv");
    std::vector<fs::path> npy;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".npy") npy.push_back(e.path());
    std::sort(npy.begin(), npy.end());
    EXPECT_FALSE(npy.empty());
    for (const fs::path& p : npy) all += p.filename().string() + readText(p);
    return all;
}

struct SweepDirs {
    TempDir tmp{"sweep"};
    fs::path spec = tmp.path() / "sweep.json";
    SweepDirs() { std::ofstream(spec) << kSpec; }
    std::string run(const std::string& name, const std::string& extra = "", const std::string& prefix = "") {
        const CliResult r =
            cli("sweep " + spec.string() + " --out " + (tmp.path() / name).string() + " " + extra, prefix);
        EXPECT_EQ(r.code, 0) << r.out;
        return r.out;
    }
    fs::path dir(const std::string& name) const { return tmp.path() / name; }
};

bool haveMpi() {
    return std::system("command -v mpirun >/dev/null 2>&1") == 0;
}

} // namespace

TEST(SweepCli, SameTableOnOneOrTwoWorkersAndACellIsItsScene) {
    SweepDirs d;
    d.run("one", "--jobs 1");
    d.run("two", "--jobs 2");
    ASSERT_TRUE(fs::exists(d.dir("one") / "results.csv"));
    EXPECT_EQ(tableBytes(d.dir("one")), tableBytes(d.dir("two")));
    const flowscope::NpyArray clusters = flowscope::readNpy((d.dir("one") / "clusters.npy").string());
    ASSERT_EQ(clusters.shape, (std::vector<std::int64_t>{24}));
    const nlohmann::json record = nlohmann::json::parse(readText(d.dir("one") / "results.json"));
    EXPECT_EQ(record["runs"], 24);
    EXPECT_TRUE(record.contains("machine") && record.contains("build") && record["sweep"].contains("base"));

    // Run 17's scene through `simulate`: its last record's observables are the row's measures.
    const CliResult scene =
        cli("sweep " + d.spec.string() + " --out " + d.dir("one").string() + " --print-scene 17");
    ASSERT_EQ(scene.code, 0) << scene.out;
    std::ofstream(d.tmp.file("cell17-scene.json")) << scene.out;
    const CliResult sim =
        cli("simulate " + d.tmp.file("cell17-scene.json") + " --out " + d.tmp.file("cell17.npy"));
    ASSERT_EQ(sim.code, 0) << sim.out;
    // simulate writes the run's record beside the trajectory: cell17.json.
    const nlohmann::json obs = nlohmann::json::parse(readText(d.tmp.path() / "cell17.json"))["observables"];
    auto column = [&](const std::string& name) {
        return flowscope::readNpy((d.dir("one") / (name + ".npy")).string()).data[17];
    };
    EXPECT_EQ(column("clusters"), obs["clusters"].back().get<double>());
    EXPECT_EQ(column("rank"), obs["rank"].back().get<double>());
    EXPECT_EQ(column("entropy"), obs["attention_entropy"].back().get<double>());
    EXPECT_EQ(column("kinetic"), obs["kinetic_energy"].back().get<double>());
}

TEST(SweepCli, ShardsAndMergeGiveTheSerialTable) {
    SweepDirs d;
    d.run("serial", "--jobs 1");
    d.run("sharded", "--shard 1/3 --jobs 1");
    const CliResult early = cli("sweep merge " + d.dir("sharded").string());
    EXPECT_EQ(early.code, 1) << early.out;
    EXPECT_NE(early.out.find("16 of 24 runs are not finished (runs 1, 2, 4, 5"), std::string::npos)
        << early.out;
    // Shard 2 from --shard, shard 3 from Slurm's variables (an array --array=5-7: task 7 is shard 3 of 3).
    d.run("sharded", "--shard 2/3 --jobs 1");
    d.run("sharded", "--jobs 1", "env SLURM_ARRAY_TASK_ID=7 SLURM_ARRAY_TASK_MIN=5 SLURM_ARRAY_TASK_COUNT=3");
    fs::remove(d.dir("sharded") / "results.csv"); // the last shard wrote the table: merge writes it again
    const CliResult merged = cli("sweep merge " + d.dir("sharded").string());
    ASSERT_EQ(merged.code, 0) << merged.out;
    EXPECT_EQ(tableBytes(d.dir("serial")), tableBytes(d.dir("sharded")));
}

TEST(SweepCli, AKilledRunResumesWithoutRecomputingFinishedRuns) {
    SweepDirs d;
    d.run("serial", "--jobs 1");
    const CliResult killed =
        cli("sweep " + d.spec.string() + " --out " + d.dir("resumed").string() + " --jobs 2",
            "env FLOWSCOPE_SWEEP_KILL_AFTER=9");
    EXPECT_NE(killed.code, 0) << killed.out; // SIGKILL
    EXPECT_FALSE(fs::exists(d.dir("resumed") / "results.csv"));
    const std::string before = readText(d.dir("resumed") / "journal" / "all.jsonl");
    const auto lines = [](const std::string& s) { return std::count(s.begin(), s.end(), '\n'); };
    ASSERT_EQ(lines(before), 1 + 9) << before; // the header and the 9 runs journaled before the kill
    const std::string out = d.run("resumed", "--jobs 2");
    EXPECT_NE(out.find("15 of 24 runs to do (9 already in the journal)"), std::string::npos) << out;
    const std::string after = readText(d.dir("resumed") / "journal" / "all.jsonl");
    EXPECT_EQ(after.substr(0, before.size()), before); // the finished runs' lines are kept, not redone
    EXPECT_EQ(lines(after), 1 + 24);
    EXPECT_EQ(tableBytes(d.dir("serial")), tableBytes(d.dir("resumed")));
    // A rerun of a finished sweep runs nothing and writes the same table.
    EXPECT_NE(d.run("resumed").find("0 of 24 runs to do"), std::string::npos);
    EXPECT_EQ(tableBytes(d.dir("serial")), tableBytes(d.dir("resumed")));
}

TEST(SweepCli, MalformedSpecsExitTwoWithOneMessageNamingTheField) {
    TempDir tmp("sweep");
    const auto expectRefused = [&](const std::string& text, const std::string& message) {
        std::ofstream(tmp.file("bad.json")) << text;
        flowscope::test::expectRefused(cli("sweep " + tmp.file("bad.json") + " --out " + tmp.file("out")),
                                       message, tmp.file("out"));
    };
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(kSpec);
    j["axes"][0]["range"]["log"][2] = 0;
    expectRefused(j.dump(), "error: /axes/0/range/log/2: expected integer >= 1, got 0");
    j = nlohmann::ordered_json::parse(kSpec);
    j["axes"][1]["values"][2] = "x";
    expectRefused(j.dump(), "error: /axes/1/values/2: expected number");
    j = nlohmann::ordered_json::parse(kSpec);
    j["base"]["integrator"]["method"] = "rk45";
    expectRefused(j.dump(), "error: /base/integrator/method: unknown integrator method \"rk45\"");
    expectRefused("{\"base\": \"default\", \"measures\": [\"rank\"],}", "error: invalid JSON");
    j = nlohmann::ordered_json::parse(kSpec);
    const CliResult noOut = cli("sweep " + tmp.file("bad.json"));
    EXPECT_EQ(noOut.code, 2);
}

TEST(SweepCli, MpiTwoRanksGiveTheSerialTable) {
    if (!haveMpi()) GTEST_SKIP() << "mpirun not found (Debian: openmpi-bin libopenmpi-dev)";
    SweepDirs d;
    d.run("serial", "--jobs 1");
    const std::string mpirun =
        "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader "
        "mpirun -n 2 --oversubscribe";
    const CliResult probe = cli("sweep " + d.spec.string() + " --out " + d.dir("mpi").string(), mpirun);
    if (probe.out.find("built without MPI") != std::string::npos) GTEST_SKIP() << "this build has no MPI";
    ASSERT_EQ(probe.code, 0) << probe.out;
    EXPECT_NE(probe.out.find("on 2 MPI ranks"), std::string::npos) << probe.out;
    EXPECT_EQ(tableBytes(d.dir("serial")), tableBytes(d.dir("mpi")));
    d.run("mpi-static", "--schedule static", mpirun);
    EXPECT_EQ(tableBytes(d.dir("serial")), tableBytes(d.dir("mpi-static")));
}

TEST(SweepCli, SlurmScriptRunsOneShardPerArrayTask) {
    SweepDirs d;
    const CliResult r = cli("sweep " + d.spec.string() + " --out " + d.dir("slurm").string() +
                            " --slurm-script --shards 3 --jobs 2");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("#SBATCH --array=1-3\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("#SBATCH --cpus-per-task=2\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(" sweep merge "), std::string::npos) << r.out;
    // Each array task's command, with the variables Slurm sets, then the merge: the serial table.
    std::ofstream(d.tmp.file("job.sh")) << r.out;
    for (int task = 1; task <= 3; ++task) {
        const int code = std::system(("env SLURM_ARRAY_TASK_ID=" + std::to_string(task) +
                                      " SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_COUNT=3 bash " +
                                      d.tmp.file("job.sh") + " 2>/dev/null")
                                         .c_str());
        EXPECT_EQ(code, 0);
    }
    ASSERT_EQ(cli("sweep merge " + d.dir("slurm").string()).code, 0);
    d.run("serial", "--jobs 1");
    EXPECT_EQ(tableBytes(d.dir("serial")), tableBytes(d.dir("slurm")));
}

namespace {

// Width and height from a PNG's IHDR chunk.
std::pair<int, int> pngSize(const fs::path& p) {
    const std::string b = readText(p);
    EXPECT_GE(b.size(), 24u);
    EXPECT_EQ(b.substr(1, 3), "PNG");
    const auto be32 = [&](std::size_t at) {
        return int((unsigned char)b[at]) << 24 | int((unsigned char)b[at + 1]) << 16 |
               int((unsigned char)b[at + 2]) << 8 | int((unsigned char)b[at + 3]);
    };
    return {be32(16), be32(20)};
}

} // namespace

TEST(SweepCli, PlotsAHeatmapAndTheFig4Histograms) {
    SweepDirs d;
    d.run("heat", "--jobs 2");
    const CliResult svg = cli("sweep plot " + d.dir("heat").string() +
                              " --x beta --y v --measure clusters --out " + d.tmp.file("heat.svg"));
    ASSERT_EQ(svg.code, 0) << svg.out;
    const std::string text = readText(d.tmp.file("heat.svg"));
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n') > 100, true);
    for (const char* label :
         {">beta</text>", ">v</text>", ">clusters</text>", ">-0.5</text>", ">0.25</text>"})
        EXPECT_NE(text.find(label), std::string::npos) << label;
    const CliResult bad = cli("sweep plot " + d.dir("heat").string() +
                              " --x beta --y v --measure clusterz --out " + d.tmp.file("h.png"));
    EXPECT_EQ(bad.code, 2);
    EXPECT_NE(bad.out.find("no column \"clusterz\""), std::string::npos) << bad.out;

    // The Fig 4 preset, 4 runs per dimension: one histogram panel per d.
    nlohmann::ordered_json fig4 =
        nlohmann::ordered_json::parse(readText(fs::path(FLOWSCOPE_SWEEP_DIR) / "fig4-ranks-softmax.json"));
    fig4["replicates"] = 4;
    std::ofstream(d.tmp.file("fig4.json")) << fig4.dump();
    ASSERT_EQ(cli("sweep " + d.tmp.file("fig4.json") + " --out " + d.dir("fig4").string()).code, 0);
    const CliResult png =
        cli("sweep plot " + d.dir("fig4").string() + " --x d --measure rank --out " + d.tmp.file("fig4.png"));
    ASSERT_EQ(png.code, 0) << png.out;
    EXPECT_EQ(pngSize(d.tmp.file("fig4.png")), std::make_pair(940, 310));
    // Prop 2 with V = I: the limit's rank is ceil(d/2) exactly; the 0.1 threshold can only count fewer.
    const auto rank = flowscope::readNpy((d.dir("fig4") / "rank.npy").string()).data;
    const auto dim = flowscope::readNpy((d.dir("fig4") / "d.npy").string()).data;
    for (std::size_t r = 0; r < rank.size(); ++r) EXPECT_LE(rank[r], std::ceil(dim[r] / 2)) << r;
}

TEST(SweepCli, GlBackendGivesOneTableOnOneOrTwoWorkers) {
    SweepDirs d;
    const CliResult probe =
        cli("sweep " + d.spec.string() + " --out " + d.dir("gl1").string() + " --backend gl --jobs 1");
    if (probe.code == 2 && probe.out.find("--backend:") != std::string::npos)
        GTEST_SKIP() << "no OpenGL backend here: " << probe.out;
    ASSERT_EQ(probe.code, 0) << probe.out;
    d.run("gl2", "--backend gl --jobs 2"); // a context of its own on each worker thread
    EXPECT_EQ(tableBytes(d.dir("gl1")), tableBytes(d.dir("gl2")));
}
