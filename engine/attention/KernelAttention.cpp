#include "engine/attention/KernelAttention.h"

#include "engine/core/Parallel.h"

#include <cmath>

namespace flowscope {

double scoreScale(const AttentionSpec& spec, const HeadParams& head) {
    return spec.scaleByRootK ? spec.beta / std::sqrt(double(head.Q.rows())) : spec.beta;
}

HeadSetup dotProductHead(const AttentionSpec& spec, const HeadParams& head, Weighting w) {
    HeadSetup h;
    h.B = scoreScale(spec, head) * head.K.transpose() * head.Q;
    h.V = head.V;
    h.weighting = w;
    return h;
}

namespace {

template <class S> using MatS = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
template <class S> using VecS = Eigen::Matrix<S, Eigen::Dynamic, 1>;

// Runs the kernel with queries B x_i (from Xq) against keys Y; fills num (nq x d), den, max in precision S.
template <class S>
void run(const Tokens& Q, const Tokens& Y, const Vec& bias, bool causal, Weighting w, bool values,
         MatS<S>& num, VecS<S>& den, VecS<S>& mx) {
    const MatS<S> keys = Y.cast<S>();
    const MatS<S> queries = Q.cast<S>();
    const VecS<S> b = bias.cast<S>();
    const int nq = int(Q.rows());
    num.resize(values ? nq : 0, Y.cols());
    den.resize(nq);
    mx.resize(nq);
    StreamArgs<S> a;
    a.n = int(Y.rows());
    a.d = int(Y.cols());
    a.keys = keys.data();
    a.bias = bias.size() ? b.data() : nullptr;
    a.queries = queries.data();
    a.nq = nq;
    a.causal = causal;
    a.weighting = w;
    a.values = values;
    a.num = values ? num.data() : nullptr;
    a.den = den.data();
    a.max = mx.data();
    streamKernel(a);
}

template <class S> void average(const Tokens& X, const HeadSetup& h, bool causal, Tokens& avg, Vec* logZ) {
    MatS<S> num;
    VecS<S> den, mx;
    run<S>(headQueries(X, h), X, h.bias, causal, h.weighting, true, num, den, mx);
    const Vec denD = den.template cast<double>(), mxD = mx.template cast<double>();
    avg = normalizeHeadAverage(num.template cast<double>(), denD, mxD, h.weighting, X.rows());
    if (logZ) *logZ = mxD.array() + denD.array().log();
}

} // namespace

Tokens normalizeHeadAverage(const Mat& num, const Vec& den, const Vec& max, Weighting w, Eigen::Index n) {
    const double invN = 1.0 / double(n);
    switch (w) {
    case Weighting::Softmax:
        return num.array().colwise() / den.array();
    case Weighting::Exp:
        return num.array().colwise() * (max.array().exp() * invN);
    default:
        return num * invN;
    }
}

void kernelAverage(const Tokens& X, const HeadSetup& head, bool causal, Precision prec, Tokens& avg,
                   Vec* logZ) {
    if (prec == Precision::Float32)
        average<float>(X, head, causal, avg, logZ);
    else
        average<double>(X, head, causal, avg, logZ);
}

void logSumExp(const Tokens& queriesFrom, const Mat& B, const Tokens& keys, const Vec& bias, Precision prec,
               Vec& out) {
    if (prec == Precision::Float32) {
        MatS<float> num;
        VecS<float> den, mx;
        run<float>(queriesFrom * B.transpose(), keys, bias, false, Weighting::Softmax, false, num, den, mx);
        out = mx.cast<double>().array() + den.cast<double>().array().log();
    } else {
        MatS<double> num;
        VecS<double> den, mx;
        run<double>(queriesFrom * B.transpose(), keys, bias, false, Weighting::Softmax, false, num, den, mx);
        out = mx.array() + den.array().log();
    }
}

Tokens headQueries(const Tokens& X, const HeadSetup& head) {
    return head.queries.size() ? head.queries : Tokens(X * head.B.transpose());
}

Vec softmaxEntropies(const Tokens& X, const Tokens& Qy, const Vec& bias, bool causal) {
    const int n = int(X.rows());
    Vec H = Vec::Zero(n);
    parallelFor(std::size_t(n), 64, [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; ++i) {
            const int end = causal ? int(i) + 1 : n;
            Vec s = X.topRows(end) * Qy.row(Eigen::Index(i)).transpose();
            if (bias.size()) s += bias.head(end);
            const double m = s.maxCoeff();
            const Vec w = (s.array() - m).exp();
            const double den = w.sum();
            // H = -sum p log p = log den - sum p (s - m)
            H(Eigen::Index(i)) = std::log(den) - (w.array() * (s.array() - m)).sum() / den;
        }
    });
    return H;
}

Vec softmaxRow(const Tokens& X, const Tokens& queries, const Vec& bias, bool causal, Eigen::Index i) {
    const Eigen::Index n = X.rows(), end = causal ? i + 1 : n;
    Vec p = Vec::Zero(n);
    if (i < 0 || i >= n) return {};
    Vec s = X.topRows(end) * queries.row(i).transpose();
    if (bias.size()) s += bias.head(end);
    p.head(end) = (s.array() - s.maxCoeff()).exp();
    return p / p.sum();
}

KernelAttention::KernelAttention(const AttentionSpec& spec, int d, Precision precision)
    : spec_(spec), d_(d), precision_(precision) {}

void KernelAttention::velocity(double t, const Tokens& X, Tokens& dX) {
    dX.setZero(X.rows(), X.cols());
    Tokens avg;
    for (const HeadParams& head : spec_.headsAt(t)) {
        const HeadSetup h = setupHead(head, X);
        kernelAverage(X, h, spec_.masked, precision_, avg);
        dX.noalias() += h.outScale * avg * h.V.transpose();
    }
}

Vec KernelAttention::attentionEntropies(double t, const Tokens& X) {
    if (!normalized() || X.rows() == 0) return {};
    const auto heads = spec_.headsAt(t);
    if (heads.empty()) return {};
    const HeadSetup h = setupHead(heads.front(), X);
    return softmaxEntropies(X, headQueries(X, h), h.bias, spec_.masked);
}

Vec KernelAttention::attentionWeights(double t, const Tokens& X, Eigen::Index i) {
    const auto heads = spec_.headsAt(t);
    if (!normalized() || heads.empty() || i < 0 || i >= X.rows()) return {};
    const HeadSetup h = setupHead(heads.front(), X);
    return softmaxRow(X, headQueries(X, h), h.bias, spec_.masked, i);
}

double KernelAttention::interactionEnergy(double t, const Tokens& X) {
    const auto heads = spec_.headsAt(t);
    if (spec_.type != AttentionType::Softmax || spec_.masked || heads.size() != 1 || X.rows() == 0)
        return std::numeric_limits<double>::quiet_NaN();
    // log E = logsumexp_i (logsumexp_j s_ij) - log(2 N^2), in double: finite until E itself overflows.
    const HeadSetup h = setupHead(heads.front(), X);
    Vec rows;
    logSumExp(X, h.B, X, Vec(), Precision::Float64, rows);
    const double m = rows.maxCoeff();
    const double n = double(X.rows());
    return std::exp(m + std::log((rows.array() - m).exp().sum()) - std::log(2.0 * n * n));
}

} // namespace flowscope
