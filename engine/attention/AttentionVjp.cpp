#include "engine/attention/AttentionVjp.h"

#include "engine/attention/KernelAttention.h"
#include "engine/autodiff/AttentionKernel.h"
#include "engine/autodiff/Exp.h"
#include "engine/core/Parallel.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace flowscope {

namespace {

bool softmaxKind(AttentionType t) {
    return t == AttentionType::Softmax || t == AttentionType::L2;
}

// The head as the streaming kernel runs it (B, key biases, weighting).
HeadSetup setupOf(const AttentionHead& head, const Tokens& X) {
    HeadSetup h;
    const bool l2 = head.type == AttentionType::L2;
    h.B = (l2 ? 2.0 : 1.0) * head.beta * head.K.transpose() * head.Q;
    if (l2) {
        h.bias = -head.beta * (X * head.K.transpose()).rowwise().squaredNorm();
        h.quadraticBias = head.beta * head.K.transpose() * head.K;
    }
    h.V = head.V;
    switch (head.type) {
    case AttentionType::Exp:
        h.weighting = Weighting::Exp;
        break;
    case AttentionType::Relu:
        h.weighting = Weighting::Relu;
        break;
    case AttentionType::Sigmoid:
        h.weighting = Weighting::Sigmoid;
        break;
    default:
        h.weighting = Weighting::Softmax;
    }
    return h;
}

std::string shapeText(const Mat& m) {
    return "(" + std::to_string(m.rows()) + ", " + std::to_string(m.cols()) + ")";
}

constexpr int kBlock = 256; // keys (or queries) per block of a sweep: the buffers below live on the stack

// The inputs of the two sweeps in the sweeps' scalar S, coordinate c of every point contiguous (Eigen's
// column-major): keys X, queries q_i = B x_i, key biases b, ga_i = V^T dL/dy_i, and per query the shift
// mu_i and delta_i = ga_i . a_i (softmax kinds; 0 otherwise).
template <class S> struct Sweep {
    using MatS = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
    using VecS = Eigen::Matrix<S, Eigen::Dynamic, 1>;
    AttentionType type;
    int n, d;
    MatS X, Q, GA;
    VecS bias, mu, delta;
    S invN;

    // c_k = c(s_k) and sig_k = dL/ds = c'(s_k) g_k - c_k delta_k for one block, in place of nothing else.
    void weigh(int m, const S* s, const S* g, const S* muk, const S* dk, S* c, S* sig) const {
        switch (type) {
        case AttentionType::Softmax:
        case AttentionType::L2:
        case AttentionType::Exp: {
            for (int k = 0; k < m; ++k) c[k] = s[k] - muk[k];
            if (std::is_same_v<S, double> || type != AttentionType::Exp)
                ad::expShifted(c, m, S(0)); // float: within a few ulp of 0 or below (the row's log Z)
            else
                for (int k = 0; k < m; ++k) c[k] = std::exp(c[k]);
            for (int k = 0; k < m; ++k) sig[k] = c[k] * (g[k] - dk[k]);
            break;
        }
        case AttentionType::Relu:
            for (int k = 0; k < m; ++k) {
                const S on = s[k] > S(0) ? invN : S(0);
                c[k] = on * s[k];
                sig[k] = on * g[k];
            }
            break;
        default: // sigmoid
            for (int k = 0; k < m; ++k) {
                const S e = S(1) / (S(1) + std::exp(-s[k]));
                c[k] = invN * e;
                sig[k] = invN * e * (S(1) - e) * g[k];
            }
        }
    }
};

std::size_t grainFor(int n) {
    return std::max<std::size_t>(1,
                                 std::min<std::size_t>(std::size_t(n) / 16 + 1, 65536 / std::max(1, n) + 1));
}

// Sweep 1, over the keys of each query i: dL/dq_i = sum_j sig_ij x_j (N x d).
template <class S> Mat queryGradients(const Sweep<S>& w) {
    Mat dq(w.n, w.d);
    parallelFor(std::size_t(w.n), grainFor(w.n), [&](std::size_t b, std::size_t e) {
        S s[kBlock], g[kBlock], mu[kBlock], dl[kBlock], c[kBlock], sig[kBlock];
        for (int i = int(b); i < int(e); ++i) {
            double acc[64] = {};
            std::fill(mu, mu + kBlock, w.mu(i));
            std::fill(dl, dl + kBlock, w.delta(i));
            for (int j0 = 0; j0 < w.n; j0 += kBlock) {
                const int m = std::min(kBlock, w.n - j0);
                for (int k = 0; k < m; ++k) s[k] = w.bias.size() ? w.bias(j0 + k) : S(0), g[k] = S(0);
                for (int a = 0; a < w.d; ++a) {
                    const S qa = w.Q(i, a), ga = w.GA(i, a);
                    const S* xa = w.X.col(a).data() + j0;
                    for (int k = 0; k < m; ++k) s[k] += qa * xa[k], g[k] += ga * xa[k];
                }
                w.weigh(m, s, g, mu, dl, c, sig);
                for (int a = 0; a < w.d; ++a) {
                    const S* xa = w.X.col(a).data() + j0;
                    S sum = 0;
                    for (int k = 0; k < m; ++k) sum += sig[k] * xa[k];
                    acc[a] += double(sum);
                }
            }
            for (int a = 0; a < w.d; ++a) dq(i, a) = acc[a];
        }
    });
    return dq;
}

// Sweep 2, over the queries of each key j: the key path sum_i sig_ij q_i and the value path sum_i c_ij ga_i
// (both N x d), and tau_j = sum_i sig_ij (the bias gradient).
template <class S> void keyGradients(const Sweep<S>& w, Mat& keyPath, Mat& valuePath, Vec& tau) {
    keyPath.resize(w.n, w.d), valuePath.resize(w.n, w.d), tau.resize(w.n);
    parallelFor(std::size_t(w.n), grainFor(w.n), [&](std::size_t b, std::size_t e) {
        S s[kBlock], g[kBlock], c[kBlock], sig[kBlock];
        for (int j = int(b); j < int(e); ++j) {
            double kp[64] = {}, vp[64] = {}, t = 0;
            const S bj = w.bias.size() ? w.bias(j) : S(0);
            for (int i0 = 0; i0 < w.n; i0 += kBlock) {
                const int m = std::min(kBlock, w.n - i0);
                std::fill(s, s + m, bj), std::fill(g, g + m, S(0));
                for (int a = 0; a < w.d; ++a) {
                    const S xa = w.X(j, a);
                    const S *qa = w.Q.col(a).data() + i0, *ga = w.GA.col(a).data() + i0;
                    for (int k = 0; k < m; ++k) s[k] += xa * qa[k], g[k] += xa * ga[k];
                }
                w.weigh(m, s, g, w.mu.data() + i0, w.delta.data() + i0, c, sig);
                S ts = 0;
                for (int k = 0; k < m; ++k) ts += sig[k];
                t += double(ts);
                for (int a = 0; a < w.d; ++a) {
                    const S *qa = w.Q.col(a).data() + i0, *ga = w.GA.col(a).data() + i0;
                    S ks = 0, vs = 0;
                    for (int k = 0; k < m; ++k) ks += sig[k] * qa[k], vs += c[k] * ga[k];
                    kp[a] += double(ks), vp[a] += double(vs);
                }
            }
            for (int a = 0; a < w.d; ++a) keyPath(j, a) = kp[a], valuePath(j, a) = vp[a];
            tau(j) = t;
        }
    });
}

template <class S>
void sweeps(const AttentionHead& head, const HeadSetup& h, const Tokens& X, const Mat& GA, const Vec& mu,
            const Vec& delta, Mat& dq, Mat& keyPath, Mat& valuePath, Vec& tau) {
    Sweep<S> w{
        head.type,    int(X.rows()),    int(X.cols()), X.cast<S>(),     (X * h.B.transpose()).cast<S>(),
        GA.cast<S>(), h.bias.cast<S>(), mu.cast<S>(),  delta.cast<S>(), S(1.0 / double(X.rows()))};
    dq = queryGradients(w);
    keyGradients(w, keyPath, valuePath, tau);
}

// float32 softmax with d = 3 or 4 (kernel::supports): the tape's SIMD attention kernel
// (engine/autodiff/AttentionKernel.h) does both sweeps' work in one pass over each query's keys, with q_i as
// the queries and the tokens as keys and values. It recomputes w_ij = exp(s_ij - m_i) / den_i from (m_i,
// 1/den_i); (mu_i, 1) gives the same weights. Its key and value gradients scatter, so each of a few slots of
// query tiles adds into its own copy, and the copies are summed in double.
bool simdSoftmax(const AttentionHead& head, const Tokens& X, Precision precision) {
    return precision == Precision::Float32 && head.type == AttentionType::Softmax &&
           ad::kernel::supports(int(X.cols()), int(X.cols()));
}

void simdSweeps(const HeadSetup& h, const Tokens& X, const Mat& GA, const AttentionSaved& saved, Mat& dq,
                Mat& keyPath, Mat& valuePath) {
    using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic>;
    using RowsF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    constexpr int kTile = 16, kSlots = 16;
    const int n = int(X.rows()), d = int(X.cols());
    const int padded = ad::kernel::paddedKeys(n),
              stride = ad::kernel::paddedStride(padded); // rows not a multiple of 1 KB apart
    const MatF q = (h.B * X.transpose()).cast<float>();  // d x N: column i is q_i
    RowsF keys = RowsF::Zero(d, stride);                 // coordinate c of every token contiguous
    keys.leftCols(n) = X.transpose().cast<float>();
    const MatF out = saved.avg.transpose().cast<float>(), g = GA.transpose().cast<float>();
    MatF stats(2, n);
    stats.row(0) = saved.shift.transpose().cast<float>();
    stats.row(1).setOnes();
    MatF dqf = MatF::Zero(d, n);
    const ad::kernel::Attention a{d, d, n, padded, keys.data(), keys.data(), q.data(), -1, stride};
    const int tiles = (n + kTile - 1) / kTile, slots = std::min(kSlots, tiles);
    std::vector<RowsF> dk(std::size_t(slots), RowsF::Zero(d, stride)), dv = dk;
    parallelFor(std::size_t(slots), 1, [&](std::size_t b, std::size_t e) {
        for (int s = int(b); s < int(e); ++s)
            for (int t = s; t < tiles; t += slots)
                ad::kernel::backward(a, t * kTile, std::min(n, (t + 1) * kTile), out.data(), stats.data(),
                                     g.data(), dqf.data(), dk[std::size_t(s)].data(),
                                     dv[std::size_t(s)].data());
    });
    dq = dqf.transpose().cast<double>();
    keyPath = Mat::Zero(n, d), valuePath = Mat::Zero(n, d);
    for (int s = 0; s < slots; ++s) {
        keyPath += dk[std::size_t(s)].leftCols(n).transpose().cast<double>();
        valuePath += dv[std::size_t(s)].leftCols(n).transpose().cast<double>();
    }
}

} // namespace

