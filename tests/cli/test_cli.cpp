// flowscope-cli end to end: run the real binary, read what it wrote.
#include "../CliRun.h"
#include "engine/io/Npy.h"
#include "engine/io/Safetensors.h"
#include "engine/scene/SceneSchema.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

// --- Helpers ---

namespace {

using Result = flowscope::test::CliResult;
using flowscope::test::cli;
using flowscope::test::readJson;

fs::path tempDir() {
    const fs::path dir =
        fs::temp_directory_path() / ("flowscope-cli-" + std::to_string(::getpid()) + "-" +
                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir);
    return dir;
}

void writeText(const fs::path& p, const std::string& text) {
    std::ofstream(p) << text;
}

const char* kSmallScene = R"({
  "name": "cli-small", "d": 2, "n": 50,
  "initial": {"kind": "gaussian", "seed": 3, "mean": [0, 0], "cov": [[1, 0], [0, 1]]},
  "attention": {"type": "softmax", "heads": [{"Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1]], "V": [[-0.5, 0], [0, -0.5]]}]},
  "integrator": {"method": "rk4", "T": 1.0, "steps": 20},
  "output": {"every": 2}
})";

} // namespace

// --- simulate ---

TEST(Cli, SimulateWritesTrajectoryAndObservables) {
    const fs::path dir = tempDir();
    writeText(dir / "scene.json", kSmallScene);
    const Result r =
        cli("simulate " + (dir / "scene.json").string() + " --out " + (dir / "traj.npy").string());
    ASSERT_EQ(r.code, 0) << r.out;
    const flowscope::NpyArray a = flowscope::readNpy((dir / "traj.npy").string());
    ASSERT_EQ(a.shape, (std::vector<std::int64_t>{11, 50, 2}));
    const nlohmann::json j = readJson(dir / "traj.json");
    ASSERT_EQ(j["times"].size(), 11u);
    EXPECT_DOUBLE_EQ(j["times"].back().get<double>(), 1.0);
    EXPECT_TRUE(j["event"].is_null());
    // The recorded mean equals the mean of the stored tokens at the last time.
    double mx = 0;
    for (int i = 0; i < 50; ++i) mx += a.data[std::size_t((10 * 50 + i) * 2)];
    EXPECT_NEAR(j["observables"]["mean"].back()[0].get<double>(), mx / 50, 1e-12);
    // V = -0.5 I contracts the cloud.
    EXPECT_LT(j["observables"]["cov"].back()[0][0].get<double>(),
              j["observables"]["cov"][0][0][0].get<double>());

    // --every and --float32
    const Result r2 = cli("simulate " + (dir / "scene.json").string() + " --out " +
                          (dir / "t32.npy").string() + " --every 5 --float32");
    ASSERT_EQ(r2.code, 0) << r2.out;
    const flowscope::NpyArray b = flowscope::readNpy((dir / "t32.npy").string());
    EXPECT_EQ(b.shape, (std::vector<std::int64_t>{5, 50, 2}));
    EXPECT_NEAR(b.data.back(), a.data.back(), 1e-6);
    fs::remove_all(dir);
}

// The GPU backends integrate the same trajectory as the CPU float32 path. Tolerance: both compute in
// float32 (relative rounding ~1e-7 per velocity) and 20 contracting RK4 steps do not amplify it, so 1e-4 on
// coordinates of order 1 leaves a wide margin while still catching any wrong kernel (errors of order 1e-2).
// --set POINTER=VALUE: the run is the run of the scene file with those fields, bit for bit; a bad setting is
// exit 2 with one message naming it and the field, and nothing written.
TEST(Cli, SetReplacesFieldsOfTheSceneAsTheFileWould) {
    const fs::path dir = tempDir();
    writeText(dir / "scene.json", kSmallScene);
    std::string edited = kSmallScene;
    edited.replace(edited.find("\"softmax\""), 9, "\"l2\", \"beta\": 2.5");
    edited.replace(edited.find("\"steps\": 20"), 11, "\"steps\": 30");
    writeText(dir / "edited.json", edited);
    const std::string scene = (dir / "scene.json").string();
    const Result a = cli("simulate " + scene + " --set /attention/type=l2 --set /attention/beta=2.5 --set " +
                         "/integrator/steps=30 --out " + (dir / "a.npy").string());
    ASSERT_EQ(a.code, 0) << a.out;
    const Result b = cli("simulate " + (dir / "edited.json").string() + " --out " + (dir / "b.npy").string());
    ASSERT_EQ(b.code, 0) << b.out;
    const flowscope::NpyArray ta = flowscope::readNpy((dir / "a.npy").string()),
                              tb = flowscope::readNpy((dir / "b.npy").string());
    EXPECT_EQ(ta.shape, (std::vector<std::int64_t>{16, 50, 2}));
    EXPECT_EQ(ta.shape, tb.shape);
    EXPECT_EQ(ta.data, tb.data);
    // The share string carries the settings too.
    EXPECT_EQ(cli("share " + scene +
                  " --set /attention/type=l2 --set /attention/beta=2.5 --set "
                  "/integrator/steps=30")
                  .out,
              cli("share " + (dir / "edited.json").string()).out);

    for (const auto& [setting, field] : std::vector<std::pair<std::string, std::string>>{
             {"/attention/beta=-1", "/attention/beta: expected number > 0"},
             {"/attention/type=lstm", "/attention/type"},
             {"/attention/betta=1", "did you mean"},
             {"/attention/heads/0/Q=[[1,0,0]]", "/attention/heads/0/Q"},
             {"/nothing/here=1", "the scene has no /nothing"},
             {"beta=4", "expected a JSON pointer"},
             {"/n", "expected POINTER=VALUE"}}) {
        const Result r =
            cli("simulate " + scene + " --set '" + setting + "' --out " + (dir / "c.npy").string());
        EXPECT_EQ(r.code, 2) << setting << ": " << r.out;
        EXPECT_NE(r.out.find("--set \"" + setting + "\": "), std::string::npos) << r.out;
        EXPECT_NE(r.out.find(field), std::string::npos) << setting << ": " << r.out;
        EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
        EXPECT_FALSE(fs::exists(dir / "c.npy"));
    }
}

TEST(Cli, SimulateOnTheGpuBackendsMatchesTheCpu) {
    const fs::path dir = tempDir();
    writeText(dir / "scene.json", kSmallScene);
    const std::string scene = (dir / "scene.json").string();
    ASSERT_EQ(cli("simulate " + scene + " --float32 --out " + (dir / "cpu.npy").string()).code, 0);
    const flowscope::NpyArray cpu = flowscope::readNpy((dir / "cpu.npy").string());
    int ran = 0;
    for (const std::string backend : {"gl", "vulkan"}) {
        const fs::path out = dir / (backend + ".npy");
        const Result r =
            cli("simulate " + scene + " --float32 --backend " + backend + " --out " + out.string());
        if (r.code == 2 && r.out.find("unavailable") != std::string::npos) {
            std::printf("[ skipped  ] %s", r.out.c_str());
            continue;
        }
        ASSERT_EQ(r.code, 0) << r.out;
        const flowscope::NpyArray gpu = flowscope::readNpy(out.string());
        ASSERT_EQ(gpu.shape, cpu.shape);
        double err = 0;
        for (std::size_t k = 0; k < gpu.data.size(); ++k)
            err = std::max(err, std::fabs(gpu.data[k] - cpu.data[k]));
        EXPECT_LT(err, 1e-4) << backend;
        const nlohmann::json record = readJson(dir / (backend + ".json"));
        EXPECT_EQ(record["backend"]["kind"], backend);
        // Softmax with RK4: the tokens stayed on the device (its stepper) from the first step to the last.
        EXPECT_EQ(record["backend"]["device_steps"], true) << record["backend"].dump();
        ++ran;
    }
    if (ran == 0) GTEST_SKIP() << "no GPU backend on this machine";
    fs::remove_all(dir);
}

// --- Usage, help and completion ---

// The usage names every command the CLI takes, each at the start of a line ("  sweep ..."), and each one it
// names is taken (an unknown option of it is that command's error, not "unknown command").
TEST(Cli, TheUsageListsEveryCommand) {
    const Result usage = cli("--help");
    EXPECT_EQ(usage.code, 0);
    for (const char* cmd :
         {"simulate", "presets", "share", "moments", "bench", "ranks", "train", "sample", "density", "infer",
          "train-transformer", "eval-transformer", "render", "sweep", "model", "theory"}) {
        const std::string line = std::string("\n  ") + cmd;
        EXPECT_TRUE(usage.out.find(line + " ") != std::string::npos ||
                    usage.out.find(line + "\n") != std::string::npos)
            << cmd << " is not listed";
        const Result r = cli(std::string(cmd) + " --frobnicate");
        EXPECT_EQ(r.out.find("unknown command"), std::string::npos) << cmd << ": " << r.out;
    }
    EXPECT_NE(cli("nosuch").out.find("unknown command"), std::string::npos);
}

// Every command explains itself: COMMAND --help and help COMMAND print its own usage and an example, exit 0.
TEST(Cli, EveryCommandAnswersHelp) {
    for (const char* cmd :
         {"simulate", "presets", "share", "moments", "bench", "ranks", "train", "sample", "density", "infer",
          "train-transformer", "eval-transformer", "render", "sweep", "model", "theory"}) {
        const Result r = cli(std::string(cmd) + " --help");
        EXPECT_EQ(r.code, 0) << cmd << ": " << r.out;
        EXPECT_TRUE(r.out.find(std::string("\n  ") + cmd + " ") != std::string::npos ||
                    r.out.find(std::string("\n  ") + cmd + "\n") != std::string::npos)
            << cmd << ": " << r.out;
        EXPECT_NE(r.out.find("example:\n  flowscope-cli " + std::string(cmd)), std::string::npos) << r.out;
        EXPECT_EQ(r.out.find("unknown option"), std::string::npos) << r.out;
        EXPECT_LT(r.out.size(), cli("--help").out.size() / 2) << cmd << " printed the whole usage";
        const Result h = cli(std::string("help ") + cmd);
        EXPECT_EQ(h.code, 0);
        EXPECT_EQ(h.out, r.out) << cmd;
    }
    // A sub-command's help is its own entry; --help anywhere among the options counts.
    const Result run = cli("bench run --json --help");
    EXPECT_EQ(run.code, 0);
    EXPECT_NE(run.out.find("bench run"), std::string::npos);
    EXPECT_EQ(run.out.find("bench moments"), std::string::npos) << run.out;
    // and its example is its own, not its command's (bench particles).
    EXPECT_NE(run.out.find("example:\n  flowscope-cli bench run "), std::string::npos) << run.out;
    for (const char* sub : {"bench model", "bench train", "model gram", "model scene"}) {
        const Result r = cli(std::string(sub) + " --help");
        EXPECT_EQ(r.code, 0) << sub;
        EXPECT_NE(r.out.find("example:\n  flowscope-cli " + std::string(sub) + " "), std::string::npos)
            << r.out;
    }
    const Result sweep = cli("simulate scene.json --out x.npy -h");
    EXPECT_EQ(sweep.code, 0);
    EXPECT_NE(sweep.out.find("--every"), std::string::npos);
}

// `help set` is the parameter schema: every scalar parameter with its default and range, each of which
// --set takes as the scene file does.
TEST(Cli, HelpSetListsEveryParameterWithItsDefault) {
    const Result r = cli("help set");
    ASSERT_EQ(r.code, 0) << r.out;
    for (const flowscope::SceneParam& p : flowscope::sceneParams()) {
        const std::string line = "  " + std::string(p.pointer) + " = " +
                                 (p.required ? std::string("(required)") : flowscope::paramDefault(p).dump());
        EXPECT_NE(r.out.find(line + "  (" + flowscope::acceptedText(p)), std::string::npos) << line;
    }
    EXPECT_NE(cli("simulate --help").out.find("help set"), std::string::npos);
}

// Every option a command asks its parser for is in its help (and so in the completion script): each command
// is run with an unknown option, and the options it looked for are logged (FLOWSCOPE_CLI_OPTIONS_LOG).
TEST(Cli, EveryOptionIsInItsHelp) {
    flowscope::test::TempDir dir("cli");
    for (const std::string words : {"simulate x.json",
                                    "moments x.json",
                                    "ranks",
                                    "train",
                                    "sample m.safetensors",
                                    "density m.safetensors",
                                    "train-transformer",
                                    "eval-transformer m.safetensors",
                                    "share x.json",
                                    "presets",
                                    "infer x",
                                    "render x.json",
                                    "render --view training",
                                    "sweep x",
                                    "sweep plot d",
                                    "sweep merge d",
                                    "bench particles",
                                    "bench moments",
                                    "bench run",
                                    "bench view",
                                    "bench train",
                                    "bench model",
                                    "bench sweep",
                                    "model layers d",
                                    "model gram d",
                                    "model scene d",
                                    "theory influence x.json"}) {
        const std::string log = dir.file("asked.txt");
        std::filesystem::remove(log);
        const Result r = flowscope::test::runCli("env", "FLOWSCOPE_CLI_OPTIONS_LOG=" + log + " " +
                                                            FLOWSCOPE_CLI + " " + words + " --frobnicate");
        if (r.out.find("in this build") != std::string::npos) continue; // render, bench view: not without EGL
        std::ifstream in(log);
        const std::string cmd = words.substr(0, words.find(' '));
        const std::string help = cli("help " + cmd).out;
        int asked = 0;
        for (std::string name; std::getline(in, name); ++asked)
            EXPECT_NE(help.find(name), std::string::npos)
                << words << " takes " << name << "; its help does not say";
        if (words != "sweep merge d") EXPECT_GT(asked, 0) << words << " asked for no option"; // takes none
    }
}

TEST(Cli, ATypoIsAnsweredWithTheNearestName) {
    struct Case {
        const char* args;
        const char* hint; // what the message says; null: no "did you mean" at all
    };
    for (const Case& c : {Case{"simulate scene.json --out x.npy --evrey 3",
                               "unknown option \"--evrey\" (did you mean --every?)"},
                          Case{"simulate scene.json --out x.npy --zzzzzzzz", nullptr},
                          Case{"simulat scene.json", "unknown command \"simulat\" (did you mean simulate?)"},
                          Case{"help sweeep", "did you mean sweep?"}}) {
        const Result r = cli(c.args);
        EXPECT_EQ(r.code, 2) << c.args;
        if (c.hint)
            EXPECT_NE(r.out.find(c.hint), std::string::npos) << c.args << ": " << r.out;
        else
            EXPECT_EQ(r.out.find("did you mean"), std::string::npos) << c.args << ": " << r.out;
    }
}

TEST(Cli, VersionNamesTheBackends) {
    const Result r = cli("--version");
    EXPECT_EQ(r.code, 0);
    EXPECT_EQ(r.out.rfind("flowscope-cli 0.", 0), 0u) << r.out;
    EXPECT_NE(r.out.find("backends: cpu"), std::string::npos) << r.out;
}

// The bash completion script is generated from the usage: it parses, completes the commands, and completes a
// command's options from its own entries.
TEST(Cli, BashCompletionCompletesCommandsAndOptions) {
    flowscope::test::TempDir dir("cli");
    const Result script = cli("completion bash");
    ASSERT_EQ(script.code, 0) << script.out;
    writeText(dir.path() / "completion.bash", script.out);
    auto complete = [&](const std::string& line) {
        // COMP_WORDS as bash splits the line; the last word is the one being completed.
        std::istringstream in(line);
        std::vector<std::string> words(std::istream_iterator<std::string>(in), {});
        if (line.back() == ' ') words.push_back("");
        std::string array;
        for (const std::string& w : words) array += "'" + w + "' ";
        std::ofstream(dir.path() / "complete.sh")
            << "source " << (dir.path() / "completion.bash").string() << "\ncd " << dir.str()
            << "\nCOMP_WORDS=(" << array << ")\nCOMP_CWORD=" << words.size() - 1
            << "\n_flowscope_cli\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n";
        return flowscope::test::runCli("bash", (dir.path() / "complete.sh").string()).out;
    };
    EXPECT_EQ(complete("flowscope-cli sim"), "simulate\n");
    EXPECT_EQ(complete("flowscope-cli simulate --ev"), "--every\n");
    const std::string train = complete("flowscope-cli train --");
    EXPECT_NE(train.find("--dataset\n"), std::string::npos) << train;
    EXPECT_EQ(train.find("--every\n"), std::string::npos) << train;
    EXPECT_EQ(cli("completion zsh").code, 2);
}

TEST(Cli, AnUnknownBackendIsAUsageError) {
    const Result r = cli("simulate nothing.json --out x.npy --backend metal");
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("--backend: unknown backend \"metal\""), std::string::npos) << r.out;
}

