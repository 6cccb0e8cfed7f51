// Flowscope engine: the O(N^2) pass every attention variant is built on, behind one small interface.
//
// Every variant but linear attention reduces to passes of the streaming kernel (StreamKernel.h): for each
// query i, over the keys y_j (j <= i when causal),
//     s_ij = q_i . y_j + b_j,   den_i = sum_j w(s_ij),   num_i = sum_j w(s_ij) y_j,   max_i = m_i.
// The variant classes (KernelAttention, SinkhornAttention, RwpoAttention, DriftingAttention) decide which
// passes to run and assemble the velocity from their sums in double; a StreamRunner runs the passes. The CPU
// runner below runs them in float32 (SIMD) or float64; the GPU backends (engine/gpu) run them in a compute
// shader. So the variant math is written once and every backend runs all of it (ggml's one operator
// interface, several backends).
#pragma once

#include "engine/attention/StreamKernel.h"
#include "engine/attention/VelocityField.h"

#include <memory>

namespace flowscope {

// One pass. The queries are q_i = B f_i for the rows f_i of `from` (from * B^T), or the rows of `from`
// themselves when B is empty. A runner may form q_i = B y_i on its device when from and keys are the same
// tokens (queriesFromKeys()).
struct StreamPass {
    const Tokens& from;
    const Mat& B;
    const Tokens& keys; // n x d; the keys are also the values
    const Vec& bias;    // n key biases, or empty
    bool causal = false;
    Weighting weighting = Weighting::Softmax;
    bool values = true; // false: den and max only (log-sum-exp passes); num stays empty
    // Also e_i = sum_j w_ij (s_ij - m_i) for the entropy (StreamArgs::ent), where the runner can: the CPU
    // runner does; a runner that cannot leaves StreamSums::ent empty and callers compute the entropy apart.
    bool entropy = false;
    // The caller reads m_i itself, not only the average (log-sum-exps: logZ = m + log den). A GPU runner
    // then keeps the scores in natural units (StreamKernelVariant::log2Scores).
    bool readsMax = false;
    // M (d x d) when bias_j = -y_j^T M y_j for the keys y_j (l2), else null: a runner whose device holds the
    // keys may form the biases there instead of reading `bias` (which still holds them).
    const Mat* quadraticBias = nullptr;
    // Positional decay slope lambda / N: s_ij -= slope |i - j| (StreamArgs::decay); 0: off. A runner that
    // cannot compute it must refuse the pass.
    double positionSlope = 0.0;

    bool queriesFromKeys() const { return B.size() > 0 && &from == &keys; }
};

// What a pass returns, in double whatever precision it ran in: num (nq x d), den and max (nq each; max is
// m_i for softmax and exp, 0 for relu and sigmoid).
struct StreamSums {
    Mat num;
    Vec den;
    Vec max;
    Vec ent; // e_i when the pass asked for it and the runner computes it, else empty
};

class StreamRunner {
  public:
    virtual ~StreamRunner() = default;
    // Runs one pass. Throws std::invalid_argument for a causal pass with fewer or more queries than keys.
    virtual void run(const StreamPass& pass, StreamSums& out) = 0;
    // The arithmetic the passes run in (Sinkhorn floors its tolerance at float32's reach).
    virtual Precision precision() const = 0;
};

// The CPU runner: streamKernel in the given precision (float32 SIMD fast path or the float64 reference),
// queries formed in double and rounded once.
class CpuStreamRunner final : public StreamRunner {
  public:
    explicit CpuStreamRunner(Precision precision) : precision_(precision) {}
    void run(const StreamPass& pass, StreamSums& out) override;
    Precision precision() const override { return precision_; }

  private:
    Precision precision_;
};

// The base of the variants whose O(N^2) passes run on a StreamRunner (KernelAttention, SinkhornAttention,
// RwpoAttention, DriftingAttention): the spec, the dimension and the runner, given, or the CPU runner in a
// precision.
class StreamedField : public SpecField {
  public:
    // The CPU field in `precision`, or the field whose streaming passes run on `runner`.
    StreamedField(const AttentionSpec& spec, int d, Precision precision)
        : StreamedField(spec, d, std::make_shared<CpuStreamRunner>(precision)) {}
    StreamedField(const AttentionSpec& spec, int d, std::shared_ptr<StreamRunner> runner)
        : SpecField(spec), d_(d), runner_(std::move(runner)) {}

  protected:
    int d_;
    std::shared_ptr<StreamRunner> runner_;
};

// The field of a spec with its O(N^2) passes on `runner` (linear attention has none and ignores it), without
// sphere projection. makeCpuField is this with a CpuStreamRunner, plus the projection. Throws SceneError for
// unsupported settings (masked Sinkhorn or linear attention).
std::unique_ptr<VelocityField> makeField(const AttentionSpec& spec, int d,
                                         std::shared_ptr<StreamRunner> runner);

} // namespace flowscope
