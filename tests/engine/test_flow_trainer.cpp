// The flow training loop, the sampler that inverts the training map, and trained models on disk
// (engine/flows/Trainer.h, Flow.h, FlowIo.h, engine/io/Safetensors.h). Oracles: exact inverses (encode of
// generate is the identity up to the solver tolerance), bit-for-bit reproducibility, and the documented
// rejection rules.
#include "TestUtil.h"

#include "engine/core/Parallel.h"
#include "engine/flows/Datasets.h"
#include "engine/flows/FlowIo.h"
#include "engine/flows/Metrics.h"
#include "engine/flows/Sampling.h"
#include "engine/flows/Trainer.h"
#include "engine/io/Safetensors.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace flowscope;
using namespace flowscope::flows;
using flowscope::test::tempPath;

// --- Helpers ---

namespace {

TrainerConfig tinyConfig(bool rwpo) {
    TrainerConfig c;
    c.flow.width = 8;
    c.flow.layers = 3;
    c.flow.rwpo = rwpo;
    c.batch = 64;
    c.evalSamples = 64;
    c.adam.lr = 0.05;
    c.dataset = "8gaussians";
    return c;
}

// d x n standard normal draws of Rng(seed), in precision S.
template <class S = float> ad::Matrix<S> normals(int d, int n, std::uint64_t seed) {
    Rng rng(seed);
    ad::Matrix<S> Z(d, n);
    for (Eigen::Index i = 0; i < Z.size(); ++i) Z(i) = S(rng.normal());
    return Z;
}

// The sampler tests' flows: `layers` layers of width 8, model seed `seed`.
FlowConfig samplerFlow(int layers, std::uint64_t seed = 0) {
    FlowConfig c;
    c.width = 8;
    c.layers = layers;
    c.seed = seed;
    return c;
}

} // namespace

// --- FlowTrainer ---

TEST(FlowTrainer, SameSeedSameRunBitForBit) {
    for (bool rwpo : {false, true}) {
        FlowTrainer a(tinyConfig(rwpo)), b(tinyConfig(rwpo));
        for (int k = 0; k < 30; ++k) { // crosses a batch resample (every 25)
            a.step();
            b.step();
        }
        ASSERT_EQ(a.history().size(), 30u);
        EXPECT_EQ(a.history().back().terms.loss, b.history().back().terms.loss) << rwpo;
        EXPECT_EQ(a.model().params().phi.w, b.model().params().phi.w) << rwpo;
        EXPECT_NE(a.history().front().terms.loss, a.history().back().terms.loss) << "parameters never moved";
    }
}

TEST(FlowTrainer, SplitBatchGivesTheWholeBatchLossAndGradient) {
    // The trainer records the batch in parts, one per thread, on their own tapes in parallel (the RWPO
    // layer's attention across all of them, BatchSplit.h); the result is the whole batch's. Two threads (two
    // parts of 150 and 151) and four (four parts of 75 and 76).
    const int threads = threadCount();
    for (const auto& [rwpo, parts] : {std::pair{false, 2}, {true, 2}, {true, 4}}) {
        SCOPED_TRACE(std::to_string(parts) + " parts");
        setThreadCount(parts);
        TrainerConfig c = tinyConfig(rwpo);
        c.batch = 301; // odd: unequal halves
        FlowTrainer t(c);
        FlowParams<float> g;
        const LossTerms whole = t.model().lossAndGradient(t.batch(), g);
        double norm2 = 0;
        t.model().params().forEach(
            g, c.flow, [&](auto&, auto& grad, const std::string&) { norm2 += double(grad.squaredNorm()); });
        t.step();
        const TrainRecord& r = t.history().front();
        EXPECT_NEAR(r.terms.loss, whole.loss, 1e-5 * std::abs(whole.loss)) << rwpo;
        EXPECT_NEAR(r.terms.hjb, whole.hjb, 1e-5 * std::abs(whole.hjb) + 1e-7) << rwpo;
        EXPECT_NEAR(r.gradientNorm, std::sqrt(norm2), 1e-4 * std::sqrt(norm2)) << rwpo;
    }
    setThreadCount(threads);
}

