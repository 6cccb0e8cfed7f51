// Flowscope engine: the shared machinery of attention variants that are kernel averages over keys.
//
// Every head of softmax, l2, unnormalized exp/ReLU/sigmoid and masked attention has the form
//     Gamma_h(x_i) = V_h * normalize( sum_j w(q_i . x_j + b_j) x_j ),   q_i = B_h x_i,
// with a variant-specific query matrix B_h, key bias b, weighting w and normalization (by the weights'
// sum, or by the 1/N of the empirical measure; docs/math/attention.md#kernel-form). Heads are summed
// (docs/math/attention.md#multi-head). A variant only says how to set up one head; this class runs one
// streaming pass per head on its StreamRunner (the CPU kernel in the field's precision, or a GPU backend's;
// engine/attention/StreamRunner.h) and assembles the velocity in double.
#pragma once

#include "engine/attention/StreamRunner.h"

#include "engine/attention/VelocityField.h"
#include <optional>

#include <vector>

namespace flowscope {

// What one head contributes: scores s_ij = (B x_i) . x_j + bias_j.
struct HeadSetup {
    Mat B;          // d x d query map (scores are x_j^T B x_i + bias_j)
    Tokens queries; // explicit N x d queries q_i replacing B x_i when non-empty (scores q_i . x_j + bias_j)
    Vec bias;       // N key biases, or empty
    Mat V;          // d x d value/output matrix applied to the weighted average
    Weighting weighting = Weighting::Softmax;
    double outScale = 1.0; // multiplies the head's velocity (e.g. 1/eps for Sinkhorn)
    // M (d x d) when the biases are a quadratic form of the keys, bias_j = -x_j^T M x_j (l2: setupHead fills
    // it from quadraticKeyBias), else empty: a device that holds the keys can form them itself (StreamPass).
    Mat quadraticBias;
    // The positional decay slope lambda / N of the pass (StreamPass::positionSlope), set by KernelAttention
    // from the spec; 0: off.
    double positionSlope = 0.0;
};

// The score multiplier of a head: beta, divided by sqrt(k) when scaleByRootK is set (k = rows of Q).
double scoreScale(const AttentionSpec& spec, const HeadParams& head);

// The plain dot-product head: B = scoreScale * K^T Q, no bias, output V.
HeadSetup dotProductHead(const AttentionSpec& spec, const HeadParams& head, Weighting w);

// The streaming pass of a head over keys X: queries are the head's explicit ones, or B x_i; key biases the
// head's, with their quadratic form when they have one. It refers to X and the head, which must outlive it.
StreamPass headPass(const Tokens& X, const HeadSetup& head, bool causal);

// Runs one head's streaming pass on `runner` and returns, per query i, the head's normalized average
// (softmax: sum w x / sum w; exp: e^{m_i} sum w x / N; relu/sigmoid: sum w x / N) in `avg` (N x d, double),
// and optionally the log-normalizer m_i + log den_i in `logZ`.
// With `entropies`: also the entropy H_i = log den_i - e_i / den_i of each query's weights from the same pass
// where the runner computes e_i (StreamPass::entropy), else `entropies` is left empty.
void kernelAverage(StreamRunner& runner, const Tokens& X, const HeadSetup& head, bool causal, Tokens& avg,
                   Vec* logZ = nullptr, Vec* entropies = nullptr);

// A head's normalized average from the streaming kernel's outputs num (N x d), den and max (size N), for N
// keys: softmax num / den, exp e^{max} num / N, relu and sigmoid num / N. Every backend assembles it so.
Tokens normalizeHeadAverage(const Mat& num, const Vec& den, const Vec& max, Weighting w, Eigen::Index n);

// Log-sum-exp pass on `runner`: out_i = log sum_j exp((B x_i) . y_j + bias_j) over keys Y (no values).
void logSumExp(StreamRunner& runner, const Tokens& queriesFrom, const Mat& B, const Tokens& keys,
               const Vec& bias, Vec& out);

// Entropies (nats) of the softmax distributions p_ij ∝ exp(q_i . x_j + bias_j - slope |i - j|), one per
// query, double precision; queries is N x d (slope: the positional decay lambda / N, 0 off).
Vec softmaxEntropies(const Tokens& X, const Tokens& queries, const Vec& bias, bool causal,
                     double slope = 0.0);
// Row i of those distributions (size N; zero past i when causal).
Vec softmaxRow(const Tokens& X, const Tokens& queries, const Vec& bias, bool causal, Eigen::Index i,
               double slope = 0.0);
// The interaction energy E = (1/(2 N^2)) sum_ij exp(s_ij) from each row's log-sum-exp log Z_i = logsumexp_j
// s_ij: log E = logsumexp_i(log Z_i) - log(2 N^2), finite until E itself overflows.
double energyFromRowLogSumExps(const Vec& logZ);
// The queries of a head: explicit ones, or B x_i.
Tokens headQueries(const Tokens& X, const HeadSetup& head);

// Whether the interaction energy E = (1/(2N^2)) sum_ij exp(s_ij) is a quantity of this attention: softmax
// with one head (`heads` at the time asked), unmasked, without positional decay (docs/observables.md).
bool interactionEnergyDefined(const AttentionSpec& spec, std::size_t heads);

// The base of the variants whose attention distribution P_i. is the softmax row of one head over the keys
// (KernelAttention's first head, Sinkhorn's plan rows, RWPO's and drifting's kernels): the entropies and the
// weights are computed once here, in double, from the head a variant names.
class SoftmaxRowField : public StreamedField {
  public:
    using StreamedField::StreamedField;
    Vec attentionEntropies(double t, const Tokens& X) override;
    Vec attentionWeights(double t, const Tokens& X, Eigen::Index i) override;

