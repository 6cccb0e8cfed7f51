// The Gaussian moment solver against closed forms (docs/math/gaussian.md#exact-cases T1-T6, T9-T11,
// #drifting; docs/math/attention.md#t13, #mean-field) and the mean-field link to the particle system.
#include "TestUtil.h"

#include "engine/dynamics/Observables.h"
#include "engine/gaussian/MomentSolver.h"

#include <gtest/gtest.h>

using namespace flowscope;
using namespace flowscope::test;

namespace {

// A scene whose single head has A = K^T Q = A (Q = A, K = I), value V, and the adaptive solver at rtol.
Scene momentScene(AttentionType type, const Mat& A, const Mat& V, double T, int steps = 100,
                  double rtol = 1e-10) {
    Scene s;
    s.d = int(A.rows());
    s.attention = singleHead(type, A, Mat::Identity(s.d, s.d), V);
    s.integrator.T = T;
    s.integrator.steps = steps;
    s.integrator.rtol = rtol;
    s.integrator.atol = 1e-13;
    s.moments.tolHigh = 1e6;
    return s;
}

MomentTrajectory solve(const Scene& s, const Vec& mean, const Mat& cov) {
    const auto field = makeMomentField(s);
    return solveMoments(*field, {mean, cov}, s, momentOptions(s));
}

// The recorded state at time t (which must be a record time).
const GaussianState& at(const MomentTrajectory& tr, double t) {
    for (std::size_t i = 0; i < tr.times.size(); ++i)
        if (std::abs(tr.times[i] - t) < 1e-12) return tr.states[i];
    ADD_FAILURE() << "no record at t = " << t;
    return tr.states.back();
}

double relErr(const Mat& a, const Mat& b) {
    return (a - b).norm() / b.norm();
}

} // namespace

TEST(MomentSolver, Fig1ContractionMatchesClosedForm) {
    // T2, eps = -0.4: Sigma(t) = (Sigma0^{-1} - 2 eps t I)^{-1}.
    const Mat S0 = m2(2, 0.5, 0.5, 1);
    const auto tr =
        solve(momentScene(AttentionType::Softmax, Mat::Identity(2, 2), -0.4 * Mat::Identity(2, 2), 2),
              Vec::Zero(2), S0);
    EXPECT_EQ(tr.event, MomentEvent::None);
    EXPECT_LT(relErr(at(tr, 1.0).cov, m2(0.752212, 0.110619, 0.110619, 0.530973)), 2e-6);
    EXPECT_LT(relErr(at(tr, 2.0).cov, m2(0.466926, 0.048638, 0.048638, 0.369650)), 2e-6);
}

TEST(MomentSolver, BlowUpTimeOfCommutingCasesWithinATenthOfAPercent) {
    struct Case {
        Mat A, V, S0;
        double tMax;
        double tCheck;
        Mat atCheck;
    };
    const std::vector<Case> cases = {
        // T2, eps = 0.1: t_max = 1/(2 eps lambda_max(Sigma0)); Sigma(2) = [[16.25, 6.25], [6.25, 3.75]].
        {Mat::Identity(2, 2), 0.1 * Mat::Identity(2, 2), m2(2, 0.5, 0.5, 1), 2.2654091966, 2.0,
         m2(16.25, 6.25, 6.25, 3.75)},
        // T3 (c): Sigma(t) = diag(1/(1-t), 1/(1+2t)), t_max = 1.
        {m2(0.5, 1, -1, -1), Mat::Identity(2, 2), Mat::Identity(2, 2), 1.0, 0.5, m2(2, 0, 0, 0.5)},
        // T3 (c'): t_max = 1/sqrt(3.5), Sigma(0.5) = [[30, 4], [4, 1]].
        {m2(0.5, 1, -1, -1), Mat::Identity(2, 2), m2(2, 0.5, 0.5, 1), 0.5345224838, 0.5, m2(30, 4, 4, 1)},
    };
    for (const Case& c : cases) {
        Scene s = momentScene(AttentionType::Softmax, c.A, c.V, 10.0, 20);
        s.moments.tolHigh = 1e3;
        const auto tr = solve(s, Vec::Zero(2), c.S0);
        ASSERT_EQ(tr.event, MomentEvent::BlowUp);
        ASSERT_TRUE(tr.tMax.has_value());
        EXPECT_NEAR(*tr.tMax, c.tMax, 1e-3 * c.tMax);
        EXPECT_NEAR(*tr.tMax, c.tMax, 1e-7) << "the estimate is in fact far better than 0.1 %";
        EXPECT_LT(tr.eventTime, c.tMax);
        EXPECT_GT(tr.states.back().cov.trace(), 1e3); // caught within about twice tol_high
        EXPECT_LT(tr.states.back().cov.trace(), 3e3);
        EXPECT_LT(relErr(at(tr, c.tCheck).cov, c.atCheck), 1e-7);
    }
}

