// Integrators, the particle simulation and its mean-field oracles (docs/math/gaussian.md#t1;
// docs/math/attention.md#t13, #t14, #mean-field).
#include "TestUtil.h"

#include "engine/attention/VelocityField.h"
#include "engine/dynamics/Integrator.h"
#include "engine/dynamics/Observables.h"
#include "engine/dynamics/Simulation.h"
#include "engine/gaussian/MomentSolver.h"

#include <gtest/gtest.h>

using namespace flowscope;
using namespace flowscope::test;

namespace {

Scene sceneFor(const AttentionSpec& spec, int d, int n, Method m, double T, int steps) {
    Scene s;
    s.name = "test";
    s.d = d;
    s.n = n;
    s.attention = spec;
    s.integrator.method = m;
    s.integrator.T = T;
    s.integrator.steps = steps;
    s.initial.kind = InitKind::Gaussian;
    s.initial.mean = Vec::Zero(d);
    s.initial.cov = Mat::Identity(d, d);
    return s;
}

} // namespace

TEST(Dynamics, LinearAttentionIsExactAtFiniteN) {
    // T13: tokens (1,0), (0,1), (1,1), V = I, A = -I: M(t) = (M0^{-1} + 2t I)^{-1}, M(1) = [[4,1],[1,4]]/15,
    // x_3(1) = (0.5773502692, 0.5773502692).
    const Tokens X0 = (Tokens(3, 2) << 1, 0, 0, 1, 1, 1).finished();
    const AttentionSpec spec =
        singleHead(AttentionType::Linear, -Mat::Identity(2, 2), Mat::Identity(2, 2), Mat::Identity(2, 2));
    const Tokens X = integrate(spec, X0, Method::Rk4, 1.0, 1000);
    const Mat M = X.transpose() * X / 3.0;
    const Mat ref = (Mat(2, 2) << 4, 1, 1, 4).finished() / 15.0;
    EXPECT_LE((M - ref).cwiseAbs().maxCoeff(), 1e-12);
    EXPECT_NEAR(X(2, 0), 0.5773502692, 1e-9);
    EXPECT_NEAR(X(2, 1), 0.5773502692, 1e-9);
}

TEST(Dynamics, MaskedFirstTokenFollowsExpTV) {
    // T14: token 1 attends only to itself, so x_1(t) = e^{tV} x_1(0) = (cos t, sin t) for V = J.
    Tokens X0 = randomTokens(50, 2, 21);
    X0.row(0) << 1.0, 0.0;
    for (AttentionType type : {AttentionType::Softmax, AttentionType::L2}) {
        AttentionSpec spec = singleHead(type, Mat::Identity(2, 2), Mat::Identity(2, 2), rotation90());
        spec.masked = true;
        for (Precision p : {Precision::Float64, Precision::Float32}) {
            const Tokens X = integrate(spec, X0, Method::Rk4, 2.0, 200, p);
            EXPECT_NEAR(X(0, 0), std::cos(2.0), 1e-8); // RK4 truncation at h = 0.01: ~2e-9
            EXPECT_NEAR(X(0, 1), std::sin(2.0), 1e-8);
        }
    }
}

TEST(Dynamics, SoftmaxParticlesTrackTheCovarianceOdeAndErrorShrinksWithN) {
    // docs/math/attention.md#mean-field: 1-D softmax, a = qk = -1, v = 1, s0 = 1, T = 1, quantile particles,
    // RK4 with dt = 0.01, compared with s(t) = 1/(1/s0 - 2 a v t) started from the empirical variance.
    // Reference errors: N = 25: 0.0111, 100: 0.0051, 400: 0.0019.
    const AttentionSpec spec = singleHead(AttentionType::Softmax, Mat::Constant(1, 1, 1.0),
                                          Mat::Constant(1, 1, -1.0), Mat::Constant(1, 1, 1.0));
    const std::vector<std::pair<int, double>> cases = {{25, 0.0111}, {100, 0.0051}, {400, 0.0019}};
    double previous = 1.0;
    for (auto [n, refErr] : cases) {
        const Tokens X0 = quantileTokens1d(n, 1.0);
        const double s0 = tokenCovariance(X0)(0, 0);
        const Tokens X = integrate(spec, X0, Method::Rk4, 1.0, 100);
        const double s1 = tokenCovariance(X)(0, 0);
        const double ode = 1.0 / (1.0 / s0 - 2.0 * (-1.0) * 1.0 * 1.0);
        const double err = std::abs(s1 - ode);
        EXPECT_NEAR(err, refErr, 0.05 * refErr + 5e-5) << "N=" << n;
        EXPECT_LT(err, previous);
        previous = err;
        EXPECT_LE(std::abs(X.mean()), 1e-14);
    }
}

