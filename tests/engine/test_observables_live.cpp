// Token picking (attention rows), the softmax interaction energy, and the shared run history.
#include "TestUtil.h"

#include "engine/attention/SinkhornAttention.h"
#include "engine/runner/RunHistory.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

namespace flowscope::test {
namespace {

// Dense reference of the softmax row: P_ij = exp(s_ij) / sum_k exp(s_ik), s_ij = beta x_j^T K^T Q x_i.
Vec denseSoftmaxRow(const AttentionSpec& spec, const Tokens& X, int i) {
    const HeadParams& h = spec.heads.front();
    const Mat B = spec.beta * h.K.transpose() * h.Q;
    const int end = spec.masked ? i + 1 : int(X.rows());
    Vec p = Vec::Zero(X.rows());
    for (int j = 0; j < end; ++j) p(j) = std::exp(X.row(j).dot(B * X.row(i).transpose()));
    return p / p.sum();
}

TEST(AttentionPicking, SoftmaxRowMatchesTheDenseFormulaAndItsEntropy) {
    const int n = 60, d = 3;
    const Tokens X = randomTokens(n, d, 21, 0.9);
    AttentionSpec spec = singleHead(AttentionType::Softmax, randomTokens(d, d, 22, 0.7),
                                    randomTokens(d, d, 23, 0.7), randomTokens(d, d, 24, 0.5));
    spec.beta = 1.3;
    for (bool masked : {false, true}) {
        spec.masked = masked;
        auto field = makeCpuField(spec, d, Precision::Float32); // picking is double whatever the run uses
        double entropy = 0.0;
        const Vec H = field->attentionEntropies(0.0, X);
        ASSERT_EQ(H.size(), n);
        for (int i = 0; i < n; ++i) {
            const Vec p = field->attentionWeights(0.0, X, i);
            ASSERT_EQ(p.size(), n);
            EXPECT_LE((p - denseSoftmaxRow(spec, X, i)).cwiseAbs().maxCoeff(), 1e-13) << i;
            EXPECT_NEAR(p.sum(), 1.0, 1e-13);
            double Hi = 0.0;
            for (int j = 0; j < n; ++j)
                if (p(j) > 0) Hi -= p(j) * std::log(p(j));
            EXPECT_NEAR(H(i), Hi, 1e-12) << i;
            entropy += Hi;
        }
        EXPECT_NEAR(entropy / n, field->attentionEntropy(0.0, X), 1e-12) << "masked=" << masked;
        EXPECT_EQ(field->attentionWeights(0.0, X, n).size(), 0); // out of range: no row, no crash
    }
}

TEST(AttentionPicking, SinkhornRowIsThePlanRow) {
    const int n = 80, d = 2;
    const Tokens X = randomTokens(n, d, 31);
    AttentionSpec spec = singleHead(AttentionType::Sinkhorn, m2(1.0, 0.3, -0.2, 0.8), Mat::Identity(2, 2),
                                    m2(0.5, -1, 0.3, 0.2));
    spec.sinkhornEps = 0.7;
    spec.sinkhornTol = 1e-11;
    spec.sinkhornIterations = 2000;
    SinkhornAttention field(spec, d, Precision::Float64);
    EXPECT_EQ(field.attentionWeights(0.0, X, 0).size(), 0); // no plan before the first evaluation
    Tokens dX;
    field.velocity(0.0, X, dX);
    const Vec& f = field.rowPotential(0);
    const Vec& g = field.columnPotential(0);
    const Mat B = field.scoreMatrix(spec.heads[0]);
    for (int i : {0, 17, n - 1}) {
        Vec row(n);
        for (int j = 0; j < n; ++j)
            row(j) = std::exp(f(i) + g(j) + X.row(j).dot(B * X.row(i).transpose())) / n;
        EXPECT_LE((field.attentionWeights(0.0, X, i) - row).cwiseAbs().maxCoeff(), 1e-9);
    }
}

// The rows of p against a dense reference (up to 1e-13), each summing to 1, and the entropies as -sum p log
// p.
void expectRowsAndEntropies(VelocityField& field, const Tokens& X, const std::function<Vec(int)>& dense) {
    const Eigen::Index n = X.rows();
    const Vec H = field.attentionEntropies(0.0, X);
    ASSERT_EQ(H.size(), n) << field.name();
    for (int i = 0; i < n; ++i) {
        const Vec p = field.attentionWeights(0.0, X, i);
        ASSERT_EQ(p.size(), n);
        EXPECT_LE((p - dense(i)).cwiseAbs().maxCoeff(), 1e-13) << field.name() << " row " << i;
        EXPECT_NEAR(p.sum(), 1.0, 1e-13);
        double Hi = 0.0;
        for (Eigen::Index j = 0; j < n; ++j)
            if (p(j) > 0) Hi -= p(j) * std::log(p(j));
        EXPECT_NEAR(H(i), Hi, 1e-12) << field.name() << " row " << i;
    }
    EXPECT_EQ(field.attentionWeights(0.0, X, -1).size(), 0);
    EXPECT_EQ(field.attentionWeights(0.0, X, n).size(), 0);
}

// Drifting's rows are its self term's Gaussian kernel, P_ij ∝ exp(-|x_i - x_j|^2 / 2), never masked.
TEST(AttentionPicking, DriftingRowIsTheGaussianKernelRow) {
    const int n = 40, d = 2;
    const Tokens X = randomTokens(n, d, 61, 0.9);
    AttentionSpec spec =
        singleHead(AttentionType::Drifting, Mat::Identity(d, d), Mat::Identity(d, d), Mat::Identity(d, d));
    spec.masked = true; // the self term is over every token all the same
    auto field = makeCpuField(spec, d, Precision::Float32);
    expectRowsAndEntropies(*field, X, [&](int i) {
        Vec p(n);
        for (int j = 0; j < n; ++j) p(j) = std::exp(-0.5 * (X.row(i) - X.row(j)).squaredNorm());
        return Vec(p / p.sum());
    });
}

// RWPO's rows are its corrected vector kernel, P_ij ∝ exp(-beta/(4h) |x_i - x_j|^2 + beta/2 M(x_j)) with
// M the summed Huber function, over keys j <= i when masked; the per-coordinate kernel has no rows.
TEST(AttentionPicking, RwpoRowIsTheVectorKernelRow) {
    const int n = 30, d = 2;
    const Tokens X = randomTokens(n, d, 62, 0.15);
    AttentionSpec spec =
        singleHead(AttentionType::Rwpo, Mat::Identity(d, d), Mat::Identity(d, d), Mat::Identity(d, d));
    spec.beta = 0.5;
    const double h = spec.h, lambda = spec.lambda, beta = spec.beta;
    const auto huber = [&](double s) {
        const double a = std::abs(s);
        return a <= lambda * h ? s * s / (2.0 * h) : lambda * a - lambda * lambda * h / 2.0;
    };
    for (bool masked : {false, true}) {
        spec.masked = masked;
        auto field = makeCpuField(spec, d, Precision::Float64);
        expectRowsAndEntropies(*field, X, [&](int i) {
            Vec p = Vec::Zero(n);
            for (int j = 0; j <= (masked ? i : n - 1); ++j)
                p(j) = std::exp(-beta / (4.0 * h) * (X.row(i) - X.row(j)).squaredNorm() +
                                beta / 2.0 * (huber(X(j, 0)) + huber(X(j, 1))));
            return Vec(p / p.sum());
        });
    }
    spec.masked = false;
    spec.rwpoKernel = RwpoKernel::PerCoordinate;
    auto perCoordinate = makeCpuField(spec, d, Precision::Float64);
    EXPECT_EQ(perCoordinate->attentionEntropies(0.0, X).size(), 0);
    EXPECT_EQ(perCoordinate->attentionWeights(0.0, X, 0).size(), 0);
}

TEST(AttentionPicking, UnnormalizedVariantsHaveNoDistribution) {
    const Tokens X = randomTokens(10, 2, 41);
    for (AttentionType type : {AttentionType::Exp, AttentionType::Relu, AttentionType::Sigmoid}) {
        auto field =
            makeCpuField(singleHead(type, Mat::Identity(2, 2), Mat::Identity(2, 2), Mat::Identity(2, 2)), 2,
                         Precision::Float64);
        EXPECT_EQ(field->attentionWeights(0.0, X, 0).size(), 0) << toString(type);
    }
}

TEST(InteractionEnergy, SoftmaxEnergyIsTheDoubleSum) {
    const int n = 50, d = 2;
    const Tokens X = randomTokens(n, d, 51, 1.5);
    AttentionSpec spec = singleHead(AttentionType::Softmax, m2(1.0, 0.2, 0.2, 0.5), m2(0.8, 0, 0.1, 1.1),
                                    -Mat::Identity(2, 2));
    spec.beta = 0.9;
    const Mat B = spec.beta * spec.heads[0].K.transpose() * spec.heads[0].Q;
    double sum = 0.0;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) sum += std::exp(X.row(j).dot(B * X.row(i).transpose()));
    const double expected = sum / (2.0 * n * n);
    auto field = makeCpuField(spec, d, Precision::Float64);
    EXPECT_NEAR(field->interactionEnergy(0.0, X), expected, 1e-13 * expected);
    // Far beyond exp's range the log-domain sum still gives the right (overflowing) answer: +inf, not NaN.
    EXPECT_TRUE(std::isinf(field->interactionEnergy(0.0, Tokens(X * 40.0))));
    // Not defined for l2, masked or multi-head attention.
    spec.type = AttentionType::L2;
    EXPECT_TRUE(std::isnan(makeCpuField(spec, d, Precision::Float64)->interactionEnergy(0.0, X)));
    spec.type = AttentionType::Softmax;
    spec.masked = true;
    EXPECT_TRUE(std::isnan(makeCpuField(spec, d, Precision::Float64)->interactionEnergy(0.0, X)));
}

TEST(InteractionEnergy, DecreasesAlongTheSoftmaxGradientFlow) {
    // docs/math/attention.md#energy: with A symmetric invertible and B = -V A^{-T} SPD the softmax flow is a
    // gradient flow of E.
    const Mat A = m2(1.0, 0.3, 0.3, 0.6), V = -m2(0.5, 0.1, 0.1, 0.4) * A.transpose();
    AttentionSpec spec = singleHead(AttentionType::Softmax, A, Mat::Identity(2, 2), V);
    auto field = makeCpuField(spec, 2, Precision::Float64);
    Tokens X = randomTokens(40, 2, 61);
    double previous = field->interactionEnergy(0.0, X);
    for (int k = 0; k < 20; ++k) {
        X = integrate(spec, X, Method::Rk4, 0.1, 5);
        const double e = field->interactionEnergy(0.0, X);
        EXPECT_LT(e, previous) << k;
        previous = e;
    }
}

RecordedFrame frame(double t, int n) {
    return {t, long(t * 10), Observables{}, std::make_shared<const Tokens>(Tokens::Constant(n, 2, t))};
}

TEST(RunHistory, AppendsTruncatesAndReportsRevisions) {
    RunHistory h;
    for (int k = 0; k < 5; ++k) h.append(frame(0.1 * k, 4));
    std::uint64_t rev = 99;
    EXPECT_EQ(h.since(3, &rev).size(), 2u);
    EXPECT_EQ(rev, 0u);
    EXPECT_EQ(h.frameWithTokensAtOrBefore(0.25), 2);
    EXPECT_EQ(h.frameWithTokensAtOrBefore(-1.0), -1);
    h.dropFrom(3);
    EXPECT_EQ(h.size(), 3u);
    EXPECT_EQ(h.revision(), 1u);
    h.truncateAfter(0.1);
    EXPECT_EQ(h.size(), 2u);
    EXPECT_EQ(h.tokenBytes(), 2u * 4 * 2 * sizeof(double));
    h.clear();
    EXPECT_EQ(h.size(), 0u);
    EXPECT_EQ(h.tokenBytes(), 0u);
}

TEST(RunHistory, ThinsOldTokensToStayWithinItsBudget) {
    const std::size_t perFrame = 100 * 2 * sizeof(double);
    RunHistory h(10 * perFrame);
    for (int k = 0; k < 200; ++k) h.append(frame(k, 100));
    EXPECT_EQ(h.size(), 200u); // every frame keeps its observables
    EXPECT_LE(h.tokenBytes(), 10 * perFrame);
    EXPECT_GT(h.tokenBytes(), 2 * perFrame);
    EXPECT_NE(h.at(199).tokens, nullptr); // the newest frame always keeps its tokens
    EXPECT_NE(h.at(0).tokens, nullptr);   // thinning is even: the first frame survives
    // Kept frames are spread over the whole run, not bunched at its end.
    EXPECT_LE(h.frameWithTokensAtOrBefore(50.0), 50);
    EXPECT_GE(h.frameWithTokensAtOrBefore(50.0), 0);
}

} // namespace
} // namespace flowscope::test
