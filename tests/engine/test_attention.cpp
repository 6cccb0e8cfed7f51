// Every attention variant against its defining formula (dense, double), and the paper's oracles that
// concern one velocity evaluation (docs/math/attention.md, #particle-facts; docs/math/flows.md#rwpo-layer).
#include "../DenseAttention.h"
#include "TestUtil.h"

#include "engine/attention/KernelAttention.h"
#include "engine/attention/RwpoAttention.h"
#include "engine/attention/SinkhornAttention.h"
#include "engine/attention/VelocityField.h"
#include "engine/dynamics/Observables.h"

#include <gtest/gtest.h>

using namespace flowscope;
using namespace flowscope::test;

namespace {

Tokens evaluate(const AttentionSpec& spec, const Tokens& X, Precision p = Precision::Float64,
                double t = 0.0) {
    auto f = makeCpuField(spec, int(X.cols()), p);
    Tokens dX;
    f->velocity(t, X, dX);
    return dX;
}

double maxAbs(const Mat& m) {
    return m.cwiseAbs().maxCoeff();
}

} // namespace

TEST(Attention, EveryKernelVariantMatchesItsDenseFormula) {
    const int d = 3;
    const Tokens X = randomTokens(97, d, 3, 0.8);
    const Mat Q = randomTokens(2, d, 4, 0.6), K = randomTokens(2, d, 5, 0.6), V = randomTokens(d, d, 6, 0.5);
    for (AttentionType type : {AttentionType::Softmax, AttentionType::L2, AttentionType::Exp,
                               AttentionType::Relu, AttentionType::Sigmoid, AttentionType::Linear}) {
        for (bool masked : {false, true}) {
            if (masked && type == AttentionType::Linear) continue;
            for (bool rootK : {false, true}) {
                AttentionSpec spec = singleHead(type, Q, K, V);
                spec.masked = masked;
                spec.beta = 1.7;
                spec.scaleByRootK = rootK;
                const Tokens ref = denseField(spec, X);
                const Tokens got = evaluate(spec, X);
                EXPECT_LE(maxAbs(got - ref), 1e-12 * (1 + maxAbs(ref)))
                    << toString(type) << " masked=" << masked;
                const Tokens got32 = evaluate(spec, X, Precision::Float32);
                EXPECT_LE(maxAbs(got32 - ref), 2e-5 * (1 + maxAbs(ref))) << toString(type) << " float32";
            }
        }
    }
}

TEST(Attention, LinearEpsVariantMatchesItsFormula) {
    // Gamma(x) = (1/eps) V m + V (M2 - m m^T) A x  (docs/math/attention.md#linear)
    const Tokens X = randomTokens(50, 2, 8);
    const Mat A = (Mat(2, 2) << 1.0, 0.3, -0.2, 0.8).finished(),
              V = (Mat(2, 2) << 0.5, -1, 0.3, 0.2).finished();
    AttentionSpec spec = singleHead(AttentionType::Linear, A, Mat::Identity(2, 2), V);
    spec.linearEps = 0.5;
    const Vec m = X.colwise().mean().transpose();
    const Mat C = tokenCovariance(X);
    const Tokens got = evaluate(spec, X);
    for (int i = 0; i < X.rows(); ++i) {
        const Vec ref = V * m / 0.5 + V * C * A * X.row(i).transpose();
        EXPECT_LE((got.row(i).transpose() - ref).norm(), 1e-12);
    }
}

TEST(Attention, MultiHeadIsTheSumOfItsHeadsAndOneHeadIsSingleHead) {
    const int d = 4;
    const Tokens X = randomTokens(64, d, 9);
    std::vector<HeadParams> heads;
    for (int h = 0; h < 3; ++h)
        heads.push_back(
            {randomTokens(2, d, 10 + h, 0.7), randomTokens(2, d, 20 + h, 0.7), randomTokens(d, d, 30 + h)});
    for (AttentionType type : {AttentionType::Softmax, AttentionType::L2, AttentionType::Sinkhorn}) {
        AttentionSpec multi;
        multi.type = type;
        multi.heads = heads;
        Tokens sum = Tokens::Zero(X.rows(), d);
        for (const HeadParams& h : heads) {
            AttentionSpec one;
            one.type = type;
            one.heads = {h};
            sum += evaluate(one, X);
        }
        EXPECT_LE(maxAbs(evaluate(multi, X) - sum), 1e-9) << toString(type);
    }
    // One head with Q = K = I and V equals two heads that split V into E_1 V + E_2 V (code convention,
    // docs/math/attention.md#multi-head).
    const Mat I = Mat::Identity(d, d), V = randomTokens(d, d, 40);
    Mat E1 = Mat::Zero(d, d), E2 = Mat::Zero(d, d);
    E1.topLeftCorner(2, 2).setIdentity();
    E2.bottomRightCorner(2, 2).setIdentity();
    AttentionSpec single = singleHead(AttentionType::Softmax, I, I, V);
    AttentionSpec split = single;
    split.heads = {HeadParams{I, I, E1 * V}, HeadParams{I, I, E2 * V}};
    EXPECT_LE(maxAbs(evaluate(single, X) - evaluate(split, X)), 1e-12);
    EXPECT_LE(maxAbs(evaluate(single, X) - denseField(single, X)), 1e-12);
}