void checkAttentionHead(const AttentionHead& head, const Tokens& X) {
    const auto t = head.type;
    if (!(softmaxKind(t) || t == AttentionType::Exp || t == AttentionType::Relu ||
          t == AttentionType::Sigmoid))
        throw std::invalid_argument(std::string("kind: expected softmax, l2, exp, relu or sigmoid, got ") +
                                    toString(t));
    const Eigen::Index d = X.cols();
    if (X.rows() < 1 || d < 1 || d > 64)
        throw std::invalid_argument("X: expected (N, d) tokens with N >= 1 and 1 <= d <= 64, got shape " +
                                    shapeText(X));
    if (head.Q.cols() != d || head.Q.rows() < 1)
        throw std::invalid_argument("Q: expected shape (k, " + std::to_string(d) + ") for tokens of shape " +
                                    shapeText(X) + ", got " + shapeText(head.Q));
    if (head.K.rows() != head.Q.rows() || head.K.cols() != d)
        throw std::invalid_argument("K: expected Q's shape " + shapeText(head.Q) + ", got " +
                                    shapeText(head.K));
    if (head.V.rows() != d || head.V.cols() != d)
        throw std::invalid_argument("V: expected shape (" + std::to_string(d) + ", " + std::to_string(d) +
                                    ") for tokens of shape " + shapeText(X) + ", got " + shapeText(head.V));
    if (!std::isfinite(head.beta)) throw std::invalid_argument("beta: expected a finite number");
}

