#include "engine/attention/KernelAttention.h"

#include "engine/core/Parallel.h"

#include <cmath>
#include <cstdlib>
#include <limits>

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

const char* weightingName(Weighting w) {
    static constexpr const char* kNames[] = {"softmax", "exp", "relu", "sigmoid"}; // Weighting's order
    return kNames[std::size_t(w)];
}

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

StreamPass headPass(const Tokens& X, const HeadSetup& head, bool causal) {
    static const Mat none;
    StreamPass pass = head.queries.size()
                          ? StreamPass{head.queries, none, X, head.bias, causal, head.weighting}
                          : StreamPass{X, head.B, X, head.bias, causal, head.weighting};
    if (head.quadraticBias.size()) pass.quadraticBias = &head.quadraticBias;
    pass.positionSlope = head.positionSlope;
    return pass;
}

void kernelAverage(StreamRunner& runner, const Tokens& X, const HeadSetup& head, bool causal, Tokens& avg,
                   Vec* logZ, Vec* entropies) {
    StreamSums sums;
    StreamPass pass = headPass(X, head, causal);
    pass.readsMax = logZ != nullptr;
    pass.entropy = entropies != nullptr;
    runner.run(pass, sums);
    avg = normalizeHeadAverage(sums.num, sums.den, sums.max, head.weighting, X.rows());
    if (logZ) *logZ = sums.max.array() + sums.den.array().log();
    if (entropies) {
        if (sums.ent.size() == X.rows())
            *entropies = sums.den.array().log() - sums.ent.array() / sums.den.array();
        else
            entropies->resize(0);
    }
}

void logSumExp(StreamRunner& runner, const Tokens& queriesFrom, const Mat& B, const Tokens& keys,
               const Vec& bias, Vec& out) {
    StreamSums sums;
    runner.run({queriesFrom, B, keys, bias, false, Weighting::Softmax, false}, sums);
    out = sums.max.array() + sums.den.array().log();
}

double energyFromRowLogSumExps(const Vec& logZ) {
    const double m = logZ.maxCoeff(), n = double(logZ.size());
    return std::exp(m + std::log((logZ.array() - m).exp().sum()) - std::log(2.0 * n * n));
}

Tokens headQueries(const Tokens& X, const HeadSetup& head) {
    return head.queries.size() ? head.queries : Tokens(X * head.B.transpose());
}

namespace {

// The scores of query i against keys 0 .. end - 1, with the key biases and the positional decay.
Vec scoreRow(const Tokens& X, const Tokens& queries, const Vec& bias, Eigen::Index i, Eigen::Index end,
             double slope) {
    Vec s = X.topRows(end) * queries.row(i).transpose();
    if (bias.size()) s += bias.head(end);
    if (slope != 0.0)
        for (Eigen::Index j = 0; j < end; ++j) s(j) -= slope * double(std::abs(i - j));
    return s;
}

} // namespace

Vec softmaxEntropies(const Tokens& X, const Tokens& Qy, const Vec& bias, bool causal, double slope) {
    const int n = int(X.rows());
    Vec H = Vec::Zero(n);
    parallelFor(std::size_t(n), 64, [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; ++i) {
            const int end = causal ? int(i) + 1 : n;
            const Vec s = scoreRow(X, Qy, bias, Eigen::Index(i), end, slope);
            const double m = s.maxCoeff();
            const Vec w = (s.array() - m).exp();
            const double den = w.sum();
            // H = -sum p log p = log den - sum p (s - m)
            H(Eigen::Index(i)) = std::log(den) - (w.array() * (s.array() - m)).sum() / den;
        }
    });
    return H;
}

Vec softmaxRow(const Tokens& X, const Tokens& queries, const Vec& bias, bool causal, Eigen::Index i,
               double slope) {
    const Eigen::Index n = X.rows(), end = causal ? i + 1 : n;
    Vec p = Vec::Zero(n);
    if (i < 0 || i >= n) return {};
    const Vec s = scoreRow(X, queries, bias, i, end, slope);
    p.head(end) = (s.array() - s.maxCoeff()).exp();
    return p / p.sum();
}