TEST(Attention, SinkhornPlanIsBistochasticAndRowsMatchThePlan) {
    const int n = 150, d = 2;
    const Tokens X = randomTokens(n, d, 12);
    const Mat A = (Mat(2, 2) << 1.0, 0.3, -0.2, 0.8).finished(),
              V = (Mat(2, 2) << 0.5, -1, 0.3, 0.2).finished();
    AttentionSpec spec = singleHead(AttentionType::Sinkhorn, A, Mat::Identity(2, 2), V);
    spec.sinkhornEps = 0.7;
    spec.sinkhornTol = 1e-10;
    spec.sinkhornIterations = 1000;
    SinkhornAttention field(spec, d, Precision::Float64);
    Tokens dX;
    field.velocity(0.0, X, dX);
    const Vec& f = field.rowPotential(0);
    const Vec& g = field.columnPotential(0);
    const Mat B = field.scoreMatrix(spec.heads[0]);
    Mat P(n, n);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
            P(i, j) = std::exp(f(i) + g(j) + X.row(j).dot(B * X.row(i).transpose())) / n;
    const double rowErr = (P.rowwise().sum().array() - 1.0).abs().maxCoeff();
    const double colErr = (P.colwise().sum().array() - 1.0).abs().maxCoeff();
    EXPECT_LE(rowErr, 1e-12);
    EXPECT_LE(colErr, 1e-10);
    EXPECT_LE(field.diagnostics().sinkhornMarginalError, 1e-10);
    // Velocity = (1/eps) V sum_j P_ij x_j
    const Tokens ref = (P * X) * V.transpose() / spec.sinkhornEps;
    EXPECT_LE(maxAbs(dX - ref), 1e-10);
    // Remark 5.2: the plan depends only on A = K^T Q (here K = I): Q' = A, K' = I is the same as Q' = I, K' =
    // A^T.
    AttentionSpec other = singleHead(AttentionType::Sinkhorn, Mat::Identity(2, 2), A.transpose(), V);
    other.sinkhornEps = 0.7;
    other.sinkhornTol = 1e-10;
    other.sinkhornIterations = 1000;
    EXPECT_LE(maxAbs(evaluate(other, X) - dX), 1e-8);
}

TEST(Attention, SinkhornFloat32ReachesItsFlooredTolerance) {
    const Tokens X = randomTokens(300, 2, 13);
    AttentionSpec spec =
        singleHead(AttentionType::Sinkhorn, Mat::Identity(2, 2), Mat::Identity(2, 2), -Mat::Identity(2, 2));
    SinkhornAttention f32(spec, 2, Precision::Float32), f64(spec, 2, Precision::Float64);
    Tokens a, b;
    f32.velocity(0.0, X, a);
    f64.velocity(0.0, X, b);
    EXPECT_LE(f32.diagnostics().sinkhornMarginalError, 2e-6);
    EXPECT_LE(maxAbs(a - b), 1e-4);
}

// tol = 0 runs every iteration, in float32 too (it is not floored to 2e-6): a warm-started second call on the
// same tokens, which a floored tolerance stops after one iteration, runs them all.
TEST(Attention, SinkhornZeroToleranceRunsEveryIteration) {
    const Tokens X = randomTokens(300, 2, 13);
    AttentionSpec spec =
        singleHead(AttentionType::Sinkhorn, Mat::Identity(2, 2), Mat::Identity(2, 2), -Mat::Identity(2, 2));
    spec.sinkhornIterations = 12;
    Tokens V;
    for (const double tol : {0.0, 1e-9}) {
        spec.sinkhornTol = tol;
        SinkhornAttention f32(spec, 2, Precision::Float32);
        f32.velocity(0.0, X, V);
        f32.velocity(0.0, X, V);
        if (tol == 0.0)
            EXPECT_EQ(f32.diagnostics().sinkhornIterations, 12);
        else
            EXPECT_LT(f32.diagnostics().sinkhornIterations, 12);
    }
}

