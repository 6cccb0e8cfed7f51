// The forward models of the Bayesian inverse problems (engine/inverse/, docs/math/inverse.md): Lorenz-63
// window means, the 1-D elliptic problem and EIT. Oracles are mathematics only: Euler steps and fixed points
// written out by hand, central differences of v·F (pullbackByDifferences), the Neumann eigenfunctions of the
// elliptic operator, the exact discrete solution w = s1 of EIT at constant conductivity, and the discrete
// current conservation and reciprocity of the EIT Dirichlet-to-Neumann map.
#include "engine/inverse/Eit.h"
#include "engine/inverse/Elliptic.h"
#include "engine/inverse/Lorenz63.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <random>
#include <stdexcept>

using namespace flowscope::inverse;

namespace {

Vector normals(int size, std::mt19937_64& rng, double sigma = 1) {
    std::normal_distribution<double> normal(0.0, sigma);
    Vector x(size);
    for (auto& xi : x) xi = normal(rng);
    return x;
}

double relativeError(const Vector& a, const Vector& b) {
    return (a - b).norm() / b.norm();
}

// Seconds per call of f, over `repeats` calls.
template <class F> double secondsPerCall(int repeats, F&& f) {
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < repeats; ++r) f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / repeats;
}

Vector truth() {
    Vector theta(3);
    theta << 10, 28, 8.0 / 3;
    return theta;
}

} // namespace

// ---------------------------------------------------------------------------------------------------- Lorenz

TEST(InverseLorenz63, StepsAreCountedInIntegers) {
    const Lorenz63 reference(Lorenz63Setup::reference9());
    EXPECT_EQ(reference.spinUpSteps(), 3000);
    EXPECT_EQ(reference.windowSteps(), 2000);
    EXPECT_EQ(reference.steps(), 23000);
    EXPECT_EQ(reference.observations(), 30);
    const Lorenz63 preset(Lorenz63Setup::shortHorizon());
    EXPECT_EQ(preset.spinUpSteps(), 0);
    EXPECT_EQ(preset.windowSteps(), 20);
    EXPECT_EQ(preset.observations(), 30);
    Lorenz63Setup bad;
    bad.window = 0.004; // rounds to 0 steps
    EXPECT_THROW(Lorenz63{bad}, std::invalid_argument);
}

// Two windows of two Euler steps each after one spin-up step, written out by hand.
TEST(InverseLorenz63, EulerStepsAndWindowMeansByHand) {
    Lorenz63Setup setup;
    setup.dt = 0.01;
    setup.spinUp = 0.01;
    setup.window = 0.02;
    setup.windows = 2;
    const Lorenz63 model(setup);
    const double s = 9.5, r = 27, b = 2.5, dt = 0.01;
    Vector theta(3);
    theta << s, r, b;

    double x1 = setup.x0(0), x2 = setup.x0(1), x3 = setup.x0(2);
    auto step = [&] {
        const double d1 = s * (x2 - x1), d2 = x1 * (r - x3) - x2, d3 = x1 * x2 - b * x3;
        x1 += dt * d1;
        x2 += dt * d2;
        x3 += dt * d3;
    };
    step(); // spin-up
    double expected[6] = {};
    for (int j = 0; j < 2; ++j)
        for (int k = 0; k < 2; ++k) {
            step();
            expected[3 * j] += x1 / 2;
            expected[3 * j + 1] += x2 / 2;
            expected[3 * j + 2] += x3 / 2;
        }
    const Vector y = model.apply(theta);
    ASSERT_EQ(y.size(), 6);
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(y(i), expected[i], 1e-12 * std::abs(expected[i])) << i;
    EXPECT_EQ((model.linearize(theta)->value() - y).norm(), 0.0);
}