// --- Events and bad input ---

TEST(Cli, BlowUpIsReportedAsAnEvent) {
    const fs::path dir = tempDir();
    // Linear attention, one token: x' = x^3 blows up at t = 0.5.
    writeText(dir / "blow.json", R"({"name": "blow", "d": 1, "n": 1,
      "initial": {"kind": "gaussian", "seed": 1, "mean": [1], "cov": [[0]]},
      "attention": {"type": "linear", "heads": [{"Q": [[1]], "K": [[1]], "V": [[1]]}]},
      "integrator": {"method": "dopri5", "T": 1.0, "steps": 100, "divergence_norm": 1000}})");
    const Result r = cli("simulate " + (dir / "blow.json").string() + " --out " + (dir / "b.npy").string());
    ASSERT_EQ(r.code, 0) << r.out;
    const nlohmann::json j = readJson(dir / "b.json");
    ASSERT_FALSE(j["event"].is_null());
    EXPECT_EQ(j["event"]["kind"], "diverged");
    EXPECT_NEAR(j["event"]["t"].get<double>(), 0.5, 0.011);
    // The integrator's work: Dormand-Prince evaluates k1 once per nominal step and six stages per sub-step
    // tried (first same as last within a step), and near the singularity it rejects some.
    const nlohmann::json& work = j["integrator"];
    EXPECT_EQ(work["method"], "dopri5");
    const long steps = work["steps"], subSteps = work["sub_steps"], rejected = work["rejected_sub_steps"];
    EXPECT_EQ(steps, std::lround(j["event"]["t"].get<double>() / 0.01));
    EXPECT_GE(subSteps, steps);
    EXPECT_EQ(work["field_evaluations"].get<long>(), steps + 6 * (subSteps + rejected));

    // RK4: four evaluations per step, one sub-step each.
    writeText(dir / "rk4.json", R"({"name": "rk4", "d": 1, "n": 1,
      "initial": {"kind": "gaussian", "seed": 1, "mean": [1], "cov": [[0]]},
      "attention": {"type": "linear", "heads": [{"Q": [[1]], "K": [[1]], "V": [[-1]]}]},
      "integrator": {"method": "rk4", "T": 1.0, "steps": 20}})");
    ASSERT_EQ(cli("simulate " + (dir / "rk4.json").string() + " --out " + (dir / "r.npy").string()).code, 0);
    const nlohmann::json rk4 = readJson(dir / "r.json")["integrator"];
    EXPECT_EQ(rk4["steps"], 20);
    EXPECT_EQ(rk4["field_evaluations"], 80);
    EXPECT_EQ(rk4["sub_steps"], 20);
    EXPECT_EQ(rk4["rejected_sub_steps"], 0);
    fs::remove_all(dir);
}