Tokens attentionForward(const AttentionHead& head, const Tokens& X, Precision precision,
                        AttentionSaved* saved) {
    checkAttentionHead(head, X);
    const HeadSetup h = setupOf(head, X);
    CpuStreamRunner runner(precision);
    Tokens avg;
    Vec logZ;
    kernelAverage(runner, X, h, false, avg, softmaxKind(head.type) ? &logZ : nullptr);
    Tokens v = avg * head.V.transpose();
    if (head.sphere)
        for (Eigen::Index i = 0; i < X.rows(); ++i) {
            const double n2 = X.row(i).squaredNorm();
            if (n2 > 0.0) v.row(i) -= (v.row(i).dot(X.row(i)) / n2) * X.row(i);
        }
    if (saved) {
        saved->shift = softmaxKind(head.type) ? logZ : Vec::Constant(X.rows(), std::log(double(X.rows())));
        saved->avg = std::move(avg);
    }
    return v;
}

AttentionGrads attentionBackward(const AttentionHead& head, const Tokens& X, const AttentionSaved& saved,
                                 const Tokens& G, Precision precision) {
    checkAttentionHead(head, X);
    const Eigen::Index n = X.rows();
    if (G.rows() != n || G.cols() != X.cols())
        throw std::invalid_argument("G: expected the output's shape " + shapeText(X) + ", got " +
                                    shapeText(G));
    if (saved.avg.rows() != n || saved.avg.cols() != X.cols() || saved.shift.size() != n)
        throw std::invalid_argument("saved: not the forward of these tokens");
    AttentionGrads out;
    out.dX = Tokens::Zero(n, X.cols());
    // The projection: v = y - (x.y / |x|^2) x with y = V a.
    Tokens GY = G;
    if (head.sphere) {
        const Tokens Y = saved.avg * head.V.transpose();
        for (Eigen::Index i = 0; i < n; ++i) {
            const double n2 = X.row(i).squaredNorm();
            if (n2 == 0.0) continue;
            const double gx = G.row(i).dot(X.row(i)) / n2, yx = Y.row(i).dot(X.row(i)) / n2;
            GY.row(i) -= gx * X.row(i);
            out.dX.row(i) = -yx * G.row(i) - gx * Y.row(i) + (2.0 * gx * yx) * X.row(i);
        }
    }
    out.dV = GY.transpose() * saved.avg;
    const Mat GA = GY * head.V; // rows ga_i = V^T gy_i
    const Vec delta = softmaxKind(head.type) ? Vec(GA.cwiseProduct(saved.avg).rowwise().sum()) : Vec::Zero(n);
    const HeadSetup h = setupOf(head, X);
    Mat dq, keyPath, valuePath;
    Vec tau;
    if (simdSoftmax(head, X, precision))
        simdSweeps(h, X, GA, saved, dq, keyPath, valuePath); // softmax needs no tau (no key biases)
    else if (precision == Precision::Float32)
        sweeps<float>(head, h, X, GA, saved.shift, delta, dq, keyPath, valuePath, tau);
    else
        sweeps<double>(head, h, X, GA, saved.shift, delta, dq, keyPath, valuePath, tau);
    out.dX += keyPath + valuePath + dq * h.B;
    // B = scale beta K^T Q (scale 2 for l2): dL/dB = sum_i dq_i x_i^T.
    const bool l2 = head.type == AttentionType::L2;
    const double scale = l2 ? 2.0 : 1.0;
    const Mat M = dq.transpose() * X;
    out.dQ = scale * head.beta * head.K * M;
    out.dK = scale * head.beta * head.Q * M.transpose();
    out.dBeta = scale * (M.array() * (head.K.transpose() * head.Q).array()).sum();
    if (l2) { // b_j = -beta |K x_j|^2
        const Mat KtK = head.K.transpose() * head.K;
        out.dX -= 2.0 * head.beta * (tau.asDiagonal() * X * KtK);
        out.dK -= 2.0 * head.beta * head.K * (X.transpose() * tau.asDiagonal() * X);
        out.dBeta -= tau.dot((X * head.K.transpose()).rowwise().squaredNorm());
    }
    return out;
}

} // namespace flowscope
