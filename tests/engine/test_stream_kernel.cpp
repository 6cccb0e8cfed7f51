// The streaming kernel against the dense formula (double, float32), and the float64 kernel against long
// double.
#include "TestUtil.h"

#include "engine/attention/StreamKernel.h"
#include "engine/core/Cancel.h"
#include "engine/core/Types.h"

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <random>

using namespace flowscope;
using namespace flowscope::test;

namespace {

// Dense reference: P = softmax(Q X^T + bias) row-wise, returns P X (N x d) in long double accumulation.
Mat denseSoftmaxAverage(const Mat& Q, const Tokens& X, const Vec& bias, bool causal) {
    const Eigen::Index n = X.rows();
    Mat out(Q.rows(), X.cols());
    for (Eigen::Index i = 0; i < Q.rows(); ++i) {
        const Eigen::Index end = causal ? i + 1 : n;
        Vec s = X.topRows(end) * Q.row(i).transpose();
        if (bias.size()) s += bias.head(end);
        const Vec w = (s.array() - s.maxCoeff()).exp();
        out.row(i) = (w.transpose() * X.topRows(end)) / w.sum();
    }
    return out;
}

template <class S>
Mat streamAverage(const Mat& Q, const Tokens& X, const Vec& bias, bool causal,
                  Weighting w = Weighting::Softmax) {
    using M = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
    using V = Eigen::Matrix<S, Eigen::Dynamic, 1>;
    const M keys = X.cast<S>(), q = Q.cast<S>();
    const V b = bias.cast<S>();
    M num(Q.rows(), X.cols());
    V den(Q.rows()), mx(Q.rows());
    StreamArgs<S> a;
    a.n = int(X.rows());
    a.d = int(X.cols());
    a.keys = keys.data();
    a.bias = bias.size() ? b.data() : nullptr;
    a.queries = q.data();
    a.nq = int(Q.rows());
    a.causal = causal;
    a.weighting = w;
    a.num = num.data();
    a.den = den.data();
    a.max = mx.data();
    streamKernel(a);
    Mat out = num.template cast<double>();
    if (w == Weighting::Softmax) out = out.array().colwise() / den.template cast<double>().array();
    return out;
}

} // namespace

TEST(StreamKernel, DoubleEqualsDenseSoftmaxTo1e12) {
    for (int d : {1, 2, 3, 5, 8, 65, 130}) { // past 64: the blocked matrix-product path
        for (int n : {1, 2, 7, 8, 33, 300}) {
            const Tokens X = randomTokens(n, d, 7 + n + d);
            const Mat Q = randomTokens(n, d, 99 + n, 1.5);
            const Vec bias = randomTokens(n, 1, 5).col(0);
            for (bool causal : {false, true}) {
                const Mat ref = denseSoftmaxAverage(Q, X, bias, causal);
                const Mat got = streamAverage<double>(Q, X, bias, causal);
                EXPECT_LE((ref - got).cwiseAbs().maxCoeff(), 1e-12)
                    << "d=" << d << " n=" << n << " causal=" << causal;
            }
        }
    }
}

TEST(StreamKernel, Float32ErrorAtMostTwiceDenseFloat32) {
    // The float32 streaming path against the double reference, compared with a plain float32 dense
    // evaluation (Eigen, N x N scores) against the same reference.
    for (int d : {2, 3, 4, 7}) {
        for (int n : {1, 2, 13, 1000, 4099}) {
            const Tokens X = randomTokens(n, d, 11 + n * d);
            const Mat Q = randomTokens(n, d, 3 + n, 1.2);
            const Mat ref = denseSoftmaxAverage(Q, X, Vec(), false);
            const Mat got = streamAverage<float>(Q, X, Vec(), false);
            // float32 dense baseline
            const Eigen::MatrixXf Xf = X.cast<float>(), Qf = Q.cast<float>();
            Eigen::MatrixXf S = Qf * Xf.transpose();
            const Eigen::VectorXf m = S.rowwise().maxCoeff();
            S = (S.colwise() - m).array().exp();
            const Eigen::VectorXf den = S.rowwise().sum();
            const Mat dense = ((S * Xf).array().colwise() / den.array()).matrix().cast<double>();
            const double errStream = (got - ref).cwiseAbs().maxCoeff();
            const double errDense = (dense - ref).cwiseAbs().maxCoeff();
            EXPECT_LE(errStream, 2.0 * errDense + 1e-7)
                << "d=" << d << " n=" << n << " stream " << errStream << " dense " << errDense;
        }
    }
}