TEST(Cli, MalformedSceneExitsWithCodeTwoNamesTheFieldAndWritesNothing) {
    const fs::path dir = tempDir();
    std::string bad = kSmallScene;
    bad.replace(bad.find("\"V\": [[-0.5, 0], [0, -0.5]]"), 27, "\"V\": [[1, 0, 0], [0, 1, 0]]");
    writeText(dir / "bad.json", bad);
    const Result r = cli("simulate " + (dir / "bad.json").string() + " --out " + (dir / "x.npy").string());
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("/attention/heads/0/V"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("2x3"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(dir / "x.npy"));
    EXPECT_FALSE(fs::exists(dir / "x.json"));

    writeText(dir / "syntax.json", "{\"d\": 2,, }");
    const Result s = cli("simulate " + (dir / "syntax.json").string() + " --out " + (dir / "x.npy").string());
    EXPECT_EQ(s.code, 2);
    EXPECT_FALSE(fs::exists(dir / "x.npy"));

    const Result m =
        cli("simulate " + (dir / "missing.json").string() + " --out " + (dir / "x.npy").string());
    EXPECT_EQ(m.code, 2);
    EXPECT_NE(m.out.find("missing.json"), std::string::npos) << m.out;

    EXPECT_EQ(cli("simulate " + (dir / "bad.json").string()).code, 2);  // no --out
    EXPECT_EQ(cli("frobnicate").code, 2);                               // unknown command
    EXPECT_EQ(cli("simulate a.json --out b.npy --every zero").code, 2); // bad number
    fs::remove_all(dir);
}

// --- presets, bench, ranks, moments ---

TEST(Cli, PresetsListsEveryShippedScene) {
    const Result r = cli("presets");
    ASSERT_EQ(r.code, 0) << r.out;
    int files = 0;
    for (const auto& e : fs::directory_iterator(FLOWSCOPE_PRESET_DIR))
        if (e.path().extension() == ".json") {
            ++files;
            EXPECT_NE(r.out.find(e.path().stem().string()), std::string::npos) << e.path();
        }
    EXPECT_GT(files, 0);
    EXPECT_EQ(r.out.find("INVALID"), std::string::npos) << r.out;
}

TEST(Cli, BenchJsonRecordsHaveEveryField) {
    const Result r = cli("bench particles --json --n 256 --variants softmax,sinkhorn,rwpo");
    ASSERT_EQ(r.code, 0) << r.out;
    std::istringstream lines(r.out);
    std::string line;
    int records = 0;
    while (std::getline(lines, line)) {
        const auto j = nlohmann::json::parse(line);
        for (const char* key :
             {"variant", "backend", "N", "d", "precision", "pairs_per_s", "baseline_pairs_per_s", "ratio"})
            EXPECT_TRUE(j.contains(key)) << key << " in " << line;
        EXPECT_GT(j["pairs_per_s"].get<double>(), 0.0);
        EXPECT_GT(j["baseline_pairs_per_s"].get<double>(), 0.0);
        ++records;
    }
    EXPECT_EQ(records, 3);
}

// bench run: one JSON line per N whose record time is the sum of its parts and whose counts follow from
// --steps and --every; no timing is asserted (speed is measured, not asserted).
TEST(Cli, BenchRunReportsWholeRunsAndWhereARecordsTimeGoes) {
    const Result r = cli("bench run --json --n 200,300 --d 2 --steps 8 --every 2");
    ASSERT_EQ(r.code, 0) << r.out;
    std::istringstream lines(r.out);
    std::string line;
    std::vector<long> ns;
    while (std::getline(lines, line)) {
        const auto j = nlohmann::json::parse(line);
        ns.push_back(j["n"].get<long>());
        EXPECT_EQ(j["steps"], 8);
        EXPECT_EQ(j["every"], 2);
        const double parts = j["record_ms_download"].get<double>() + j["record_ms_pass"].get<double>() +
                             j["record_ms_moments"].get<double>() + j["record_ms_clusters"].get<double>();
        EXPECT_NEAR(parts, j["record_ms"].get<double>(), 1e-9 + 1e-9 * parts);
        EXPECT_GT(j["steps_per_second"].get<double>(), 0.0);
        // 4 records in 8 steps (t = 2, 4, 6, 8): records per second are half the steps per second.
        EXPECT_NEAR(j["records_per_second"].get<double>() / j["steps_per_second"].get<double>(), 0.5, 1e-9);
        EXPECT_GT(j["ratio_to_stepping_alone"].get<double>(), 0.0);
    }
    EXPECT_EQ(ns, (std::vector<long>{200, 300}));
    // --method: Dormand-Prince records the same counts (it lands on every nominal step).
    const Result dp = cli("bench run --json --n 100 --d 2 --steps 4 --every 2 --method dopri5");
    ASSERT_EQ(dp.code, 0) << dp.out;
    const auto j = nlohmann::json::parse(dp.out);
    EXPECT_EQ(j["method"], "dopri5");
    EXPECT_NEAR(j["records_per_second"].get<double>() / j["steps_per_second"].get<double>(), 0.5, 1e-9);
    EXPECT_EQ(cli("bench run --help").code, 0); // what scripts probe to see whether a build has it
    for (const char* bad : {"--every 0", "--steps -1", "--d 0", "--n 0", "--frobnicate", "--method rk5"}) {
        const Result b = cli(std::string("bench run ") + bad);
        EXPECT_EQ(b.code, 2) << bad << ": " << b.out;
    }
}

// bench view: the particle view drawn headless while the app's run steps. With gl every frame draws the run's
// device copy of the tokens (the app's path, through a second context of the share group); with vulkan the
// snapshot's tokens are uploaded. The last frame has points in it. No timing is asserted.
TEST(Cli, BenchViewDrawsTheRunWhileItStepsOnEachBackend) {
    int ran = 0;
    for (const std::string backend : {"gl", "vulkan", "cpu"}) {
        const Result r =
            cli("bench view --json --backend " + backend + " --n 300 --d 3 --seconds 0.3 --fps 0");
        if (r.code != 0 && (r.out.find("unavailable") != std::string::npos ||
                            r.out.find("not in this build") != std::string::npos)) {
            std::printf("[ skipped  ] %s", r.out.c_str());
            continue;
        }
        ASSERT_EQ(r.code, 0) << r.out;
        const auto j = nlohmann::json::parse(r.out);
        EXPECT_EQ(j["n"], 300);
        EXPECT_GT(j["frames"].get<long>(), 0);
        EXPECT_GT(j["steps_per_second"].get<double>(), 0.0);
        EXPECT_GT(j["steps_per_second_alone"].get<double>(), 0.0);
        EXPECT_LE(j["records_per_second"].get<double>(), j["steps_per_second"].get<double>() + 1e-9);
        EXPECT_GT(j["lit_fraction"].get<double>(), 0.0) << "the last frame shows no points";
        EXPECT_GE(j["vertex_uploads"].get<long>(), 1); // the colours (gl) or the positions
        if (backend == "gl") {
            EXPECT_EQ(j["frames_from_device"], j["frames"]) << r.out;
        } else {
            EXPECT_EQ(j["frames_from_device"], 0) << r.out;
        }
        ++ran;
    }
    if (ran == 0) GTEST_SKIP() << "bench view draws nowhere on this machine";
    EXPECT_EQ(cli("bench view --help").code, 0);
    for (const char* bad : {"--size 10x10", "--size big", "--fps -1", "--seconds 0", "--every 0",
                            "--backend metal", "--n 0", "--frobnicate"}) {
        const Result b = cli(std::string("bench view ") + bad);
        EXPECT_EQ(b.code, 2) << bad << ": " << b.out;
    }
}

TEST(Cli, RanksWritesHistogramsAndRejectsBadOptions) {
    const fs::path dir = tempDir();
    const fs::path out = dir / "ranks.json";
    const Result r = cli("ranks --attention softmax --v identity --method adaptive --dims 3 --runs 4 --out " +
                         out.string());
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("histogram"), std::string::npos) << r.out;
    const nlohmann::json j = readJson(out);
    EXPECT_EQ(j["parameters"]["attention"], "softmax");
    EXPECT_EQ(j["parameters"]["q_seed"], 40);
    EXPECT_EQ(j["parameters"]["threshold"], 0.1);
    ASSERT_EQ(j["dimensions"].size(), 1u);
    const nlohmann::json& d3 = j["dimensions"][0];
    EXPECT_EQ(d3["d"], 3);
    ASSERT_EQ(d3["histogram"].size(), 4u); // bins 0..d
    long counted = 0;
    for (const auto& c : d3["histogram"]) counted += c.get<long>();
    EXPECT_EQ(counted + d3["exceptions"].get<long>(), 4);
    EXPECT_EQ(d3["non_converged"], 0);
    EXPECT_EQ(d3["exact_rank_histogram"][2], 4); // V = I: the exact limit has rank ceil(d/2)
    EXPECT_EQ(d3["runs"].size(), 4u);

    // Bad options: exit code 2, one message naming the option, nothing written.
    const fs::path bad = dir / "bad.json";
    const Result a = cli("ranks --attention sinkhorn --out " + bad.string());
    EXPECT_EQ(a.code, 2);
    EXPECT_NE(a.out.find("--attention"), std::string::npos) << a.out;
    const Result b = cli("ranks --dims 3,x --out " + bad.string());
    EXPECT_EQ(b.code, 2);
    EXPECT_NE(b.out.find("--dims"), std::string::npos) << b.out;
    EXPECT_EQ(cli("ranks --runs 0").code, 2);
    EXPECT_EQ(cli("ranks --threshold -1").code, 2);
    EXPECT_EQ(cli("ranks --frobnicate 3").code, 2);
    EXPECT_FALSE(fs::exists(bad));
    fs::remove_all(dir);
}

