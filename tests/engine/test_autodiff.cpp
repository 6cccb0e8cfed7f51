// The matrix tape: every op's gradient against finite differences (GradCheck.h), composites, parameter
// accumulation, reuse after clear(), shape errors, float vs double. Oracles are finite differences and
// closed forms only.
#include "TestUtil.h"

#include "engine/autodiff/AttentionKernel.h"
#include "engine/autodiff/Exp.h"
#include "engine/autodiff/GradCheck.h"
#include "engine/autodiff/Tape.h"
#include "engine/core/Parallel.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>

namespace ad = flowscope::ad;
using ad::Index;
using Md = ad::Matrix<double>;
using Vd = ad::Var<double>;
using Args = std::vector<Vd>;

// --- Helpers ---

namespace {

using flowscope::test::randn;
using flowscope::test::scalar;

Md uniform(Index r, Index c, std::uint64_t seed, double lo, double hi) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(lo, hi);
    Md m(r, c);
    for (Index i = 0; i < m.size(); ++i) m.data()[i] = u(rng);
    return m;
}

// Entries with |x| in [lo, hi] and a random sign: away from a kink at 0.
Md awayFromZero(Index r, Index c, std::uint64_t seed, double lo, double hi) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(lo, hi);
    Md m(r, c);
    for (Index i = 0; i < m.size(); ++i) m.data()[i] = (rng() & 1 ? 1 : -1) * u(rng);
    return m;
}

// Entries alternately with |x| in `inner` and in `outer` (random signs): both sides of a kink at |x| = k,
// each at least a margin away from it.
Md bothSides(Index r, Index c, std::uint64_t seed, double innerHi, double outerLo, double outerHi) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> in(0.0, innerHi), out(outerLo, outerHi);
    Md m(r, c);
    for (Index i = 0; i < m.size(); ++i) m.data()[i] = (rng() & 1 ? 1 : -1) * (i % 2 ? out(rng) : in(rng));
    return m;
}

// sum(y o W) with W a fixed random matrix of y's shape: every output entry matters, with its own weight.
template <class S> ad::Var<S> weighted(ad::Var<S> y) {
    const Md W = randn(y.rows(), y.cols(), 777);
    return ad::sum(ad::mul(y, y.tape->constant(W.cast<S>())));
}

using OpFunction = std::function<Vd(const Args&)>;

void expectAccurate(const char* name, const ad::GradCheckResult& r) {
    std::printf("[ gradcheck ] %-20s max rel error %.1e (%.1e before the rounding allowance), %d entries\n",
                name, r.maxRelError, r.maxRawRelError, r.checked);
    EXPECT_GT(r.checked, 0);
    EXPECT_LT(r.maxRelError, 1e-6) << name << ": input " << r.input << " entry (" << r.row << ", " << r.col
                                   << "): analytic " << r.analytic << ", finite difference " << r.numeric
                                   << " (rounding bound " << r.noise << ")";
}

void checkOp(const char* name, const std::vector<Md>& inputs, const OpFunction& op,
             const ad::GradCheckOptions& options = {}) {
    expectAccurate(name, ad::gradCheck([&](ad::Tape<double>&, const Args& v) { return weighted(op(v)); },
                                       inputs, options));
}

// The same loss recorded with `inputs` as input() leaves on a tape of scalar S; returns their gradients.
template <class S, class F> std::vector<ad::Matrix<S>> gradients(F f, const std::vector<Md>& inputs) {
    ad::Tape<S> t;
    std::vector<ad::Var<S>> v;
    for (const Md& m : inputs) v.push_back(t.input(m.cast<S>()));
    t.backward(f(v));
    std::vector<ad::Matrix<S>> g;
    for (const auto& x : v) g.push_back(t.grad(x));
    return g;
}

} // namespace

// --- Gradients of every op against finite differences ---

TEST(Autodiff, GradCheckCatchesAWrongGradient) {
    // x o c with c = x recorded as a constant: the tape sees d/dx = c = x, the truth is 2x.
    auto detached = [](ad::Tape<double>& t, Vd x) { return ad::mul(x, t.constant(x.value())); };
    const std::vector<Md> x = {awayFromZero(3, 4, 1, 0.5, 1.0)};
    ad::GradCheckResult r =
        ad::gradCheck([&](ad::Tape<double>& t, const Args& v) { return ad::sum(detached(t, v[0])); }, x);
    EXPECT_NEAR(r.maxRelError, 1.0 / 3.0, 1e-9); // |x - 2x| / (|x| + |2x|)
    // A small error: loss = |x|^2 + e sum(x o x), of gradient (2 + 2e) x where the tape sees (2 + e) x.
    const double e = 1e-5;
    r = ad::gradCheck(
        [&](ad::Tape<double>& t, const Args& v) {
            return ad::add(ad::sumSquares(v[0]), ad::scale(ad::sum(detached(t, v[0])), e));
        },
        x);
    EXPECT_NEAR(r.maxRelError, e / (4 + 3 * e), 1e-9);
}

TEST(Autodiff, LinearAlgebraOps) {
    checkOp("matmul", {randn(3, 4, 1), randn(4, 5, 2)}, [](const Args& v) { return ad::matmul(v[0], v[1]); });
    checkOp("matmulTN", {randn(4, 3, 3), randn(4, 5, 4)},
            [](const Args& v) { return ad::matmulTN(v[0], v[1]); });
    checkOp("matmulNT", {randn(3, 4, 5), randn(5, 4, 6)},
            [](const Args& v) { return ad::matmulNT(v[0], v[1]); });
    checkOp("matmulNT(x, x)", {randn(5, 3, 7)}, [](const Args& v) { return ad::matmulNT(v[0], v[0]); });
    checkOp("transpose", {randn(3, 4, 8)}, [](const Args& v) { return ad::transpose(v[0]); });
}

TEST(Autodiff, ElementwiseBinaryOps) {
    const Md a = randn(4, 5, 10), b = randn(4, 5, 11), positive = uniform(4, 5, 12, 0.5, 2.0);
    checkOp("add", {a, b}, [](const Args& v) { return ad::add(v[0], v[1]); });
    checkOp("sub", {a, b}, [](const Args& v) { return ad::sub(v[0], v[1]); });
    checkOp("mul", {a, b}, [](const Args& v) { return ad::mul(v[0], v[1]); });
    checkOp("mul(x, x)", {a}, [](const Args& v) { return ad::mul(v[0], v[0]); });
    checkOp("div", {a, positive}, [](const Args& v) { return ad::div(v[0], v[1]); });
}

TEST(Autodiff, BroadcastingOps) {
    const Md a = randn(4, 5, 20), c = randn(4, 1, 21), r = randn(1, 5, 22);
    checkOp("addCol", {a, c}, [](const Args& v) { return ad::addCol(v[0], v[1]); });
    checkOp("addRow", {a, r}, [](const Args& v) { return ad::addRow(v[0], v[1]); });
    checkOp("mulCol", {a, c}, [](const Args& v) { return ad::mulCol(v[0], v[1]); });
    checkOp("mulRow", {a, r}, [](const Args& v) { return ad::mulRow(v[0], v[1]); });
}

TEST(Autodiff, ScalarOps) {
    const Md a = randn(4, 5, 30);
    checkOp("scale", {a}, [](const Args& v) { return ad::scale(v[0], 1.7); });
    checkOp("scale(Var)", {a, scalar(-0.8)}, [](const Args& v) { return ad::scale(v[0], v[1]); });
    checkOp("addScalar", {a}, [](const Args& v) { return ad::addScalar(v[0], 0.3); });
    checkOp("addScalar(Var)", {a, scalar(0.6)}, [](const Args& v) { return ad::addScalar(v[0], v[1]); });
    checkOp("neg", {a}, [](const Args& v) { return ad::neg(v[0]); });
}

TEST(Autodiff, ElementwiseUnaryOps) {
    const Md a = randn(4, 5, 40), wide = randn(4, 5, 41, 6.0), positive = uniform(4, 5, 42, 0.5, 2.0);
    const Md kinked = awayFromZero(4, 5, 43, 0.1, 1.5);
    checkOp("tanh", {a}, [](const Args& v) { return ad::tanh(v[0]); });
    checkOp("logCosh", {wide}, [](const Args& v) { return ad::logCosh(v[0]); });
    checkOp("logCosh(a, tanh a)", {wide}, [](const Args& v) { return ad::logCosh(v[0], ad::tanh(v[0])); });
    checkOp("exp", {a}, [](const Args& v) { return ad::exp(v[0]); });
    checkOp("log", {positive}, [](const Args& v) { return ad::log(v[0]); });
    checkOp("square", {a}, [](const Args& v) { return ad::square(v[0]); });
    checkOp("sqrt", {positive}, [](const Args& v) { return ad::sqrt(v[0]); });
    checkOp("abs", {kinked}, [](const Args& v) { return ad::abs(v[0]); });
    checkOp("softplus", {wide}, [](const Args& v) { return ad::softplus(v[0]); });
    checkOp("sigmoid", {wide}, [](const Args& v) { return ad::sigmoid(v[0]); });
    checkOp("relu", {kinked}, [](const Args& v) { return ad::relu(v[0]); });
}

TEST(Autodiff, StableUnaryOpsAtLargeArguments) {
    ad::Tape<double> t;
    Md x(1, 4);
    x << -1000, -40, 40, 1000;
    const Md lc = t.value(ad::logCosh(t.constant(x)));
    const Md sp = t.value(ad::softplus(t.constant(x)));
    const Md sg = t.value(ad::sigmoid(t.constant(x)));
    for (Index j = 0; j < x.cols(); ++j) {
        const double u = x(0, j);
        EXPECT_DOUBLE_EQ(lc(0, j), std::abs(u) + std::log1p(std::exp(-2 * std::abs(u)))); // log(2 cosh u)
        EXPECT_DOUBLE_EQ(sp(0, j), std::max(u, 0.0) + std::log1p(std::exp(-std::abs(u))));
        EXPECT_NEAR(sg(0, j), 1 / (1 + std::exp(-u)), 1e-16);
    }
}

