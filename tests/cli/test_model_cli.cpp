// flowscope-cli model: bad checkpoints exit 2 with one message naming the key; the hidden states' shape; the
// Gram histograms; and the scene of a head, run by flowscope-cli simulate. The numbers of every layer are
// checked against NumPy by tests/python/test_models.py.
#include "../CliRun.h"
#include "../ModelFiles.h"

#include "engine/io/Npy.h"
#include "engine/models/ModelAnalysis.h"
#include "engine/scene/Scene.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using namespace flowscope;
using flowscope::test::cli;
using flowscope::test::expectRefused;
using flowscope::test::TempDir;

TEST(ModelCli, LayersWritesEveryHiddenState) {
    TempDir dir;
    const test::TinyModel m = test::writeTinyGpt2(dir.path() / "gpt2", true);
    const std::string out = dir.file("h.npy");
    auto r = cli("model layers " + m.dir + " --ids 3,1,4,1,5 --out " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    NpyArray a = readNpy(out);
    EXPECT_EQ(a.shape, (std::vector<std::int64_t>{3, 5, 12}));
    EXPECT_EQ(readNpyHeader(out).itemSize, 4);
    r = cli("model layers " + m.dir + " --ids 3,1,4 --layers 1 --float64 --out " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(readNpy(out).shape, (std::vector<std::int64_t>{2, 3, 12}));
    EXPECT_EQ(readNpyHeader(out).itemSize, 8);
}

TEST(ModelCli, BadCheckpointsExitTwoNamingTheKey) {
    TempDir dir;
    const test::TinyModel m = test::writeTinyGpt2(dir.path() / "gpt2");
    const std::string st = m.dir + "/model.safetensors", out = dir.file("h.npy");
    const std::string run = "model layers " + m.dir + " --ids 1,2 --out " + out;

    SafeTensors missing = m.tensors;
    missing.tensors.pop_back(); // ln_f.bias
    writeSafetensors(st, missing);
    expectRefused(cli(run), "tensor 'ln_f.bias' is missing", out);

    SafeTensors shape = m.tensors;
    shape.tensors[0].shape = {12, 40}; // wte.weight transposed
    writeSafetensors(st, shape);
    expectRefused(cli(run), "tensor 'wte.weight' has shape [12, 40], expected [40, 12]", out);

    // A header whose offsets lie: wpe.weight's end moved past the payload.
    writeSafetensors(st, m.tensors);
    {
        std::ifstream in(st, std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), {});
        std::uint64_t n = 0;
        for (int i = 0; i < 8; ++i)
            n |= std::uint64_t(static_cast<unsigned char>(bytes[std::size_t(i)])) << (8 * i);
        nlohmann::json header = nlohmann::json::parse(bytes.substr(8, n));
        header["wpe.weight"]["data_offsets"][1] =
            header["wpe.weight"]["data_offsets"][1].get<std::uint64_t>() + (1u << 30);
        const std::string text = header.dump(), payload = bytes.substr(8 + n);
        bytes.clear();
        for (int i = 0; i < 8; ++i) bytes += char(std::uint64_t(text.size()) >> (8 * i));
        bytes += text + payload;
        std::ofstream(st, std::ios::binary) << bytes;
    }
    expectRefused(cli(run), "tensor 'wpe.weight': data_offsets", out);

    // A file cut short: its last tensor, ln_f.bias, lies past the end.
    writeSafetensors(st, m.tensors);
    fs::resize_file(st, fs::file_size(st) - 20);
    expectRefused(cli(run), "tensor 'ln_f.bias': data_offsets", out);

    writeSafetensors(st, m.tensors);
    expectRefused(cli("model layers " + m.dir + " --ids 1,40 --out " + out),
                  "--ids: expected an integer in [0, 39]", out);
    expectRefused(cli("model layers " + m.dir + " --ids 1 --layers 3 --out " + out),
                  "--layers: expected an integer in [1, 2]", out);
    expectRefused(cli("model layers " + m.dir + " --text hi --out " + out), "vocab.json: file not found",
                  out);
    expectRefused(cli("model layers " + dir.file("nowhere") + " --ids 1 --out " + out),
                  "config.json: file not found", out);
}

TEST(ModelCli, GramHistogramsCountEveryPairOnce) {
    TempDir dir;
    const test::TinyModel m = test::writeTinyAlbert(dir.path() / "albert");
    const auto r = cli("model gram " + m.dir + " --ids 1,2,3,4,5,6,7 --layers 0,3,6 --bins 20 --out " +
                       dir.file("g.json"));
    ASSERT_EQ(r.code, 0) << r.out;
    std::ifstream in(dir.file("g.json"));
    const nlohmann::json j = nlohmann::json::parse(in);
    EXPECT_EQ(j["pairs"], 21);
    EXPECT_EQ(j["bin_edges"].size(), 21u);
    EXPECT_EQ(j["mean_cosine"].size(), 7u); // layers 0..6
    // The cluster count of every layer: between 1 and the 7 tokens, at the tolerance written beside it.
    ASSERT_EQ(j["clusters"].size(), 7u);
    for (int c : j["clusters"]) {
        EXPECT_GE(c, 1);
        EXPECT_LE(c, 7);
    }
    EXPECT_EQ(j["cluster_tol"], models::kGramClusterTol);
    for (const auto& counts : j["counts"]) {
        long total = 0;
        for (long c : counts) total += c;
        EXPECT_EQ(total, 21);
    }
    for (const auto& density : j["density"]) {
        double mass = 0;
        for (double d : density) mass += d * 0.1;
        EXPECT_NEAR(mass, 1.0, 1e-12);
    }
    // A figure, and the same data beside it.
    const auto f = cli("model gram " + m.dir + " --ids 1,2,3,4,5,6,7 --layers 0,3,6 --bins 20 --out " +
                       dir.file("f.svg"));
    ASSERT_EQ(f.code, 0) << f.out;
    EXPECT_TRUE(fs::exists(dir.file("f.svg")));
    std::ifstream data(dir.file("f.json"));
    EXPECT_EQ(nlohmann::json::parse(data), j);
}

// Several inputs in one figure (model gram with --ids twice): each input runs alone, so its histograms,
// mean cosines and cluster counts are exactly those of a run of it by itself; the top level keeps the first
// input's (the single-input layout); the figure has a legend entry per input. The other sub-commands take
// one input.
TEST(ModelCli, SeveralInputsAreEachTheRunOfThatInputAlone) {
    TempDir dir;
    const test::TinyModel m = test::writeTinyGpt2(dir.path() / "gpt2");
    const std::string a = "1,2,3,4,5,6,7", b = "9,8,7,6,5";
    const std::string common = " --layers 0,1,2 --bins 20 --out ";
    auto run = [&](const std::string& inputs, const std::string& out) {
        const auto r = cli("model gram " + m.dir + inputs + common + dir.file(out));
        EXPECT_EQ(r.code, 0) << r.out;
        std::ifstream in(dir.file(out));
        return nlohmann::json::parse(in);
    };
    const nlohmann::json both = run(" --ids " + a + " --ids " + b, "both.json");
    const nlohmann::json onlyA = run(" --ids " + a, "a.json");
    const nlohmann::json onlyB = run(" --ids " + b, "b.json");
    ASSERT_EQ(both["inputs"].size(), 2u);
    ASSERT_EQ(onlyA["inputs"].size(), 1u);
    EXPECT_EQ(both["inputs"][0], onlyA["inputs"][0]);
    EXPECT_EQ(both["inputs"][1], onlyB["inputs"][0]);
    EXPECT_EQ(both["inputs"][0]["pairs"], 21);
    EXPECT_EQ(both["inputs"][1]["pairs"], 10);
    EXPECT_EQ(both["inputs"][1]["input"], "ids " + b);
    for (const char* key : {"pairs", "counts", "density", "mean_cosine", "clusters", "bin_edges", "layers"})
        EXPECT_EQ(both[key], onlyA[key]) << key;
    // The inputs differ, so the test tells them apart.
    EXPECT_NE(both["inputs"][0]["density"], both["inputs"][1]["density"]);

    const auto f = cli("model gram " + m.dir + " --ids " + a + " --ids " + b + common + dir.file("f.svg"));
    ASSERT_EQ(f.code, 0) << f.out;
    std::ifstream svgFile(dir.file("f.svg"));
    const std::string svg((std::istreambuf_iterator<char>(svgFile)), std::istreambuf_iterator<char>());
    EXPECT_NE(svg.find("1: ids " + a), std::string::npos);
    EXPECT_NE(svg.find("2: ids " + b), std::string::npos);
    EXPECT_NE(svg.find("2 inputs"), std::string::npos);

    expectRefused(
        cli("model layers " + m.dir + " --ids " + a + " --ids " + b + " --out " + dir.file("h.npy")),
        "model layers takes one input", dir.file("h.npy"));
    // An input of one token is refused before any runs, by its place and its ids.
    expectRefused(cli("model gram " + m.dir + " --ids " + a + " --ids 5" + common + dir.file("one.json")),
                  "input 2 (ids 5): the histograms need at least two tokens", dir.file("one.json"));
}

TEST(ModelCli, TheSceneOfAHeadRunsInSimulate) {
    TempDir dir;
    for (const bool gpt2 : {true, false}) {
        const test::TinyModel m =
            gpt2 ? test::writeTinyGpt2(dir.path() / "gpt2") : test::writeTinyAlbert(dir.path() / "albert");
        const std::string scene = dir.file("scene.json");
        auto r = cli("model scene " + m.dir + " --ids 5,1,9,2 --layer 1 --head 1 --out " + scene);
        ASSERT_EQ(r.code, 0) << r.out;
        const Scene s = loadScene(scene);
        EXPECT_EQ(s.d, m.D);
        EXPECT_EQ(s.n, 4);
        r = cli("simulate " + scene + " --out " + dir.file("traj.npy"));
        ASSERT_EQ(r.code, 0) << r.out;
        EXPECT_EQ(readNpy(dir.file("traj.npy")).shape, (std::vector<std::int64_t>{11, 4, std::int64_t(m.D)}));
        expectRefused(
            cli("model scene " + m.dir + " --ids 5,1 --layer 1 --head 5 --out " + dir.file("s2.json")),
            "--head: expected an integer in [0, " + std::to_string(m.H - 1) + "]", dir.file("s2.json"));
    }
}

// model gram --log: every bar of the figure is log10 of its bin's density on whole decades, from the one
// below the least filled bin's (the density of its count over the pairs and the bin width) to the one at or
// above the fullest; an empty bin has no bar. Read from the SVG's rectangles (a panel is 200 high).
TEST(ModelCli, GramLogDrawsLog10OfTheDensities) {
    TempDir dir;
    const test::TinyModel m = test::writeTinyGpt2(dir.path() / "gpt2");
    const auto r =
        cli("model gram " + m.dir + " --ids 3,1,4,1,5,9,2,6,5,3,5,8 --layers 2 --bins 30 --log --out " +
            dir.file("g.svg"));
    ASSERT_EQ(r.code, 0) << r.out;
    const nlohmann::json j = test::readJson(dir.file("g.json"));
    EXPECT_EQ(j["density_scale"], "log");
    const std::vector<long> counts = j["counts"][0];
    const double pairs = j["pairs"], width = 2.0 / 30;
    double least = INFINITY, most = 0;
    for (long c : counts)
        if (c > 0) least = std::min(least, c / pairs / width), most = std::max(most, c / pairs / width);
    const double bottom = std::floor(std::log10(least) - 1e-12), top = std::ceil(std::log10(most) - 1e-12);
    EXPECT_NEAR(j["density_axis"][0].get<double>(), std::pow(10.0, bottom), 1e-12);
    EXPECT_NEAR(j["density_axis"][1].get<double>(), std::pow(10.0, top), 1e-12);
    std::vector<double> expected; // the heights of the bars, left to right: the non-empty bins
    for (long c : counts)
        if (c > 0) expected.push_back(200.0 * (std::log10(c / pairs / width) - bottom) / (top - bottom));
    ASSERT_LT(expected.size(), counts.size()) << "the test needs an empty bin";

    std::ifstream in(dir.file("g.svg"));
    const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<double> heights;
    for (std::size_t at = svg.find("<rect x="); at != std::string::npos; at = svg.find("<rect x=", at + 1)) {
        const std::size_t h = svg.find("height=\"", at) + 8;
        heights.push_back(std::stod(svg.substr(h, svg.find('"', h) - h)));
    }
    ASSERT_EQ(heights.size(), expected.size());
    for (std::size_t k = 0; k < heights.size(); ++k)
        EXPECT_NEAR(heights[k], expected[k], 0.006) << "bar " << k; // the SVG has two decimals
}

// bench model at a tiny size: one row per precision with the fields the other benches give (medians, the
// one-thread baseline and its ratio, float64 against float32), whose checksum of the hidden states (sum of
// |x|) is that of model layers on the same random checkpoint (written here from the same shape and seed)
// and the same ids, 7919 i mod V. With --model and several --ode-steps, one row per step count, whose
// distance to the finest run falls as the steps grow (RK4: by about 2^4 a doubling) and is 0 at the finest.
TEST(ModelCli, BenchModelTimesTheForwardPassOfTheCheckpointItSays) {
    TempDir dir;
    auto rowsOf = [](const std::string& out) {
        std::vector<nlohmann::json> rows;
        std::istringstream lines(out);
        for (std::string line; std::getline(lines, line);) rows.push_back(nlohmann::json::parse(line));
        return rows;
    };
    auto r =
        cli("bench model --json --width 12 --heads 3 --layers 2 --tokens 9 --repeats 2 --seed 5 --no-ode");
    ASSERT_EQ(r.code, 0) << r.out;
    std::vector<nlohmann::json> rows = rowsOf(r.out);
    ASSERT_EQ(rows.size(), 2u) << r.out;
    models::Gpt2Shape shape = models::gpt2SmallShape();
    shape.width = 12, shape.heads = 3, shape.layers = 2;
    models::writeRandomGpt2(dir.path() / "random", shape, true, 5);
    std::string ids;
    for (int i = 0; i < 9; ++i) ids += (i ? "," : "") + std::to_string(7919L * i % shape.vocab);
    for (const bool float64 : {false, true}) {
        const nlohmann::json& row = rows[float64 ? 1 : 0];
        EXPECT_EQ(row["bench"], "model");
        EXPECT_EQ(row["precision"], float64 ? "float64" : "float32");
        EXPECT_EQ(row["tokens"], 9);
        EXPECT_EQ(row["layers"], 2);
        EXPECT_EQ(row["width"], 12);
        for (const char* key :
             {"weights_ms", "forward_ms", "one_thread_ms", "ratio_to_one_thread", "gflops_per_s"})
            EXPECT_GT(row[key].get<double>(), 0.0) << key;
        EXPECT_EQ(row.contains("ratio_to_float32"), float64);
        const std::string out = dir.file(float64 ? "h64.npy" : "h32.npy");
        const auto layers = cli("model layers " + (dir.path() / "random").string() + " --ids " + ids +
                                " --out " + out + (float64 ? " --float64" : ""));
        ASSERT_EQ(layers.code, 0) << layers.out;
        double sum = 0;
        for (const double v : readNpy(out).data) sum += std::abs(v);
        EXPECT_NEAR(row["checksum"].get<double>(), sum, 1e-9 * sum) << row;
    }

    const test::TinyModel m = test::writeTinyGpt2(dir.path() / "gpt2");
    r = cli("bench model --json --model " + m.dir +
            " --tokens 9 --repeats 1 --precision float32 --no-baseline --ode-head 1 --ode-steps 1,2,4,8");
    ASSERT_EQ(r.code, 0) << r.out;
    rows = rowsOf(r.out);
    ASSERT_EQ(rows.size(), 5u) << r.out;
    EXPECT_TRUE(rows[0]["one_thread_ms"].is_null());
    double previous = INFINITY;
    for (std::size_t k = 1; k < rows.size(); ++k) {
        const nlohmann::json& row = rows[k];
        EXPECT_EQ(row["bench"], "model-ode");
        EXPECT_EQ(row["head"], 1);
        EXPECT_EQ(row["steps"], 2 * row["steps_per_layer"].get<int>());
        EXPECT_EQ(row["recorded_layers"], 2);
        EXPECT_GT(row["ode_ms"].get<double>(), 0.0);
        EXPECT_EQ(row["finest_steps_per_layer"], 8);
        const double d = row["max_distance_to_finest"];
        if (k < rows.size() - 1) EXPECT_LT(d, previous / 4) << row;
        previous = d;
    }
    EXPECT_EQ(previous, 0.0);
    EXPECT_GT(rows[3]["max_distance_to_finest"].get<double>(), 0.0);
    // A bad size is one message naming the option.
    expectRefused(cli("bench model --tokens 2000"), "--tokens: GPT-2's context holds 1024 positions", "");
    // A checkpoint that would not fit is refused before anything is written (8192-wide: 9.7e9 parameters).
    expectRefused(cli("bench model --width 8192 --heads 64"),
                  "--width/--layers: the random checkpoint would hold", "");
}