TEST(FlowTrainer, TrainingLowersTheHeldOutNll) {
    TrainerConfig c = tinyConfig(false);
    c.evalSamples = 512;
    FlowTrainer t(c);
    const double before = t.evaluate().nll;
    for (int k = 0; k < 150; ++k) t.step();
    const Evaluation after = t.evaluate();
    std::printf("[ trainer ] held-out NLL %.3f -> %.3f, KL %.3f, MMD2 %.2e\n", before, after.nll, after.kl,
                after.mmd2);
    EXPECT_LT(after.nll, before - 0.3);
    EXPECT_TRUE(std::isfinite(after.kl));
    EXPECT_GT(after.mmd2, -0.05);
}

TEST(FlowTrainer, GridMassOfTheIdentityFlowIsTheGaussianMassOfTheBox) {
    // w = A = c = 0 makes φ constant: the flow is the identity and its density the N(0, I) base, whose mass
    // on the evaluation's box [-L, L]² (L = 1.25 max |held-out coordinate|) is erf(L / √2)².
    FlowTrainer t(tinyConfig(false));
    PotentialParams<float>& phi = t.model().params().phi;
    phi.w.setZero();
    phi.A.setZero();
    phi.c.setZero();
    const double L = 1.25 * double(t.heldOut().cwiseAbs().maxCoeff());
    const double expected = std::pow(std::erf(L / std::sqrt(2.0)), 2);
    const Evaluation e = t.evaluate();
    std::printf("[ trainer ] identity flow: grid mass %.6f, Gaussian mass of [-%.2f, %.2f]^2 %.6f\n",
                e.gridMass, L, L, expected);
    EXPECT_NEAR(e.gridMass, expected, 1e-4);
}

TEST(FlowTrainer, AveragedParametersFollowTheRecursionAndLeaveTrainingAlone) {
    // Averaging over K = 3: τ_k = min(3, (k + 9) / 10) is 1 for k = 1 (a = θ_1), then 1.1, 1.2, ... 3.
    // The iterates are those of a run without averaging, bit for bit; evaluation and saved files use a.
    for (bool rwpo : {false, true}) {
        TrainerConfig c = tinyConfig(rwpo);
        c.flow.trainLambda = true; // (frozen by default) so that λ has an average of its own
        FlowTrainer plain(c);
        c.averageIterations = 3;
        FlowTrainer averaged(c);
        EXPECT_EQ(&plain.evaluatedModel(), &plain.model()); // without averaging: the iterate itself
        ad::Matrix<float> a;
        for (int k = 1; k <= 25; ++k) {
            ASSERT_TRUE(plain.step());
            ASSERT_TRUE(averaged.step());
            const ad::Matrix<float>& theta = plain.model().params().phi.K0;
            ASSERT_EQ(averaged.model().params().phi.K0, theta) << k;
            const float w = float(1.0 / std::min(3.0, (k + 9) / 10.0));
            a = k == 1 ? theta : ad::Matrix<float>(a + w * (theta - a));
            ASSERT_EQ(averaged.evaluatedModel().params().phi.K0, a) << k;
        }
        EXPECT_NE(a, averaged.model().params().phi.K0);
        if (rwpo) { // the average is a model of its own: λ, β and the reference go with it
            EXPECT_EQ(averaged.evaluatedModel().reference(), averaged.model().reference());
            EXPECT_NE(averaged.evaluatedModel().params().lambdaRaw, averaged.model().params().lambdaRaw);
        }
        const std::string path = tempPath(rwpo ? "avg-rwpo.safetensors" : "avg.safetensors").string();
        saveFlow(path, averaged, 1.0);
        EXPECT_EQ(loadFlow(path).params().phi.K0, a);
        std::ifstream in(configPathFor(path));
        EXPECT_EQ(nlohmann::json::parse(in)["training"]["average_iterations"], 3);
    }
}