TEST(Autodiff, ProximalOpsWithTrainableThreshold) {
    // softThreshold with t = 0.5: |x| in [0, 0.4] (zeroed) or [0.6, 1.5] (shrunk).
    checkOp("softThreshold", {bothSides(4, 5, 50, 0.4, 0.6, 1.5), scalar(0.5)},
            [](const Args& v) { return ad::softThreshold(v[0], v[1]); });
    // huberL1 with lambda = 0.8, h = 0.5, so lambda h = 0.4: |x| in [0, 0.3] (quadratic) or [0.5, 2]
    // (linear).
    checkOp("huberL1", {bothSides(4, 5, 51, 0.3, 0.5, 2.0), scalar(0.8)},
            [](const Args& v) { return ad::huberL1(v[0], v[1], 0.5); });

    // huberL1 is the Moreau envelope: min_y lambda |y| + (x - y)^2 / (2h), attained at y = softThreshold(x,
    // lambda h).
    ad::Tape<double> t;
    const Md x = bothSides(3, 4, 52, 0.3, 0.5, 2.0);
    const double lambda = 0.8, h = 0.5;
    const Md m = t.value(ad::huberL1(t.constant(x), t.constant(scalar(lambda)), h));
    const Md y = t.value(ad::softThreshold(t.constant(x), t.constant(scalar(lambda * h))));
    const Md envelope = lambda * y.array().abs() + (x - y).array().square() / (2 * h);
    EXPECT_LT((m - envelope).cwiseAbs().maxCoeff(), 1e-15);
}

TEST(Autodiff, Reductions) {
    const Md a = randn(4, 5, 60);
    checkOp("sum", {a}, [](const Args& v) { return ad::sum(v[0]); });
    checkOp("mean", {a}, [](const Args& v) { return ad::mean(v[0]); });
    checkOp("colSum", {a}, [](const Args& v) { return ad::colSum(v[0]); });
    checkOp("rowSum", {a}, [](const Args& v) { return ad::rowSum(v[0]); });
    checkOp("sumSquares", {a}, [](const Args& v) { return ad::sumSquares(v[0]); });
    checkOp("colSumSquares", {a}, [](const Args& v) { return ad::colSumSquares(v[0]); });
    checkOp("colSumWeightedSquares", {randn(4, 6, 61), randn(4, 3, 62)},
            [](const Args& v) { return ad::colSumWeightedSquares(v[0], v[1]); });
    checkOp("colSumWeightedSquares, one tile", {a, randn(4, 5, 63)},
            [](const Args& v) { return ad::colSumWeightedSquares(v[0], v[1]); });
    checkOp("colWeightedGram", {randn(4, 9, 64), randn(4, 3, 65)},
            [](const Args& v) { return ad::colWeightedGram(v[0], v[1]); });
    checkOp("colWeightedGram, one block", {a, randn(4, 5, 66)},
            [](const Args& v) { return ad::colWeightedGram(v[0], v[1]); });
    // Its rows: (0,0), (0,1), (0,2), (1,1), (1,2), (2,2), each column's weighted products of its blocks.
    const Md x = randn(4, 9, 67), w = randn(4, 3, 68);
    ad::Tape<double> t;
    const Md gram = t.value(ad::colWeightedGram(t.constant(x), t.constant(w)));
    ASSERT_EQ(gram.rows(), 6);
    for (Index p = 0, i = 0; p < 3; ++p)
        for (Index q = p; q < 3; ++q, ++i)
            for (Index j = 0; j < 3; ++j) {
                double sum = 0;
                for (Index k = 0; k < 4; ++k) sum += w(k, j) * x(k, 3 * p + j) * x(k, 3 * q + j);
                EXPECT_NEAR(gram(i, j), sum, 1e-14) << p << ", " << q << ", column " << j;
            }
}

TEST(Autodiff, SoftmaxAndLogSumExpRows) {
    checkOp("softmaxRows", {randn(6, 7, 70, 2.0)}, [](const Args& v) { return ad::softmaxRows(v[0]); });
    checkOp("logSumExpRows", {randn(6, 7, 71, 2.0)}, [](const Args& v) { return ad::logSumExpRows(v[0]); });
    // Enough rows for several parallel row blocks and a partial last block; a strided subset of entries.
    ad::GradCheckOptions some;
    some.maxEntries = 150;
    checkOp(
        "softmaxRows 300x40", {randn(300, 40, 72, 3.0)}, [](const Args& v) { return ad::softmaxRows(v[0]); },
        some);
    checkOp(
        "logSumExpRows 300x40", {randn(300, 40, 73, 3.0)},
        [](const Args& v) { return ad::logSumExpRows(v[0]); }, some);

    // The values against the definitions, row by row, with logits far from 0 (max subtraction matters).
    const Md X = randn(300, 40, 74, 30.0);
    ad::Tape<double> t;
    const Md P = t.value(ad::softmaxRows(t.constant(X)));
    const Md L = t.value(ad::logSumExpRows(t.constant(X)));
    for (Index i = 0; i < X.rows(); ++i) {
        const double m = X.row(i).maxCoeff();
        const Eigen::RowVectorXd e = (X.row(i).array() - m).exp().matrix();
        EXPECT_LT((P.row(i) - e / e.sum()).cwiseAbs().maxCoeff(), 1e-15);
        EXPECT_NEAR(L(i, 0), m + std::log(e.sum()), 1e-13 * std::abs(L(i, 0)));
    }
}

TEST(Autodiff, GroupAttention) {
    // Three groups of 5 tokens, queries and keys in R^3, values in R^2; q, k and v all receive gradients,
    // also when one node is both query and key (self-attention without projections).
    const Md q = randn(3, 15, 90), k = randn(3, 15, 91), v = randn(2, 15, 92);
    checkOp("groupAttention", {q, k, v},
            [](const Args& a) { return ad::groupAttention(a[0], a[1], a[2], 5, 0.7); });
    checkOp("groupAttention q=k", {q, v},
            [](const Args& a) { return ad::groupAttention(a[0], a[0], a[1], 5, 1.3); });

    // The value against the definition, group by group: softmaxRows of the group's logits, then V P^T.
    const Md Q = randn(4, 24, 93, 3.0), K = randn(4, 24, 94, 3.0), V = randn(3, 24, 95);
    ad::Tape<double> t;
    const Md out = t.value(ad::groupAttention(t.constant(Q), t.constant(K), t.constant(V), 8, 0.5));
    for (Index g = 0; g < 3; ++g) {
        const Md S = 0.5 * Q.middleCols(8 * g, 8).transpose() * K.middleCols(8 * g, 8);
        const Md P = t.value(ad::softmaxRows(t.constant(S)));
        EXPECT_LT((out.middleCols(8 * g, 8) - V.middleCols(8 * g, 8) * P.transpose()).cwiseAbs().maxCoeff(),
                  1e-14);
    }
    checkOp("groupMean", {v}, [](const Args& a) { return ad::groupMean(a[0], 5); });
    const Md pooled = t.value(ad::groupMean(t.constant(V), 8));
    for (Index g = 0; g < 3; ++g)
        EXPECT_LT((pooled.col(g) - V.middleCols(8 * g, 8).rowwise().mean()).norm(), 1e-15);
    // Groups that do not tile the columns are refused, naming the op.
    EXPECT_THROW(ad::groupAttention(t.constant(Q), t.constant(K), t.constant(V), 7, 1.0),
                 std::invalid_argument);
}

// attention(q, k, v) by its definition: softmaxRows of the logits q^T k (query j's own key, key self + j,
// masked when excludeSelf), then v P^T.
Md attentionByDefinition(const Md& q, const Md& k, const Md& v, bool excludeSelf, Index self = 0) {
    Md logits = q.transpose() * k;
    if (excludeSelf)
        for (Index j = 0; j < q.cols(); ++j) logits(j, self + j) = -std::numeric_limits<double>::infinity();
    ad::Tape<double> t;
    return v * t.value(ad::softmaxRows(t.constant(logits))).transpose();
}

