// The rank-histogram experiment (Fig 4 / Fig 11, docs/math/gaussian.md#rank-histograms).
#include "engine/core/Parallel.h"
#include "engine/gaussian/NumpyRandom.h"
#include "engine/gaussian/RankExperiment.h"

#include <gtest/gtest.h>
#include <numeric>

using namespace flowscope;

namespace {

long sum(const std::vector<long>& h) {
    return std::accumulate(h.begin(), h.end(), 0L);
}

// V = I with an accurate integrator: the limit is Sigma* = U (U^T Sigma0^{-1} U)^{-1} U^T of exact rank
// ceil(d/2) (Prop 2 + T8), for softmax and for l2 alike.
void expectExactLimits(AttentionType attention, double tolLow) {
    RankExperimentConfig c = paperProtocol(attention, false, RankMethod::Adaptive);
    c.dims = {3};
    c.runs = 8;
    c.tolLow = tolLow;
    const RankExperimentResult res = runRankExperiment(c);
    ASSERT_EQ(res.dimensions.size(), 1u);
    const RankDimensionResult& r = res.dimensions[0];
    EXPECT_EQ(r.completed, 8);
    EXPECT_EQ(r.nonConverged, 0);
    EXPECT_EQ(sum(r.histogram) + r.exceptions, 8);
    EXPECT_EQ(r.exactRankHistogram[2], 8);
    EXPECT_EQ(sum(r.exactHistogram), 8);
    for (const RankRun& run : r.runs) {
        const double top = run.eigenvalues.maxCoeff();
        EXPECT_EQ(int((run.eigenvalues.array() > 1e-6 * top).count()), 2)
            << "run " << run.run << ": " << run.eigenvalues.transpose();
        EXPECT_EQ(run.exactRank, 2);
        EXPECT_LT(run.distanceToExact, 1e-5 * std::max(1.0, top)) << "run " << run.run;
        EXPECT_LT((run.eigenvalues - run.exactEigenvalues).cwiseAbs().maxCoeff(), 1e-5 * std::max(1.0, top));
    }
}

} // namespace

TEST(RankExperiment, SoftmaxIdentityConvergesToTheExactLimit) {
    expectExactLimits(AttentionType::Softmax, 1e-14);
}

TEST(RankExperiment, L2IdentityConvergesToTheExactLimit) {
    expectExactLimits(AttentionType::L2, 1e-14);
}

TEST(RankExperiment, DrawsFollowTheAuthorsOrder) {
    // The exact limit of run #3 (1-based) in d = 3 has eigenvalues {0, 3.096, 6.088} (E13,
    // docs/math/gaussian.md#e13): it pins the Q list (seed 40, randn(1, 3) each) and the Sigma0 stream
    // (seed 41, S S^T, S = randn(3, 3)).
    RankExperimentConfig c = paperProtocol(AttentionType::Softmax, false, RankMethod::Adaptive);
    c.dims = {3};
    c.runs = 3;
    c.tolLow = 1e-6;
    const RankExperimentResult res = runRankExperiment(c);
    const RankRun& run3 = res.dimensions[0].runs[2];
    EXPECT_NEAR(run3.exactEigenvalues[0], 0.0, 1e-9);
    EXPECT_NEAR(run3.exactEigenvalues[1], 3.096, 5e-4);
    EXPECT_NEAR(run3.exactEigenvalues[2], 6.088, 5e-4);
}

TEST(RankExperiment, PaperEulerCountsAndRetries) {
    // Random SPD V with a small max_iter: some attempts fail and are retried with fresh Sigma0 draws.
    RankExperimentConfig c = paperProtocol(AttentionType::Softmax, true);
    c.dims = {3};
    c.runs = 6;
    c.maxIter = 2500;
    c.nMax = 30;
    const RankExperimentResult res = runRankExperiment(c);
    const RankDimensionResult& r = res.dimensions[0];
    EXPECT_EQ(res.config.vSeed.value(), 26u);
    EXPECT_EQ(r.step, 0.09);
    EXPECT_EQ(r.attempts, r.completed + r.nonConverged);
    EXPECT_EQ(sum(r.histogram) + r.exceptions, r.completed);
    EXPECT_TRUE(r.exactHistogram.empty());
    long failures = 0;
    for (long f : r.failures) failures += f;
    EXPECT_EQ(failures, r.nonConverged);
    for (std::size_t j = 0; j < r.runs.size(); ++j) {
        EXPECT_EQ(r.runs[j].run, int(j));
        if (j) {
            EXPECT_GT(r.runs[j].attempt, r.runs[j - 1].attempt);
        }
        EXPECT_LE(r.runs[j].iterations, 2500);
    }
    EXPECT_GT(r.nonConverged, 0);
    EXPECT_GT(r.completed, 0);
}

