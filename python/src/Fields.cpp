// flowscope.velocity, attention_weights, entropies: any attention variant's field (engine/attention, the CPU
// fields the simulation uses) on the caller's own tokens.
#include "Common.h"

#include "engine/attention/VelocityField.h"
#include "engine/io/JsonReader.h"

namespace flowscope::py {

namespace {

// The field of a Scene, a scene dict, or an attention dict (the scene's "attention" object: d and N are then
// X's), in X's precision: float32 arrays get the float32 SIMD field, any other the float64 reference.
struct FieldOnTokens {
    Tokens X;
    std::unique_ptr<VelocityField> field;
    AttentionType type;
    bool float32;
};

FieldOnTokens fieldOn(const pb::handle& source, const pb::handle& tokens, double t) {
    if (!std::isfinite(t)) throw InputError("t", "expected a finite time, got " + numberText(t));
    const bool attentionOnly = pb::isinstance<pb::dict>(source) && !source.contains("attention");
    bool f32 = false;
    Mat X = toPoints(tokens, "X", 0, kSceneMaxTokens, 16.0, "their velocities and the returned array", &f32);
    Scene scene;
    const std::string transposed = " (tokens are rows: was a (d, N) array passed? X.T is (N, d))";
    if (attentionOnly) {
        auto wrap = [&](Eigen::Index d, Eigen::Index n) {
            pb::dict wrapped;
            wrapped["d"] = d, wrapped["n"] = n, wrapped["attention"] = source;
            return toScene(wrapped);
        };
        try {
            scene = wrap(X.cols(), X.rows());
        } catch (const SceneError&) {
            // The attention's matrices fix d: when they fit X's rows and not its columns, X is transposed.
            bool fitsRows = false;
            if (X.rows() != X.cols()) try {
                    wrap(X.rows(), X.cols()), fitsRows = true;
                } catch (const SceneError&) {
                }
            if (fitsRows)
                throw InputError(
                    "X", "expected (N, " + std::to_string(X.rows()) +
                             ") tokens (the attention's matrices have d = " + std::to_string(X.rows()) +
                             "), got shape (" + std::to_string(X.rows()) + ", " + std::to_string(X.cols()) +
                             ")" + transposed);
            throw;
        }
    } else {
        scene = toScene(source);
        if (X.cols() != scene.d)
            throw InputError("X", "expected points of dimension " + std::to_string(scene.d) +
                                      " (the scene's d), got shape (" + std::to_string(X.rows()) + ", " +
                                      std::to_string(X.cols()) + ")" +
                                      (X.rows() == scene.d ? transposed : ""));
    }
    return {std::move(X),
            makeCpuField(scene.attention, scene.d, f32 ? Precision::Float32 : Precision::Float64),
            scene.attention.type, f32};
}

pb::array velocity(const pb::handle& source, const pb::handle& tokens, double t) {
    FieldOnTokens f = fieldOn(source, tokens, t);
    Tokens dX(f.X.rows(), f.X.cols());
    Interruptible().cancelWithinPasses().run([&] { f.field->velocity(t, f.X, dX); }); // Ctrl+C stops the pass
    return fromPoints(std::move(dX), f.float32);
}

// Sinkhorn's rows are those of the plan its velocity pass solves for (the potentials it keeps): solve it
// first.
void solvePlan(FieldOnTokens& f, double t) {
    if (f.type != AttentionType::Sinkhorn) return;
    Tokens dX(f.X.rows(), f.X.cols());
    f.field->velocity(t, f.X, dX);
}

Vec distribution(Vec v, const FieldOnTokens& f, const char* what) {
    if (v.size() == 0)
        throw InputError("attention",
                         std::string(toString(f.type)) + " attention has no " + what +
                             " (the normalised variants have one: softmax, l2, sinkhorn, drifting, rwpo)");
    return v;
}

Vec attentionWeights(const pb::handle& source, const pb::handle& tokens, long i, double t) {
    FieldOnTokens f = fieldOn(source, tokens, t);
    if (i < 0 || i >= f.X.rows())
        throw InputError("i", "expected a token index in [0, " + std::to_string(f.X.rows()) + "), got " +
                                  std::to_string(i));
    Vec P;
    {
        pb::gil_scoped_release release;
        solvePlan(f, t);
        P = f.field->attentionWeights(t, f.X, i);
    }
    return distribution(std::move(P), f, "attention distribution");
}

Vec entropies(const pb::handle& source, const pb::handle& tokens, double t) {
    FieldOnTokens f = fieldOn(source, tokens, t);
    Vec H;
    {
        pb::gil_scoped_release release;
        solvePlan(f, t);
        H = f.field->attentionEntropies(t, f.X);
    }
    return distribution(std::move(H), f, "attention entropy");
}

} // namespace

void bindFields(pb::module_& m) {
    m.def("velocity", &velocity, pb::arg("attention"), pb::arg("X"), pb::arg("t") = 0.0,
          R"(velocity(attention, X, t=0.0) -> ndarray

The velocity field Γ_X(x_i) = dx_i/dt of an attention variant on your tokens X, an (N, d) array (row i =
token i), summed over heads (docs/math/attention.md). With s_ij = x_jᵀ A x_i, A = γ Kᵀ Q (γ = β, / √k with
scale_by_sqrt_k):

    softmax   V Σ_j P_ij x_j,  P_ij = exp(s_ij) / Σ_l exp(s_il)   (masked: j ≤ i)
    l2        the same with s_ij = -γ |Q x_i - K x_j|²
    sinkhorn  (1/ε) V Σ_j P_ij x_j, P the doubly stochastic plan of the scores s_ij / ε
    exp, relu, sigmoid   (1/N) Σ_j V w(s_ij) x_j,  w = exp, max(·, 0), 1/(1 + e^-s)
    linear    V M₂ A x_i,  M₂ = (1/N) Σ_j x_j x_jᵀ   (lin,ε: V m / ε + V (M₂ - m mᵀ) A x_i)
    drifting  Γ^G_ν(x_i) - Σ_j k(x_i, x_j) x_j / Σ_j k(x_i, x_j),  k = exp(-|x - y|²/2)
    rwpo      (S(x_i) - m(x_i)) / (2h), S the soft threshold at λh, m the kernel average
    sphere    P_x Γ(x), P_x = I - x xᵀ/|x|²

attention  a Scene or scene dict (its attention; X's d must be the scene's), or the scene's "attention"
           object alone, e.g. {"type": "softmax", "beta": 2, "heads": [{"Q": 1, "K": 1, "V": 1}]}
X          (N, d) float32 (the streaming float32 SIMD kernel) or float64 (the float64 reference); finite
t          the time (for keyframed parameters)

Returns an (N, d) array of X's dtype. Memory is O(N d): no N x N matrix is formed. The GIL is released.)");
    m.def("attention_weights", &attentionWeights, pb::arg("attention"), pb::arg("X"), pb::arg("i"),
          pb::arg("t") = 0.0,
          R"(attention_weights(attention, X, i, t=0.0) -> ndarray

Row i of the attention matrix: the distribution P_i· = (P_i1, ..., P_iN) of query x_i over the keys (first
head, float64, sums to 1), for the normalised variants (softmax, l2, sinkhorn, drifting, rwpo vector
kernels). Arguments as velocity(). ValueError for the other variants.)");
    m.def("entropies", &entropies, pb::arg("attention"), pb::arg("X"), pb::arg("t") = 0.0,
          R"(entropies(attention, X, t=0.0) -> ndarray

The entropy of each query's attention distribution, H_i = -Σ_j P_ij log P_ij (nats, (N,) float64; log N is
uniform attention, 0 a single key), for the normalised variants (first head). Arguments as velocity().)");
}

} // namespace flowscope::py