TEST(Autodiff, Attention) {
    // 40 queries (tiles of 16, 16 and 8: the tile edges and the slot sums are crossed) over 40 or 23 keys;
    // features in R^3 (scaled so the weights are far from uniform), values in R^2.
    const Md q = randn(3, 40, 110, 1.5), k = randn(3, 40, 111, 1.5), v = randn(2, 40, 112);
    const Md k23 = randn(3, 23, 113, 1.5), v23 = randn(2, 23, 114);
    checkOp("attention", {q, k, v}, [](const Args& a) { return ad::attention(a[0], a[1], a[2]); });
    checkOp("attention excl.", {q, k, v},
            [](const Args& a) { return ad::attention(a[0], a[1], a[2], true); });
    checkOp("attention Nk=23", {q, k23, v23}, [](const Args& a) { return ad::attention(a[0], a[1], a[2]); });
    // One node as queries, keys and values (the RWPO layer's tokens attend to themselves).
    checkOp("attention q=k=v", {q}, [](const Args& a) { return ad::attention(a[0], a[0], a[0], true); });
    // 17 queries that are keys 11..27 of 40 (one part of a batch split across tapes) leave those out.
    const Md q17 = randn(3, 17, 118, 1.5);
    checkOp("attention excl. at 11", {q17, k, v},
            [](const Args& a) { return ad::attention(a[0], a[1], a[2], true, 11); });
    {
        const Md expected = attentionByDefinition(q17, k, v, true, 11);
        ad::Tape<double> t;
        ad::Tape<float> tf;
        EXPECT_LT((t.value(ad::attention(t.constant(q17), t.constant(k), t.constant(v), true, 11)) - expected)
                      .cwiseAbs()
                      .maxCoeff(),
                  1e-14);
        const Md outF = tf.value(ad::attention(tf.constant(q17.cast<float>()), tf.constant(k.cast<float>()),
                                               tf.constant(v.cast<float>()), true, 11))
                            .cast<double>();
        EXPECT_LT((outF - expected).cwiseAbs().maxCoeff(), 2e-6);
        // Own keys past the last key are refused: 17 queries from key 24 on would need 41 keys.
        EXPECT_THROW(ad::attention(t.constant(q17), t.constant(k), t.constant(v), true, 24),
                     std::invalid_argument);
    }

    // The value against the definition, in double and in float.
    for (bool excludeSelf : {false, true}) {
        const Md expected = attentionByDefinition(q, k, v, excludeSelf);
        ad::Tape<double> t;
        const Md out = t.value(ad::attention(t.constant(q), t.constant(k), t.constant(v), excludeSelf));
        EXPECT_LT((out - expected).cwiseAbs().maxCoeff(), 1e-14);
        ad::Tape<float> tf;
        const Md outF = tf.value(ad::attention(tf.constant(q.cast<float>()), tf.constant(k.cast<float>()),
                                               tf.constant(v.cast<float>()), excludeSelf))
                            .cast<double>();
        EXPECT_LT((outF - expected).cwiseAbs().maxCoeff(), 2e-6);
        if (excludeSelf) { // query 0's weights exclude key 0 exactly: moving v_0 changes nothing in out_0
            Md v0 = v;
            v0.col(0).setConstant(1e3);
            const Md moved = t.value(ad::attention(t.constant(q), t.constant(k), t.constant(v0), true));
            EXPECT_EQ(moved.col(0), out.col(0));
        }
    }

    // The same bits on one thread and on several: the key gradients sum in a fixed order.
    const Md Q = randn(4, 300, 115), K = randn(4, 300, 116), V = randn(5, 300, 117);
    auto grads = [&] {
        return gradients<float>(
            [](const std::vector<ad::Var<float>>& a) {
                return ad::sum(ad::square(ad::attention(a[0], a[1], a[2], true)));
            },
            {Q, K, V});
    };
    const int threads = flowscope::threadCount();
    flowscope::setThreadCount(1);
    const auto one = grads();
    flowscope::setThreadCount(4);
    const auto four = grads();
    flowscope::setThreadCount(threads);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(one[i], four[i]) << "operand " << i;

    // A NaN query gives a NaN output (the training's step guard must see it), not weights of 0.
    Md qNan = q;
    qNan(1, 5) = std::nan("");
    ad::Tape<double> t;
    EXPECT_TRUE(t.value(ad::attention(t.constant(qNan), t.constant(k), t.constant(v))).col(5).hasNaN());
    ad::Tape<float> tf;
    EXPECT_TRUE(tf.value(ad::attention(tf.constant(Md(qNan).cast<float>()), tf.constant(k.cast<float>()),
                                       tf.constant(v.cast<float>())))
                    .col(5)
                    .hasNaN());
    // Shapes are checked, naming the op: keys of another feature count, one value per key, excludeSelf
    // with other keys than the queries.
    EXPECT_THROW(ad::attention(t.constant(q), t.constant(randn(2, 40, 1)), t.constant(v)),
                 std::invalid_argument);
    EXPECT_THROW(ad::attention(t.constant(q), t.constant(k), t.constant(v23)), std::invalid_argument);
    EXPECT_THROW(ad::attention(t.constant(q), t.constant(k23), t.constant(v23), true), std::invalid_argument);
}

// --- Float kernels and accuracy ---

TEST(Autodiff, FloatAttentionKernelMatchesTheDoublePath) {
    // The float SIMD kernel (AttentionKernel.h), each implementation this machine runs, against the double
    // Eigen path: the output and the gradients of every operand, for the RWPO layer's shapes (4 features, 5
    // values; 3 and 2; 3 and 4), key counts that are and are not a multiple of the 8-key block, one query,
    // odd query counts (the pair loop's tail), own keys left out or not. A shape the kernel lacks (2
    // features) takes the Eigen float path and must agree as well.
    // Queries may also be one part of the keys (self: the first query's own key), as in a split batch.
    struct Case {
        Index f, r, n, nk;
        bool excludeSelf;
        Index self = 0;
    };
    const std::vector<Case> cases = {{4, 5, 300, 300, true},
                                     {4, 5, 300, 300, false},
                                     {4, 5, 37, 37, true},
                                     {3, 2, 1, 23, false},
                                     {3, 2, 40, 9, false},
                                     {3, 4, 16, 16, true},
                                     {4, 5, 2, 2, true},
                                     {2, 3, 41, 41, true},
                                     {4, 5, 37, 100, true, 50},
                                     {4, 5, 150, 301, true, 151},
                                     {3, 2, 9, 23, true, 14},
                                     {2, 3, 9, 23, true, 5},
                                     // 256 keys: rows kernel::paddedStride() = 272 floats apart, not nkPadded
                                     {4, 5, 40, 256, false},
                                     {4, 5, 256, 256, true}};
    const std::string initial = ad::kernel::isa();
    int ran = 0;
    for (const char* isa : {"avx512vl", "avx2-fma", "generic"}) {
        if (!ad::kernel::selectIsa(isa)) {
            std::printf("[ kernel    ] %s: not on this machine\n", isa);
            continue;
        }
        ++ran;
        for (const Case& c : cases) {
            SCOPED_TRACE(std::string(isa) + " f=" + std::to_string(c.f) + " r=" + std::to_string(c.r) +
                         " n=" + std::to_string(c.n) + " nk=" + std::to_string(c.nk) +
                         (c.excludeSelf ? " leave-one-out from key " + std::to_string(c.self) : ""));
            EXPECT_EQ(ad::kernel::supports(int(c.f), int(c.r)), c.f != 2);
            const std::vector<Md> in = {randn(c.f, c.n, 120, 1.5), randn(c.f, c.nk, 121, 1.5),
                                        randn(c.r, c.nk, 122)};
            const bool excl = c.excludeSelf;
            const Index self = c.self;
            auto loss = [excl, self](const auto& a) {
                return weighted(ad::attention(a[0], a[1], a[2], excl, self));
            };
            ad::Tape<double> td;
            const Md outD = td.value(
                ad::attention(td.constant(in[0]), td.constant(in[1]), td.constant(in[2]), excl, self));
            EXPECT_LT((outD - attentionByDefinition(in[0], in[1], in[2], excl, self)).cwiseAbs().maxCoeff(),
                      1e-13);
            ad::Tape<float> tf;
            const Md outF =
                tf.value(ad::attention(tf.constant(in[0].cast<float>()), tf.constant(in[1].cast<float>()),
                                       tf.constant(in[2].cast<float>()), excl, self))
                    .cast<double>();
            EXPECT_LT((outF - outD).cwiseAbs().maxCoeff(), 2e-6 * (1 + outD.cwiseAbs().maxCoeff()));
            const auto gd = gradients<double>(loss, in);
            const auto gf = gradients<float>(loss, in);
            // (With two tokens each leaving itself out, a query sees one key of weight 1: dq = dk = 0.)
            for (int i = 0; i < 3; ++i) {
                const double scale = std::max(gd[i].cwiseAbs().maxCoeff(), 1e-2);
                EXPECT_LT((gf[i].cast<double>() - gd[i]).cwiseAbs().maxCoeff(), 1e-5 * scale)
                    << "operand " << i;
            }
        }
    }
    EXPECT_GE(ran, 1);
    ad::kernel::selectIsa(initial.c_str());
}

