// The VJP of one attention head (engine/attention/AttentionVjp.h) against central finite differences of
// L = <G, v(X, Q, K, V, beta)> in float64, for every kind with and without the sphere projection; the
// forward against the particle field it must equal; float32 against float64.
#include "engine/attention/AttentionVjp.h"
#include "engine/attention/VelocityField.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

namespace flowscope {
namespace {

using test::randn;

struct Case {
    AttentionHead head;
    Tokens X, G;
};

Case makeCase(AttentionType type, bool sphere, int n, int d, int k, std::uint64_t seed) {
    Case c;
    c.head.type = type;
    c.head.sphere = sphere;
    c.head.Q = randn(k, d, seed + 1, 0.7);
    c.head.K = randn(k, d, seed + 2, 0.7);
    c.head.V = randn(d, d, seed + 3);
    c.head.beta = 0.8;
    c.X = randn(n, d, seed);
    c.G = randn(n, d, seed + 4);
    return c;
}

double loss(const AttentionHead& head, const Tokens& X, const Tokens& G) {
    return (attentionForward(head, X, Precision::Float64).array() * G.array()).sum();
}

// Central difference with one Richardson step (error O(h^4)) of L along one entry reached by `at`.
double finiteDifference(Case c, const std::function<double&(Case&)>& at) {
    const double x0 = at(c), h = 1e-4 * std::max(1.0, std::abs(x0));
    auto D = [&](double step) {
        at(c) = x0 + step;
        const double plus = loss(c.head, c.X, c.G);
        at(c) = x0 - step;
        const double minus = loss(c.head, c.X, c.G);
        at(c) = x0;
        return (plus - minus) / (2 * step);
    };
    return (4 * D(h / 2) - D(h)) / 3;
}

// The largest |analytic - finite difference| over every entry of X, Q, K, V and beta, relative to the
// largest gradient entry.
double vjpError(const Case& c0) {
    AttentionSaved saved;
    attentionForward(c0.head, c0.X, Precision::Float64, &saved);
    const AttentionGrads g = attentionBackward(c0.head, c0.X, saved, c0.G, Precision::Float64);
    double worst = 0, scale = std::abs(g.dBeta);
    for (const Mat* m : {&g.dX, &g.dQ, &g.dK, &g.dV}) scale = std::max(scale, m->cwiseAbs().maxCoeff());
    auto check = [&](const Mat& grad, const std::function<Mat&(Case&)>& field) {
        EXPECT_EQ(grad.rows(), field(const_cast<Case&>(c0)).rows());
        EXPECT_EQ(grad.cols(), field(const_cast<Case&>(c0)).cols());
        for (Eigen::Index i = 0; i < grad.rows(); ++i)
            for (Eigen::Index j = 0; j < grad.cols(); ++j) {
                const double fd = finiteDifference(c0, [&](Case& c) -> double& { return field(c)(i, j); });
                worst = std::max(worst, std::abs(grad(i, j) - fd));
            }
    };
    check(g.dX, [](Case& c) -> Mat& { return c.X; });
    check(g.dQ, [](Case& c) -> Mat& { return c.head.Q; });
    check(g.dK, [](Case& c) -> Mat& { return c.head.K; });
    check(g.dV, [](Case& c) -> Mat& { return c.head.V; });
    const double fdBeta = finiteDifference(c0, [](Case& c) -> double& { return c.head.beta; });
    worst = std::max(worst, std::abs(g.dBeta - fdBeta));
    return worst / scale;
}

constexpr AttentionType kKinds[] = {AttentionType::Softmax, AttentionType::L2, AttentionType::Exp,
                                    AttentionType::Relu, AttentionType::Sigmoid};

TEST(AttentionVjp, MatchesCentralFiniteDifferencesForEveryKind) {
    for (AttentionType type : kKinds)
        for (bool sphere : {false, true}) {
            SCOPED_TRACE(std::string(toString(type)) + (sphere ? " on the sphere" : ""));
            // k = 2 < d = 3: Q and K are not square.
            const Case c = makeCase(type, sphere, 9, 3, 2, 11 + 10 * int(type));
            EXPECT_LT(vjpError(c), 1e-8);
        }
}

TEST(AttentionVjp, MatchesFiniteDifferencesAcrossSweepBlocks) {
    // N = 300 > the sweeps' block of 256 keys: the blocks' sums are gathered right.
    for (AttentionType type : {AttentionType::Softmax, AttentionType::L2}) {
        SCOPED_TRACE(toString(type));
        Case c = makeCase(type, true, 300, 2, 2, 5);
        AttentionSaved saved;
        attentionForward(c.head, c.X, Precision::Float64, &saved);
        const AttentionGrads g = attentionBackward(c.head, c.X, saved, c.G, Precision::Float64);
        const double scale = g.dX.cwiseAbs().maxCoeff();
        for (Eigen::Index i : {0, 255, 256, 299})
            for (Eigen::Index a = 0; a < 2; ++a) {
                const double fd = finiteDifference(c, [&](Case& cc) -> double& { return cc.X(i, a); });
                EXPECT_NEAR(g.dX(i, a), fd, 1e-8 * scale) << "row " << i;
            }
        const double fdBeta = finiteDifference(c, [](Case& cc) -> double& { return cc.head.beta; });
        EXPECT_NEAR(g.dBeta, fdBeta, 1e-8 * std::abs(fdBeta));
    }
}

TEST(AttentionVjp, ForwardIsTheParticleField) {
    // The head's velocity is the scene's one-head field (makeCpuField) for every kind, sphere included.
    for (AttentionType type : kKinds)
        for (bool sphere : {false, true}) {
            SCOPED_TRACE(std::string(toString(type)) + (sphere ? " on the sphere" : ""));
            const Case c = makeCase(type, sphere, 40, 3, 3, 3);
            AttentionSpec spec;
            spec.type = type;
            spec.beta = c.head.beta;
            spec.sphere = sphere;
            spec.heads = {{c.head.Q, c.head.K, c.head.V}};
            Tokens expected(c.X.rows(), c.X.cols());
            makeCpuField(spec, 3, Precision::Float64)->velocity(0.0, c.X, expected);
            const Tokens v = attentionForward(c.head, c.X, Precision::Float64);
            EXPECT_LT((v - expected).cwiseAbs().maxCoeff(), 1e-13 * expected.cwiseAbs().maxCoeff());
        }
}

TEST(AttentionVjp, Float32AgreesWithFloat64ToRounding) {
    // float32 sweeps over N = 500 keys, sums gathered in double per block of 256: each gradient entry is a
    // sum of N terms rounded at ~6e-8 relative, so 1e-4 of the largest entry is far above their reach.
    // d = 3 runs softmax on the tape's SIMD kernel, d = 2 on the float sweeps (AttentionVjp.cpp); at N = 512
    // the kernel's rows are kernel::paddedStride() = 528 floats apart, not 512.
    for (AttentionType type : kKinds)
        for (int d : {2, 3})
            for (int n : {500, 512}) {
                SCOPED_TRACE(std::string(toString(type)) + ", d = " + std::to_string(d) +
                             ", N = " + std::to_string(n));
                const Case c = makeCase(type, true, n, d, 2, 21);
                AttentionSaved s64, s32;
                attentionForward(c.head, c.X, Precision::Float64, &s64);
                attentionForward(c.head, c.X, Precision::Float32, &s32);
                const AttentionGrads a = attentionBackward(c.head, c.X, s64, c.G, Precision::Float64);
                const AttentionGrads b = attentionBackward(c.head, c.X, s32, c.G, Precision::Float32);
                auto rel = [](const Mat& x, const Mat& y) {
                    return (x - y).cwiseAbs().maxCoeff() / x.cwiseAbs().maxCoeff();
                };
                EXPECT_LT(rel(a.dX, b.dX), 1e-4);
                EXPECT_LT(rel(a.dQ, b.dQ), 1e-4);
                EXPECT_LT(rel(a.dK, b.dK), 1e-4);
                EXPECT_LT(rel(a.dV, b.dV), 1e-4);
                EXPECT_NEAR(a.dBeta, b.dBeta, 1e-4 * std::abs(a.dBeta));
            }
}

TEST(AttentionVjp, RefusesShapesNamingTheArgument) {
    Case c = makeCase(AttentionType::Softmax, false, 5, 3, 2, 1);
    c.head.V = Mat::Identity(2, 2);
    EXPECT_NE(test::errorOf([&] {
                  attentionForward(c.head, c.X, Precision::Float64);
              }).find("V: expected shape (3, 3)"),
              std::string::npos);
    c.head.V = Mat::Identity(3, 3);
    c.head.K = Mat::Identity(3, 3);
    EXPECT_NE(test::errorOf([&] { attentionForward(c.head, c.X, Precision::Float64); }).find("K: expected"),
              std::string::npos);
    c.head.K = c.head.Q;
    c.head.type = AttentionType::Sinkhorn;
    EXPECT_NE(test::errorOf([&] { attentionForward(c.head, c.X, Precision::Float64); }).find("kind:"),
              std::string::npos);
}

} // namespace
} // namespace flowscope