TEST(FlowTrainer, NonFiniteStepsAreRejectedHalvedRestoredAndStopped) {
    FlowTrainer t(tinyConfig(false));
    for (int k = 0; k < 5; ++k) ASSERT_TRUE(t.step());
    const double lr = t.learningRate();
    const ad::Matrix<float> good = t.model().params().phi.w;
    // A NaN in the parameters (as a diverged update would leave): every loss is NaN until they are restored.
    t.model().params().phi.w(0, 0) = std::numeric_limits<float>::quiet_NaN();
    for (int k = 0; k < 2; ++k) {
        EXPECT_TRUE(t.step());
        EXPECT_TRUE(t.history().back().rejected);
    }
    EXPECT_NEAR(t.learningRate(), lr / 4, 1e-12 * lr);
    EXPECT_TRUE(t.step()); // the third rejection restores the checkpoint (the initial parameters here)
    ASSERT_EQ(t.events().size(), 3u);
    EXPECT_NE(t.events()[0].message.find("learning rate halved"), std::string::npos) << t.events()[0].message;
    EXPECT_NE(t.events()[2].message.find("restored"), std::string::npos) << t.events()[2].message;
    EXPECT_TRUE(t.model().params().phi.w.allFinite());
    EXPECT_TRUE(t.step());
    EXPECT_FALSE(t.history().back().rejected);
    // Accepted steps undo the three halvings in 150 steps: the rate is back on its schedule.
    EXPECT_NEAR(t.learningRateScale(), 0.125 * std::exp2(1.0 / 50.0), 1e-12); // one good step so far
    for (int k = 0; k < 160; ++k) ASSERT_TRUE(t.step());
    EXPECT_EQ(t.learningRateScale(), 1.0);

    // Data whose loss overflows float whatever the parameters: no checkpoint cures it; 20 in a row stop.
    TrainerConfig c = tinyConfig(false);
    c.dataset = "";
    c.points = 1e30 * sampleDataset("moons", 20, 1);
    FlowTrainer s(c);
    for (int k = 0; k < 30 && s.step(); ++k) {
    }
    EXPECT_TRUE(s.stopped());
    EXPECT_NE(s.events().back().message.find("training stopped"), std::string::npos);
    EXPECT_FALSE(s.step());
}

TEST(FlowTrainer, BadConfigurationsNameTheField) {
    TrainerConfig c = tinyConfig(true);
    c.batch = 1;
    EXPECT_NE(test::errorOf([&] { FlowTrainer t(c); }).find("batch"), std::string::npos);
    c = tinyConfig(true);
    c.dataset = "spiral";
    EXPECT_NE(test::errorOf([&] { FlowTrainer t(c); }).find("dataset"), std::string::npos);
    c = tinyConfig(true);
    c.adam.lr = std::nan("");
    EXPECT_NE(test::errorOf([&] { FlowTrainer t(c); }).find("adam.lr"), std::string::npos);
    c = tinyConfig(true);
    c.dataset = "";
    c.points = Mat::Random(10, 3);
    EXPECT_NE(test::errorOf([&] { FlowTrainer t(c); }).find("points"), std::string::npos);
    c = tinyConfig(true);
    c.referenceDraws = 0;
    EXPECT_NE(test::errorOf([&] { FlowTrainer t(c); }).find("referenceDraws"), std::string::npos);
    c = tinyConfig(true);
    c.referenceSize = 1;
    EXPECT_NE(test::errorOf([&] { FlowTrainer t(c); }).find("referenceSize"), std::string::npos);
    c.referenceSize = 10; // 3 draws of 10 points
    c.referenceDraws = 3;
    EXPECT_EQ(FlowTrainer(c).model().reference().cols(), 30);
}

TEST(FlowTrainer, EveryReferenceDrawIsASampleOfTheWholeLaw) {
    // 2spirals lists one spiral, then the other: the draws must be separate samples, not blocks of one.
    // Oracle: MMD² of each draw against the held-out set is that of a sample of the law, against the one
    // of a block of one long call (a single spiral).
    TrainerConfig c = tinyConfig(true);
    c.dataset = "2spirals";
    c.batch = 300;
    c.evalSamples = 600;
    c.referenceDraws = 2;
    const FlowTrainer t(c);
    const Eigen::MatrixXf held = t.heldOut().transpose();
    auto mmd = [&](const ad::Matrix<float>& keys) {
        return mmd2Unbiased(Eigen::MatrixXf(keys.transpose()), held);
    };
    const double block = mmd(toColumns(sampleDataset("2spirals", 600, 3)).leftCols(300));
    for (int r = 0; r < 2; ++r) {
        const double draw = mmd(t.model().referenceDraw(r));
        std::printf("[ trainer ] 2spirals reference draw %d: MMD² %.2e (a block of one call: %.2e)\n", r,
                    draw, block);
        EXPECT_LT(draw, 0.1 * block) << r;
    }
    EXPECT_NE(t.model().referenceDraw(0), t.model().referenceDraw(1));
}