// biasedAttention(q, k, v, a, b) is attention([q; a; 1], [k; 1; b], v), or attention([q; 1], [k; b], v)
// without a: in float64 (the Eigen path) the same floats, bit for bit, with a's and b's gradients the rows of
// the features'; against finite differences; and in float (the kernel, each implementation here, for 1 and 2
// features, the RWPO layer's; the Eigen path for shapes the kernel lacks) against float64, with a query bias
// and without, keys that do and do not fill the 8-key blocks, own keys left out, the queries one part of the
// keys. Backward from kept weights gives the recomputing one's floats, and operands that need no gradient
// change none of the others'.
TEST(Autodiff, BiasedAttentionIsAttentionWithTheBiasesAsFeatures) {
    struct Case {
        Index f, r, n, nk;
        bool queryBias, excludeSelf;
        Index self = 0;
    };
    const std::vector<Case> cases = {
        {2, 5, 300, 300, true, true},   {2, 5, 37, 37, false, true},       {1, 2, 41, 41, true, true},
        {1, 2, 41, 41, false, true},    {2, 4, 1, 23, true, false},        {1, 3, 9, 23, true, true, 14},
        {1, 4, 9, 23, false, true, 14}, {2, 5, 150, 301, true, true, 151}, {2, 5, 40, 256, true, false},
        {3, 2, 20, 29, true, true},     {2, 6, 20, 29, false, false}}; // the last two: no kernel
    for (const Case& c : cases) {
        SCOPED_TRACE("f=" + std::to_string(c.f) + " r=" + std::to_string(c.r) + " n=" + std::to_string(c.n) +
                     " nk=" + std::to_string(c.nk) + (c.queryBias ? " with a" : " without a") +
                     (c.excludeSelf ? " leave-one-out from key " + std::to_string(c.self) : ""));
        EXPECT_EQ(ad::kernel::supports(int(c.f), int(c.r), true), c.f <= 2 && c.r <= 5);
        const Md q = randn(c.f, c.n, 140, 1.5), k = randn(c.f, c.nk, 141, 1.5), v = randn(c.r, c.nk, 142),
                 a = c.queryBias ? randn(1, c.n, 143) : Md::Zero(1, c.n), b = randn(1, c.nk, 144);
        const bool excl = c.excludeSelf;
        const Index self = c.self;
        auto biased = [&](const auto& x) {
            using V = std::decay_t<decltype(x[0])>;
            return ad::biasedAttention(x[0], x[1], x[2], c.queryBias ? x[3] : V{}, x[4], excl, self);
        };
        const std::vector<Md> in = {q, k, v, a, b};
        const int operands = 5;
        auto used = [&](int i) { return i != 3 || c.queryBias; };

        // float64: the features' attention, bit for bit.
        const Index extra = c.queryBias ? 2 : 1;
        Md qx(c.f + extra, c.n), kx(c.f + extra, c.nk);
        if (c.queryBias) {
            qx << q, a, Md::Ones(1, c.n);
            kx << k, Md::Ones(1, c.nk), b;
        } else {
            qx << q, Md::Ones(1, c.n);
            kx << k, b;
        }
        ad::Tape<double> tb, tf;
        std::vector<Vd> xb;
        for (const Md& m : in) xb.push_back(tb.input(m));
        const Vd yb = biased(xb);
        const Vd qv = tf.input(qx), kv = tf.input(kx), vv = tf.input(v);
        const Vd yf = ad::attention(qv, kv, vv, excl, self);
        EXPECT_EQ(yb.value(), yf.value());
        const Md W = randn(c.r, c.n, 145);
        tb.backward(ad::sum(ad::mul(yb, tb.constant(W))));
        tf.backward(ad::sum(ad::mul(yf, tf.constant(W))));
        EXPECT_EQ(tb.grad(xb[0]), tf.grad(qv).topRows(c.f));
        EXPECT_EQ(tb.grad(xb[1]), tf.grad(kv).topRows(c.f));
        EXPECT_EQ(tb.grad(xb[2]), tf.grad(vv));
        if (c.queryBias) EXPECT_EQ(tb.grad(xb[3]), tf.grad(qv).row(c.f));
        EXPECT_EQ(tb.grad(xb[4]), tf.grad(kv).bottomRows(1));
        if (c.n <= 41) checkOp("biasedAttention", in, [&](const Args& x) { return biased(x); });

        // Only some operands need a gradient (the others constants): theirs are the floats they get when all
        // do, in float64 and in float.
        auto loss = [&](const auto& x) { return weighted(biased(x)); };
        auto partGradients = [&](auto zero, unsigned inputs) {
            using S = decltype(zero);
            ad::Tape<S> t;
            std::vector<ad::Var<S>> x;
            for (int i = 0; i < operands; ++i)
                x.push_back(inputs >> i & 1 ? t.input(in[i].cast<S>()) : t.constant(in[i].cast<S>()));
            t.backward(loss(x));
            std::vector<ad::Matrix<S>> g(operands);
            for (int i = 0; i < operands; ++i)
                if (inputs >> i & 1) g[i] = t.grad(x[i]);
            return g;
        };
        const auto gd = gradients<double>(loss, in);
        for (unsigned inputs : {0b11110u, 0b11101u, 0b11011u, 0b01000u, 0b10000u, 0b00111u}) {
            SCOPED_TRACE("inputs " + std::to_string(inputs));
            const auto pd = partGradients(0.0, inputs);
            const auto pf = partGradients(0.0f, inputs), af = partGradients(0.0f, 0b11111u);
            for (int i = 0; i < operands; ++i)
                if (inputs >> i & 1 && used(i)) {
                    EXPECT_EQ(pd[i], gd[i]) << "operand " << i;
                    EXPECT_EQ(pf[i], af[i]) << "operand " << i;
                }
        }

        // float against float64, in each implementation of the kernel.
        const std::string initial = ad::kernel::isa();
        for (const char* isa : {"avx512vl", "avx2-fma", "generic"}) {
            if (!ad::kernel::selectIsa(isa)) continue;
            SCOPED_TRACE(isa);
            ad::Tape<float> t;
            std::vector<ad::Var<float>> x;
            for (const Md& m : in) x.push_back(t.input(m.cast<float>()));
            const Md out = t.value(biased(x)).cast<double>();
            EXPECT_LT((out - yb.value()).cwiseAbs().maxCoeff(),
                      2e-6 * (1 + yb.value().cwiseAbs().maxCoeff()));
            const auto gf = gradients<float>(loss, in);
            for (int i = 0; i < operands; ++i) {
                if (!used(i)) continue;
                // a's gradient, Σ_l c_jl, is 0 exactly (a softmax does not see a): its float value is the
                // rounding of a sum of logit gradients, the terms of b's gradient too.
                const double scale = std::max(gd[i == 3 ? 4 : i].cwiseAbs().maxCoeff(), 1e-2);
                EXPECT_LT((gf[i].cast<double>() - gd[i]).cwiseAbs().maxCoeff(), 1e-5 * scale)
                    << "operand " << i;
            }
            // Backward recomputing the weights (the tape's budget for kept ones spent): the same floats.
            ad::Tape<float> tr;
            ASSERT_TRUE(tr.reserveKept(ad::Tape<float>::kKeptFloats));
            std::vector<ad::Var<float>> xr;
            for (const Md& m : in) xr.push_back(tr.input(m.cast<float>()));
            tr.backward(loss(xr));
            t.backward(loss(x));
            for (int i = 0; i < operands; ++i)
                if (used(i)) EXPECT_EQ(tr.grad(xr[i]), t.grad(x[i])) << "operand " << i;
        }
        ad::kernel::selectIsa(initial.c_str());
    }

    // One node as the queries and the keys, another as both biases (tokens attending to each other, one
    // feature): each gets both gradients. Finite differences in float64; float within 1e-5 of it.
    const Md x = randn(1, 37, 150, 1.5), v = randn(3, 37, 151), s = randn(1, 37, 152);
    auto shared = [](const auto& y) { return ad::biasedAttention(y[0], y[0], y[1], y[2], y[2], true, 0); };
    checkOp("biasedAttention shared", {x, v, s}, [&](const Args& y) { return shared(y); });
    auto sharedLoss = [&](const auto& y) { return weighted(shared(y)); };
    const auto gd = gradients<double>(sharedLoss, {x, v, s});
    const auto gf = gradients<float>(sharedLoss, {x, v, s});
    for (int i = 0; i < 3; ++i)
        EXPECT_LT((gf[i].cast<double>() - gd[i]).cwiseAbs().maxCoeff(), 1e-5 * gd[i].cwiseAbs().maxCoeff())
            << "operand " << i;

    ad::Tape<float> t;
    const auto one = t.input(ad::Matrix<float>::Ones(1, 4));
    EXPECT_THROW(ad::biasedAttention(one, one, one, one, ad::Var<float>{}), std::invalid_argument);
}

// The kept weights draw on one budget per recording (Tape::kKeptFloats, 64 MiB): a node past it recomputes
// its weights (the same floats, FloatAttentionKernelKeptWeightsAreTheRecomputedOnes), and clear() refills it.
TEST(Autodiff, KeptAttentionWeightsHaveOneBudgetPerRecording) {
    ad::Tape<float> t;
    EXPECT_TRUE(t.reserveKept(ad::Tape<float>::kKeptFloats - 10));
    EXPECT_TRUE(t.reserveKept(10));
    EXPECT_FALSE(t.reserveKept(1));
    t.clear();
    EXPECT_TRUE(t.reserveKept(1));
    EXPECT_FALSE(t.reserveKept(ad::Tape<float>::kKeptFloats));
}

TEST(Autodiff, FloatAttentionKernelKeptWeightsAreTheRecomputedOnes) {
    // A differentiated attention node keeps the forward's weights and its backward reads them (Tape.cpp,
    // kKeptWeights); larger ones, and AttentionVjp, recompute them. Both ways must give the same floats, bit
    // for bit, in every implementation: the output, the stats, dq, dk and dv, with a padded key block, one
    // query's own key left out and query counts that take every group size (8, 4, 2, 1).
    const int f = 4, r = 5, nq = 31, nk = 45, nkPadded = 48, self = 7;
    const Md K = randn(f, nk, 131, 1.5), V = randn(r, nk, 132), Qd = randn(f, nq, 133, 1.5),
             G = randn(r, nq, 134);
    ad::Matrix<float> kt = ad::Matrix<float>::Zero(nkPadded, f), vt = ad::Matrix<float>::Zero(nkPadded, r);
    kt.topRows(nk) = K.transpose().cast<float>(); // column c: coordinate c of every key, contiguous
    vt.topRows(nk) = V.transpose().cast<float>();
    const ad::Matrix<float> Q = Qd.cast<float>(), g = G.cast<float>();
    const ad::kernel::Attention a{f, r, nk, nkPadded, kt.data(), vt.data(), Q.data(), self};
    const std::string initial = ad::kernel::isa();
    for (const char* isa : {"avx512vl", "avx2-fma", "generic"}) {
        if (!ad::kernel::selectIsa(isa)) continue;
        SCOPED_TRACE(isa);
        struct Run {
            ad::Matrix<float> out, stats, dq, dkt, dvt;
        };
        auto run = [&](bool keep) {
            Run x{ad::Matrix<float>(r, nq), ad::Matrix<float>(2, nq), ad::Matrix<float>::Zero(f, nq),
                  ad::Matrix<float>::Zero(nkPadded, f), ad::Matrix<float>::Zero(nkPadded, r)};
            ad::Matrix<float> weights = ad::Matrix<float>::Constant(nkPadded, nq, -1.0f);
            ad::kernel::forward(a, 0, nq, x.out.data(), x.stats.data(), keep ? weights.data() : nullptr);
            if (keep) { // the unnormalised weights: 1 at each query's largest logit, 0 for unseen keys
                EXPECT_EQ(weights.colwise().maxCoeff(), ad::Matrix<float>::Ones(1, nq));
                EXPECT_EQ(weights.bottomRows(nkPadded - nk), ad::Matrix<float>::Zero(nkPadded - nk, nq));
                for (int j = 0; j < nq; ++j) EXPECT_EQ(weights(self + j, j), 0.0f);
            }
            ad::kernel::backward(a, 0, nq, x.out.data(), x.stats.data(), g.data(), x.dq.data(), x.dkt.data(),
                                 x.dvt.data(), keep ? weights.data() : nullptr);
            return x;
        };
        const Run kept = run(true), recomputed = run(false);
        EXPECT_EQ(kept.out, recomputed.out);
        EXPECT_EQ(kept.stats, recomputed.stats);
        EXPECT_EQ(kept.dq, recomputed.dq);
        EXPECT_EQ(kept.dkt, recomputed.dkt);
        EXPECT_EQ(kept.dvt, recomputed.dvt);
        EXPECT_GT(recomputed.dq.cwiseAbs().maxCoeff(), 0.0f);

        // The same operands with rows `stride` floats apart (kernel::paddedStride's layout, here 16 past
        // nkPadded): the same floats, and nothing read or written past nkPadded (NaN keys and values there,
        // -1 weights and gradients stay).
        const int stride = nkPadded + 16;
        ad::Matrix<float> kts = ad::Matrix<float>::Constant(stride, f, NAN),
                          vts = ad::Matrix<float>::Constant(stride, r, NAN);
        kts.topRows(nkPadded) = kt;
        vts.topRows(nkPadded) = vt;
        ad::kernel::Attention as = a;
        as.kt = kts.data();
        as.vt = vts.data();
        as.rowStride = stride;
        for (bool keep : {true, false}) {
            Run x{ad::Matrix<float>(r, nq), ad::Matrix<float>(2, nq), ad::Matrix<float>::Zero(f, nq),
                  ad::Matrix<float>::Zero(stride, f), ad::Matrix<float>::Zero(stride, r)};
            x.dkt.bottomRows(16).setConstant(-1.0f);
            x.dvt.bottomRows(16).setConstant(-1.0f);
            ad::Matrix<float> weights = ad::Matrix<float>::Constant(stride, nq, -1.0f);
            ad::kernel::forward(as, 0, nq, x.out.data(), x.stats.data(), keep ? weights.data() : nullptr);
            ad::kernel::backward(as, 0, nq, x.out.data(), x.stats.data(), g.data(), x.dq.data(), x.dkt.data(),
                                 x.dvt.data(), keep ? weights.data() : nullptr);
            EXPECT_EQ(x.out, kept.out) << keep;
            EXPECT_EQ(x.stats, kept.stats) << keep;
            EXPECT_EQ(x.dq, kept.dq) << keep;
            EXPECT_EQ(ad::Matrix<float>(x.dkt.topRows(nkPadded)), kept.dkt) << keep;
            EXPECT_EQ(ad::Matrix<float>(x.dvt.topRows(nkPadded)), kept.dvt) << keep;
            EXPECT_EQ(x.dkt.bottomRows(16), ad::Matrix<float>::Constant(16, f, -1.0f)) << keep;
            EXPECT_EQ(x.dvt.bottomRows(16), ad::Matrix<float>::Constant(16, r, -1.0f)) << keep;
            if (keep) EXPECT_EQ(weights.bottomRows(16), ad::Matrix<float>::Constant(16, nq, -1.0f));
        }
    }
    ad::kernel::selectIsa(initial.c_str());
}