TEST(Attention, OneTokenFollowsItsValueMatrix) {
    // T14: a lone token (or all tokens equal) has P = 1, so Gamma(x) = V x (Sinkhorn: V x / eps).
    const Tokens X = (Tokens(1, 2) << 0.3, -1.1).finished();
    const Mat V = (Mat(2, 2) << 0.5, -1, 0.3, 0.2).finished(), I = Mat::Identity(2, 2);
    const Vec ref = V * X.row(0).transpose();
    for (AttentionType type : {AttentionType::Softmax, AttentionType::L2, AttentionType::Sinkhorn}) {
        AttentionSpec spec = singleHead(type, I, I, V);
        spec.sinkhornEps = 0.5;
        const double scale = type == AttentionType::Sinkhorn ? 2.0 : 1.0;
        EXPECT_LE((evaluate(spec, X).row(0).transpose() - scale * ref).norm(), 1e-14) << toString(type);
    }
}

TEST(Attention, SoftmaxJacobianIsVCovA) {
    // T16: D_x Gamma(x) = V Cov_{P_x}(y) A for a query x against fixed keys (checked by central differences
    // on the field of the cloud with the query appended last and masked so it does not act as a key for
    // others).
    const int n = 40, d = 2;
    Tokens X = randomTokens(n, d, 14, 0.7);
    const Mat A = (Mat(2, 2) << 0.8, 0.2, -0.4, 1.1).finished(),
              V = (Mat(2, 2) << -0.3, 0.5, 0.1, 0.4).finished();
    AttentionSpec spec = singleHead(AttentionType::Softmax, A, Mat::Identity(2, 2), V);
    // Gamma(x) with keys X only: put x last and use the masked variant, then remove x's own key weight by
    // computing the formula directly instead.
    auto gamma = [&](const Vec& x) {
        Vec s = X * (A * x);
        Vec w = (s.array() - s.maxCoeff()).exp();
        return Vec(V * (X.transpose() * w) / w.sum());
    };
    const Vec x = (Vec(2) << 0.2, -0.3).finished();
    Vec s = X * (A * x);
    Vec p = (s.array() - s.maxCoeff()).exp();
    p /= p.sum();
    const Vec mean = X.transpose() * p;
    const Tokens C = X.rowwise() - mean.transpose();
    const Mat cov = C.transpose() * p.asDiagonal() * C;
    const Mat J = V * cov * A;
    for (int c = 0; c < d; ++c) {
        Vec e = Vec::Zero(d);
        e(c) = 1e-6;
        const Vec fd = (gamma(x + e) - gamma(x - e)) / 2e-6;
        EXPECT_LE((fd - J.col(c)).norm(), 1e-8);
    }
    // and the engine's field at a key-free query equals gamma: append x as a masked last token.
    Tokens Y(n + 1, d);
    Y.topRows(n) = X;
    Y.row(n) = x.transpose();
    AttentionSpec masked = spec;
    masked.masked = true;
    const Tokens out = evaluate(masked, Y);
    // Token n attends to all keys including itself; compare with gamma over X plus x.
    Tokens Xx = Y;
    auto gammaAll = [&](const Vec& q) {
        Vec sc = Xx * (A * q);
        Vec w = (sc.array() - sc.maxCoeff()).exp();
        return Vec(V * (Xx.transpose() * w) / w.sum());
    };
    EXPECT_LE((out.row(n).transpose() - gammaAll(x)).norm(), 1e-13);
}