TEST(FlowTrainer, TrainsOnUserPoints) {
    TrainerConfig c = tinyConfig(true);
    c.dataset = "";
    c.points = sampleDataset("moons", 200, 5);
    c.pointJitter = 0.05;
    FlowTrainer t(c);
    for (int k = 0; k < 5; ++k) EXPECT_TRUE(t.step());
    EXPECT_TRUE(std::isnan(t.evaluate().kl)); // no known entropy for drawn points
}

// --- FlowSampler ---

TEST(FlowSampler, InvertsTheTrainingMapExactly) {
    for (bool rwpo : {false, true}) {
        FlowConfig c = samplerFlow(8, 3);
        c.rwpo = rwpo;
        FlowModel<double> model(c);
        const ad::Matrix<double> Z = normals<double>(2, 200, 9);
        SamplerDiagnostics diagnostics;
        const ad::Matrix<double> X = model.generate(Z, nullptr, &diagnostics);
        const double err = (model.encode(X) - Z).cwiseAbs().maxCoeff();
        FlowConfig e = c;
        e.explicitSampler = true;
        FlowModel<double> printed(e);
        const double printedErr = printed.roundTripError(Z);
        std::printf(
            "[ sampler ] %s: round trip %.1e (eq. (22) as printed: %.1e), %d fixed-point iterations\n",
            rwpo ? "rwpo" : "plain", err, printedErr, diagnostics.iterations);
        EXPECT_LT(diagnostics.residual, kSamplerTolerance);
        EXPECT_LT(err, 1e-4); // a contraction of ratio q leaves about q/(1-q) of the last change
        EXPECT_GT(printedErr, 100 * err);
    }
}

TEST(FlowSampler, ReferenceKeysMakeEachDensityQueryIndependent) {
    FlowConfig c = samplerFlow(3, 4);
    c.rwpoOptions.leaveOneOut = false; // the paper's kernel: each query is among its keys
    const FlowModel<double> model(c);
    Rng rng(1);
    ad::Matrix<double> data(2, 50), queries(2, 5);
    for (Eigen::Index i = 0; i < data.size(); ++i) data(i) = 2 * rng.normal();
    for (Eigen::Index i = 0; i < queries.size(); ++i) queries(i) = 2 * rng.normal();
    Eigen::RowVectorXd all, one, own, ownExplicit;
    model.encode(queries, &all, nullptr, &data);
    model.encode(queries.leftCols(1), &one, nullptr, &data);
    EXPECT_NEAR(all(0), one(0), 1e-12);
    // The data as its own reference batch is the training map itself (with l = j included)...
    model.encode(data, &own);
    model.encode(data, &ownExplicit, nullptr, &data);
    EXPECT_LT((own - ownExplicit).cwiseAbs().maxCoeff(), 1e-12);
    // ...and with leave-one-out (the default) it is not: there a training query never sees its own key.
    FlowConfig loo = c;
    loo.rwpoOptions.leaveOneOut = true;
    const FlowModel<double> looModel(loo);
    Eigen::RowVectorXd looOwn, looBeside;
    looModel.encode(data, &looOwn);
    looModel.encode(data, &looBeside, nullptr, &data);
    EXPECT_GT((looOwn - looBeside).cwiseAbs().maxCoeff(), 1e-6);
}

