// Flowscope engine: continuous-time Transformers (OT-Transformer; docs/math/transformers.md).
//
// A batch is B token sets of n tokens each, stored as the columns of one matrix (set b holds the columns
// [b n, b n + n)); attention never crosses sets (ad::groupAttention). One Transformer block (S3 eqs. 3–4;
// docs/math/transformers.md#block):
//     u  = x + Σ_h W_h V_h X softmax((K_h X)^T Q_h x / √k)        (then LayerNorm, optional)
//     x' = u + g(u),  g(u) = W2 act(W1 u + b1) + b2               (then LayerNorm, optional; no MLP: x' = u)
// Architectures:
//  * OtTransformer: one ODE dX/dt = f(X) on [0, T], f = the stack of the D blocks *with their skips* (the
//    paper's and the code's velocity, docs/math/transformers.md#continuous), or the stack's increment
//    f(X) = stack(X) - X (incrementVelocity); M forward-Euler steps (or RK4).
//  * NodeTransformer (the N-ODE baseline): one ODE per block, chained, each with the block's increment
//    block_i(X) - X as velocity (our reading of "the block without its skip"), M steps each.
//  * Discrete: X_{i+1} = block_i(X_i), the plain Transformer; no transport cost.
// Input: a linear embedding R^in -> R^d (embed), the tokens themselves (in = d), or the fixed padding
// embedding x -> [x; 0] in R^d (padEmbed, d >= in, no parameters: the extra coordinates start at 0 and are
// free working space, e.g. for the set's mean token). Output: the fixed mean head ỹ = (1/n) Σ_j x_j (task A:
// no parameters, L = 1/√n; with padEmbed the mean of the first `in` coordinates only) or mean pooling then a
// linear head to C logits.
//
// Objective (8): task loss G (mean over sets of ½‖ỹ - y‖², or softmax cross-entropy) + λ_OT · transport, with
// the transport cost in one of two conventions (docs/math/transformers.md#kinetic-convention):
//  * ElementMean (the authors' code, default): Σ_m Δt ‖f_m‖²_F / (B n d), so λ transfers between tasks;
//  * Paper: ½ Σ_m Δt ‖f_m‖²_F / B (eq. 8).
// They agree when λ_paper = 2 λ_code / (n d). RK4 replaces ‖f_m‖² by the stages' (‖k1‖² + 2‖k2‖² + 2‖k3‖² +
// ‖k4‖²) / 6.
#pragma once

#include "engine/autodiff/Tape.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace flowscope::ot {

using Matrix = ad::Matrix<double>;
using Var = ad::Var<double>;
using Tape = ad::Tape<double>;

enum class Architecture { OtTransformer, NodeTransformer, Discrete };
enum class Integrator { Euler, Rk4 };
enum class KineticConvention { ElementMean, Paper };
enum class Head { Mean, PooledLinear };
enum class Activation { Tanh, Relu };

const char* toString(Architecture a);
const char* toString(Integrator i);
const char* toString(KineticConvention c);
const char* toString(Head h);
const char* toString(Activation a);
// Throw std::invalid_argument listing the valid names.
Architecture architectureFromString(const std::string& s);
Integrator integratorFromString(const std::string& s);
KineticConvention conventionFromString(const std::string& s);
Head headFromString(const std::string& s);
Activation activationFromString(const std::string& s);
// The names toString gives the values of E (Architecture, Integrator, KineticConvention, Head, Activation):
// what a record or an option may say.
template <class E> std::vector<std::string_view> namesOf();
template <> std::vector<std::string_view> namesOf<Architecture>();
template <> std::vector<std::string_view> namesOf<Integrator>();
template <> std::vector<std::string_view> namesOf<KineticConvention>();
template <> std::vector<std::string_view> namesOf<Head>();
template <> std::vector<std::string_view> namesOf<Activation>();