TEST(RankExperiment, ExceptionsAreExcludedUnlessAsked) {
    // A zero threshold counts every eigenvalue: ranks above ceil(d/2) become exceptions.
    RankExperimentConfig c = paperProtocol(AttentionType::Softmax, false);
    c.dims = {3};
    c.runs = 4;
    c.threshold = 0.0;
    RankExperimentResult res = runRankExperiment(c);
    EXPECT_EQ(res.dimensions[0].exceptions, 4); // Euler keeps the collapsing eigenvalue > 0
    EXPECT_EQ(sum(res.dimensions[0].histogram), 0);
    c.includeExceptions = true;
    res = runRankExperiment(c);
    EXPECT_EQ(res.dimensions[0].histogram[3], 4);
}

TEST(RankExperiment, ResultDoesNotDependOnTheThreadCount) {
    RankExperimentConfig c = paperProtocol(AttentionType::L2, true);
    c.dims = {2, 3};
    c.runs = 5;
    c.maxIter = 1500;
    c.nMax = 30;
    const int before = threadCount();
    setThreadCount(1);
    const RankExperimentResult a = runRankExperiment(c);
    setThreadCount(3);
    int calls = 0, last = 0;
    const RankExperimentResult b = runRankExperiment(c, [&](int done, int total) {
        ++calls;
        EXPECT_GE(done, last);
        EXPECT_EQ(total, 10);
        last = done;
    });
    setThreadCount(before);
    EXPECT_GT(calls, 0);
    EXPECT_EQ(last, 10);
    ASSERT_EQ(a.dimensions.size(), b.dimensions.size());
    EXPECT_GT(a.dimensions[0].nonConverged + a.dimensions[1].nonConverged, 0); // retries were exercised
    for (std::size_t j = 0; j < a.dimensions.size(); ++j) {
        const RankDimensionResult &x = a.dimensions[j], &y = b.dimensions[j];
        EXPECT_EQ(x.histogram, y.histogram);
        EXPECT_EQ(x.nonConverged, y.nonConverged);
        EXPECT_EQ(x.attempts, y.attempts);
        EXPECT_GT(x.completed, 0);
        ASSERT_EQ(x.runs.size(), y.runs.size());
        for (std::size_t i = 0; i < x.runs.size(); ++i) {
            EXPECT_EQ(x.runs[i].attempt, y.runs[i].attempt);
            EXPECT_EQ(x.runs[i].iterations, y.runs[i].iterations);
            EXPECT_EQ(x.runs[i].eigenvalues, y.runs[i].eigenvalues); // bit for bit
        }
    }
}

TEST(RankExperiment, RejectsBadConfigurations) {
    RankExperimentConfig c;
    c.dims = {1};
    EXPECT_THROW(runRankExperiment(c), std::invalid_argument);
    c = RankExperimentConfig{};
    c.attention = AttentionType::Sinkhorn;
    EXPECT_THROW(runRankExperiment(c), std::invalid_argument);
    c = RankExperimentConfig{};
    c.steps = {0.1};
    EXPECT_THROW(runRankExperiment(c), std::invalid_argument);
    c = RankExperimentConfig{};
    c.runs = 0;
    EXPECT_THROW(runRankExperiment(c), std::invalid_argument);
}

TEST(RankExperiment, PaperTableDefaults) {
    EXPECT_EQ(paperEulerStep(AttentionType::Softmax, false, 4), 0.05);
    EXPECT_EQ(paperEulerStep(AttentionType::Softmax, true, 4), 0.06);
    EXPECT_EQ(paperEulerStep(AttentionType::L2, true, 3), 0.15);
    EXPECT_EQ(paperEulerStep(AttentionType::L2, false, 7), 0.02);
    const RankExperimentConfig s = paperProtocol(AttentionType::Softmax, true);
    EXPECT_EQ(s.tolLow, 5e-5);
    EXPECT_EQ(s.maxIter, 90000);
    EXPECT_EQ(s.nMax, 10000);
    const RankExperimentConfig l = paperProtocol(AttentionType::L2, false);
    EXPECT_EQ(l.tolLow, 1e-4);
    EXPECT_EQ(l.maxIter, 60000);
    EXPECT_EQ(l.nMax, 1000);
}