TEST(Dynamics, SoftmaxGaussianSamplesTrackCovarianceOde2d) {
    // 2-D: Sigma' = V Sigma A Sigma + Sigma A^T Sigma V^T (eq (16), docs/math/gaussian.md#softmax) from the
    // empirical covariance (engine/gaussian); the error averaged over seeds falls as N grows.
    const Mat A = (Mat(2, 2) << -1.0, 0.3, 0.1, -0.8).finished(),
              V = (Mat(2, 2) << 1.0, 0.2, -0.1, 0.9).finished();
    const AttentionSpec spec = singleHead(AttentionType::Softmax, A, Mat::Identity(2, 2), V);
    Scene moments;
    moments.d = 2;
    moments.attention = spec;
    moments.integrator.T = 1.0;
    moments.integrator.rtol = 1e-10;
    const auto field = makeMomentField(moments);
    auto odeCov = [&](const Mat& S, const Vec& m) {
        return solveMoments(*field, {m, S}, moments, momentOptions(moments)).states.back().cov;
    };
    double previous = 1e9;
    for (int n : {64, 512, 4096}) {
        double err = 0;
        const int seeds = 3;
        for (int seed = 0; seed < seeds; ++seed) {
            const Tokens X0 = randomTokens(n, 2, 100 + seed, 0.7);
            const Mat S1 = odeCov(tokenCovariance(X0), tokenMean(X0));
            const Tokens X = integrate(spec, X0, Method::Rk4, 1.0, 50, Precision::Float32);
            err += (tokenCovariance(X) - S1).norm() / seeds;
        }
        EXPECT_LT(err, previous) << "N=" << n;
        previous = err;
    }
    EXPECT_LT(previous, 0.02);
}

TEST(Dynamics, FixedStepMethodsShowTheirOrder) {
    // Smooth nonlinear case: softmax, 12 tokens, rotating V. Reference: RK4 with a tiny step.
    const Tokens X0 = randomTokens(12, 2, 31, 0.8);
    const AttentionSpec spec = singleHead(AttentionType::Softmax, (Mat(2, 2) << 1, 0.5, -0.3, 0.7).finished(),
                                          Mat::Identity(2, 2), (Mat(2, 2) << -0.2, -1, 1, 0.1).finished());
    const Tokens ref = integrate(spec, X0, Method::Rk4, 1.0, 4096);
    for (auto [method, order] :
         {std::pair{Method::Euler, 1}, std::pair{Method::Heun, 2}, std::pair{Method::Rk4, 4}}) {
        const double e1 = (integrate(spec, X0, method, 1.0, 16) - ref).norm();
        const double e2 = (integrate(spec, X0, method, 1.0, 32) - ref).norm();
        const double observed = std::log2(e1 / e2);
        EXPECT_NEAR(observed, order, 0.25) << "method order " << order << " e1=" << e1 << " e2=" << e2;
    }
}