struct TransformerConfig {
    int inputDim = 2;   // token features at the input
    bool embed = false; // a linear embedding inputDim -> width; without it (and padEmbed) inputDim = width
    int width = 2;      // d
    int heads = 1;
    int headDim = 2;    // k (per head); the logits are scaled by 1/√k
    int mlpHidden = 16; // 0: no MLP
    Activation activation = Activation::Tanh;
    bool layerNorm = false; // post-LN after each skip (Appendix D eq. 20), learned gain and bias
    int blocks = 1;         // D
    Architecture architecture = Architecture::OtTransformer;
    bool incrementVelocity = false; // OtTransformer: f = stack(X) - X instead of the stack with its skips
    int steps = 8;                  // M (per ODE)
    double horizon = 1.0;           // T
    Integrator integrator = Integrator::Euler;
    Head head = Head::Mean;
    int classes = 4; // PooledLinear: the number of logits
    double lambdaOt = 0.0;
    KineticConvention convention = KineticConvention::ElementMean;
    std::uint64_t seed = 0; // the parameters' initialization
    // The fixed embedding x -> [x; 0] in R^width (width >= inputDim, embed off); the mean head then reads the
    // first inputDim coordinates. The transport cost counts all width coordinates (ElementMean: numel too).
    bool padEmbed = false;
    // padEmbed: x -> [x; x; 0] instead (width >= 2 inputDim): a copy of the initial tokens that need not
    // move, so the velocity can depend on the initial set (task A's optimal velocity is a function of the
    // initial mean token, constant along each path).
    bool padCopy = false;
    // Initialize the first block to route the set's mean token into free coordinates for the MLP (see
    // routeTheMean in Transformer.cpp); needs padEmbed, width >= (padCopy ? 3 : 2) inputDim, headDim >=
    // inputDim, an MLP and the ot architecture. The parameters stay trainable.
    bool routingInit = false;

    bool continuous() const { return architecture != Architecture::Discrete; }
    int outputDim() const { return head == Head::Mean ? (padEmbed ? inputDim : width) : classes; }
};

// Throws std::invalid_argument naming the first bad field ("width", "steps", "horizon", ...).
void validate(const TransformerConfig& c);

struct BlockParams {
    Matrix Q, K, V;                // (heads k) x d: head h is rows [h k, h k + k)
    Matrix W;                      // d x (heads k)
    Matrix W1, b1, W2, b2;         // hidden x d, hidden x 1, d x hidden, d x 1 (empty without the MLP)
    Matrix ln1g, ln1b, ln2g, ln2b; // d x 1 (empty without LayerNorm)
};

struct TransformerParams {
    Matrix E, e; // embedding, d x in and d x 1 (empty without)
    std::vector<BlockParams> blocks;
    Matrix H, h; // head, C x d and C x 1 (empty for the mean head)

    // Random initialization from c.seed: weights N(0, 1/fan_in), biases 0, LayerNorm gain 1.
    static TransformerParams init(const TransformerConfig& c);
    TransformerParams zerosLike() const;
    // f(value, other's matching block, name) for every non-empty block, in a fixed order; names are
    // "embed.E", "block0.Q", ..., "head.H" (the safetensors names).
    template <class P, class F> static void forEachPair(P& a, P& b, F&& f);
    template <class F> void forEach(TransformerParams& other, F&& f) { forEachPair(*this, other, f); }
    template <class F> void forEach(F&& f) const {
        forEachPair(*this, *this, [&](const Matrix& v, const Matrix&, const std::string& n) { f(v, n); });
    }
    long count() const; // number of scalar parameters
};

// A batch: B sets of n tokens (inputDim x B n) and their targets.
struct Batch {
    Matrix tokens;
    int setSize = 0;
    Matrix targets;          // Mean head: outputDim x B regression targets
    std::vector<int> labels; // PooledLinear: one class per set
    int sets() const { return setSize > 0 ? int(tokens.cols() / setSize) : 0; }
    Batch slice(int first, int count) const; // sets [first, first + count)
};

// The forward pass recorded on a tape: the states X_0 .. X_end (d x B n; for NodeTransformer all blocks'
// steps in order, for Discrete the block outputs), the velocity of each step (the ODE's f at the step's
// start; RK4: the step's mean velocity (X_{m+1} - X_m) / Δt), the output and the raw kinetic sum
// Σ_m Δt ‖f_m‖²_F over the batch (1x1; absent for Discrete).
struct Forward {
    std::vector<Var> states;
    std::vector<Var> velocities;
    Var output;  // outputDim x B
    Var kinetic; // 1x1, or tape == nullptr
};

