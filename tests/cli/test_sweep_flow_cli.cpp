// flowscope-cli sweep in the training modes (docs/sweeps.md#flow-sweeps): a flow sweep's cell is the train
// command it prints, a posterior sweep's cell is infer on the problem it prints, and bad settings are refused
// before any training, naming the field.
#include "../CliRun.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

namespace fs = std::filesystem;
using flowscope::test::cli;
using flowscope::test::CliResult;
using flowscope::test::readJson;
using flowscope::test::TempDir;

namespace {

// Two cells (λ0) of a tiny flow, one replicate: two trainings of 5 steps on a batch of 64.
const char* kFlowSpec = R"({
  "name": "flow-tiny",
  "mode": "flow",
  "base": {"dataset": "8gaussians", "layers": 2, "batch": 64, "iterations": 5, "reference_draws": 1},
  "axes": [{"pointer": "/lambda0", "values": [0.05, 0.2]}],
  "measures": ["kl", "mmd2", "nll", "lambda", "beta", "rejected", "seconds"]
})";

// The table as columns by name.
std::map<std::string, std::vector<double>> readTable(const fs::path& csv) {
    std::ifstream in(csv);
    std::string line;
    std::getline(in, line);
    std::vector<std::string> names;
    std::stringstream header(line);
    for (std::string name; std::getline(header, name, ',');) names.push_back(name);
    std::map<std::string, std::vector<double>> table;
    while (std::getline(in, line)) {
        std::stringstream row(line);
        std::string cell;
        for (std::size_t c = 0; c < names.size() && std::getline(row, cell, ','); ++c)
            table[names[c]].push_back(std::strtod(cell.c_str(), nullptr));
    }
    return table;
}

} // namespace

TEST(SweepFlowCli, AFlowSweepCellIsTheTrainCommandItPrints) {
    TempDir tmp("sweep-flow");
    std::ofstream(tmp.file("flow.json")) << kFlowSpec;
    const CliResult r = cli("sweep " + tmp.file("flow.json") + " --out " + tmp.file("out") + " --jobs 1");
    ASSERT_EQ(r.code, 0) << r.out;
    auto t = readTable(tmp.file("out") + "/results.csv");
    ASSERT_EQ(t["run"].size(), 2u);
    for (const char* column : {"lambda0", "kl", "mmd2", "nll", "lambda", "beta", "rejected", "seconds"})
        ASSERT_EQ(t[column].size(), 2u) << column;
    // Paired seeds: both cells train replicate 0 from the spec's seed (default 1).
    EXPECT_EQ(t["seed"][0], 1);
    EXPECT_EQ(t["seed"][1], 1);
    for (int k = 0; k < 2; ++k) {
        // λ is frozen by default: the trained flow keeps λ0 (through softplus and its inverse in float32).
        EXPECT_NEAR(t["lambda"][k], t["lambda0"][k], 1e-6 * t["lambda0"][k]);
        EXPECT_GT(t["beta"][k], 0);
        EXPECT_TRUE(std::isfinite(t["kl"][k]));
        EXPECT_GT(t["seconds"][k], 0);
        EXPECT_EQ(t["rejected"][k], 0);
    }
    // The two λ0 give two different flows, and the entropy NLL - KL is the dataset's, the same in both.
    EXPECT_NE(t["kl"][0], t["kl"][1]);
    EXPECT_NEAR(t["nll"][0] - t["kl"][0], t["nll"][1] - t["kl"][1], 1e-12);

    // Run 1 as train runs it: the same seeds, settings and thread count give the same numbers.
    const CliResult print = cli("sweep " + tmp.file("flow.json") + " --print-run 1");
    ASSERT_EQ(print.code, 0) << print.out;
    std::string line = print.out.substr(0, print.out.find('\n'));
    ASSERT_EQ(line.rfind("flowscope-cli train ", 0), 0u) << line;
    EXPECT_NE(line.find("--lambda0 0.2"), std::string::npos) << line;
    EXPECT_NE(line.find("--seed 1"), std::string::npos) << line;
    EXPECT_NE(line.find("--iters 5"), std::string::npos) << line;
    const CliResult train = cli(line.substr(std::string("flowscope-cli ").size()) + " --quiet --out " +
                                tmp.file("m.safetensors"));
    ASSERT_EQ(train.code, 0) << train.out;
    const nlohmann::json metrics = readJson(tmp.file("m.json"))["metrics"];
    EXPECT_EQ(metrics["kl"].get<double>(), t["kl"][1]);
    EXPECT_EQ(metrics["mmd2"].get<double>(), t["mmd2"][1]);

    // The sweep less itself, paired by seed: every cell's difference is 0 (two cells, and the colour bar's
    // five ticks of the range [0, 0]).
    const CliResult plot = cli("sweep plot " + tmp.file("out") + " --minus " + tmp.file("out") +
                               " --x lambda0 --y seed --measure kl --out " + tmp.file("d.svg"));
    ASSERT_EQ(plot.code, 0) << plot.out;
    std::ifstream in(tmp.file("d.svg"));
    const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(svg.find("flow-tiny - flow-tiny: kl"), std::string::npos);
    std::size_t zeros = 0;
    for (std::size_t at = svg.find(">0</text>"); at != std::string::npos; at = svg.find(">0</text>", at + 1))
        ++zeros;
    EXPECT_EQ(zeros, 7u) << svg;
}