TEST(Dynamics, DormandPrinceMeetsItsTolerance) {
    // Linear attention T13 has the exact x_3(1) = (1/sqrt 3, 1/sqrt 3); integrate over [0, 1] in one call.
    const Tokens X0 = (Tokens(3, 2) << 1, 0, 0, 1, 1, 1).finished();
    const AttentionSpec spec =
        singleHead(AttentionType::Linear, -Mat::Identity(2, 2), Mat::Identity(2, 2), Mat::Identity(2, 2));
    const double exact = 1.0 / std::sqrt(3.0);
    for (double tol : {1e-5, 1e-8, 1e-11}) {
        const Tokens X = integrate(spec, X0, Method::DormandPrince, 1.0, 1, Precision::Float64, tol, tol);
        const double err = std::max(std::abs(X(2, 0) - exact), std::abs(X(2, 1) - exact));
        EXPECT_LE(err, 10 * tol) << "tol " << tol;
    }
}

TEST(Dynamics, SingleTokenLinearBlowUpStopsTheRunAndKeepsTheTrajectory) {
    // Linear attention, one token in 1-D: x' = a v x^3 (docs/math/attention.md#linear) with a = v = 1,
    // x0 = 1:
    // x(t) = 1/sqrt(1 - 2t), t_max = 0.5.
    AttentionSpec spec = singleHead(AttentionType::Linear, Mat::Constant(1, 1, 1), Mat::Constant(1, 1, 1),
                                    Mat::Constant(1, 1, 1));
    Scene s = sceneFor(spec, 1, 1, Method::DormandPrince, 1.0, 100);
    s.integrator.divergenceNorm = 1e3;
    Simulation sim(s);
    sim.setState(Tokens::Constant(1, 1, 1.0));
    sim.run();
    ASSERT_TRUE(sim.event().has_value());
    // |x| = 1e3 at 1 - 2t = 1e-6, i.e. t = 0.4999995; the run stops at the first step end past it.
    EXPECT_GE(sim.event()->t, 0.49);
    EXPECT_LE(sim.event()->t, 0.5 + 1e-9);
    EXPECT_GE(sim.history().size(), 49u);
    for (const Frame& f : sim.history()) EXPECT_TRUE(f.tokens.allFinite());
    // Recorded frames follow the exact solution before the blow-up.
    const Frame& f = sim.history()[20];
    EXPECT_NEAR(f.tokens(0, 0), 1.0 / std::sqrt(1.0 - 2.0 * f.t), 1e-5);
}

TEST(Dynamics, NonFiniteVelocityStopsWithTheLastFiniteState) {
    // Unnormalized exp attention overflows float32/double quickly for large scores: the run stops cleanly.
    AttentionSpec spec =
        singleHead(AttentionType::Exp, Mat::Identity(1, 1) * 400.0, Mat::Identity(1, 1), Mat::Identity(1, 1));
    Scene s = sceneFor(spec, 1, 4, Method::Euler, 1.0, 10);
    Simulation sim(s);
    sim.setState((Tokens(4, 1) << 1.0, 2.0, 3.0, 4.0).finished());
    sim.run();
    ASSERT_TRUE(sim.event().has_value());
    for (const Frame& f : sim.history()) EXPECT_TRUE(f.tokens.allFinite());
}

TEST(Dynamics, PiecewiseKeyframesSwitchParameters) {
    // One token, V = J on [0, 0.5), V = -I on [0.5, 1]: x(1) = e^{-0.5} R(0.5) x0.
    AttentionSpec spec;
    spec.type = AttentionType::Softmax;
    const Mat I = Mat::Identity(2, 2);
    spec.keyframes = {Keyframe{0.0, {HeadParams{I, I, rotation90()}}}, Keyframe{0.5, {HeadParams{I, I, -I}}}};
    spec.interpolation = Interpolation::Piecewise;
    // Layer semantics: a step that ends on a switch time uses the layer it started in (RK4 stays 4th order).
    Scene s = sceneFor(spec, 2, 1, Method::Rk4, 1.0, 100);
    Simulation sim(s);
    sim.setState((Tokens(1, 2) << 1, 0).finished());
    sim.run();
    EXPECT_NEAR(sim.tokens()(0, 0), std::exp(-0.5) * std::cos(0.5), 1e-9);
    EXPECT_NEAR(sim.tokens()(0, 1), std::exp(-0.5) * std::sin(0.5), 1e-9);
    // Linear interpolation from V = 0 at t = 0 to V = -2I at t = 1 (one token): x(1) = e^{-1} x0.
    spec.keyframes = {Keyframe{0.0, {HeadParams{I, I, 0 * I}}}, Keyframe{1.0, {HeadParams{I, I, -2 * I}}}};
    spec.interpolation = Interpolation::Linear;
    Simulation lin(sceneFor(spec, 2, 1, Method::Rk4, 1.0, 50));
    lin.setState((Tokens(1, 2) << 1, 0).finished());
    lin.run();
    EXPECT_NEAR(lin.tokens()(0, 0), std::exp(-1.0), 1e-8); // RK4 truncation at h = 0.02: ~3e-9
}