TEST(Cli, MomentsReportsTheBlowUpTimeAndRefusesNonGaussianVariants) {
    // Fig 1 lower panel (T2): Sigma' = 2 eps Sigma^2 from [[2, 0.5], [0.5, 1]], eps = 0.1: t_max
    // = 2.2654091966.
    const fs::path dir = tempDir();
    writeText(dir / "fig1.json", R"({"name": "fig1b", "d": 2, "n": 10,
      "initial": {"cov": [[2, 0.5], [0.5, 1]]},
      "attention": {"type": "softmax", "heads": [{"V": 0.1}]},
      "integrator": {"T": 5, "steps": 50, "rtol": 1e-10}})");
    const Result r = cli("moments " + (dir / "fig1.json").string() + " --out " + (dir / "m.json").string());
    ASSERT_EQ(r.code, 0) << r.out;
    const nlohmann::json j = readJson(dir / "m.json");
    ASSERT_EQ(j["count"], 1);
    const auto& tr = j["trajectories"][0];
    EXPECT_EQ(tr["event"]["kind"], "blow-up");
    EXPECT_NEAR(tr["event"]["t_max"].get<double>(), 2.2654091966, 1e-6);
    EXPECT_EQ(tr["times"].size(), tr["covs"].size());
    EXPECT_EQ(tr["covs"][0][0][0], 2.0);

    // The trace-1 grid of Fig 2(a): 10 x 10 on [-0.5, 0.5]^2 keeps 100 initial covariances.
    writeText(dir / "grid.json", R"({"name": "grid", "d": 2, "n": 10,
      "attention": {"type": "softmax", "heads": [{"Q": 1, "K": -1, "V": 1}]},
      "integrator": {"T": 1, "steps": 4},
      "moments": {"grid": {"nu": 10, "nc": 10, "limits": [-0.5, 0.5, -0.5, 0.5]}}})");
    const Result g =
        cli("moments " + (dir / "grid.json").string() + " --final-only --out " + (dir / "g.json").string());
    ASSERT_EQ(g.code, 0) << g.out;
    const nlohmann::json gj = readJson(dir / "g.json");
    EXPECT_EQ(gj["count"], 100);
    EXPECT_EQ(gj["trajectories"][0]["times"].size(), 2u);

    // The same grid as .npy: (R, K, d, d) covariances with means and times beside them; the JSON's last
    // state is the array's last record of each trajectory (the rest NaN-padded where a run ended early).
    const Result n = cli("moments " + (dir / "grid.json").string() + " --out " + (dir / "g.npy").string());
    ASSERT_EQ(n.code, 0) << n.out;
    const flowscope::NpyArray covs = flowscope::readNpy((dir / "g.npy").string()),
                              means = flowscope::readNpy((dir / "g_means.npy").string()),
                              times = flowscope::readNpy((dir / "g_times.npy").string());
    ASSERT_EQ(covs.shape.size(), 4u);
    EXPECT_EQ(covs.shape[0], 100);
    EXPECT_EQ(covs.shape[2], 2);
    EXPECT_EQ(means.shape, (std::vector<std::int64_t>{100, covs.shape[1], 2}));
    EXPECT_EQ(times.shape, (std::vector<std::int64_t>{100, covs.shape[1]}));
    for (int r = 0; r < 100; ++r) {
        const auto& last = gj["trajectories"][r];
        std::size_t k = 0; // the last finite record
        while (k + 1 < std::size_t(covs.shape[1]) && std::isfinite(times.data[r * covs.shape[1] + k + 1]))
            ++k;
        EXPECT_EQ(times.data[r * covs.shape[1] + k], last["times"][1].get<double>()) << r;
        EXPECT_EQ(covs.data[(r * covs.shape[1] + k) * 4 + 1], last["covs"][1][0][1].get<double>()) << r;
    }
    const Result both =
        cli("moments " + (dir / "grid.json").string() + " --final-only --out " + (dir / "f.npy").string());
    EXPECT_EQ(both.code, 2);
    EXPECT_NE(both.out.find("--final-only"), std::string::npos) << both.out;
    EXPECT_FALSE(fs::exists(dir / "f.npy"));

    // ReLU has no closed moment ODE: exit 2, the field named, nothing written.
    writeText(dir / "relu.json", R"({"d": 2, "n": 10, "attention": {"type": "relu"}})");
    const Result bad = cli("moments " + (dir / "relu.json").string() + " --out " + (dir / "r.json").string());
    EXPECT_EQ(bad.code, 2);
    EXPECT_NE(bad.out.find("/attention/type"), std::string::npos) << bad.out;
    EXPECT_FALSE(fs::exists(dir / "r.json"));
}