TEST(FlowSampler, AReferenceBatchInvertsTheFrozenKeyMapSampleBySample) {
    // With a reference batch of data, generate() inverts the map encode() gives densities of: each sample
    // on its own (the same sample whatever else is in the batch), and encode of the samples returns Z.
    FlowModel<double> model(samplerFlow(6, 3));
    const ad::Matrix<double> Z = normals<double>(2, 120, 5), R = sampleDataset("moons", 300, 2).transpose();
    const ad::Matrix<double> own = model.generate(Z); // no reference: the N-particle map
    model.setReference(R);
    SamplerDiagnostics diagnostics;
    const ad::Matrix<double> X = model.generate(Z, nullptr, &diagnostics);
    EXPECT_LT(diagnostics.residual, kSamplerTolerance);
    EXPECT_LT((model.encode(X) - Z).cwiseAbs().maxCoeff(), 1e-4);
    // encode() without keys uses the reference: the density of a query does not depend on the others.
    Eigen::RowVectorXd all, one;
    model.encode(X, &all);
    model.encode(X.leftCols(1), &one);
    EXPECT_NEAR(all(0), one(0), 1e-12);
    // Sample by sample: a sample generated alone is (to the solver's tolerance) the one of the batch.
    const ad::Matrix<double> first = model.generate(Z.leftCols(1));
    EXPECT_LT((first.col(0) - X.col(0)).cwiseAbs().maxCoeff(), 1e-4);
    EXPECT_GT((own - X).cwiseAbs().maxCoeff(), 1e-2); // another map
    // A reference of the wrong dimension or of one point is refused, naming it; an empty one clears it.
    EXPECT_THROW(model.setReference(ad::Matrix<double>::Zero(3, 10)), std::invalid_argument);
    EXPECT_THROW(model.setReference(ad::Matrix<double>::Zero(2, 1)), std::invalid_argument);
    model.setReference({});
    EXPECT_EQ(model.generate(Z), own);
}

TEST(FlowSampler, ReferenceDrawsMixTheirDensitiesAndShareOutTheSamples) {
    // A reference of R draws: the density is the mean of the draws' frozen-key densities, and column j is
    // encoded and generated by draw j mod R's map. Oracle: each draw's map on its own (explicit keys).
    const FlowConfig c = samplerFlow(4, 11);
    FlowModel<double> model(c);
    const int R = 3, n = 40;
    const ad::Matrix<double> ref = sampleDataset("moons", R * n, 4).transpose();
    const ad::Matrix<double> X = sampleDataset("moons", 31, 9).transpose();
    const ad::Matrix<double> Z = normals<double>(2, 31, 6);
    model.setReference(ref, R);
    ASSERT_EQ(model.referenceDraws(), R);

    std::vector<Eigen::RowVectorXd> own(R);
    std::vector<ad::Matrix<double>> encoded(R), generated(R);
    for (int r = 0; r < R; ++r) {
        const ad::Matrix<double> keys = model.referenceDraw(r);
        EXPECT_EQ(keys, ref.middleCols(r * n, n));
        encoded[r] = model.encode(X, &own[r], nullptr, &keys);
        generated[r] = model.generate(Z, nullptr, nullptr, &keys);
    }
    Eigen::RowVectorXd mixed;
    std::vector<ad::Matrix<double>> path;
    const ad::Matrix<double> x0 = model.encode(X, &mixed, &path);
    const ad::Matrix<double> x0Only = model.encode(X); // without densities: each column's own draw only
    std::vector<ad::Matrix<double>> samplePath;
    SamplerDiagnostics diagnostics;
    const ad::Matrix<double> samples = model.generate(Z, &samplePath, &diagnostics);
    ASSERT_EQ(path.size(), std::size_t(c.layers) + 1);
    ASSERT_EQ(samplePath.size(), std::size_t(c.layers) + 1);
    double spread = 0;
    for (Eigen::Index j = 0; j < X.cols(); ++j) {
        const int r = int(j % R);
        const double expected =
            std::log((std::exp(own[0](j)) + std::exp(own[1](j)) + std::exp(own[2](j))) / 3);
        EXPECT_NEAR(mixed(j), expected, 1e-12) << j;
        spread = std::max(spread, std::abs(own[0](j) - own[1](j)));
        EXPECT_EQ(x0.col(j), encoded[r].col(j)) << j;
        EXPECT_LT((x0Only.col(j) - encoded[r].col(j)).cwiseAbs().maxCoeff(), 1e-12) << j;
        EXPECT_EQ(path.back().col(j), x0.col(j));
        EXPECT_LT((samples.col(j) - generated[r].col(j)).cwiseAbs().maxCoeff(), 1e-4) << j;
        EXPECT_EQ(samplePath.back().col(j), samples.col(j));
    }
    EXPECT_GT(spread, 1e-3);  // the draws do differ: the mean is not one draw's density
    Eigen::RowVectorXd alone; // fewer queries than draws: still every draw's density
    model.encode(X.leftCols(1), &alone);
    EXPECT_NEAR(alone(0), mixed(0), 1e-12);
    EXPECT_LT(diagnostics.residual, kSamplerTolerance);
    ASSERT_EQ(diagnostics.folding.size(), std::size_t(c.layers));
    EXPECT_LT((model.encode(samples) - Z).cwiseAbs().maxCoeff(), 1e-4); // each sample's own map back
    // Two equal draws are one: the same density as that draw alone.
    const ad::Matrix<double> first = model.referenceDraw(0);
    ad::Matrix<double> twice(2, 2 * n);
    twice << first, first;
    model.setReference(twice, 2);
    Eigen::RowVectorXd same;
    model.encode(X, &same);
    EXPECT_LT((same - own[0]).cwiseAbs().maxCoeff(), 1e-12);
    // Draws that do not split the reference, draws of one point, and 0 draws are refused.
    for (const std::pair<int, int>& bad : {std::pair{41, 2}, std::pair{4, 4}, std::pair{40, 0}})
        EXPECT_NE(test::errorOf([&] {
                      model.setReference(ad::Matrix<double>::Zero(2, bad.first), bad.second);
                  }).find("draws"),
                  std::string::npos)
            << bad.first << " in " << bad.second;
    EXPECT_EQ(model.referenceDraws(), 2); // unchanged by the refusals
}