HeadSetup KernelAttention::headAt(const HeadParams& head, const Tokens& X) const {
    HeadSetup h = setupHead(head, X);
    h.positionSlope = X.rows() ? spec_.positionalDecay / double(X.rows()) : 0.0;
    return h;
}

void KernelAttention::velocity(double t, const Tokens& X, Tokens& dX) {
    dX.setZero(X.rows(), X.cols());
    Tokens avg;
    for (const HeadParams& head : spec_.headsAt(t)) {
        const HeadSetup h = headAt(head, X);
        kernelAverage(*runner_, X, h, spec_.masked, avg);
        dX.noalias() += h.outScale * avg * h.V.transpose();
    }
}

bool interactionEnergyDefined(const AttentionSpec& spec, std::size_t heads) {
    return spec.type == AttentionType::Softmax && !spec.masked && spec.positionalDecay == 0.0 && heads == 1;
}

bool KernelAttention::energyDefined(std::size_t heads, Eigen::Index n) const {
    return interactionEnergyDefined(spec_, heads) && n > 0;
}

void KernelAttention::velocityAndStats(double t, const Tokens& X, Tokens& dX, Vec* entropies,
                                       double* energy) {
    const auto heads = spec_.headsAt(t);
    const bool wantEntropy = entropies && normalized() && X.rows() > 0 && !heads.empty();
    const bool hasEnergy = energyDefined(heads.size(), X.rows());
    dX.setZero(X.rows(), X.cols());
    Tokens avg;
    Vec logZ, H;
    for (std::size_t k = 0; k < heads.size(); ++k) {
        const HeadSetup h = headAt(heads[k], X);
        const bool first = k == 0;
        kernelAverage(*runner_, X, h, spec_.masked, avg, first && energy && hasEnergy ? &logZ : nullptr,
                      first && wantEntropy ? &H : nullptr);
        dX.noalias() += h.outScale * avg * h.V.transpose();
    }
    // The passes' e_i need a runner that accumulates them; where it does not, the double passes.
    const bool fused = !wantEntropy || H.size() == X.rows();
    if (entropies) *entropies = !wantEntropy ? Vec() : fused ? H : attentionEntropies(t, X);
    if (energy) {
        if (!hasEnergy) {
            *energy = std::numeric_limits<double>::quiet_NaN();
        } else if (fused && logZ.size() == X.rows()) {
            *energy = energyFromRowLogSumExps(logZ); // each log Z_i from the velocity pass
        } else {
            *energy = interactionEnergy(t, X);
        }
    }
}

Vec SoftmaxRowField::attentionEntropies(double t, const Tokens& X) {
    if (X.rows() == 0) return {};
    const std::optional<HeadSetup> h = distributionHead(t, X);
    if (!h) return {};
    return softmaxEntropies(X, headQueries(X, *h), h->bias, causalDistribution(), h->positionSlope);
}

Vec SoftmaxRowField::attentionWeights(double t, const Tokens& X, Eigen::Index i) {
    if (i < 0 || i >= X.rows()) return {};
    const std::optional<HeadSetup> h = distributionHead(t, X);
    if (!h) return {};
    return softmaxRow(X, headQueries(X, *h), h->bias, causalDistribution(), i, h->positionSlope);
}

std::optional<HeadSetup> KernelAttention::distributionHead(double t, const Tokens& X) const {
    const auto heads = spec_.headsAt(t);
    if (!normalized() || heads.empty()) return std::nullopt;
    return headAt(heads.front(), X);
}

double KernelAttention::interactionEnergy(double t, const Tokens& X) {
    const auto heads = spec_.headsAt(t);
    if (!energyDefined(heads.size(), X.rows())) return std::numeric_limits<double>::quiet_NaN();
    // In double on the CPU whatever the field's runner: finite until E itself overflows.
    const HeadSetup h = headAt(heads.front(), X);
    CpuStreamRunner reference(Precision::Float64);
    Vec rows;
    logSumExp(reference, X, h.B, X, Vec(), rows);
    return energyFromRowLogSumExps(rows);
}

} // namespace flowscope