// One Euler step observed: y = x0 + Δt f(x0; θ), so Jᵀ v = Δt (v1 (x2 − x1), v2 x1, −v3 x3) at x0.
TEST(InverseLorenz63, OneStepPullbackByHand) {
    Lorenz63Setup setup;
    setup.spinUp = 0;
    setup.window = setup.dt;
    setup.windows = 1;
    const Lorenz63 model(setup);
    Vector v(3);
    v << 0.3, -1.2, 0.7;
    const Eigen::Vector3d x = setup.x0;
    const Vector g = model.linearize(truth())->pullback(v);
    EXPECT_NEAR(g(0), setup.dt * v(0) * (x(1) - x(0)), 1e-15);
    EXPECT_NEAR(g(1), setup.dt * v(1) * x(0), 1e-15);
    EXPECT_NEAR(g(2), -setup.dt * v(2) * x(2), 1e-15);
}

// The equilibria 0 and C± = (±√(β(r−1)), ±√(β(r−1)), r − 1) of the vector field are fixed points of every
// Euler step: all window means equal the equilibrium.
TEST(InverseLorenz63, EquilibriaStayPut) {
    const Vector theta = truth();
    const double q = std::sqrt(theta(2) * (theta(1) - 1));
    for (const Eigen::Vector3d& x0 : {Eigen::Vector3d(0, 0, 0), Eigen::Vector3d(q, q, theta(1) - 1),
                                      Eigen::Vector3d(-q, -q, theta(1) - 1)}) {
        Lorenz63Setup setup = Lorenz63Setup::shortHorizon();
        setup.x0 = x0;
        const Vector y = Lorenz63(setup).apply(theta);
        for (int j = 0; j < setup.windows; ++j)
            EXPECT_LT((y.segment<3>(3 * j) - x0).norm(), 1e-12 * (1 + x0.norm())) << "window " << j;
    }
}

// On the preset's horizon (T = 2) the adjoint is the exact derivative of the discrete map, and central
// differences at relative step 1e-6 carry a truncation error ~ (1e-6)² times the third derivative plus a
// rounding error ~ 1e-16 |F| / 1e-6 ≈ 1e-9 relative; measured ≤ 1e-9, the bound 1e-6 leaves room for the
// random points.
TEST(InverseLorenz63, PullbackMatchesDifferencesOnTheShortHorizon) {
    const Lorenz63 model(Lorenz63Setup::shortHorizon());
    std::mt19937_64 rng(63);
    for (int trial = 0; trial < 4; ++trial) {
        const Vector theta = truth() + normals(3, rng, 0.5);
        const Vector v = normals(model.observations(), rng);
        const Vector g = model.linearize(theta)->pullback(v);
        const Vector fd = pullbackByDifferences(model, theta, v, 1e-6);
        const double err = relativeError(g, fd);
        std::printf("[ lorenz63 ] T = 2, theta = (%.2f, %.2f, %.2f): |J^T v| = %.3e, rel error vs FD %.1e\n",
                    theta(0), theta(1), theta(2), g.norm(), err);
        EXPECT_LT(err, 1e-6);
    }
}

// The reason for the preset: with a fixed x0 the derivative of the window means grows like e^{0.9 t}. The
// measured norms |Jᵀ 1| at the truth are ~1.6e1 (T = 2), ~5e2 (T = 10), ~2e12 (T = 30), ~2e99 (T = 230).
TEST(InverseLorenz63, LongHorizonDerivativeExplodes) {
    const Vector theta = truth();
    auto norm = [&](const Lorenz63Setup& setup) {
        const Lorenz63 model(setup);
        return model.linearize(theta)->pullback(Vector::Ones(model.observations())).norm();
    };
    const double shortNorm = norm(Lorenz63Setup::shortHorizon());
    const double longNorm = norm(Lorenz63Setup::reference9());
    std::printf("[ lorenz63 ] |J^T 1| at the truth: T = 2 %.2e, T = 230 %.2e\n", shortNorm, longNorm);
    EXPECT_LT(shortNorm, 1e3);
    EXPECT_GT(longNorm, 1e60); // e^{0.9·230} ≈ 1e90, give or take the constant
    EXPECT_TRUE(std::isfinite(longNorm));
}