  protected:
    // The head whose softmax rows are the distributions at time t over the keys X (its queries, key biases
    // and positional decay), or nullopt where there is no distribution.
    virtual std::optional<HeadSetup> distributionHead(double t, const Tokens& X) const = 0;
    // Whether query i's distribution stops at key i.
    virtual bool causalDistribution() const { return spec_.masked; }
};

class KernelAttention : public SoftmaxRowField {
  public:
    using SoftmaxRowField::SoftmaxRowField;
    void velocity(double t, const Tokens& X, Tokens& dX) override;
    // One pass per head: the first head's pass also gives the entropies (e_i) and the energy (each row's
    // log-sum-exp m_i + log den_i), in the runner's precision. Where the runner cannot accumulate e_i, the
    // double passes of attentionEntropies / interactionEnergy run instead.
    void velocityAndStats(double t, const Tokens& X, Tokens& dX, Vec* entropies, double* energy) override;
    double interactionEnergy(double t, const Tokens& X) override;

    // How one head scores and outputs (X gives N for the bias). Public for baselines and tests.
    virtual HeadSetup setupHead(const HeadParams& head, const Tokens& X) const = 0;
    // When the head's key biases are a quadratic form of the keys, bias_j = -x_j^T M x_j with M constant: M
    // (a device computes such biases from the tokens it holds). nullopt when the head has no token-dependent
    // bias, or one of another form.
    virtual std::optional<Mat> quadraticKeyBias(const HeadParams& head) const {
        (void)head;
        return std::nullopt;
    }

    // setupHead with the spec's positional decay slope lambda / N for the N tokens of X: the head a pass
    // runs (also a device stepper's, which sets up its heads on the host).
    HeadSetup headAt(const HeadParams& head, const Tokens& X) const;

  protected:
    // The first head, when the weights are normalized.
    std::optional<HeadSetup> distributionHead(double t, const Tokens& X) const override;
    // True when the weights form a probability distribution over keys (entropy is defined).
    virtual bool normalized() const { return true; }
    // Whether the interaction energy exists here (interactionEnergyDefined, with some tokens).
    bool energyDefined(std::size_t heads, Eigen::Index n) const;
    // The variant's name, "masked " first when the spec is masked.
    std::string maskedName(const std::string& variant) const {
        return spec_.masked ? "masked " + variant : variant;
    }
};

// The name of a weighting as a variant's name: "softmax", "exp", "relu", "sigmoid".
const char* weightingName(Weighting w);

// The variants whose every head is the plain dot-product head with weighting W (dotProductHead): softmax,
// exp, relu and sigmoid attention, each named and written out in its own header. Only softmax weights are
// normalized (a distribution over keys, with an entropy).
template <Weighting W> class DotProductAttention : public KernelAttention {
  public:
    using KernelAttention::KernelAttention;
    std::string name() const override { return maskedName(weightingName(W)); }

  protected:
    HeadSetup setupHead(const HeadParams& head, const Tokens&) const override {
        return dotProductHead(spec_, head, W);
    }
    bool normalized() const override { return W == Weighting::Softmax; }
};

} // namespace flowscope
