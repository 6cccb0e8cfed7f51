// Closed forms of the newer theory as oracles (docs/math/theory.md): the equiangular reduction of softmax
// attention with Q = K = V = I against the particle simulation.
#include "TestUtil.h"

#include "engine/dynamics/Equiangular.h"
#include "engine/dynamics/Simulation.h"

#include <gtest/gtest.h>

#include <iostream>

using namespace flowscope;
using namespace flowscope::test;

namespace {

// n orthonormal tokens e_1 .. e_n in d = n: every pairwise cosine is 0, every radius 1.
Scene orthonormalScene(int n, double beta, double T, int steps) {
    Scene s;
    s.name = "equiangular";
    s.d = n;
    s.n = n;
    s.precision = Precision::Float64;
    s.initial.kind = InitKind::Points;
    s.initial.points = Tokens::Identity(n, n);
    s.attention.beta = beta;
    s.attention.heads = {{Mat::Identity(n, n), Mat::Identity(n, n), Mat::Identity(n, n)}};
    s.integrator.method = Method::DormandPrince;
    s.integrator.T = T;
    s.integrator.steps = steps;
    s.integrator.rtol = 1e-12;
    s.integrator.atol = 1e-14;
    s.output.entropy = false;
    return s;
}

// The largest |simulated mean cosine - rho(t)| over the recorded frames of a run.
double worstGap(const Scene& s, const Equiangular& start) {
    Simulation sim(s);
    sim.run();
    EXPECT_FALSE(sim.event().has_value());
    std::vector<double> times, measured;
    for (const Frame& f : sim.history()) {
        times.push_back(f.t);
        measured.push_back(f.obs.meanCosine);
    }
    const std::vector<double> rho =
        equiangularRho(normalizationOf(s.attention), s.n, s.attention.beta, start, times);
    double worst = 0.0;
    for (std::size_t k = 0; k < rho.size(); ++k) worst = std::max(worst, std::abs(measured[k] - rho[k]));
    std::cout << "[ equiang. ] " << toString(normalizationOf(s.attention)) << " n " << s.n << " beta "
              << s.attention.beta << ": rho " << rho.front() << " -> " << rho.back() << ", worst gap "
              << worst << "\n";
    // The run must have moved: the oracle is not met by standing still.
    EXPECT_GT(rho.back() - rho.front(), 0.2) << "beta " << s.attention.beta;
    return worst;
}

} // namespace

TEST(Theory, MeanCosineIsThePairAverage) {
    const Tokens X = randomTokens(7, 3, 5);
    double sum = 0.0;
    for (int i = 0; i < 7; ++i)
        for (int j = 0; j < 7; ++j)
            if (i != j) sum += X.row(i).dot(X.row(j)) / (X.row(i).norm() * X.row(j).norm());
    EXPECT_NEAR(meanCosine(X), sum / 42.0, 1e-14);
    EXPECT_TRUE(std::isnan(meanCosine(X.topRows(1))));
}

// The post-LN reduced ODE's right-hand side is the sphere field's own: d<x_1, x_2>/dt from one velocity
// evaluation at an equiangular configuration (docs/math/theory.md#equiangular).
TEST(Theory, EquiangularRateIsTheSphereFieldsDerivative) {
    for (double beta : {1.0, 4.0, 9.0})
        for (double rho : {-0.1, 0.0, 0.3, 0.8}) {
            const int n = 5;
            // n unit vectors with pairwise cosine rho: the Cholesky factor of the Gram matrix.
            const Mat G = (1.0 - rho) * Mat::Identity(n, n) + rho * Mat::Ones(n, n);
            const Tokens X = Mat(G.llt().matrixL());
            Scene s = orthonormalScene(n, beta, 1.0, 1);
            s.attention.sphere = true;
            Tokens V;
            makeCpuField(s.attention, n, Precision::Float64)->velocity(0.0, X, V);
            const double derivative = V.row(0).dot(X.row(1)) + X.row(0).dot(V.row(1));
            EXPECT_NEAR(equiangularRate(Normalization::Post, n, beta, {rho, 1.0}).rho, derivative, 1e-14)
                << "beta " << beta << ", rho " << rho;
        }
}

// Item 5 of the theory issue: n orthonormal tokens in d = n on the sphere stay equiangular, and their mean
// cosine follows the reduced ODE to 1e-9 (both sides adaptive float64 at tight tolerances).
TEST(Theory, PostLnEquiangularOdeMatchesTheSimulation) {
    const struct { double beta, T; } cases[] = {{1.0, 6.0}, {4.0, 12.0}, {9.0, 400.0}};
    for (int n : {3, 6})
        for (const auto& c : cases) {
            Scene s = orthonormalScene(n, c.beta, c.T, 80);
            s.attention.sphere = true;
            EXPECT_LE(worstGap(s, {0.0, 1.0}), 1e-9) << "n " << n << ", beta " << c.beta;
        }
}