TEST(Autodiff, FloatAttentionKernelRowsAreNotAMultipleOfAKilobyteApart) {
    // paddedStride: 16 more floats where nkPadded floats are a multiple of 1 KB (4K aliasing), else nkPadded.
    EXPECT_EQ(ad::kernel::paddedStride(1024), 1040);
    EXPECT_EQ(ad::kernel::paddedStride(256), 272);
    EXPECT_EQ(ad::kernel::paddedStride(48), 48);
    EXPECT_EQ(ad::kernel::paddedStride(1032), 1032);
    for (int n = 8; n <= 4096; n += 8) {
        const int s = ad::kernel::paddedStride(n);
        EXPECT_GE(s, n);
        EXPECT_EQ(s % ad::kernel::kKeyBlock, 0);
        EXPECT_NE(s * 4 % 1024, 0) << n;
    }
}

TEST(Autodiff, FloatAttentionKernelLogitsSpreadOverSixty) {
    // Logits spread over 60 (the randn cases above span about 20): keys whose logits rise by about 1 per key
    // for one query and fall for the last ones, a query with falling logits (the first key block holds its
    // maximum) and one with flat logits. The output and every gradient against the double path; the weight
    // forward keeps at the largest logit's key is 1, and backward from the kept weights gives what it gives
    // recomputing them, bit for bit.
    const int f = 3, r = 4, nq = 5, nk = 77, nkPadded = 80;
    Md K(f, nk), Q(f, nq);
    for (Index k = 0; k < nk; ++k) K.col(k) << double(k < 60 ? k : 120 - k) / 20, std::sin(double(k)), 1;
    Q << 20, -20, 0, 10, 15, 0.5, 1, -1, 2, 0, 1, -2, 3, 0.5, 1;
    const std::vector<Md> in = {Q, K, randn(r, nk, 151)};
    ad::Tape<double> td;
    const Md outD = td.value(ad::attention(td.constant(in[0]), td.constant(in[1]), td.constant(in[2])));
    EXPECT_LT((outD - attentionByDefinition(in[0], in[1], in[2], false, 0)).cwiseAbs().maxCoeff(), 1e-12);
    ad::Matrix<float> kt = ad::Matrix<float>::Zero(nkPadded, f), vt = ad::Matrix<float>::Zero(nkPadded, r);
    kt.topRows(nk) = K.transpose().cast<float>();
    vt.topRows(nk) = in[2].transpose().cast<float>();
    const ad::Matrix<float> Qf = Q.cast<float>(), g = randn(r, nq, 152).cast<float>();
    const ad::kernel::Attention a{f, r, nk, nkPadded, kt.data(), vt.data(), Qf.data(), -1};
    const std::string initial = ad::kernel::isa();
    for (const char* isa : {"avx512vl", "avx2-fma", "generic"}) {
        if (!ad::kernel::selectIsa(isa)) continue;
        SCOPED_TRACE(isa);
        ad::Tape<float> tf;
        const Md outF =
            tf.value(ad::attention(tf.constant(in[0].cast<float>()), tf.constant(in[1].cast<float>()),
                                   tf.constant(in[2].cast<float>())))
                .cast<double>();
        // Logits up to 60 carry their float rounding, about 60 x 6e-8, into the weights.
        EXPECT_LT((outF - outD).cwiseAbs().maxCoeff(), 1e-5 * outD.cwiseAbs().maxCoeff());
        auto loss = [](const auto& x) { return weighted(ad::attention(x[0], x[1], x[2])); };
        const auto gd = gradients<double>(loss, in);
        const auto gf = gradients<float>(loss, in);
        for (int i = 0; i < 3; ++i)
            EXPECT_LT((gf[i].cast<double>() - gd[i]).cwiseAbs().maxCoeff(),
                      1e-4 * gd[i].cwiseAbs().maxCoeff())
                << "operand " << i;
        ad::Matrix<float> out(r, nq), stats(2, nq), weights(nkPadded, nq);
        ad::kernel::forward(a, 0, nq, out.data(), stats.data(), weights.data());
        for (int j = 0; j < nq; ++j) {
            Eigen::Index best = 0;
            (Q.col(j).transpose() * K).maxCoeff(&best);
            EXPECT_EQ(weights(best, j), 1.0f) << j;
        }
        std::vector<ad::Matrix<float>> grads;
        for (const float* kept :
             {static_cast<const float*>(weights.data()), static_cast<const float*>(nullptr)}) {
            grads.push_back(ad::Matrix<float>::Zero(f, nq));
            grads.push_back(ad::Matrix<float>::Zero(nkPadded, f));
            grads.push_back(ad::Matrix<float>::Zero(nkPadded, r));
            const std::size_t at = grads.size() - 3;
            ad::kernel::backward(a, 0, nq, out.data(), stats.data(), g.data(), grads[at].data(),
                                 grads[at + 1].data(), grads[at + 2].data(), kept);
        }
        for (int i = 0; i < 3; ++i) EXPECT_EQ(grads[std::size_t(i)], grads[std::size_t(i) + 3]);
        EXPECT_GT(grads[0].cwiseAbs().maxCoeff(), 0.0f);
    }
    ad::kernel::selectIsa(initial.c_str());
}

TEST(Autodiff, FloatAttentionKernelBackwardInOneSlotInsideAParallelFor) {
    // The float kernel's backward sums dk and dv over tiles of 16 queries in 16 slots, added in order; inside
    // a parallelFor (a part of a split batch) one slot sums them all, and its buffers are kept from call to
    // call. Both must be the float64 gradients to float rounding, and a call after a larger one (the kept
    // buffers bigger than it needs) must give what it gives alone.
    const int f = 4, r = 5;
    auto grads = [&](int nq, int nk, bool inside) {
        const Md Qd = randn(f, nq, 141, 1.5), K = randn(f, nk, 142, 1.5), V = randn(r, nk, 143),
                 G = randn(r, nq, 144);
        std::optional<flowscope::InlineParallelFor> inlined;
        if (inside) inlined.emplace();
        ad::Tape<float> t;
        const ad::Var<float> q = t.input(Qd.cast<float>()), k = t.input(K.cast<float>()),
                             v = t.input(V.cast<float>());
        t.backward(ad::sum(ad::mul(ad::attention(q, k, v), t.constant(G.cast<float>()))));
        ad::Tape<double> d;
        const ad::Var<double> qd = d.input(Qd), kd = d.input(K), vd = d.input(V);
        d.backward(ad::sum(ad::mul(ad::attention(qd, kd, vd), d.constant(G))));
        for (auto [x, xd] : {std::pair{k, kd}, std::pair{v, vd}, std::pair{q, qd}}) {
            const Md e = t.grad(x).cast<double>() - d.grad(xd);
            EXPECT_LT(e.cwiseAbs().maxCoeff(), 2e-5 * d.grad(xd).cwiseAbs().maxCoeff()) << nq << inside;
        }
        return std::tuple{Md(t.grad(q).cast<double>()), Md(t.grad(k).cast<double>()),
                          Md(t.grad(v).cast<double>())};
    };
    const auto alone = grads(300, 200, true);
    grads(400, 280, true); // the kept buffers grow
    EXPECT_EQ(grads(300, 200, true), alone);
    grads(300, 256, true);  // rows paddedStride() = 272 floats apart, the kept weights and the slot too
    grads(300, 200, false); // 16 slots: the same sums grouped otherwise, compared with float64 inside
}