TEST(MomentSolver, ConvergenceToALineKeepsRankAndReachesSigmaStar) {
    // T3 (a): V = I, A = [[-1, 1], [-1, 0]]: Sigma(1) = [[0.4, 0.1], [0.1, 0.9]],
    // Sigma(10) = [[0.0487805, 0.0121951], [0.0121951, 0.8780488]], Sigma(inf) = diag(0, 0.875).
    const auto tr = solve(momentScene(AttentionType::Softmax, m2(-1, 1, -1, 0), Mat::Identity(2, 2), 10),
                          Vec::Zero(2), m2(2, 0.5, 0.5, 1));
    EXPECT_LT(relErr(at(tr, 1.0).cov, m2(0.4, 0.1, 0.1, 0.9)), 1e-8);
    EXPECT_LT(relErr(at(tr, 10.0).cov, m2(0.0487805, 0.0121951, 0.0121951, 0.8780488)), 1e-6);
    for (const GaussianState& s : tr.states) EXPECT_GT(s.cov.determinant(), 0.0); // full rank at finite t
}

TEST(MomentSolver, RankIsPreservedExactly) {
    // T5: from u0 u0^T the solution stays rank 1 (det / tr^2 ~ 0); in d = 3 a rank-2 start stays rank 2.
    const Vec u0 = (Vec(2) << 1.0, 0.3).finished();
    const Mat A = m2(-0.4, 0.7, -0.2, -0.6), V = m2(1.2, -0.5, 0.3, 0.8);
    const auto tr = solve(momentScene(AttentionType::Softmax, A, V, 3), Vec::Zero(2), u0 * u0.transpose());
    for (const GaussianState& s : tr.states)
        EXPECT_LT(std::abs(s.cov.determinant()) / std::pow(s.cov.trace(), 2), 1e-14);

    Mat R(3, 2);
    R << 1, 0.2, -0.4, 1, 0.3, 0.5;
    const Mat A3 = (Mat(3, 3) << -1, 0.2, 0.1, 0.3, -0.5, 0.2, -0.1, 0.4, -0.8).finished();
    for (AttentionType type : {AttentionType::Softmax, AttentionType::L2, AttentionType::Sinkhorn}) {
        const auto tr3 =
            solve(momentScene(type, A3, Mat::Identity(3, 3), 2), Vec::Zero(3), R * R.transpose());
        for (const GaussianState& s : tr3.states) {
            const Vec ev = Eigen::SelfAdjointEigenSolver<Mat>(s.cov).eigenvalues();
            EXPECT_LT(std::abs(ev[0]), 1e-13 * ev[2]) << toString(type);
            EXPECT_GT(ev[1], 1e-3 * ev[2]) << toString(type);
        }
    }
}