TEST(FlowSampler, TheDensityGridIsTheMixtureAtTheCellCentres) {
    // densityGrid pushes the reference draws backward once and queries the grid in chunks of 4096: a 70²
    // grid takes two; every cell is exp of encode()'s mixture log-density at its centre.
    FlowModel<float> model(samplerFlow(3));
    model.setReference(sampleDataset("8gaussians", 4 * 50, 2).transpose().cast<float>(), 4);
    const int grid = 70;
    const double w = 3.0, cell = 2 * w / grid;
    const DensityGrid rho = densityGrid(model, grid, w);
    ASSERT_EQ(rho.rho.size(), std::size_t(grid * grid));
    for (const int index : {0, 1234, 4095, 4096, 4899}) {
        ad::Matrix<float> q(2, 1);
        q << float(-w + (index % grid + 0.5) * cell), float(-w + (index / grid + 0.5) * cell);
        Eigen::Matrix<float, 1, Eigen::Dynamic> ld;
        model.encode(q, &ld);
        EXPECT_NEAR(rho.rho[std::size_t(index)], std::exp(double(ld(0))), 1e-6 * std::exp(double(ld(0))))
            << index;
    }
}

// --- Safetensors ---

TEST(Safetensors, RoundTripAndMetadata) {
    SafeTensors f;
    f.tensors.push_back({"a", true, {2, 3}, {1, 2, 3, 4, 5, 6.5}});
    f.tensors.push_back({"b", false, {1}, {0.1}});
    f.tensors.push_back({"empty", true, {0, 4}, {}});
    f.metadata["note"] = "hello";
    const std::string path = tempPath("t.safetensors").string();
    writeSafetensors(path, f);
    const SafeTensors g = readSafetensors(path);
    ASSERT_EQ(g.tensors.size(), 3u);
    EXPECT_EQ(g.get("a", {2, 3}).data, f.tensors[0].data);
    EXPECT_EQ(g.get("b", {1}).data[0], 0.1); // F64 exactly
    EXPECT_FALSE(g.get("b", {1}).float32);
    EXPECT_EQ(g.metadata.at("note"), "hello");
    EXPECT_NE(test::errorOf([&] { g.get("a", {3, 2}); }).find("shape"), std::string::npos);
    EXPECT_NE(test::errorOf([&] { g.get("c", {1}); }).find("missing"), std::string::npos);
    // Byte layout: 8-byte length, then a JSON header padded to 8 bytes.
    std::ifstream in(path, std::ios::binary);
    unsigned char len[8];
    in.read(reinterpret_cast<char*>(len), 8);
    EXPECT_EQ(len[0] % 8, 0);
}