TEST(SweepFlowCli, APosteriorSweepCellIsInferOnTheProblemItPrints) {
    TempDir tmp("sweep-posterior");
    std::ofstream(tmp.file("post.json")) << R"({
      "mode": "posterior", "base": "linear-gaussian",
      "set": {"/flow/iterations": 20, "/flow/batch": 64, "/flow/layers": 2},
      "axes": [{"pointer": "/flow/lambda0", "values": [0.05]}],
      "measures": ["kl", "rel_l1", "misfit", "outside", "rejected"], "seed": 3})";
    const CliResult r = cli("sweep " + tmp.file("post.json") + " --out " + tmp.file("out") + " --jobs 1");
    ASSERT_EQ(r.code, 0) << r.out;
    auto t = readTable(tmp.file("out") + "/results.csv");
    ASSERT_EQ(t["kl"].size(), 1u);
    // A reverse KL against the closed-form posterior: >= 0 up to its Monte Carlo error (4096 samples).
    EXPECT_GT(t["kl"][0], -0.01);
    EXPECT_TRUE(std::isfinite(t["kl"][0]));
    EXPECT_EQ(t["outside"][0], 0);

    const CliResult print = cli("sweep " + tmp.file("post.json") + " --print-run 0");
    ASSERT_EQ(print.code, 0) << print.out;
    std::ofstream(tmp.file("problem.json")) << print.out;
    const CliResult infer =
        cli("infer " + tmp.file("problem.json") + " --out " + tmp.file("p.safetensors") + " --seed 3");
    ASSERT_EQ(infer.code, 0) << infer.out;
    const nlohmann::json summary = readJson(tmp.file("p.json"))["summary"];
    EXPECT_EQ(summary["relative_l1_error"].get<double>(), t["rel_l1"][0]);
    EXPECT_EQ(summary["misfit"].get<double>(), t["misfit"][0]);
}

TEST(SweepFlowCli, BadSettingsExitTwoNamingTheField) {
    TempDir tmp("sweep-flow-bad");
    const auto expectRefused = [&](const nlohmann::ordered_json& spec, const std::string& message) {
        std::ofstream(tmp.file("bad.json")) << spec.dump();
        flowscope::test::expectRefused(cli("sweep " + tmp.file("bad.json") + " --out " + tmp.file("out")),
                                       message, tmp.file("out"));
    };
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(kFlowSpec);
    j["base"]["lambdaa"] = 0.1;
    expectRefused(j, "error: /base/lambdaa: unknown field \"lambdaa\"");
    j = nlohmann::ordered_json::parse(kFlowSpec);
    j["base"]["layers"] = 0;
    expectRefused(j, "error: /base/layers: expected an integer in [1, 256], got \"0\"");
    j = nlohmann::ordered_json::parse(kFlowSpec);
    j["base"]["kernel"] = "gaussian";
    expectRefused(j, "error: /base/kernel: expected corrected, as-printed or separable");
    j = nlohmann::ordered_json::parse(kFlowSpec);
    j["axes"][0]["values"][1] = -1;
    expectRefused(j, "error: /axes/0/values/1: sets /lambda0 to -1: /lambda0: expected a positive number");
    j = nlohmann::ordered_json::parse(kFlowSpec);
    j["axes"][0]["pointer"] = "/lamda0";
    expectRefused(j, "sets /lamda0 to 0.05: /lamda0: unknown training setting");
    j = nlohmann::ordered_json::parse(kFlowSpec);
    j["measures"] = {"clusters"};
    expectRefused(j, "error: /measures/0: measure clusters is for particle runs");
    j = nlohmann::ordered_json::parse(kFlowSpec);
    j["base"]["seed"] = 4;
    expectRefused(j, "error: /base/seed: a run's seed is the sweep's \"seed\" plus its replicate");
    j = nlohmann::ordered_json::parse(kFlowSpec);
    j["axes"][0]["pointer"] = "/seed"; // an axis on the seed would be overwritten by the pairing
    expectRefused(j, "error: /axes/0: a training run's seed is the sweep's \"seed\" plus its replicate");
    j = nlohmann::ordered_json::parse(kFlowSpec);
    j["seed_initial"] = false;
    expectRefused(j, "error: /seed_initial: seed_initial is for scenes");
}