struct LossTerms {
    double loss = 0, task = 0,
           transport = 0; // loss = task + λ transport (transport in the chosen convention)
    double accuracy = 0;  // PooledLinear: the fraction of sets classified right
};

class TransformerModel {
  public:
    explicit TransformerModel(const TransformerConfig& config); // validates; throws std::invalid_argument
    TransformerModel(const TransformerConfig& config, TransformerParams params);

    const TransformerConfig& config() const { return config_; }
    TransformerParams& params() { return params_; }
    const TransformerParams& params() const { return params_; }

    // Records the forward pass; the parameters are bound to `grads` (backward() adds into them).
    Forward recordForward(Tape& tape, const Matrix& tokens, int setSize, TransformerParams& grads) const;
    // Records objective (8) for a batch and returns its 1x1 Var; `terms` gets the parts.
    Var recordLoss(Tape& tape, const Batch& batch, TransformerParams& grads, LossTerms* terms,
                   Forward* forward = nullptr) const;
    // The transport cost, in the configured convention, of a raw kinetic sum over `sets` sets of n tokens.
    double transportFromKinetic(double kinetic, int sets, int setSize) const;

    // Without a tape (evaluation): the output, and the states X_0 .. X_end when asked.
    Matrix output(const Matrix& tokens, int setSize, std::vector<Matrix>* states = nullptr) const;

    // Theorem 2's constants: L = ‖ψ_o‖ (operator 2-norm, or Frobenius: the proof's;
    // docs/math/transformers.md#lipschitz-norm) of the output map X -> ỹ at set size n, and the threshold
    // T L² above which λ gives a stable map, in the configured convention (Paper: T L²; ElementMean:
    // T L² n d / 2).
    double outputLipschitz(int setSize, bool frobenius = false) const;
    double stabilityThreshold(int setSize, bool frobenius = false) const;
    // The bound L (1 - T L² / λ)^-1 on ‖ỹ_1 - ỹ_2‖ / ‖X_1(0) - X_2(0)‖_F (same y); +inf at or below the
    // threshold.
    double lipschitzBound(int setSize, bool frobenius = false) const;
    // λ in the paper's convention (for the closed forms).
    double paperLambda(int setSize) const;

  private:
    Var block(Tape& t, Var X, int i, int setSize, TransformerParams& grads) const;
    Var velocity(Tape& t, Var X, int blockIndex, int setSize, TransformerParams& grads) const;

    TransformerConfig config_;
    TransformerParams params_;
};

// Straightness ‖X_end - X_0‖_F / Σ_m ‖X_{m+1} - X_m‖_F and the speed's coefficient of variation
// std_m ‖X_{m+1} - X_m‖ / mean_m, per set, averaged over the sets (docs/math/transformers.md#metrics). A set
// that does not move counts as straight with CV 0.
struct PathStats {
    double straightness = 1, speedCv = 0;
};
PathStats pathStats(const std::vector<Matrix>& states, int setSize);

template <class P, class F> void TransformerParams::forEachPair(P& a, P& b, F&& f) {
    auto visit = [&](auto& x, auto& y, const std::string& name) {
        if (x.size() > 0) f(x, y, name);
    };
    visit(a.E, b.E, "embed.E");
    visit(a.e, b.e, "embed.b");
    for (std::size_t i = 0; i < a.blocks.size(); ++i) {
        auto &x = a.blocks[i], &y = b.blocks[i];
        const std::string p = "block" + std::to_string(i) + ".";
        visit(x.Q, y.Q, p + "Q");
        visit(x.K, y.K, p + "K");
        visit(x.V, y.V, p + "V");
        visit(x.W, y.W, p + "W");
        visit(x.W1, y.W1, p + "mlp.W1");
        visit(x.b1, y.b1, p + "mlp.b1");
        visit(x.W2, y.W2, p + "mlp.W2");
        visit(x.b2, y.b2, p + "mlp.b2");
        visit(x.ln1g, y.ln1g, p + "ln1.gain");
        visit(x.ln1b, y.ln1b, p + "ln1.bias");
        visit(x.ln2g, y.ln2g, p + "ln2.gain");
        visit(x.ln2b, y.ln2b, p + "ln2.bias");
    }
    visit(a.H, b.H, "head.H");
    visit(a.h, b.h, "head.b");
}

} // namespace flowscope::ot
