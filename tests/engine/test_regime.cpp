// The regime predicted before a run (Prop 2) against the moment solver.
#include "TestUtil.h"

#include "engine/gaussian/MomentSolver.h"
#include "engine/gaussian/Regime.h"

using namespace flowscope;
using namespace flowscope::test;

namespace {

Scene softmaxScene(const Mat& A, const Mat& V) {
    Scene s;
    s.d = int(A.rows());
    s.attention = singleHead(AttentionType::Softmax, A, Mat::Identity(s.d, s.d), V);
    return s;
}

} // namespace

TEST(Regime, CommutingBlowUpPredictsTMax) {
    // T3 (c'): V = I, A = [[0.5, 1], [-1, -1]], Sigma0 = [[2, 0.5], [0.5, 1]]: t_max = 1/sqrt(3.5).
    const Scene s = softmaxScene(m2(0.5, 1, -1, -1), Mat::Identity(2, 2));
    const RegimePrediction p = predictRegime(s, sym2(2, 0.5, 1));
    EXPECT_TRUE(p.commuting);
    EXPECT_TRUE(p.blowUp);
    ASSERT_TRUE(p.tMax.has_value());
    EXPECT_NEAR(*p.tMax, 0.5345224838, 1e-9);
    EXPECT_NE(p.summary.find("blow-up"), std::string::npos) << p.summary;
    // The solver agrees.
    Scene run = s;
    run.integrator.T = 2;
    run.integrator.rtol = 1e-10;
    const auto tr =
        solveMoments(*makeMomentField(run), {Vec::Zero(2), sym2(2, 0.5, 1)}, run, momentOptions(run));
    ASSERT_TRUE(tr.tMax.has_value());
    EXPECT_NEAR(*tr.tMax, *p.tMax, 1e-6);
}

TEST(Regime, CommutingContractionPredictsTheLimitRank) {
    // T3 (a): B = diag(-2, 0): a rank-1 limit (a line); A + A^T = diag(-2, 0).
    const RegimePrediction line =
        predictRegime(softmaxScene(m2(-1, 1, -1, 0), Mat::Identity(2, 2)), sym2(2, 0.5, 1));
    EXPECT_TRUE(line.commuting);
    EXPECT_FALSE(line.blowUp);
    ASSERT_TRUE(line.limitRank.has_value());
    EXPECT_EQ(*line.limitRank, 1);
    EXPECT_NEAR(line.eigenvaluesSymA[0], -2.0, 1e-12);
    EXPECT_NEAR(line.eigenvaluesSymA[1], 0.0, 1e-12);
    // Fig 1 upper panel: V = -0.4 I, A = I: B = -0.8 I, one cluster.
    const RegimePrediction zero =
        predictRegime(softmaxScene(Mat::Identity(2, 2), -0.4 * Mat::Identity(2, 2)), sym2(2, 0.5, 1));
    ASSERT_TRUE(zero.limitRank.has_value());
    EXPECT_EQ(*zero.limitRank, 0);
}

TEST(Regime, NonCommutingCasesSayThereIsNoGuarantee) {
    // P-MIXED-like: V does not commute with B; B indefinite.
    const Mat V = m2(1.831753006, -0.3768878439, 0.3481123416, -0.1162815566);
    const Mat A = m2(-0.2280854503, -1.2838645992, -0.5676072204, -1.0624007374) / std::sqrt(2.0);
    const RegimePrediction p = predictRegime(softmaxScene(A, V), sym2(0.6, 0.1, 0.4));
    EXPECT_FALSE(p.commuting);
    EXPECT_TRUE(p.blowUp);
    EXPECT_FALSE(p.tMax.has_value());
    EXPECT_NEAR(p.eigenvaluesB[1], 1.0190, 1e-4); // P-MIXED: eig(VA + A^T V^T) = {+1.0190, -1.7647}
    EXPECT_NEAR(p.eigenvaluesB[0], -1.7647, 1e-4);
    EXPECT_NE(p.summary.find("no guarantee"), std::string::npos) << p.summary;
}