// The float products (AVX2+FMA kernel where the processor has it, engine/core/kernels/Gemm.h) against the
// double path on the same values: matmul, matmulTN, matmulNT forward and both operands' gradients, at shapes
// that are not multiples of its 6 x 16 tiles, with few columns (3) or depth 1 (outer products), and few rows
// (1, 3, 5), which Eigen keeps; a node that two products use (its gradient accumulates) and x x^T. The kernel
// reads transposed operands in place, by their strides, and small ones without packing them. Each
// entry is a dot product of length K, so float rounding bounds its error by about K eps |a||b|: 1e-5 of the
// largest entry is well above that at these depths (at most 80).
TEST(Autodiff, FloatProductsMatchTheDoublePath) {
    struct Case {
        Index m, k, n;
    };
    for (const Case& c : {Case{37, 29, 53}, Case{32, 3, 70}, Case{8, 64, 9}, Case{3, 40, 50}, Case{1, 32, 70},
                          Case{5, 33, 40}, Case{40, 50, 3}, Case{64, 1, 80}}) {
        SCOPED_TRACE("m=" + std::to_string(c.m) + " k=" + std::to_string(c.k) + " n=" + std::to_string(c.n));
        const std::vector<Md> in = {randn(c.m, c.k, 130), randn(c.k, c.n, 131), randn(c.n, c.k, 132),
                                    randn(c.k, c.m, 133)};
        auto loss = [](const auto& v) {
            auto L = weighted(ad::matmul(v[0], v[1]));             // m x n
            L = ad::add(L, weighted(ad::matmulTN(v[3], v[1])));    // (k x m)^T (k x n)
            L = ad::add(L, weighted(ad::matmulNT(v[0], v[2])));    // (m x k) (n x k)^T
            return ad::add(L, weighted(ad::matmulNT(v[0], v[0]))); // x x^T
        };
        const auto gd = gradients<double>(loss, in);
        const auto gf = gradients<float>(loss, in);
        for (std::size_t i = 0; i < in.size(); ++i) {
            const double scale = gd[i].cwiseAbs().maxCoeff();
            EXPECT_GT(scale, 0.1);
            EXPECT_LT((gf[i].cast<double>() - gd[i]).cwiseAbs().maxCoeff(), 1e-5 * scale) << "operand " << i;
        }
        ad::Tape<double> td;
        ad::Tape<float> tf;
        const Md yd = td.value(ad::matmulTN(td.constant(in[3]), td.constant(in[1])));
        const Md yf =
            tf.value(ad::matmulTN(tf.constant(in[3].cast<float>()), tf.constant(in[1].cast<float>())))
                .cast<double>();
        EXPECT_LT((yf - yd).cwiseAbs().maxCoeff(), 1e-5 * yd.cwiseAbs().maxCoeff());
    }
}

TEST(Autodiff, FloatSoftmaxExpIsAccurate) {
    // expShifted(float) against the double exp on [-87, 0] (float's normal range), at a step of 1e-4:
    // within 2 ulp-ish relative error; the shift is subtracted first; -inf and far below give exactly 0;
    // NaN stays NaN.
    std::vector<float> x;
    for (double v = -87.0; v <= 0.0; v += 1e-4) x.push_back(float(v) + 3.0f);
    std::vector<float> y = x;
    ad::expShifted(y.data(), Index(y.size()), 3.0f);
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double exact = std::exp(double(x[i] - 3.0f));
        worst = std::max(worst, std::abs(double(y[i]) / exact - 1));
    }
    std::printf("[ exp      ] float expShifted: max relative error %.2e over %zu points\n", worst, x.size());
    EXPECT_LT(worst, 2.5e-7);
    float special[] = {0.0f, -std::numeric_limits<float>::infinity(), -1e30f, -90.0f, std::nanf(""), 1.0f};
    ad::expShifted(special, 6, 0.0f);
    EXPECT_EQ(special[0], 1.0f);
    EXPECT_EQ(special[1], 0.0f);
    EXPECT_EQ(special[2], 0.0f);
    EXPECT_EQ(special[3], 0.0f);
    EXPECT_TRUE(std::isnan(special[4]));
    EXPECT_NEAR(special[5], std::exp(1.0), 3e-7 * std::exp(1.0)); // just above the weights' range
}

// tanh, logCosh(a, tanh a) and tanh's backward on a float tape (where the processor has AVX2+FMA, the
// kernels of engine/autodiff/kernels/Elementwise.h, else Eigen's) against double: tanh and log(2 cosh a)
// within a few ulp over [-12, 12] (both sides of the kernel's series/exponential switch at |x| = 0.5),
// saturating to ±1, NaN for NaN; the gradient g (1 - tanh²) likewise. 1003 values: not a multiple of 8.
TEST(Autodiff, FloatTanhAndLogCoshAreAccurate) {
    using Mf = ad::Matrix<float>;
    const Index n = 1003;
    Md x(1, n);
    for (Index i = 0; i < n; ++i) x(0, i) = -12.0 + 24.0 * double(i) / double(n - 1) + 1e-3;
    x(0, 0) = 0.4999;
    x(0, 1) = -0.5;
    x(0, 2) = 1e-20;
    x(0, 3) = -60.0;
    const Md g = randn(1, n, 150);
    ad::Tape<float> t;
    Mf gx;
    const Mf xf = x.cast<float>();
    const auto a = t.parameter(xf, gx);
    const auto th = ad::tanh(a);
    const auto lc = ad::logCosh(a, th);
    t.backward(ad::sum(ad::mul(th, t.constant(g.cast<float>()))));
    double worstTanh = 0, worstLogCosh = 0, worstGrad = 0;
    for (Index i = 0; i < n; ++i) {
        const double u = double(xf(0, i)), ref = std::tanh(u);
        const double logCosh = std::abs(u) + std::log1p(std::exp(-2 * std::abs(u)));
        const double grad =
            double(float(g(0, i))) * (1 - double(th.value()(0, i)) * double(th.value()(0, i)));
        worstTanh =
            std::max(worstTanh, std::abs(double(th.value()(0, i)) - ref) / std::max(std::abs(ref), 1e-30));
        worstLogCosh = std::max(worstLogCosh, std::abs(double(lc.value()(0, i)) - logCosh) / logCosh);
        worstGrad = std::max(worstGrad, std::abs(double(gx(0, i)) - grad) / std::max(std::abs(grad), 1e-30));
    }
    std::printf("[ float    ] tanh %.1e, logCosh %.1e, tanh's gradient %.1e (max relative error)\n",
                worstTanh, worstLogCosh, worstGrad);
    EXPECT_LT(worstTanh, 4e-7);
    EXPECT_LT(worstLogCosh, 4e-7);
    EXPECT_LT(worstGrad, 4e-7);
    EXPECT_EQ(th.value()(0, 3), -1.0f);
    EXPECT_EQ(th.value()(0, 2), 1e-20f);
    Mf special(1, 3);
    special << std::nanf(""), 1e30f, -1e30f;
    const Mf ts = t.value(ad::tanh(t.constant(special)));
    EXPECT_TRUE(std::isnan(ts(0, 0)));
    EXPECT_EQ(ts(0, 1), 1.0f);
    EXPECT_EQ(ts(0, 2), -1.0f);
}

TEST(Autodiff, DoubleTanhIsAccurateEverywhere) {
    // The packet tanh of double tapes against std::tanh, across the series/exponential switch at |x| = 0.1,
    // at tiny, large and huge arguments; relative error within a few ulps.
    Md x(1, 12);
    x << 0.0, 1e-300, -1e-8, 0.0999999, 0.1, -0.1000001, 0.5, -3.0, 19.0, 40.0, -1e300, 0.0625;
    ad::Tape<double> t;
    const Md y = t.value(ad::tanh(t.constant(x)));
    for (Index i = 0; i < x.cols(); ++i) {
        const double ref = std::tanh(x(0, i));
        EXPECT_LE(std::abs(y(0, i) - ref), 4e-16 * std::abs(ref)) << "x = " << x(0, i);
    }
    double worst = 0;
    for (int k = -4000; k <= 4000; ++k) {
        const double u = k * 1e-4 + 1e-7;
        Md one = Md::Constant(1, 1, u);
        const double v = t.value(ad::tanh(t.constant(one)))(0, 0);
        worst = std::max(worst, std::abs(v - std::tanh(u)) / std::abs(std::tanh(u)));
    }
    EXPECT_LT(worst, 1e-15);
}

// --- Structure ops and closed forms ---

TEST(Autodiff, StructureOps) {
    const Md a = randn(5, 4, 80), b = randn(2, 4, 81), c = randn(5, 3, 82);
    checkOp("rows", {a}, [](const Args& v) { return ad::rows(v[0], 1, 3); });
    checkOp("cols", {a}, [](const Args& v) { return ad::cols(v[0], 2, 2); });
    checkOp("vstack", {a, b}, [](const Args& v) { return ad::vstack({v[0], v[1], v[0]}); });
    checkOp("hstack", {a, c}, [](const Args& v) { return ad::hstack({v[1], v[0], v[1]}); });
    checkOp("rows+cols overlap", {a}, [](const Args& v) {
        return ad::add(ad::rows(ad::cols(v[0], 1, 2), 0, 3), ad::rows(ad::cols(v[0], 0, 2), 2, 3));
    });
}

