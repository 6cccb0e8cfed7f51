// The streaming kernel against the dense formula, in double and float32.
#include "TestUtil.h"

#include "engine/attention/StreamKernel.h"
#include "engine/core/Types.h"

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
    for (int d : {1, 2, 3, 5, 8}) {
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
    const int n = 517, d = 3;
    const Tokens X = randomTokens(n, d, 1);
    const Mat Q = randomTokens(n, d, 2, 0.7);
    for (Weighting w : {Weighting::Relu, Weighting::Sigmoid}) {
        Mat ref(n, d);
        for (int i = 0; i < n; ++i) {
            Vec s = X * Q.row(i).transpose();
            Vec wt = w == Weighting::Relu ? Vec(s.cwiseMax(0.0)) : Vec((1.0 + (-s.array()).exp()).inverse());
            ref.row(i) = wt.transpose() * X;
        }
        EXPECT_LE((streamAverage<double>(Q, X, Vec(), false, w) - ref).cwiseAbs().maxCoeff(), 1e-10);
        EXPECT_LE((streamAverage<float>(Q, X, Vec(), false, w) - ref).cwiseAbs().maxCoeff(),
                  1e-3 * ref.cwiseAbs().maxCoeff());
    }
}