TEST(StreamKernel, UnnormalizedWeightsMatchTheirFormulas) {
    for (int d : {3, 80}) { // 80: the blocked matrix-product path
        const int n = 517;
        const Tokens X = randomTokens(n, d, 1);
        const Mat Q = randomTokens(n, d, 2, 0.7 / std::sqrt(double(d)));
        for (Weighting w : {Weighting::Relu, Weighting::Sigmoid}) {
            Mat ref(n, d);
            for (int i = 0; i < n; ++i) {
                Vec s = X * Q.row(i).transpose();
                Vec wt =
                    w == Weighting::Relu ? Vec(s.cwiseMax(0.0)) : Vec((1.0 + (-s.array()).exp()).inverse());
                ref.row(i) = wt.transpose() * X;
            }
            EXPECT_LE((streamAverage<double>(Q, X, Vec(), false, w) - ref).cwiseAbs().maxCoeff(), 1e-10);
            EXPECT_LE((streamAverage<float>(Q, X, Vec(), false, w) - ref).cwiseAbs().maxCoeff(),
                      1e-3 * ref.cwiseAbs().maxCoeff());
        }
    }
}

namespace {

// One pass of the kernel's contract (StreamKernel.h) for the float64 accuracy test: a weighting, an l2-like
// key bias or none, masked or not, with or without the values (log-sum-exp passes).
struct Float64Case {
    const char* name;
    Weighting weighting;
    bool bias;
    bool causal;
    bool values;
};

const Float64Case kFloat64Cases[] = {
    {"softmax", Weighting::Softmax, false, false, true},
    {"l2", Weighting::Softmax, true, false, true},
    {"exp", Weighting::Exp, false, false, true},
    {"relu", Weighting::Relu, false, false, true},
    {"sigmoid", Weighting::Sigmoid, false, false, true},
    {"log-sum-exp", Weighting::Softmax, true, false, false},
    {"masked softmax", Weighting::Softmax, false, true, true},
    {"masked l2", Weighting::Softmax, true, true, true},
    {"masked exp", Weighting::Exp, false, true, true},
    {"masked relu", Weighting::Relu, false, true, true},
    {"masked sigmoid", Weighting::Sigmoid, false, true, true},
};

// The largest error of the float64 kernel's sums against the same sums in long double, over all queries i of
// n random tokens (the queries q_i at scale 1.5: scores up to ~30 at d = 8). Each error is relative to the
// magnitude its sum is made of (the weights are >= 0): S_i = sum_j w_ij max(1, |x_j|_inf) for den_i and
// num_i, sum_j w_ij (1 + |s_ij - m_i|) for e_i, max(1, |m_i|) for m_i.
double float64KernelError(int n, int d, const Float64Case& k) {
    using LD = long double;
    const Tokens X = randomTokens(n, d, 17 + 31 * n + d);
    const Tokens Q = randomTokens(n, d, 5 + 7 * n + d, 1.5);
    const Vec bias = k.bias ? Vec(-0.5 * X.rowwise().squaredNorm()) : Vec();
    const bool exps = k.weighting == Weighting::Softmax || k.weighting == Weighting::Exp;
    Mat num = Mat::Zero(n, d);
    Vec den(n), mx(n), ent(n);
    StreamArgs<double> a;
    a.n = a.nq = n;
    a.d = d;
    a.keys = X.data();
    a.bias = k.bias ? bias.data() : nullptr;
    a.queries = Q.data();
    a.causal = k.causal;
    a.weighting = k.weighting;
    a.values = k.values;
    a.num = k.values ? num.data() : nullptr;
    a.den = den.data();
    a.max = mx.data();
    const bool entropy = exps && k.values; // e_i comes with the values (no pass asks for it without)
    a.ent = entropy ? ent.data() : nullptr;
    streamKernel(a);

    double worst = 0.0;
    auto relative = [&](double got, LD ref, LD scale) {
        const LD err = std::fabs(LD(got) - ref);
        const double e = scale > 0 ? double(err / scale) : err > 0 ? INFINITY : 0.0;
        if (!(e <= worst)) worst = std::isnan(e) ? INFINITY : e; // a NaN counts as the worst
    };
    for (int i = 0; i < n; ++i) {
        const int end = k.causal ? i + 1 : n;
        auto score = [&](int j) {
            LD s = k.bias ? LD(bias(j)) : 0;
            for (int c = 0; c < d; ++c) s += LD(Q(i, c)) * LD(X(j, c));
            return s;
        };
        LD m = 0;
        if (exps) {
            m = -INFINITY;
            for (int j = 0; j < end; ++j) m = std::max(m, score(j));
        }
        LD rden = 0, rent = 0, scale = 0, entScale = 0, rnum[8] = {};
        for (int j = 0; j < end; ++j) {
            const LD s = score(j);
            const LD w = exps                             ? std::exp(s - m)
                         : k.weighting == Weighting::Relu ? std::max(s, LD(0))
                                                          : 1 / (1 + std::exp(-s));
            rden += w;
            rent += w * (s - m);
            LD size = 1;
            for (int c = 0; c < d; ++c) {
                rnum[c] += w * LD(X(j, c));
                size = std::max(size, LD(std::fabs(X(j, c))));
            }
            scale += w * size;
            entScale += w * (1 + std::fabs(s - m));
        }
        relative(den(i), rden, scale);
        if (k.values)
            for (int c = 0; c < d; ++c) relative(num(i, c), rnum[c], scale);
        if (exps) relative(mx(i), m, std::max(LD(1), std::fabs(m)));
        if (entropy) relative(ent(i), rent, entScale);
    }
    return worst;
}

} // namespace

