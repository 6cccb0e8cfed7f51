// flowscope-cli infer and sample on posterior flows: the outputs as a set, the sampler of the saved model,
// and bad problem files refused with the field named.
#include "../CliRun.h"
#include "engine/inverse/PosteriorIo.h"
#include "engine/io/Npy.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using flowscope::test::cli;
using flowscope::test::CliResult;
using flowscope::test::TempDir;

TEST(InferCli, WritesTheModelItsRecordAndSamplesAndSampleReadsTheModel) {
    TempDir dir("infer");
    const fs::path model = dir.path() / "p.safetensors", samples = dir.path() / "s.npy";
    const CliResult r = cli("infer linear-gaussian --iters 30 --every 10 --summary-samples 500 --out " +
                            model.string() + " --samples " + samples.string());
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("iter     30"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("relative L1 error of the mean"), std::string::npos) << r.out;
    ASSERT_TRUE(fs::exists(model) && fs::exists(dir.path() / "p.json") && fs::exists(samples));
    const flowscope::NpyArray s = flowscope::readNpy(samples.string());
    EXPECT_EQ(s.shape, (std::vector<std::int64_t>{500, 2}));
    nlohmann::json record;
    std::ifstream(dir.path() / "p.json") >> record;
    EXPECT_EQ(record["format"], "flowscope-posterior");
    EXPECT_EQ(record["training"]["iterations"], 30);
    EXPECT_EQ(record["training"]["curve"].size(), 30u);
    EXPECT_EQ(record["training"]["outside_samples"], 0); // the linear model has no domain to leave
    EXPECT_EQ(record["training"]["rejected_steps"], 0);
    EXPECT_DOUBLE_EQ(record["summary"]["lambda"].get<double>(), 0.05); // frozen by default

    // sample on the saved model gives the in-process sampler's draws, bit for bit.
    const fs::path more = dir.path() / "more.npy";
    const CliResult s2 = cli("sample " + model.string() + " --n 300 --seed 7 --out " + more.string());
    ASSERT_EQ(s2.code, 0) << s2.out;
    const flowscope::NpyArray got = flowscope::readNpy(more.string());
    ASSERT_EQ(got.shape, (std::vector<std::int64_t>{300, 2}));
    const flowscope::inverse::LoadedPosterior loaded = flowscope::inverse::loadPosterior(model.string());
    const flowscope::inverse::Matrix X = loaded.flow->sample(300, 7);
    for (int j = 0; j < 300; ++j)
        for (int i = 0; i < 2; ++i) ASSERT_EQ(got.data[std::size_t(j * 2 + i)], X(i, j));
    EXPECT_EQ(cli("sample " + model.string() + " --base z.npy --out " + more.string()).code, 2);
}

TEST(InferCli, BadProblemsExitTwoNamingTheFieldAndWriteNothing) {
    TempDir dir("infer-bad");
    const fs::path problem = dir.path() / "bad.json", out = dir.path() / "p.safetensors";
    std::ofstream(problem) << R"({"model": {"type": "linear", "G": [[1, 0]]}, "noise": 0.1,
        "prior": {"type": "gaussian", "mean": 0, "sd": [1, -2]}, "truth": [1, 2]})";
    CliResult r = cli("infer " + problem.string() + " --out " + out.string());
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("/prior/sd"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(out));
    r = cli("infer no-such-problem --out " + out.string());
    EXPECT_EQ(r.code, 2) << r.out;
    r = cli("infer linear-gaussian");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("--out"), std::string::npos) << r.out;
    r = cli("infer linear-gaussian --rwpo --no-rwpo --out " + out.string());
    EXPECT_EQ(r.code, 2) << r.out;
    r = cli("infer linear-gaussian --no-rwpo --train-lambda --out " + out.string());
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("--train-lambda"), std::string::npos) << r.out;
    r = cli("infer linear-gaussian --iters 0 --out " + out.string());
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_FALSE(fs::exists(out));
}