TEST(Attention, RwpoKernelsMatchTheirDefinitions) {
    const int n = 120, d = 2;
    const Tokens X = randomTokens(n, d, 15, 0.8);
    AttentionSpec spec;
    spec.type = AttentionType::Rwpo;
    spec.lambda = 2.0;
    spec.h = 1.0 / 48;
    spec.beta = 1.3;
    const double beta = spec.beta, h = spec.h, th = spec.lambda * h;
    auto S = [&](const Vec& x) {
        return Vec(x.unaryExpr([&](double s) { return s > th ? s - th : (s < -th ? s + th : 0.0); }));
    };
    auto huber = [&](double s) {
        return std::abs(s) <= th ? s * s / (2 * h)
                                 : spec.lambda * std::abs(s) - spec.lambda * spec.lambda * h / 2;
    };
    for (RwpoKernel kernel : {RwpoKernel::Corrected, RwpoKernel::AsPrinted, RwpoKernel::PerCoordinate}) {
        spec.rwpoKernel = kernel;
        const Tokens got = evaluate(spec, X);
        for (int i = 0; i < n; ++i) {
            const Vec x = X.row(i).transpose();
            Vec m(d);
            if (kernel == RwpoKernel::PerCoordinate) {
                for (int c = 0; c < d; ++c) {
                    Vec u(n);
                    for (int j = 0; j < n; ++j) {
                        const double y = X(j, c);
                        u(j) = -beta / (4 * h) * (x(c) - y) * (x(c) - y) + beta / 2 * huber(y);
                    }
                    const Vec w = (u.array() - u.maxCoeff()).exp();
                    m(c) = w.dot(X.col(c)) / w.sum();
                }
            } else {
                Vec u(n);
                for (int j = 0; j < n; ++j) {
                    const Vec y = X.row(j).transpose();
                    if (kernel == RwpoKernel::Corrected) {
                        double M = 0;
                        for (int c = 0; c < d; ++c) M += huber(y(c));
                        u(j) = -beta / (4 * h) * (x - y).squaredNorm() + beta / 2 * M;
                    } else { // U_lit(x,y) = -beta/2 ((|x-y|^2 - |S(x)-y|^2)/(2h) - lambda |S(y)|_1)
                        u(j) = -beta / 2 *
                               (((x - y).squaredNorm() - (S(x) - y).squaredNorm()) / (2 * h) -
                                spec.lambda * S(y).lpNorm<1>());
                    }
                }
                const Vec w = (u.array() - u.maxCoeff()).exp();
                m = X.transpose() * w / w.sum();
            }
            const Vec ref = (S(x) - m) / (2 * h);
            EXPECT_LE((got.row(i).transpose() - ref).norm(), 1e-9 * (1 + ref.norm()))
                << int(kernel) << " i=" << i;
        }
    }
}

TEST(Attention, RwpoLambdaZeroRaisesVarianceByTwoHOverBetaPerLayer) {
    // docs/math/flows.md#rwpo-layer: N = 20000 1-D N(0,1) tokens, h = 1/48, beta = 1: one layer adds
    // ~2h/beta = 0.0417 to the variance (a pure-Python check measured 0.0416); slope ~1.0206 (predicted
    // 1 + s^2/(2(v+s^2)) = 1.0200).
    const Tokens X = quantileTokens1d(20000, 1.0);
    AttentionSpec spec;
    spec.type = AttentionType::Rwpo;
    spec.lambda = 0.0;
    spec.h = 1.0 / 48;
    spec.beta = 1.0;
    const Tokens dX = evaluate(spec, X, Precision::Float32);
    const Tokens X1 = X + spec.h * dX; // one Euler step of size h = one layer
    const double v0 = tokenCovariance(X)(0, 0), v1 = tokenCovariance(X1)(0, 0);
    EXPECT_NEAR(v1 - v0, 2 * spec.h / spec.beta, 0.05 * 2 * spec.h / spec.beta);
    // lambda = 2: a token at x = 1 moves by about -lambda h + (h/beta) x = -0.0208 (pure Python: -0.0200).
    spec.lambda = 2.0;
    const Tokens dY = evaluate(spec, X);
    Eigen::Index k;
    (X.col(0).array() - 1.0).abs().minCoeff(&k);
    EXPECT_NEAR(spec.h * dY(k, 0), -0.0200, 0.0015);
}

TEST(Attention, SphereVelocityIsTangent) {
    AttentionSpec spec =
        singleHead(AttentionType::Softmax, Mat::Identity(3, 3), Mat::Identity(3, 3), Mat::Identity(3, 3));
    spec.sphere = true;
    spec.beta = 4;
    Tokens X = randomTokens(80, 3, 16);
    X = X.rowwise().normalized();
    const Tokens dX = evaluate(spec, X);
    EXPECT_LE((X.cwiseProduct(dX).rowwise().sum()).cwiseAbs().maxCoeff(), 1e-13);
    EXPECT_GT(maxAbs(dX), 1e-3);
}

TEST(Attention, EntropyOfUniformAttentionIsLogN) {
    // A = 0: every query attends uniformly, H = log N; a sharp A lowers it.
    const Tokens X = randomTokens(64, 2, 17);
    AttentionSpec spec =
        singleHead(AttentionType::Softmax, Mat::Zero(2, 2), Mat::Identity(2, 2), Mat::Identity(2, 2));
    auto f = makeCpuField(spec, 2, Precision::Float64);
    EXPECT_NEAR(f->attentionEntropy(0.0, X), std::log(64.0), 1e-12);
    spec.heads[0].Q = 5 * Mat::Identity(2, 2);
    f->setAttention(spec);
    EXPECT_LT(f->attentionEntropy(0.0, X), std::log(64.0) - 0.5);
}