// --- Flows and Transformers ---

TEST(Cli, TrainSampleAndDensityOfAFlow) {
    const fs::path dir = tempDir();
    const std::string model = (dir / "moons.safetensors").string();
    const std::string tiny = " --iters 12 --batch 64 --layers 2 --width 8 --eval-every 6";
    Result r = cli("train --dataset moons" + tiny + " --out " + model);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("MMD2"), std::string::npos) << r.out;
    const nlohmann::json record = readJson(dir / "moons.json");
    EXPECT_EQ(record["curve"]["loss"].size(), 12u);
    EXPECT_EQ(record["architecture"]["layers"], 2);
    EXPECT_TRUE(record["architecture"]["rwpo"].get<bool>());
    EXPECT_TRUE(record["architecture"]["exact_log_det"].get<bool>()); // the default for d = 2
    EXPECT_TRUE(record["architecture"]["leave_one_out"].get<bool>()); // the default
    EXPECT_FALSE(record["architecture"]["train_lambda"].get<bool>()); // λ is kept at λ₀ by default
    EXPECT_GT(record["beta"].get<double>(), 0.0);
    EXPECT_TRUE(record["metrics"]["grid_mass"].is_number());
    EXPECT_EQ(record["training"]["average_iterations"], 200); // the default
    EXPECT_EQ(record["training"]["resample_every"], 1);   // a fresh batch every iteration (the RWPO default)
    EXPECT_EQ(record["training"]["clip_to_median"], 5.0); // spikes capped at 5 x the recent median
    EXPECT_EQ(record["training"]["reference_draws"], 8);  // the density: a mixture over 8 key draws
    EXPECT_EQ(record["training"]["reference_size"], 64);  // of the batch's size
    EXPECT_EQ(record["architecture"]["hjb_weight"], 0.0); // no HJB term with the RWPO layer by default
    EXPECT_TRUE(record["curve"]["clipped"].is_array());
    EXPECT_NE(r.out.find("gradients clipped"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("mass"), std::string::npos) << r.out;

    r = cli("sample " + model + " --n 150 --batch 100 --out " + (dir / "s.npy").string());
    ASSERT_EQ(r.code, 0) << r.out;
    const flowscope::NpyArray s = flowscope::readNpy((dir / "s.npy").string());
    EXPECT_EQ(s.shape, (std::vector<std::int64_t>{150, 2}));
    // Same seed, same samples.
    ASSERT_EQ(cli("sample " + model + " --n 150 --batch 100 --out " + (dir / "t.npy").string()).code, 0);
    EXPECT_EQ(flowscope::readNpy((dir / "t.npy").string()).data, s.data);

    r = cli("density " + model + " --grid 24 --reference 200 --out " + (dir / "d.npy").string());
    ASSERT_EQ(r.code, 0) << r.out;
    const flowscope::NpyArray d = flowscope::readNpy((dir / "d.npy").string());
    EXPECT_EQ(d.shape, (std::vector<std::int64_t>{24, 24}));
    EXPECT_NE(r.out.find("mass on the grid"), std::string::npos);

    // Points from a CSV, the plain baseline.
    writeText(dir / "pts.csv", "x,y\n0,0\n1,1\n2,0.5\n-1,0.3\n");
    r = cli("train --data " + (dir / "pts.csv").string() + " --no-rwpo --jitter 0.1" + tiny + " --out " +
            (dir / "p.safetensors").string());
    ASSERT_EQ(r.code, 0) << r.out;
    {
        const nlohmann::json plainRecord = readJson(dir / "p.json");
        EXPECT_EQ(plainRecord["training"]["resample_every"], 25); // OT-Flow's, without RWPO
        EXPECT_EQ(plainRecord["architecture"]["hjb_weight"], 0.1);
        EXPECT_EQ(plainRecord["training"]["reference_draws"], 0); // no keys without the layer
    }
    // 3-D points with the RWPO layer: both log-dets are exact there too (cofactors); 4-D ones default to
    // first order and refuse exact.
    writeText(dir / "pts3.csv", "0,0,0\n1,1,1\n2,0.5,0\n-1,0.3,1\n0.5,0.5,0.5\n");
    r = cli("train --data " + (dir / "pts3.csv").string() + " --jitter 0.1" + tiny + " --out " +
            (dir / "q.safetensors").string());
    ASSERT_EQ(r.code, 0) << r.out;
    const nlohmann::json record3 = readJson(dir / "q.json");
    EXPECT_TRUE(record3["architecture"]["exact_log_det"].get<bool>());
    EXPECT_TRUE(record3["architecture"]["exact_drift_log_det"].get<bool>());
    writeText(dir / "pts4.csv", "0,0,0,1\n1,1,1,0\n2,0.5,0,1\n-1,0.3,1,0\n0.5,0.5,0.5,2\n");
    r = cli("train --data " + (dir / "pts4.csv").string() + " --jitter 0.1" + tiny + " --out " +
            (dir / "q.safetensors").string());
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_FALSE(readJson(dir / "q.json")["architecture"]["exact_log_det"].get<bool>());
    r = cli("train --data " + (dir / "pts4.csv").string() + " --rwpo-logdet exact" + tiny + " --out " +
            (dir / "q.safetensors").string());
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("--rwpo-logdet: exact needs points of dimension 2 or 3"), std::string::npos)
        << r.out;
    r = cli("train --dataset moons --rwpo-logdet second-order" + tiny + " --out " + model);
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("--rwpo-logdet: \"second-order\""), std::string::npos) << r.out;
    // The paper's settings back: its own key in each softmax, λ learned.
    const std::string paper = (dir / "paper.safetensors").string();
    r = cli("train --dataset moons --include-self --train-lambda" + tiny + " --out " + paper);
    ASSERT_EQ(r.code, 0) << r.out;
    const nlohmann::json paperRecord = readJson(dir / "paper.json");
    EXPECT_FALSE(paperRecord["architecture"]["leave_one_out"].get<bool>());
    EXPECT_TRUE(paperRecord["architecture"]["train_lambda"].get<bool>());
    r = cli("train --dataset moons --include-self --leave-one-out" + tiny + " --out " + paper);
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("--include-self and --leave-one-out"), std::string::npos) << r.out;
    r = cli("train --dataset moons --freeze-lambda --train-lambda" + tiny + " --out " + paper);
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("--freeze-lambda and --train-lambda"), std::string::npos) << r.out;
}