TEST(MomentSolver, RankOneAndRotationClosedForms) {
    // T6: V = I, A = diag(-1, -3), u0 = (1, 1): Sigma(1) = [[1, 1], [1, 1]] / 9.
    const Vec u0 = Vec::Ones(2);
    const auto tr = solve(momentScene(AttentionType::Softmax, m2(-1, 0, 0, -3), Mat::Identity(2, 2), 1),
                          Vec::Zero(2), u0 * u0.transpose());
    EXPECT_LT(relErr(tr.states.back().cov, Mat::Constant(2, 2, 1.0 / 9.0)), 1e-9);
    // T4: V = J, A = -I: Sigma(t) = R(-wt) Sigma0 R(-wt)^T, w = tr Sigma0; Sigma(1) from diag(2, 1).
    const auto rot = solve(momentScene(AttentionType::Softmax, -Mat::Identity(2, 2), rotation90(), 1),
                           Vec::Zero(2), m2(2, 0, 0, 1));
    EXPECT_LT(relErr(rot.states.back().cov, m2(1.980085, 0.139708, 0.139708, 1.019915)), 1e-6);
    const Mat R = Eigen::Rotation2Dd(-3.0).toRotationMatrix();
    EXPECT_LT(relErr(rot.states.back().cov, R * m2(2, 0, 0, 1) * R.transpose()), 1e-9);
}

TEST(MomentSolver, OneDimensionalVariantsMatchTheirSolutions) {
    // T1: a = -1, v = 1, s0 = 2, alpha0 = 1: s(1) = 0.4, alpha(1) = e / sqrt 5.
    auto tr = solve(momentScene(AttentionType::Softmax, m1(-1), m1(1), 1), Vec::Ones(1), m1(2));
    EXPECT_NEAR(tr.states.back().cov(0, 0), 0.4, 1e-10);
    EXPECT_NEAR(tr.states.back().mean[0], 1.2156525901, 1e-9);
    // T9 (Prop 7): l2, q = k = 1, v = 1, s0 = 1: s(0.5) = 2.093495237, s(1) = 4.957300533; no blow-up.
    Scene l2 = momentScene(AttentionType::L2, m1(1), m1(1), 5, 10);
    l2.moments.tolHigh = 1e9;
    tr = solve(l2, Vec::Zero(1), m1(1));
    EXPECT_NEAR(at(tr, 0.5).cov(0, 0), 2.093495237, 1e-8);
    EXPECT_NEAR(at(tr, 1.0).cov(0, 0), 4.957300533, 1e-8);
    EXPECT_NEAR(at(tr, 5.0).cov(0, 0) / 13360.22682, 1.0, 1e-8);
    // l2 with v = -1: s(1) = 0.3469079981.
    tr = solve(momentScene(AttentionType::L2, m1(1), m1(-1), 1), Vec::Zero(1), m1(1));
    EXPECT_NEAR(tr.states.back().cov(0, 0), 0.3469079981, 1e-9);
    // T10: Sinkhorn eps = 1, a = v = 1, s0 = 0.5: s(0.5) = 0.8100381589, s(3) = 59.6956422;
    // eps = 0.5, a = 2, v = 0.5, s0 = 1: s(1) = 6.619852379.
    tr = solve(momentScene(AttentionType::Sinkhorn, m1(1), m1(1), 3, 6), Vec::Zero(1), m1(0.5));
    EXPECT_NEAR(at(tr, 0.5).cov(0, 0), 0.8100381589, 1e-9);
    EXPECT_NEAR(at(tr, 3.0).cov(0, 0), 59.6956422, 1e-6);
    Scene sk = momentScene(AttentionType::Sinkhorn, m1(2), m1(0.5), 1);
    sk.attention.sinkhornEps = 0.5;
    tr = solve(sk, Vec::Zero(1), m1(1));
    EXPECT_NEAR(tr.states.back().cov(0, 0), 6.619852379, 1e-8);
    // Drifting (docs/math/gaussian.md#drifting) to nu = N(1, 1) from N(0, 0.25): m(1) = 1 - e^{-1/2};
    // s(1) = 0.4143582630 from the implicit solution ln s - 2 ln(1 - s) = ln 0.25 - 2 ln 0.75 + t (an earlier
    // hand computation's 0.4143565473 is a typo; its s(3) is right).
    Scene drift = momentScene(AttentionType::Drifting, m1(1), m1(1), 3, 3);
    drift.attention.targetMean = Vec::Ones(1);
    drift.attention.targetCov = m1(1);
    tr = solve(drift, Vec::Zero(1), m1(0.25));
    EXPECT_NEAR(at(tr, 1.0).cov(0, 0), 0.4143582630, 1e-9);
    EXPECT_NEAR(at(tr, 1.0).mean[0], 0.3934693403, 1e-9);
    EXPECT_NEAR(at(tr, 3.0).cov(0, 0), 0.7166609646, 1e-9);
    EXPECT_NEAR(at(tr, 3.0).mean[0], 0.7768698399, 1e-9);
}