TEST(Safetensors, HostileFilesGetOneClearMessage) {
    const fs::path p = tempPath("bad.safetensors");
    auto write = [&](const std::string& header, const std::string& payload, std::uint64_t len = ~0ull) {
        std::ofstream out(p, std::ios::binary | std::ios::trunc);
        if (len == ~0ull) len = header.size();
        for (int i = 0; i < 8; ++i) out.put(char((len >> (8 * i)) & 0xff));
        out << header << payload;
    };
    auto error = [&]() { return test::errorOf([&] { readSafetensors(p.string()); }); };
    write("", "", 0);
    EXPECT_NE(error().find("not valid JSON"), std::string::npos) << error();
    write("{}", "", 1ull << 40);
    EXPECT_NE(error().find("exceeds 16 MiB"), std::string::npos) << error();
    write("{\"a\":{}}", "", 100);
    EXPECT_NE(error().find("truncated"), std::string::npos) << error();
    write(R"({"a":{"dtype":"I8","shape":[1],"data_offsets":[0,1]}})", "x");
    EXPECT_NE(error().find("I8"), std::string::npos) << error();
    write(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "xxxx");
    EXPECT_NE(error().find("span 4 bytes"), std::string::npos) << error();
    write(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})", "xxxx");
    EXPECT_NE(error().find("outside the payload"), std::string::npos) << error();
    write(
        R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})",
        "xxxxxxxx");
    EXPECT_NE(error().find("overlap"), std::string::npos) << error();
    write(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "xxxx");
    EXPECT_NE(error().find("non-negative"), std::string::npos) << error();
    write(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", "xxxx");
    EXPECT_NE(error().find("exceeds the payload"), std::string::npos) << error();
    write(R"({"__metadata__":{"k":1}})", "");
    EXPECT_NE(error().find("__metadata__/k"), std::string::npos) << error();
    EXPECT_NE(test::errorOf([&] { readSafetensors((p.string() + ".missing")); }).find("file not found"),
              std::string::npos);
}

// --- FlowIo ---

TEST(FlowIo, SavedModelsLoadBackAndSampleBitForBit) {
    for (bool rwpo : {false, true}) {
        FlowTrainer t(tinyConfig(rwpo));
        for (int k = 0; k < 10; ++k) t.step();
        t.evaluate();
        const std::string path = tempPath(rwpo ? "rwpo.safetensors" : "plain.safetensors").string();
        saveFlow(path, t, 1.0);
        const FlowModel<float> loaded = loadFlow(path); // the averaged parameters, as evaluated
        EXPECT_EQ(loaded.params().phi.K0, t.evaluatedModel().params().phi.K0);
        EXPECT_EQ(loaded.params().lambdaRaw, t.evaluatedModel().params().lambdaRaw);
        EXPECT_EQ(loaded.config().rwpo, rwpo);
        // The RWPO model's reference batch (its sampler's keys) comes back; the plain model has none.
        EXPECT_EQ(loaded.reference(), t.evaluatedModel().reference());
        EXPECT_EQ(loaded.reference().cols(), rwpo ? 8 * tinyConfig(rwpo).batch : 0); // 8 draws of a batch
        EXPECT_EQ(loaded.referenceDraws(), rwpo ? 8 : 1);
        const ad::Matrix<float> Z = normals(2, 100, 7);
        EXPECT_EQ(loaded.generate(Z), t.evaluatedModel().generate(Z)) << rwpo;
        // The record beside it: architecture, λ, β, metrics and the curve.
        std::ifstream in(configPathFor(path));
        const nlohmann::json record = nlohmann::json::parse(in);
        EXPECT_EQ(record["architecture"]["layers"], 3);
        EXPECT_EQ(record["curve"]["loss"].size(), 10u);
        EXPECT_EQ(record["training"]["dataset"], "8gaussians");
        EXPECT_EQ(record["training"]["reference_draws"], rwpo ? 8 : 0);
        EXPECT_EQ(record["training"]["reference_size"], rwpo ? 64 : 0);
        EXPECT_TRUE(record["metrics"].contains("mmd2"));
    }
}