TEST(Dynamics, SphereRunKeepsTokensOnTheSphereAndClusters) {
    AttentionSpec spec =
        singleHead(AttentionType::Softmax, Mat::Identity(3, 3), Mat::Identity(3, 3), Mat::Identity(3, 3));
    spec.sphere = true;
    spec.beta = 4.0;
    Scene s = sceneFor(spec, 3, 64, Method::Rk4, 20.0, 400);
    s.output.every = 400;
    s.output.clusterTol = 1e-2;
    Simulation sim(s);
    sim.run();
    EXPECT_FALSE(sim.event().has_value());
    EXPECT_LE((sim.tokens().rowwise().norm().array() - 1.0).abs().maxCoeff(), 1e-12);
    // Geshkovski et al.: for beta small enough the tokens collapse to one point on the sphere.
    EXPECT_LT(sim.history().back().obs.clusters, sim.history().front().obs.clusters);
    EXPECT_LE(sim.history().back().obs.clusters, 3);
}

TEST(Dynamics, SimulationRecordsObservablesEveryKSteps) {
    AttentionSpec spec = singleHead(AttentionType::Softmax, Mat::Identity(2, 2), Mat::Identity(2, 2),
                                    -0.4 * Mat::Identity(2, 2));
    Scene s = sceneFor(spec, 2, 100, Method::Rk4, 1.0, 20);
    s.output.every = 5;
    Simulation sim(s);
    sim.run();
    ASSERT_EQ(sim.history().size(), 5u); // t = 0, 0.25, 0.5, 0.75, 1
    EXPECT_DOUBLE_EQ(sim.history().back().t, 1.0);
    for (const Frame& f : sim.history()) {
        EXPECT_EQ(f.obs.rank, 2);
        EXPECT_GT(f.obs.kinetic, 0.0);
        EXPECT_GT(f.obs.entropy, 0.0);
        EXPECT_LE(f.obs.entropy, std::log(100.0));
    }
    // V = -0.4 I contracts: the covariance trace shrinks.
    EXPECT_LT(sim.history().back().obs.cov.trace(), sim.history().front().obs.cov.trace());
    // Bit-for-bit reproducible.
    Simulation again(s);
    again.run();
    EXPECT_EQ((again.tokens() - sim.tokens()).cwiseAbs().maxCoeff(), 0.0);
}

// A live edit of the attention type takes on the CPU: after setAttention(l2) the run's velocity is a fresh l2
// field's, bit for bit, for every pair of types (it kept the old kernel when only the sphere rebuilt it).
TEST(Dynamics, ALiveTypeEditRunsTheNewType) {
    const Mat Q = Mat::Identity(2, 2), K = Mat::Identity(2, 2), V = -0.5 * Mat::Identity(2, 2);
    const AttentionType types[] = {AttentionType::Softmax, AttentionType::L2,   AttentionType::Exp,
                                   AttentionType::Sigmoid, AttentionType::Relu, AttentionType::Linear};
    for (const AttentionType from : types)
        for (const AttentionType to : types) {
            if (from == to) continue;
            SCOPED_TRACE(std::string(toString(from)) + " -> " + toString(to));
            Simulation live(sceneFor(singleHead(from, Q, K, V), 2, 40, Method::Euler, 1.0, 10));
            const AttentionSpec next = singleHead(to, Q, K, V);
            live.setAttention(next);
            EXPECT_EQ(live.scene().attention.type, to);
            Simulation fresh(sceneFor(next, 2, 40, Method::Euler, 1.0, 10));
            EXPECT_EQ(live.field().name(), fresh.field().name());
            Tokens a, b;
            live.field().velocity(0.0, live.tokens(), a);
            fresh.field().velocity(0.0, live.tokens(), b);
            EXPECT_EQ((a - b).cwiseAbs().maxCoeff(), 0.0);
        }
}