// Tape.cpp does blocks of rows, stacks, column sums and broadcasts of matrices of few rows with its own loops
// (the row count a constant up to 4), not Eigen's. For every row count they special-case and two beyond, in
// float: the values and gradients are Eigen's own expressions' floats, bit for bit (copies and broadcasts are
// exact; a column's sum adds its rows in Eigen's order). The gradients then also against finite differences.
TEST(Autodiff, FewRowOpsGiveEigensFloats) {
    using Mf = ad::Matrix<float>;
    using Vf = ad::Var<float>;
    for (Index r = 1; r <= 6; ++r) {
        SCOPED_TRACE("rows " + std::to_string(r));
        const Index n = 7;
        const Mf a = randn(r, n, 100 + r).cast<float>(), b = randn(r + 3, n, 110 + r).cast<float>(),
                 c = randn(r, 1, 120 + r).cast<float>(), row = randn(1, n, 130 + r).cast<float>();
        // One op's value (against `value`) and the gradients of sum(op o W) with respect to its operands
        // (against `grads`, given W). Then again with sum(operand o W_k) added for every operand, recorded
        // after the op, so that the op's backward adds into gradients already there: grads + W_k.
        auto expectOp = [&](const char* name, const std::vector<Mf>& in,
                            const std::function<Vf(const std::vector<Vf>&)>& op, const Mf& value,
                            const std::function<std::vector<Mf>(const Mf& W)>& grads) {
            SCOPED_TRACE(name);
            for (bool later : {false, true}) {
                ad::Tape<float> t;
                std::vector<Vf> v;
                for (const Mf& m : in) v.push_back(t.input(m));
                const Vf y = op(v);
                EXPECT_TRUE(y.value() == value);
                const Mf W = randn(y.rows(), y.cols(), 777).cast<float>();
                Vf loss = ad::sum(ad::mul(y, t.constant(W)));
                std::vector<Mf> Wk;
                for (std::size_t k = 0; later && k < v.size(); ++k) {
                    Wk.push_back(randn(in[k].rows(), in[k].cols(), 780 + k).cast<float>());
                    loss = ad::add(loss, ad::sum(ad::mul(v[k], t.constant(Wk[k]))));
                }
                t.backward(loss);
                const std::vector<Mf> g = grads(W);
                for (std::size_t k = 0; k < v.size(); ++k)
                    EXPECT_TRUE(t.grad(v[k]) == (later ? Mf(Wk[k] + g[k]) : g[k]))
                        << "operand " << k << later;
            }
        };
        const auto zero = [](const Mf& m) { return Mf::Zero(m.rows(), m.cols()).eval(); };

        Mf gb = zero(b);
        expectOp(
            "rows", {b}, [&](const auto& v) { return ad::rows(v[0], 2, r); }, b.middleRows(2, r),
            [&](const Mf& W) {
                gb.middleRows(2, r) = W;
                return std::vector<Mf>{gb};
            });
        // (A part twice, whose gradient adds two blocks, is in the float64 checks below: in float the sum's
        // order would differ from this oracle's with the later uses.)
        Mf stacked(r + 1 + r + 3, n);
        stacked << a, row, b;
        expectOp(
            "vstack", {a, row, b},
            [](const auto& v) {
                return ad::vstack({v[0], v[1], v[2]});
            },
            stacked,
            [&](const Mf& W) {
                return std::vector<Mf>{W.topRows(r), W.middleRows(r, 1), W.bottomRows(r + 3)};
            });
        expectOp(
            "colSum", {a}, [](const auto& v) { return ad::colSum(v[0]); }, a.colwise().sum(),
            [&](const Mf& W) { return std::vector<Mf>{W.replicate(r, 1)}; });
        expectOp(
            "rowSum", {a}, [](const auto& v) { return ad::rowSum(v[0]); }, a.rowwise().sum(),
            [&](const Mf& W) { return std::vector<Mf>{W.replicate(1, n)}; });
        expectOp(
            "addCol", {a, c}, [](const auto& v) { return ad::addCol(v[0], v[1]); },
            (a.array().colwise() + c.col(0).array()).matrix(),
            [&](const Mf& W) {
                return std::vector<Mf>{W, W.rowwise().sum()};
            });
        expectOp(
            "mulCol", {a, c}, [](const auto& v) { return ad::mulCol(v[0], v[1]); },
            (a.array().colwise() * c.col(0).array()).matrix(),
            [&](const Mf& W) {
                return std::vector<Mf>{(W.array().colwise() * c.col(0).array()).matrix(),
                                       W.cwiseProduct(a).rowwise().sum()};
            });
        expectOp(
            "addRow", {a, row}, [](const auto& v) { return ad::addRow(v[0], v[1]); },
            (a.array().rowwise() + row.row(0).array()).matrix(),
            [&](const Mf& W) {
                return std::vector<Mf>{W, W.colwise().sum()};
            });
        expectOp(
            "mulRow", {a, row}, [](const auto& v) { return ad::mulRow(v[0], v[1]); },
            (a.array().rowwise() * row.row(0).array()).matrix(),
            [&](const Mf& W) {
                return std::vector<Mf>{(W.array().rowwise() * row.row(0).array()).matrix(),
                                       W.cwiseProduct(a).colwise().sum()};
            });

        const Md A = a.cast<double>(), B = b.cast<double>(), C = c.cast<double>(), R = row.cast<double>();
        checkOp("rows", {B}, [r](const Args& v) { return ad::rows(v[0], 2, r); });
        checkOp("vstack", {A, R}, [](const Args& v) { return ad::vstack({v[0], v[1], v[0]}); });
        checkOp("colSum", {A}, [](const Args& v) { return ad::colSum(v[0]); });
        checkOp("rowSum", {A}, [](const Args& v) { return ad::rowSum(v[0]); });
        checkOp("mulCol", {A, C}, [](const Args& v) { return ad::mulCol(v[0], v[1]); });
        checkOp("mulRow", {A, R}, [](const Args& v) { return ad::mulRow(v[0], v[1]); });
        checkOp("addCol", {A, C}, [](const Args& v) { return ad::addCol(v[0], v[1]); });
        checkOp("addRow", {A, R}, [](const Args& v) { return ad::addRow(v[0], v[1]); });

        // float64 sums a column in order only below Eigen's two-double packet: colSum and the row operand's
        // gradient of addRow and mulRow are Eigen's doubles too (9 columns: odd ones start off a 16-byte
        // boundary in a 3-row matrix).
        const Md A9 = randn(r, 9, 160 + r), R9 = randn(1, 9, 170 + r), W9 = randn(r, 9, 180 + r);
        ad::Tape<double> t;
        const Vd av = t.input(A9), rv = t.input(R9);
        EXPECT_EQ(ad::colSum(av).value(), A9.colwise().sum());
        t.backward(ad::add(ad::sum(ad::mul(ad::addRow(av, rv), t.constant(W9))),
                           ad::sum(ad::mul(ad::mulRow(av, rv), t.constant(W9)))));
        EXPECT_EQ(t.grad(rv), Md(W9.colwise().sum() + W9.cwiseProduct(A9).colwise().sum()));
    }

    // Matrices without columns: the same shapes as Eigen's, gradients of their shape.
    ad::Tape<float> t;
    const Vf e = t.input(Mf(3, 0)), c1 = t.input(Mf::Ones(3, 1));
    const Vf y = ad::vstack({ad::rows(e, 1, 2), ad::colSum(e), ad::mulCol(ad::addCol(e, c1), c1)});
    EXPECT_EQ(y.rows(), 6);
    EXPECT_EQ(y.cols(), 0);
    t.backward(ad::add(ad::sum(y), ad::sum(c1)));
    EXPECT_EQ(t.grad(e).rows(), 3);
    EXPECT_EQ(t.grad(e).cols(), 0);
    EXPECT_EQ(t.grad(c1), Mf::Ones(3, 1));
}

TEST(Autodiff, ClosedFormGradients) {
    const Md x = randn(4, 6, 90);
    auto g = gradients<double>([](const auto& v) { return ad::sum(ad::exp(v[0])); }, {x});
    EXPECT_LT((g[0] - x.array().exp().matrix()).cwiseAbs().maxCoeff(), 1e-15); // d sum(e^x) = e^x
    g = gradients<double>([](const auto& v) { return ad::sumSquares(v[0]); }, {x});
    EXPECT_EQ(g[0], 2 * x); // d |x|^2 = 2x
    g = gradients<double>([](const auto& v) { return ad::mean(v[0]); }, {x});
    EXPECT_EQ(g[0], Md::Constant(4, 6, 1.0 / 24)); // d mean(x) = 1 / size
    g = gradients<double>([](const auto& v) { return ad::sum(ad::logCosh(v[0])); }, {x});
    EXPECT_LT((g[0] - x.array().tanh().matrix()).cwiseAbs().maxCoeff(), 1e-15); // d log cosh = tanh
    g = gradients<double>([](const auto& v) { return ad::sum(ad::logSumExpRows(v[0])); }, {x});
    ad::Tape<double> t;
    EXPECT_LT((g[0] - t.value(ad::softmaxRows(t.constant(x)))).cwiseAbs().maxCoeff(),
              1e-15); // d lse = softmax
}

// --- Small models ---

// A 2-layer tanh MLP on a batch of 16 two-dimensional samples (columns), squared loss against targets.
template <class S> ad::Var<S> mlpLoss(const std::vector<ad::Var<S>>& v, const ad::Matrix<S>& target) {
    // v: W1 (8x2), b1 (8x1), W2 (1x8), b2 (1x1), X (2x16)
    const auto hidden = ad::tanh(ad::addCol(ad::matmul(v[0], v[4]), v[1]));
    const auto out = ad::addCol(ad::matmul(v[2], hidden), v[3]);
    return ad::mean(ad::square(ad::sub(out, v[0].tape->constant(target))));
}

std::vector<Md> mlpInputs() {
    return {randn(8, 2, 100), randn(8, 1, 101), randn(1, 8, 102), randn(1, 1, 103), randn(2, 16, 104)};
}

TEST(Autodiff, TwoLayerTanhMlp) {
    const Md target = randn(1, 16, 105);
    expectAccurate(
        "tanh MLP",
        ad::gradCheck([&](ad::Tape<double>&, const Args& v) { return mlpLoss(v, target); }, mlpInputs()));
}