TEST(Cli, FlowCommandsRejectBadInputWithOneMessage) {
    const fs::path dir = tempDir();
    Result r = cli("train --dataset spirals --out " + (dir / "m.safetensors").string());
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("--dataset"), std::string::npos) << r.out;
    r = cli("train --dataset moons --batch 1 --out " + (dir / "m.safetensors").string());
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("--batch"), std::string::npos) << r.out;
    for (const std::string option : {"--average-iters -1", "--clip-median -1", "--resample-every -1",
                                     "--reference-draws 0", "--reference-size 1", "--hjb-weight -0.5"}) {
        r = cli("train --dataset moons " + option + " --out " + (dir / "m.safetensors").string());
        EXPECT_EQ(r.code, 2) << option;
        EXPECT_NE(r.out.find(option.substr(0, option.find(' '))), std::string::npos) << r.out;
    }
    writeText(dir / "bad.safetensors", "not a model");
    r = cli("sample " + (dir / "bad.safetensors").string() + " --out " + (dir / "s.npy").string());
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("bad.safetensors"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(dir / "s.npy"));
    r = cli("train --data " + (dir / "missing.csv").string() + " --out " + (dir / "m.safetensors").string());
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("--data"), std::string::npos) << r.out;
}

TEST(Cli, TrainAndEvaluateContinuousTimeTransformers) {
    const fs::path dir = tempDir();
    const std::string a = (dir / "a.safetensors").string(), b = (dir / "b.safetensors").string();
    Result r = cli("train-transformer --task A --lambda-ot 4 --steps 4 --iters 30 --eval-sets 50 "
                   "--average-iters 7 --out " +
                   a);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("stability threshold"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("closed-form"), std::string::npos) << r.out;
    const nlohmann::json record = readJson(dir / "a.json");
    EXPECT_EQ(record["curve"]["loss"].size(), 30u);
    EXPECT_EQ(record["architecture"]["steps"], 4);
    EXPECT_EQ(record["training"]["task"], "A");
    EXPECT_EQ(record["training"]["average_iterations"], 7);
    EXPECT_GE(record["metrics"]["loss"].get<double>(), record["metrics"]["optimal_loss"].get<double>());

    r = cli("train-transformer --task B --steps 2 --iters 3 --batch 4 --width 4 --eval-sets 20 "
            "--drop-rates 0,0.5 --out " +
            b);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("accuracy"), std::string::npos) << r.out;
    // The evaluation of the saved model on the training run's held-out sets gives the run's numbers again.
    const nlohmann::json brec = readJson(dir / "b.json");
    r = cli("eval-transformer " + b + " --sets 20 --seed " +
            std::to_string(brec["training"]["data_seed"].get<long>()) + " --drop-rates 0,0.5 --out " +
            (dir / "e.json").string());
    ASSERT_EQ(r.code, 0) << r.out;
    const nlohmann::json eval = readJson(dir / "e.json");
    EXPECT_EQ(eval["drop_rates"]["accuracy"], brec["drop_rates"]["accuracy"]);
    EXPECT_EQ(eval["evaluation"]["loss"], brec["metrics"]["loss"]);

    // Bad input: one message naming the option or the file, exit code 2, nothing written.
    r = cli("train-transformer --task C --out " + a);
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("task"), std::string::npos) << r.out;
    r = cli("train-transformer --task A --steps 0 --out " + a);
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("--steps"), std::string::npos) << r.out;
    r = cli("train-transformer --task A --average-iters -1 --out " + a);
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("--average-iters"), std::string::npos) << r.out;
    r = cli("train-transformer --task A --drop-rates 0.1 --out " + a);
    EXPECT_EQ(r.code, 2);
    r = cli("eval-transformer " + a + " --drop-rates 0.1");
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("task B"), std::string::npos) << r.out;
    writeText(dir / "junk.safetensors", "not a model");
    r = cli("eval-transformer " + (dir / "junk.safetensors").string());
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("junk.safetensors"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(dir / "junk.json"));
    fs::remove_all(dir);
}

// --- Share strings ---

namespace {

std::string readBytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

} // namespace