// A spec the field factory refuses leaves the old spec and field in force.
TEST(Dynamics, ARefusedLiveEditKeepsTheOldSpec) {
    const Mat I = Mat::Identity(2, 2);
    Simulation sim(
        sceneFor(singleHead(AttentionType::Softmax, I, I, -0.5 * I), 2, 30, Method::Euler, 1.0, 10));
    Tokens before, after;
    sim.field().velocity(0.0, sim.tokens(), before);
    AttentionSpec masked = singleHead(AttentionType::Linear, I, I, -0.5 * I);
    masked.masked = true; // masked linear attention is not supported
    EXPECT_THROW(sim.setAttention(masked), SceneError);
    EXPECT_EQ(sim.scene().attention.type, AttentionType::Softmax);
    EXPECT_FALSE(sim.scene().attention.masked);
    sim.field().velocity(0.0, sim.tokens(), after);
    EXPECT_EQ((after - before).cwiseAbs().maxCoeff(), 0.0);
    EXPECT_TRUE(sim.step());
}

TEST(Observables, ClustersAndRank) {
    Tokens X(6, 2);
    X << 0, 0, 1e-4, 0, 1, 1, 1, 1.0001, 5, 5, 5, 5;
    EXPECT_EQ(countClusters(X, 1e-3), 3);
    Tokens L(4, 2);
    L << 0, 0, 1, 2, 2, 4, -1, -2; // on a line: rank 1
    EXPECT_EQ(numericalRank(tokenCovariance(L), 1e-9), 1);
    Tokens P(3, 2);
    P << 0, 0, 1, 0, 0, 1;
    EXPECT_EQ(numericalRank(tokenCovariance(P), 1e-9), 2);
}

TEST(Dynamics, SupportGrowsAtMostLikeExpOfTheNormOfV) {
    // T15 (Thm 3.1, Lemma C.18): max_i |x_i(t)| <= exp(t ||V||_2) max_i |x_i(0)| for softmax, l2, sigmoid and
    // masked attention; tight for V = I and a single token.
    const Mat V = (Mat(2, 2) << 0.9, -0.6, 0.4, 0.7).finished();
    const double normV = Eigen::JacobiSVD<Mat>(V).singularValues()[0];
    const Tokens X0 = randomTokens(40, 2, 9);
    const double r0 = X0.rowwise().norm().maxCoeff();
    for (AttentionType type : {AttentionType::Softmax, AttentionType::L2, AttentionType::Sigmoid}) {
        for (bool masked : {false, true}) {
            AttentionSpec spec =
                singleHead(type, (Mat(2, 2) << 1.2, 0.3, -0.2, 0.8).finished(), Mat::Identity(2, 2), V);
            spec.masked = masked;
            const Tokens X = integrate(spec, X0, Method::Rk4, 2.0, 200);
            EXPECT_LE(X.rowwise().norm().maxCoeff(), std::exp(2.0 * normV) * r0 * (1 + 1e-12))
                << toString(type) << (masked ? " masked" : "");
        }
    }
    const Tokens one = X0.topRows(1);
    const Tokens X = integrate(
        singleHead(AttentionType::Softmax, Mat::Identity(2, 2), Mat::Identity(2, 2), Mat::Identity(2, 2)),
        one, Method::Rk4, 1.0, 100);
    EXPECT_NEAR(X.norm(), std::exp(1.0) * one.norm(), 1e-8); // the bound is attained
}