TEST(MomentSolver, SinkhornMeanIsExpTVOverEpsAndDivergesWithoutFiniteTMax) {
    // T11: V = J, eps = 0.5, alpha0 = (1, 0): alpha(pi/4) = (0, 1), whatever Sigma does.
    Scene s = momentScene(AttentionType::Sinkhorn, m2(0.8, 0.1, 0.2, -0.4), rotation90(), M_PI / 4, 4);
    s.attention.sinkhornEps = 0.5;
    auto tr = solve(s, Vec::Unit(2, 0), m2(1, 0.2, 0.2, 0.5));
    EXPECT_NEAR(tr.states.back().mean[0], 0.0, 1e-9);
    EXPECT_NEAR(tr.states.back().mean[1], 1.0, 1e-9);
    // Sinkhorn with A + A^T > 0 and V = I grows exponentially: tr Sigma passes tol_high, but no finite t_max.
    Scene grow = momentScene(AttentionType::Sinkhorn, Mat::Identity(2, 2), Mat::Identity(2, 2), 100, 10);
    grow.moments.tolHigh = 1e3;
    tr = solve(grow, Vec::Zero(2), m2(1, 0.2, 0.2, 0.5));
    EXPECT_EQ(tr.event, MomentEvent::BlowUp);
    EXPECT_FALSE(tr.tMax.has_value());
}

TEST(MomentSolver, PaperEulerFollowsTheAuthorsStoppingRules) {
    Scene s = momentScene(AttentionType::Softmax, m2(-1, 0.2, 0.2, -0.5), Mat::Identity(2, 2), 1);
    s.moments.method = MomentMethod::PaperEuler;
    s.moments.step = 0.05;
    s.moments.tolLow = 1e-3;
    s.moments.maxIter = 100000;
    const auto field = makeMomentField(s);
    MomentSolveOptions o = momentOptions(s);
    o.recordEveryIter = 1;
    auto tr = solveMoments(*field, {Vec::Zero(2), m2(1, 0.3, 0.3, 0.8)}, s, o);
    ASSERT_EQ(tr.event, MomentEvent::Converged);
    // Converged is tested before the step: the last state has ||Sigma'|| < tol_low, the one before does not.
    const std::size_t n = tr.states.size();
    EXPECT_LT(field->rates(0, tr.states[n - 1]).cov.norm(), 1e-3);
    EXPECT_GE(field->rates(0, tr.states[n - 2]).cov.norm(), 1e-3);
    EXPECT_NEAR(tr.eventTime, double(tr.iterations) * 0.05, 1e-12);
    // Euler is first order: halving the step halves the error at a fixed time against the adaptive solution.
    s.moments.tolLow = 0.0;
    s.moments.maxIter = 20;
    const Scene adaptive =
        momentScene(AttentionType::Softmax, m2(-1, 0.2, 0.2, -0.5), Mat::Identity(2, 2), 1);
    const Mat exact = solve(adaptive, Vec::Zero(2), m2(1, 0.3, 0.3, 0.8)).states.back().cov;
    const double e1 =
        (solveMoments(*field, {Vec::Zero(2), m2(1, 0.3, 0.3, 0.8)}, s, o).states.back().cov - exact).norm();
    s.moments.step = 0.025;
    s.moments.maxIter = 40;
    const double e2 =
        (solveMoments(*field, {Vec::Zero(2), m2(1, 0.3, 0.3, 0.8)}, s, o).states.back().cov - exact).norm();
    EXPECT_NEAR(e1 / e2, 2.0, 0.15);
    // Blow-up: tr Sigma > tol_high stops the run with that state recorded; max_iter stops after exactly it.
    Scene up = momentScene(AttentionType::Softmax, Mat::Identity(2, 2), Mat::Identity(2, 2), 1);
    up.moments.method = MomentMethod::PaperEuler;
    up.moments.step = 0.01;
    up.moments.tolHigh = 1e3;
    tr = solveMoments(*makeMomentField(up), {Vec::Zero(2), m2(1, 0, 0, 0.5)}, up, o);
    EXPECT_EQ(tr.event, MomentEvent::BlowUp);
    EXPECT_GT(tr.states.back().cov.trace(), 1e3);
    EXPECT_LE(tr.states[tr.states.size() - 2].cov.trace(), 1e3);
    up.moments.maxIter = 7;
    tr = solveMoments(*makeMomentField(up), {Vec::Zero(2), m2(1, 0, 0, 0.5)}, up, o);
    EXPECT_EQ(tr.event, MomentEvent::MaxIter);
    EXPECT_EQ(tr.iterations, 7);
}