TEST(InverseLorenz63, BlowUpGivesNaNNotAnException) {
    const Lorenz63 model(Lorenz63Setup::shortHorizon());
    Vector theta(3);
    theta << 1e6, 1e6, 1;
    std::unique_ptr<Linearization> lin;
    ASSERT_NO_THROW(lin = model.linearize(theta));
    EXPECT_TRUE(lin->value().array().isNaN().all());
    EXPECT_TRUE(model.apply(theta).array().isNaN().all());
    EXPECT_TRUE(lin->pullback(Vector::Ones(30)).array().isNaN().all());
    EXPECT_THROW(model.apply(Vector::Ones(2)), std::invalid_argument);
}

TEST(InverseLorenz63, Cost) {
    const Vector theta = truth();
    for (const auto& [label, setup] : {std::pair{"T = 2", Lorenz63Setup::shortHorizon()},
                                       std::pair{"T = 230", Lorenz63Setup::reference9()}}) {
        const Lorenz63 model(setup);
        const Vector v = Vector::Ones(model.observations());
        const double seconds = secondsPerCall(50, [&] { model.linearize(theta)->pullback(v); });
        std::printf("[ lorenz63 ] %s (%d steps): linearize + pullback %.1f us\n", label, model.steps(),
                    seconds * 1e6);
    }
}

// -------------------------------------------------------------------------------------------------- Elliptic

// cos(πks) is a Neumann eigenfunction: −α w'' + w = cos(πks) has w = cos(πks)/(1 + απ²k²). The maximum nodal
// error of the second-order scheme (boundary rows included) falls by 4 when h halves.
TEST(InverseElliptic, SecondOrderAgainstTheNeumannEigenfunctions) {
    for (int k : {1, 2, 5}) {
        double previous = 0;
        for (int nodes : {33, 65, 129, 257}) {
            EllipticSetup setup;
            setup.nodes = nodes;
            const Elliptic model(setup);
            const double scale = 1 + setup.alpha * std::numbers::pi * std::numbers::pi * k * k;
            Vector u(nodes), exact(nodes);
            for (int i = 0; i < nodes; ++i) {
                u(i) = std::cos(std::numbers::pi * k * model.node(i));
                exact(i) = u(i) / scale;
            }
            const double err = (model.solve(u) - exact).cwiseAbs().maxCoeff();
            if (previous > 0) {
                std::printf("[ elliptic ] k = %d, nodes %3d: max error %.3e, ratio %.4f\n", k, nodes, err,
                            previous / err);
                EXPECT_NEAR(previous / err, 4.0, 0.1) << "k = " << k << ", nodes " << nodes;
            }
            previous = err;
        }
    }
}

// A constant source gives the constant solution w = u (the discrete operator keeps constants).
TEST(InverseElliptic, ConstantSourceIsReproducedExactly) {
    const Elliptic model;
    const int n = model.setup().nodes;
    EXPECT_LT((model.solve(Vector::Constant(n, 2.5)) - Vector::Constant(n, 2.5)).cwiseAbs().maxCoeff(),
              1e-12);
}

// F(c) is the solution for the bump source u(s) = Σ c_j exp(−(s − s_j)²/(2·0.1²)), s_j = (j − ½)/d, read at
// γ_k = (k + ½)/m by linear interpolation between the two nodes around it (written out here; 100 nodes, so
// no γ_k is a node).
TEST(InverseElliptic, ForwardMapIsTheBumpSourceSolvedAndInterpolated) {
    EllipticSetup setup;
    setup.nodes = 100;
    const Elliptic model(setup);
    std::mt19937_64 rng(7);
    const Vector c = normals(128, rng);
    Vector u = Vector::Zero(100);
    for (int i = 0; i < 100; ++i)
        for (int j = 1; j <= 128; ++j) {
            const double ds = i / 99.0 - (j - 0.5) / 128;
            u(i) += c(j - 1) * std::exp(-ds * ds / (2 * 0.1 * 0.1));
        }
    const Vector w = model.solve(u);
    const Vector y = model.apply(c);
    for (int k = 0; k < 32; ++k) {
        const double gamma = (k + 0.5) / 32, x = gamma * 99;
        const int left = int(x);
        const double t = x - left, expected = (1 - t) * w(left) + t * w(left + 1);
        EXPECT_NEAR(y(k), expected, 1e-12 * w.cwiseAbs().maxCoeff()) << "gamma " << gamma;
    }
}