TEST(Cli, AShareStringRunsExactlyTheRunOfItsScene) {
    const fs::path dir = tempDir();
    writeText(dir / "scene.json", kSmallScene);
    const Result s = cli("share " + (dir / "scene.json").string());
    ASSERT_EQ(s.code, 0) << s.out;
    ASSERT_EQ(s.out.rfind("fs1.", 0), 0u) << s.out;
    ASSERT_EQ(s.out.find('\n'), s.out.size() - 1) << "one line: " << s.out;
    const std::string text = s.out.substr(0, s.out.size() - 1);

    ASSERT_EQ(cli("simulate " + (dir / "scene.json").string() + " --out " + (dir / "a.npy").string()).code,
              0);
    const Result r = cli("simulate '" + text + "' --out " + (dir / "b.npy").string());
    ASSERT_EQ(r.code, 0) << r.out;
    const std::string a = readBytes(dir / "a.npy");
    EXPECT_GT(a.size(), 1000u);
    EXPECT_TRUE(a == readBytes(dir / "b.npy")) << "the trajectories differ";
    EXPECT_EQ(readBytes(dir / "a.json"), readBytes(dir / "b.json"));

    // Decoded to a file (atomically: nothing else left in the directory), it is the same scene again.
    const Result d = cli("share --decode '" + text + "' --out " + (dir / "back.json").string());
    ASSERT_EQ(d.code, 0) << d.out;
    const Result again = cli("share " + (dir / "back.json").string());
    EXPECT_EQ(again.out, s.out);
    for (const auto& e : fs::directory_iterator(dir))
        EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();

    // moments takes one too.
    const Result m = cli("moments '" + text + "' --final-only --out " + (dir / "m.json").string());
    EXPECT_EQ(m.code, 0) << m.out;
    fs::remove_all(dir);
}

TEST(Cli, ABadShareStringExitsWithCodeTwoNamingTheProblemAndWritesNothing) {
    const fs::path dir = tempDir();
    writeText(dir / "scene.json", kSmallScene);
    const std::string out = (dir / "x.npy").string();
    std::string text = cli("share " + (dir / "scene.json").string()).out;
    text.pop_back();

    std::string bad = text;
    bad[12] = '$';
    Result r = cli("simulate '" + bad + "' --out " + out);
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("share string: invalid character '$' at position 13"), std::string::npos) << r.out;
    r = cli("simulate " + text.substr(0, text.size() - 7) + " --out " + out);
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("share string: truncated"), std::string::npos) << r.out;
    r = cli("moments fs7" + text.substr(3) + " --out " + out);
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("share string: unknown version 'fs7'"), std::string::npos) << r.out;
    r = cli("share --decode fs1.AAAAAAAA --out " + (dir / "back.json").string());
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("share string: corrupt compressed data"), std::string::npos) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << "one message: " << r.out;
    EXPECT_FALSE(fs::exists(out));
    EXPECT_FALSE(fs::exists(dir / "back.json"));

    EXPECT_EQ(cli("share").code, 2);                           // no scene
    EXPECT_EQ(cli("share " + text + " --out x.json").code, 2); // --out without --decode
    EXPECT_EQ(cli("share " + (dir / "missing.json").string()).code, 2);
    fs::remove_all(dir);
}

// --- Hostile input ---

namespace {

// Runs flowscope-cli with `args` (argv words, no shell), its output to a file; returns the exit code, the
// output and the child's peak resident memory in kilobytes (wait4's rusage: this run only).
struct MeasuredRun {
    int code = -1;
    std::string out;
    long maxRssKb = 0;
};

MeasuredRun runMeasured(std::vector<std::string> words, const fs::path& log) {
    words.insert(words.begin(), FLOWSCOPE_CLI);
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = 0;
    MeasuredRun r;
    const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) return r;
    int status = 0;
    struct rusage usage {};
    if (wait4(pid, &status, 0, &usage) != pid) return r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.maxRssKb = usage.ru_maxrss;
    std::ifstream in(log);
    r.out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return r;
}

std::string fileTokenScene(const fs::path& path) {
    return R"({"d": 2, "n": 4, "initial": {"kind": "file", "path": ")" + path.string() +
           R"("}, "attention": {"type": "softmax"}, "integrator": {"T": 0.1, "steps": 2}})";
}

} // namespace

// A 5 MB unknown key gave a 10 MB message; option values are echoed cut short too.
TEST(Cli, MessagesQuotingHugeInputStayShort) {
    const fs::path dir = tempDir();
    writeText(dir / "huge.json",
              R"({"d": 2, "n": 4, ")" + std::string(std::size_t(5) << 20, 'k') + R"(": 1, "attention": {}})");
    Result r = cli("simulate " + (dir / "huge.json").string() + " --out " + (dir / "x.npy").string());
    EXPECT_EQ(r.code, 2);
    EXPECT_LT(r.out.size(), 1024u) << r.out.substr(0, 2000);
    EXPECT_NE(r.out.find("unknown field"), std::string::npos) << r.out.substr(0, 2000);
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out.substr(0, 2000);
    writeText(dir / "scene.json", kSmallScene);
    const std::string long100k(100000, '7');
    for (const std::string& args :
         {"simulate " + (dir / "scene.json").string() + " --every x" + long100k, "ranks --runs " + long100k,
          "ranks --threshold x" + long100k, "ranks --" + long100k, "train --dataset " + long100k,
          "simulate --backend " + long100k, long100k}) {
        r = cli(args);
        EXPECT_EQ(r.code, 2) << args.substr(0, 40);
        EXPECT_LT(r.out.size(), 1024u) << r.out.substr(0, 2000);
    }
    EXPECT_FALSE(fs::exists(dir / "x.npy"));
    fs::remove_all(dir);
}

// A number too small for a normal double (4e-320) is a number, not "not a number".
TEST(Cli, SubnormalOptionValuesAreNumbers) {
    const fs::path dir = tempDir();
    // --lr is read before --reference-size: a refused --lr would be the first message.
    const Result r =
        cli("train --dataset moons --lr 4e-320 --reference-size 1 --out " + (dir / "m.safetensors").string());
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("--reference-size"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("--lr"), std::string::npos) << r.out;
    fs::remove_all(dir);
}

// A directory or a FIFO as the token file read "file not found"; a FIFO must never block the run.
TEST(Cli, TokenPathThatIsNoRegularFileIsRefusedWithoutBlocking) {
    const fs::path dir = tempDir();
    fs::create_directory(dir / "dir.npy");
    ASSERT_EQ(::mkfifo((dir / "fifo.npy").c_str(), 0600), 0);
    writeText(dir / "d.json", fileTokenScene(dir / "dir.npy"));
    writeText(dir / "f.json", fileTokenScene(dir / "fifo.npy"));
    Result r = cli("simulate " + (dir / "d.json").string() + " --out " + (dir / "x.npy").string());
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("/initial/path: is a directory"), std::string::npos) << r.out;
    r = flowscope::test::runCli(
        FLOWSCOPE_CLI, "simulate " + (dir / "f.json").string() + " --out " + (dir / "x.npy").string(),
        "timeout 30");
    EXPECT_EQ(r.code, 2) << "124: blocked on the FIFO";
    EXPECT_NE(r.out.find("/initial/path: is not a regular file"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(dir / "x.npy"));
    fs::remove_all(dir);
}