TEST(MomentSolver, RefusesVariantsThatDoNotKeepGaussians) {
    for (AttentionType type : {AttentionType::Exp, AttentionType::Relu, AttentionType::Sigmoid}) {
        Scene s = momentScene(type, Mat::Identity(2, 2), Mat::Identity(2, 2), 1);
        try {
            makeMomentField(s);
            ADD_FAILURE() << toString(type);
        } catch (const SceneError& e) {
            EXPECT_EQ(e.pointer, "/attention/type");
        }
    }
    Scene masked = momentScene(AttentionType::Softmax, Mat::Identity(2, 2), Mat::Identity(2, 2), 1);
    masked.attention.masked = true;
    EXPECT_THROW(makeMomentField(masked), SceneError);
}

TEST(MomentSolver, LinearParticlesEqualTheMomentOdeAtAnyN) {
    // T13 (lin,eps): the empirical mean and covariance of the particles obey the moment ODE exactly.
    const Mat A = m2(-0.6, 0.3, -0.1, -0.4), V = m2(0.7, -0.2, 0.4, 0.5);
    Scene s = momentScene(AttentionType::Linear, A, V, 1, 10);
    s.attention.linearEps = 0.5;
    const Tokens X0 = randomTokens(7, 2, 5);
    const auto tr = solve(s, tokenMean(X0), tokenCovariance(X0));
    const Tokens X =
        integrate(s.attention, X0, Method::DormandPrince, 1.0, 10, Precision::Float64, 1e-11, 1e-13);
    EXPECT_LT((tokenMean(X) - tr.states.back().mean).norm(), 1e-8);
    EXPECT_LT((tokenCovariance(X) - tr.states.back().cov).norm(), 1e-8);
}

TEST(MomentSolver, ParticlesFromAGaussianTrackTheMomentOde) {
    // Mean-field link (docs/math/attention.md#mean-field): 1-D quantile particles of N(0, s0) (drifting:
    // Gaussian-kernel drifting to N(1, 1), App. B), compared with the moment ODE started from the empirical
    // variance; the error falls as N grows.
    struct Case {
        AttentionType type;
        double q, k, v, T;
    };
    for (const Case c :
         {Case{AttentionType::Softmax, 1, -1, 1, 1.0}, Case{AttentionType::L2, 1, 1, -1, 1.0},
          Case{AttentionType::Sinkhorn, 1, 1, -1, 0.5}, Case{AttentionType::Drifting, 1, 1, 1, 1.0}}) {
        AttentionSpec spec = singleHead(c.type, m1(c.q), m1(c.k), m1(c.v));
        spec.targetMean = Vec::Ones(1); // drifting: towards N(1, 1)
        spec.targetCov = m1(1);
        double previous = 1.0;
        for (int n : {25, 100, 400}) {
            const Tokens X0 = quantileTokens1d(n, 1.0);
            Scene s = momentScene(c.type, m1(c.q), m1(c.v), c.T, 1);
            s.attention = spec;
            const auto tr = solve(s, tokenMean(X0), tokenCovariance(X0));
            const Tokens X = integrate(spec, X0, Method::Rk4, c.T, 20);
            const double err = std::abs(tokenCovariance(X)(0, 0) - tr.states.back().cov(0, 0));
            EXPECT_LT(err, previous) << toString(c.type) << " N=" << n;
            previous = err;
        }
        EXPECT_LT(previous, 0.01) << toString(c.type);
    }
}