// G = O A⁻¹ B matches one forward solve, and Gᵀ matches one adjoint solve, on a grid whose nodes miss the
// observation points (so the interpolation weights are not 0 and 1).
TEST(InverseElliptic, MatrixAgreesWithTheSolves) {
    for (int nodes : {257, 100}) {
        EllipticSetup setup;
        setup.nodes = nodes;
        const Elliptic model(setup);
        ASSERT_EQ(model.G().rows(), 32);
        ASSERT_EQ(model.G().cols(), 128);
        std::mt19937_64 rng(nodes);
        const Vector c = normals(128, rng), v = normals(32, rng);
        EXPECT_LT(relativeError(model.apply(c), model.applyBySolve(c)), 1e-12);
        EXPECT_LT(relativeError(model.linearize(c)->pullback(v), model.pullbackBySolve(v)), 1e-12);
    }
}

// F is linear, so central differences are exact up to rounding: ~1e-16 |F|/eps relative with eps = 1e-6,
// amplified by the cancellation in v·F; 1e-7 is far above that and far below any wrong transpose.
TEST(InverseElliptic, PullbackMatchesDifferences) {
    const Elliptic model;
    std::mt19937_64 rng(128);
    for (int trial = 0; trial < 3; ++trial) {
        const Vector c = normals(128, rng), v = normals(32, rng);
        const Vector g = model.linearize(c)->pullback(v);
        const double err = relativeError(g, pullbackByDifferences(model, c, v, 1e-6));
        std::printf("[ elliptic ] pullback vs FD: rel error %.1e\n", err);
        EXPECT_LT(err, 1e-7);
    }
}

TEST(InverseElliptic, Cost) {
    const Elliptic model;
    std::mt19937_64 rng(1);
    const Vector c = normals(128, rng), v = normals(32, rng);
    const double viaG = secondsPerCall(200, [&] { model.linearize(c)->pullback(v); });
    const double viaSolves = secondsPerCall(200, [&] {
        (void)model.applyBySolve(c);
        (void)model.pullbackBySolve(v);
    });
    std::printf(
        "[ elliptic ] linearize + pullback: %.2f us with G, %.1f us with a forward and an adjoint solve\n",
        viaG * 1e6, viaSolves * 1e6);
}

// ------------------------------------------------------------------------------------------------------- EIT

// At constant conductivity κ0 the pattern f = s1 has the solution w = s1, which the finite volumes reproduce
// exactly; the outward current density is κ0 ∂s1/∂ν: −κ0 on the left edge, +κ0 on the right, 0 on the bottom
// and top (and likewise for f = s2).
TEST(InverseEit, LinearPatternAtConstantConductivity) {
    EitSetup setup;
    setup.kappa0 = 1.7;
    setup.patterns = {[](double s1, double) { return s1; }, [](double, double s2) { return s2; }};
    const Eit model(setup);
    const int nb = model.boundaryFaces();
    ASSERT_EQ(model.observations(), 2 * nb);
    const Vector y = model.apply(Vector::Zero(model.parameters()));
    for (int p = 0; p < 2; ++p)
        for (int e = 0; e < nb; ++e) {
            const Eigen::Vector2d normal = model.outwardNormal(e);
            EXPECT_NEAR(y(p * nb + e), setup.kappa0 * normal(p), 1e-10) << "pattern " << p << ", face " << e;
        }
    // The face order: bottom, right, top, left, counter-clockwise from (0, 0).
    EXPECT_EQ(model.boundaryPoint(0), Eigen::Vector2d(0.5 / setup.cells, 0));
    EXPECT_EQ(model.outwardNormal(nb - 1), Eigen::Vector2d(-1, 0));
}