TEST(FlowIo, TheDriftLogDetRoundTripsAndOlderFilesReadAsFirstOrder) {
    FlowConfig c;
    for (bool exact : {false, true}) {
        c.exactDriftLogDet = exact;
        EXPECT_EQ(flowConfigFromJson(toJson(c)).exactDriftLogDet, exact);
    }
    nlohmann::json older = toJson(c); // a file written before the exact drift log-det existed
    older.erase("exact_drift_log_det");
    EXPECT_FALSE(flowConfigFromJson(older).exactDriftLogDet);
    older["d"] = 4; // and such a file may hold points of any dimension (with a first-order RWPO log-det)
    older["exact_log_det"] = false;
    EXPECT_EQ(flowConfigFromJson(older).d, 4);
    older["exact_log_det"] = true; // which a vector kernel cannot have there (d > 3): named
    EXPECT_NE(test::errorOf([&] { flowConfigFromJson(older); }).find("architecture/exact_log_det"),
              std::string::npos);
}

TEST(FlowIo, MismatchedModelsNameTheField) {
    FlowTrainer t(tinyConfig(false));
    const std::string path = tempPath("m.safetensors").string();
    saveFlow(path, t.model(), {});
    SafeTensors f = readSafetensors(path);
    auto rewrite = [&](const std::function<void(SafeTensors&)>& edit) {
        SafeTensors g = f;
        edit(g);
        writeSafetensors(path, g);
        return test::errorOf([&] { loadFlow(path); });
    };
    EXPECT_NE(rewrite([](SafeTensors& g) { g.tensors.pop_back(); }).find("beta_raw"), std::string::npos);
    EXPECT_NE(rewrite([](SafeTensors& g) {
                  g.tensors[0].shape = {1, std::int64_t(g.tensors[0].data.size())};
              }).find("phi.K0"),
              std::string::npos);
    EXPECT_NE(rewrite([](SafeTensors& g) { g.metadata.clear(); }).find("not a Flowscope flow"),
              std::string::npos);
    EXPECT_NE(rewrite([](SafeTensors& g) {
                  auto j = nlohmann::json::parse(g.metadata["flowscope_flow"]);
                  j["layers"] = 0;
                  g.metadata["flowscope_flow"] = j.dump();
              }).find("architecture/layers"),
              std::string::npos);
    EXPECT_NE(rewrite([](SafeTensors& g) { g.tensors[1].data[0] = NAN; }).find("NaN"), std::string::npos);

    // An RWPO model's reference batch: optional (earlier files have none), d x N with N >= 2, finite.
    FlowTrainer r(tinyConfig(true));
    saveFlow(path, r.model(), {});
    f = readSafetensors(path);
    ASSERT_EQ(f.tensors.back().name, "reference");
    EXPECT_EQ(rewrite([](SafeTensors& g) { g.tensors.pop_back(); }), "");
    EXPECT_EQ(loadFlow(path).reference().size(), 0);
    EXPECT_NE(rewrite([](SafeTensors& g) {
                  g.tensors.back().shape = {1, std::int64_t(g.tensors.back().data.size())};
              }).find("tensor 'reference' must be d x N"),
              std::string::npos);
    EXPECT_NE(rewrite([](SafeTensors& g) { g.tensors.back().data[3] = NAN; }).find("'reference' holds a NaN"),
              std::string::npos);
    // Its draws: 8 of 64 points; a count that is not a whole number of draws of >= 2 points is named (files
    // of earlier versions have none: one draw).
    EXPECT_EQ(f.metadata.at("flowscope_reference_draws"), "8");
    EXPECT_EQ(rewrite([](SafeTensors& g) { g.metadata.erase("flowscope_reference_draws"); }), "");
    EXPECT_EQ(loadFlow(path).referenceDraws(), 1);
    for (const char* bad : {"0", "3", "7x", "", "-2", "512"})
        EXPECT_NE(rewrite([&](SafeTensors& g) {
                      g.metadata["flowscope_reference_draws"] = bad;
                  }).find("flowscope_reference_draws"),
                  std::string::npos)
            << bad;
}