// A wrong-shaped token file of 1 GiB (sparse: no disk) was read in full, 3 GB resident, before its shape was
// checked; the header alone decides.
TEST(Cli, WrongShapedTokenFileIsRefusedBeforeItsDataIsRead) {
    const fs::path dir = tempDir();
    const fs::path npy = dir / "big.npy";
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (134217728, 2), }";
    header += std::string(64 - (10 + header.size() + 1) % 64, ' ') + "\n";
    std::ofstream(npy, std::ios::binary)
        << std::string("\x93NUMPY\x01\x00", 8) << char(header.size()) << '\0' << header;
    ASSERT_EQ(::truncate(npy.c_str(), off_t(10 + header.size()) + (off_t(1) << 30)), 0);
    writeText(dir / "scene.json", fileTokenScene(npy));
    const MeasuredRun r = runMeasured(
        {"simulate", (dir / "scene.json").string(), "--out", (dir / "x.npy").string()}, dir / "log");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("/initial/path"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("(4, 2)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("(134217728, 2)"), std::string::npos) << r.out;
    EXPECT_LT(r.maxRssKb, 200 * 1024) << "peak resident memory";
    EXPECT_FALSE(fs::exists(dir / "x.npy"));
    fs::remove_all(dir);
}

// A bad --data file is bad input: exit code 2, "--data: " and why.
TEST(Cli, TrainWithABadDataFileNamesTheOption) {
    const fs::path dir = tempDir();
    writeText(dir / "text.csv", "x,y\nfoo,bar\n");
    writeText(dir / "ragged.csv", "1,2\n3\n");
    writeText(dir / "nan.csv", "1,2\nnan,4\n");
    writeText(dir / "big.csv", "1e999,2\n3,4\n");
    writeText(dir / "single.csv", "1,2\n");
    std::string wide;
    for (int c = 0; c < 65; ++c) wide += c ? ",1" : "1";
    writeText(dir / "wide.csv", wide + "\n" + wide + "\n" + wide + "\n");
    writeText(dir / "junk.npy", "not an npy file");
    fs::create_directory(dir / "dir.csv");
    for (const std::string name : {"missing.csv", "text.csv", "ragged.csv", "nan.csv", "big.csv",
                                   "single.csv", "wide.csv", "junk.npy", "dir.csv"}) {
        const Result r = cli("train --data " + (dir / name).string() + " --iters 2 --quiet --out " +
                             (dir / "m.safetensors").string());
        EXPECT_EQ(r.code, 2) << name << ": " << r.out;
        EXPECT_EQ(r.out.rfind("flowscope-cli train: --data: ", 0), 0u) << name << ": " << r.out;
        EXPECT_FALSE(fs::exists(dir / "m.safetensors")) << name;
    }
    fs::remove_all(dir);
}

// A Gaussian-mode grid entirely outside the unit disc ran no trajectory and reported success.
TEST(Cli, MomentsGridOutsideTheDiscIsRefused) {
    const fs::path dir = tempDir();
    writeText(dir / "grid.json", R"({"d": 2, "n": 10, "attention": {"type": "softmax", "heads": [{"V": 1}]},
      "integrator": {"T": 1, "steps": 4}, "moments": {"grid": {"nu": 4, "nc": 4, "limits": [1.5, 2, -1, 1]}}})");
    const Result r = cli("moments " + (dir / "grid.json").string() + " --out " + (dir / "m.json").string());
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("/moments/grid"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(dir / "m.json"));
    fs::remove_all(dir);
}

// A model with huge but finite weights evaluated to NaN and exited 0: a non-finite evaluation is a failure.
TEST(Cli, EvalTransformerWithNonFiniteOutputsFails) {
    const fs::path dir = tempDir();
    const std::string model = (dir / "m.safetensors").string(), huge = (dir / "huge.safetensors").string();
    Result r = cli("train-transformer --task A --iters 2 --eval-sets 10 --quiet --out " + model);
    ASSERT_EQ(r.code, 0) << r.out;
    flowscope::SafeTensors file = flowscope::readSafetensors(model);
    for (flowscope::SafeTensor& t : file.tensors)
        for (double& v : t.data) v = v == 0 ? 1e30 : v * 1e30;
    flowscope::writeSafetensors(huge, file);
    r = cli("eval-transformer " + huge + " --sets 10 --out " + (dir / "e.json").string());
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("not finite"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("huge.safetensors"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("nan"), std::string::npos) << r.out;
    if (fs::exists(dir / "e.json")) {
        std::ifstream in(dir / "e.json");
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        EXPECT_EQ(text.find("NaN"), std::string::npos) << text;
    }
    fs::remove_all(dir);
}

// theory influence: the profile of engine/dynamics/PositionalInfluence.h at the scene's horizon (or --t) as
// CSV or JSON, the same numbers; scenes outside its setting and bad options are refused naming the field.
TEST(Cli, TheoryInfluenceWritesTheProfileAndRefusesOtherScenes) {
    const fs::path dir = tempDir();
    const std::string preset = std::string(FLOWSCOPE_PRESET_DIR) + "/lost-in-the-middle.json";
    const Result r = cli("theory influence " + preset + " --t 1.266 --out " + (dir / "u.csv").string());
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("U-shaped (least at position"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("the mean-field U lasts until t = 3.11"), std::string::npos) << r.out;
    std::ifstream csv(dir / "u.csv");
    std::string line;
    std::getline(csv, line);
    EXPECT_EQ(line, "index,s,influence,mean_field");
    std::vector<double> influence, meanField;
    while (std::getline(csv, line)) {
        std::istringstream row(line);
        std::string cell[4];
        for (std::string& c : cell) std::getline(row, c, ',');
        EXPECT_EQ(std::stol(cell[0]), long(influence.size()));
        EXPECT_DOUBLE_EQ(std::stod(cell[1]), (double(influence.size()) + 0.5) / 256);
        influence.push_back(std::stod(cell[2]));
        meanField.push_back(std::stod(cell[3]));
    }
    ASSERT_EQ(influence.size(), 255u);
    // Primacy and recency about a minimum inside, the scene's N close to the mean field's limit.
    const auto least = std::min_element(influence.begin(), influence.end()) - influence.begin();
    EXPECT_GT(least, 0);
    EXPECT_LT(least, 254);
    EXPECT_NEAR(influence[128], meanField[128], 0.02 * meanField[128]);

    const Result j = cli("theory influence " + preset + " --t 1.266 --out " + (dir / "u.json").string());
    ASSERT_EQ(j.code, 0) << j.out;
    const nlohmann::json doc = readJson(dir / "u.json");
    EXPECT_EQ(doc["n"], 256);
    EXPECT_EQ(doc["u_shaped"], true);
    EXPECT_EQ(doc["argmin"], least);
    ASSERT_EQ(doc["influence"].size(), 255u);
    EXPECT_NEAR(doc["influence"][7].get<double>(), influence[7], 1e-15 * influence[7]);
    EXPECT_NEAR(doc["u_shape_end_time"].get<double>(), 3.1113, 1e-4);

    const Result late = cli("theory influence " + preset + " --t 6 --set /attention/masked=false");
    ASSERT_EQ(late.code, 0) << late.out;
    EXPECT_NE(late.out.find("index,s,influence,mean_field\n0,"), std::string::npos); // the CSV on stdout
    EXPECT_NE(late.out.find("unmasked"), std::string::npos) << late.out;

    const std::string out = (dir / "no.csv").string();
    flowscope::test::expectRefused(
        cli("theory influence " + preset + " --set /attention/type=exp --out " + out), "/attention/type",
        out);
    flowscope::test::expectRefused(cli("theory influence " + preset + " --set /d=3 --out " + out), "/d", out);
    flowscope::test::expectRefused(cli("theory influence " + preset + " --t -1 --out " + out), "--t", out);
    flowscope::test::expectRefused(cli("theory influence " + preset + " --width 0 --out " + out), "--width",
                                   out);
    flowscope::test::expectRefused(cli("theory influence " + preset + " --width 1e9 --out " + out), "--width",
                                   out);
    flowscope::test::expectRefused(cli("theory influence " + preset + " --set /n=20000 --out " + out), "/n",
                                   out);
    flowscope::test::expectRefused(cli("theory influence " + preset + " --out " + (dir / "x.txt").string()),
                                   ".csv or .json", (dir / "x.txt").string());
    flowscope::test::expectRefused(cli("theory " + preset), "sub-command", out);
    flowscope::test::expectRefused(cli("theory influence " + preset + " --t 1e5 --out " + out), "too long",
                                   out);
}