// For any conductivity the cell balances sum to zero: the boundary currents y_e h add up to 0. The discrete
// Dirichlet-to-Neumann map is symmetric (reciprocity: g·I[f] = f·I[g]) and positive (f·I[f] ≥ 0).
TEST(InverseEit, CurrentConservationAndReciprocity) {
    const Eit model;
    std::mt19937_64 rng(32);
    const Vector c = normals(model.parameters(), rng, 0.2);
    ASSERT_GT(model.faceConductivity(c).minCoeff(), 0);
    const Vector y = model.apply(c);
    const int nb = model.boundaryFaces(), P = model.patterns();
    ASSERT_EQ(P, 6);
    const double h = 1.0 / model.cells();
    Matrix f(nb, P);
    const auto patterns = EitSetup::trigonometricPatterns(3);
    for (int e = 0; e < nb; ++e)
        for (int p = 0; p < P; ++p)
            f(e, p) = patterns[p](model.boundaryPoint(e)(0), model.boundaryPoint(e)(1));
    Matrix currents(nb, P);
    for (int p = 0; p < P; ++p) currents.col(p) = y.segment(p * nb, nb) * h;
    const Matrix energy = f.transpose() * currents; // f_pᵀ I[f_q]
    const double scale = energy.cwiseAbs().maxCoeff();
    for (int p = 0; p < P; ++p) {
        EXPECT_NEAR(currents.col(p).sum(), 0, 1e-12 * scale) << "pattern " << p;
        EXPECT_GT(energy(p, p), 0) << "pattern " << p;
        for (int q = 0; q < p; ++q) EXPECT_NEAR(energy(p, q), energy(q, p), 1e-12 * scale) << p << ", " << q;
    }
}

// The adjoint pullback against central differences at relative step 1e-5 (d = 32 pairs of forward solves):
// the truncation error ~ (1e-5)² and the rounding ~ 1e-16/1e-5 are both ~1e-10 relative; measured ~1e-9
// (the solves' own rounding), the bound 1e-6 leaves room while any wrong term in ∂L/∂κ is O(1).
TEST(InverseEit, PullbackMatchesDifferences) {
    const Eit model;
    std::mt19937_64 rng(4);
    for (int trial = 0; trial < 3; ++trial) {
        const Vector c = normals(model.parameters(), rng, 0.2);
        const Vector v = normals(model.observations(), rng);
        const Vector g = model.linearize(c)->pullback(v);
        const double err = relativeError(g, pullbackByDifferences(model, c, v, 1e-5));
        std::printf("[ eit ] pullback vs FD: |J^T v| = %.3e, rel error %.1e\n", g.norm(), err);
        EXPECT_LT(err, 1e-6);
    }
}

TEST(InverseEit, NonPositiveConductivityGivesNaN) {
    const Eit model;
    Vector c = Vector::Zero(model.parameters());
    c(5) = -3; // κ = 1 − 3 near the sixth centre
    ASSERT_LE(model.faceConductivity(c).minCoeff(), 0);
    std::unique_ptr<Linearization> lin;
    ASSERT_NO_THROW(lin = model.linearize(c));
    EXPECT_TRUE(lin->value().array().isNaN().all());
    EXPECT_TRUE(lin->pullback(Vector::Ones(model.observations())).array().isNaN().all());
    c(5) = std::numeric_limits<double>::infinity();
    EXPECT_TRUE(model.apply(c).array().isNaN().all());
    c(5) = -0.5; // κ ≥ 0.5: finite
    EXPECT_TRUE(model.apply(c).allFinite());
}

TEST(InverseEit, Cost) {
    const Eit model;
    std::mt19937_64 rng(5);
    const Vector c = normals(model.parameters(), rng, 0.2), v = normals(model.observations(), rng);
    const double forward = secondsPerCall(100, [&] { model.apply(c); });
    const double both = secondsPerCall(100, [&] { model.linearize(c)->pullback(v); });
    std::printf(
        "[ eit ] %d x %d cells, %d patterns, m = %d: linearize %.0f us, linearize + pullback %.0f us\n",
        model.cells(), model.cells(), model.patterns(), model.observations(), forward * 1e6, both * 1e6);
}