// The float64 SIMD kernel (the path of every float64 field) within 1e-13 relative of long double, for every
// weighting, key bias and mask the kernel runs, at N below, at and above the lane count (4) and the block
// (256 keys), most of them not multiples of 4, in the compiled dimensions (1, 2, 3) and the runtime one (8).
TEST(StreamKernel, Float64Within1e13OfLongDouble) {
    for (int d : {1, 2, 3, 8}) {
        for (int n : {1, 3, 4, 7, 66, 261, 519}) {
            for (const Float64Case& k : kFloat64Cases) {
                EXPECT_LE(float64KernelError(n, d, k), 1e-13) << k.name << " d=" << d << " n=" << n;
            }
        }
    }
}

// A cancel request (engine/core/Cancel.h) stops a pass with Cancelled, in both precisions; once cleared, the
// next pass is the same as one never cancelled (the flag leaves nothing behind).
TEST(StreamKernel, CancelRequestStopsThePassAndLeavesNothingBehind) {
    const Tokens X = randomTokens(300, 3, 5);
    const Mat Q = randomTokens(300, 3, 6);
    const Mat before = streamAverage<double>(Q, X, Vec(), false);
    cancelRequested().store(true);
    EXPECT_THROW(streamAverage<double>(Q, X, Vec(), false), Cancelled);
    EXPECT_THROW(streamAverage<float>(Q, X, Vec(), false), Cancelled);
    cancelRequested().store(false);
    EXPECT_EQ(streamAverage<double>(Q, X, Vec(), false), before);
}