// Softmax self-attention with a trainable inverse temperature: softmaxRows(beta X X^T) X Wv, tokens as rows.
template <class S> ad::Var<S> attention(const std::vector<ad::Var<S>>& v) {
    // v: X (6x3), beta (1x1), Wv (3x3)
    const auto A = ad::softmaxRows(ad::scale(ad::matmulNT(v[0], v[0]), v[1]));
    return ad::matmul(ad::matmul(A, v[0]), v[2]);
}

std::vector<Md> attentionInputs() {
    return {randn(6, 3, 110), scalar(0.7), randn(3, 3, 111)};
}

TEST(Autodiff, SoftmaxAttentionWithTrainableBeta) {
    const std::vector<Md> in = attentionInputs();
    const ad::GradCheckResult r =
        ad::gradCheck([](ad::Tape<double>&, const Args& v) { return weighted(attention(v)); }, in);
    EXPECT_EQ(r.checked, 6 * 3 + 1 + 3 * 3);
    expectAccurate("attention X,beta,Wv", r);
    // beta alone (X and Wv constants), so that its error is not hidden behind the others'.
    expectAccurate("attention beta",
                   ad::gradCheck(
                       [&](ad::Tape<double>& t, const Args& v) {
                           return weighted(attention<double>({t.constant(in[0]), v[0], t.constant(in[2])}));
                       },
                       {in[1]}));
}

// --- Tape behaviour ---

TEST(Autodiff, ParameterGradientsAccumulate) {
    const Md W = randn(3, 2, 120), x1 = randn(2, 7, 121), x2 = randn(2, 7, 122);
    auto loss = [](ad::Tape<double>& t, Vd w, const Md& x) {
        return weighted(ad::tanh(ad::matmul(w, t.constant(x))));
    };
    // The oracle: d loss / d W with W as an input() leaf, one batch at a time.
    auto inputGrad = [&](const Md& x) {
        ad::Tape<double> t;
        const Vd w = t.input(W);
        t.backward(loss(t, w, x));
        return Md(t.grad(w));
    };
    const Md g1 = inputGrad(x1), g2 = inputGrad(x2);

    Md grad; // empty: parameter() sizes it to W's shape, zeroed
    ad::Tape<double> t;
    Vd w = t.parameter(W, grad);
    ASSERT_EQ(grad, Md::Zero(3, 2));
    Vd l = loss(t, w, x1);
    t.backward(l);
    EXPECT_EQ(grad, g1);
    EXPECT_EQ(t.grad(w), g1);
    t.backward(l); // the same graph again: adds once more
    EXPECT_EQ(grad, 2 * g1);
    t.clear(); // another batch on the rebuilt graph: adds its own gradient
    w = t.parameter(W, grad);
    t.backward(loss(t, w, x2));
    EXPECT_LT((grad - (2 * g1 + g2)).cwiseAbs().maxCoeff(), 1e-15);
    EXPECT_EQ(t.grad(w), g2);

    Md wrong(2, 2);
    EXPECT_THROW(t.parameter(W, wrong), std::invalid_argument);
}

TEST(Autodiff, ClearAndRebuildGivesIdenticalGradients) {
    const std::vector<Md> in = mlpInputs();
    const Md target = randn(1, 16, 105);
    ad::Tape<double> t;
    std::vector<Md> first;
    const double* hiddenStorage = nullptr;
    int size = 0;
    for (int pass = 0; pass < 3; ++pass) {
        t.clear();
        EXPECT_EQ(t.size(), 0);
        Args v;
        for (const Md& m : in) v.push_back(t.input(m));
        const Vd l = mlpLoss(v, target);
        t.backward(l);
        std::vector<Md> g;
        for (const Vd& x : v) g.push_back(t.grad(x));
        // The first matmul (node 5) keeps its storage: the rebuilt graph reuses the nodes' allocations.
        const double* storage = t.value(Vd{&t, 5}).data();
        if (pass == 0) {
            first = g;
            hiddenStorage = storage;
            size = t.size();
            continue;
        }
        EXPECT_EQ(t.size(), size);
        EXPECT_EQ(storage, hiddenStorage);
        for (std::size_t k = 0; k < g.size(); ++k) EXPECT_EQ(g[k], first[k]) << "input " << k;
    }
}

TEST(Autodiff, GradientsOnlyWhereNeeded) {
    ad::Tape<double> t;
    const Vd c = t.constant(randn(3, 3, 130));
    const Vd x = t.input(randn(3, 3, 131));
    const Vd unused = t.input(randn(3, 3, 132));
    const Vd side = ad::exp(unused); // recorded, but the loss does not depend on it
    const Vd l = ad::sum(ad::mul(c, x));
    t.backward(l);
    EXPECT_EQ(t.grad(x), t.value(c));
    EXPECT_EQ(t.grad(unused), Md::Zero(3, 3));
    EXPECT_EQ(t.grad(side), Md::Zero(3, 3));
    EXPECT_THROW(t.grad(c), std::invalid_argument); // a constant keeps no gradient
    // A loss with no input upstream: backward() is a no-op that still leaves defined (zero) gradients.
    t.backward(ad::sum(c));
    EXPECT_EQ(t.grad(x), Md::Zero(3, 3));
}

TEST(Autodiff, ShapeMismatchNamesTheOp) {
    ad::Tape<double> t;
    const Vd a = t.input(Md::Zero(3, 4)), b = t.input(Md::Zero(4, 3)), s = t.input(Md::Zero(2, 1));
    auto message = [](auto f) -> std::string {
        try {
            f();
        } catch (const std::invalid_argument& e) {
            return e.what();
        }
        return "(no exception)";
    };
    auto expectMessage = [&](auto f, const char* op, const char* shapes) {
        const std::string m = message(f);
        EXPECT_NE(m.find(op), std::string::npos) << m;
        EXPECT_NE(m.find(shapes), std::string::npos) << m;
    };
    expectMessage([&] { ad::matmul(a, a); }, "matmul", "3x4 and 3x4");
    expectMessage([&] { ad::matmulTN(a, b); }, "matmulTN", "3x4 and 4x3");
    expectMessage([&] { ad::matmulNT(a, b); }, "matmulNT", "3x4 and 4x3");
    expectMessage([&] { ad::add(a, b); }, "add", "3x4 and 4x3");
    expectMessage([&] { ad::div(a, b); }, "div", "3x4 and 4x3");
    expectMessage([&] { ad::addCol(a, s); }, "addCol", "3x4 and 2x1");
    expectMessage([&] { ad::mulRow(a, s); }, "mulRow", "3x4 and 2x1");
    expectMessage([&] { ad::scale(a, s); }, "scale", "2x1");
    expectMessage([&] { ad::softThreshold(a, s); }, "softThreshold", "2x1");
    expectMessage([&] { ad::vstack({a, b}); }, "vstack", "3x4 and 4x3");
    expectMessage([&] { ad::hstack({a, b}); }, "hstack", "3x4 and 4x3");
    expectMessage([&] { ad::rows(a, 2, 2); }, "rows", "3x4");
    expectMessage([&] { ad::cols(a, -1, 2); }, "cols", "3x4");
    expectMessage([&] { t.backward(a); }, "backward", "3x4");
    ad::Tape<double> other;
    EXPECT_THROW(ad::add(a, other.input(Md::Zero(3, 4))), std::invalid_argument);
    EXPECT_THROW(ad::huberL1(a, t.constant(scalar(-1.0)), 0.5), std::invalid_argument);
}

// --- Float against double; timings ---

TEST(Autodiff, FloatAgreesWithDouble) {
    // The attention composite followed by the MLP's nonlinearity and a softplus: every float gradient within
    // 1e-4 (relative, in norm) of the double one.
    auto f = [](const auto& v) {
        const auto y = attention(v);
        return ad::mean(ad::softplus(ad::tanh(ad::addScalar(y, v[1]))));
    };
    const std::vector<Md> in = attentionInputs();
    const auto gd = gradients<double>(f, in);
    const auto gf = gradients<float>(f, in);
    for (std::size_t k = 0; k < in.size(); ++k) {
        const double rel = (gf[k].cast<double>() - gd[k]).norm() / gd[k].norm();
        std::printf("[ float    ] input %zu: relative difference %.2e\n", k, rel);
        EXPECT_LT(rel, 1e-4) << "input " << k;
    }
}

TEST(Autodiff, MicroTimings) {
    // Prints; asserts nothing about time. Net op cost = loop time - the same loop without the op.
    const Index n = 1024;
    using Mf = ad::Matrix<float>;
    const Mf X = randn(n, n, 140).cast<float>(), Q = randn(n, 2, 141).cast<float>(),
             K = randn(n, 2, 142).cast<float>();
    Mf gX, gQ, gK;
    ad::Tape<float> t;
    auto bestMs = [&](auto record) {
        using clock = std::chrono::steady_clock;
        double best = 1e30;
        for (int rep = 0; rep < 12; ++rep) {
            const auto start = clock::now();
            t.clear();
            t.backward(record());
            if (rep > 1)
                best =
                    std::min(best, std::chrono::duration<double, std::milli>(clock::now() - start).count());
        }
        return best;
    };
    const double base = bestMs([&] { return ad::sumSquares(t.parameter(X, gX)); });
    const double softmax = bestMs([&] { return ad::sumSquares(ad::softmaxRows(t.parameter(X, gX))); });
    const double matmulNT =
        bestMs([&] { return ad::sumSquares(ad::matmulNT(t.parameter(Q, gQ), t.parameter(K, gK))); });
    std::printf("[ timing   ] float %ldx%ld, best of 10: sumSquares loop %.2f ms\n", long(n), long(n), base);
    std::printf("[ timing   ] softmaxRows forward+backward: %.2f ms in loop, %.2f ms net\n", softmax,
                softmax - base);
    std::printf("[ timing   ] matmulNT(1024x2, 1024x2) forward+backward: %.2f ms in loop, %.2f ms net\n",
                matmulNT, matmulNT - base);
    EXPECT_TRUE(std::isfinite(gX.sum()) && std::isfinite(gQ.sum()) && std::isfinite(gK.sum()));
}
