// Flowscope engine: the parameter schema's table and what reads and writes through it (SceneSchema.h).
#include "engine/scene/SceneSchema.h"

#include "engine/io/JsonReader.h"
#include "engine/scene/SceneNames.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace flowscope {

namespace {

using Json = SceneParam::Json;
namespace names = scene_names;

// ---------------------------------------------------------------------------------------------------------
// Accessors: a field of a Scene as JSON, and back (the value is checked by then)

template <class T> Json fieldJson(const T& v) {
    if constexpr (std::is_enum_v<T>)
        return Json(int(v));
    else
        return Json(v);
}
template <class T> Json fieldJson(const std::optional<T>& v) {
    return v ? Json(*v) : Json(nullptr);
}

template <class T> void setField(T& field, const Json& v) {
    if constexpr (std::is_enum_v<T>)
        field = T(v.get<int>());
    else
        field = v.get<T>();
}
template <class T> void setField(std::optional<T>& field, const Json& v) {
    field = v.is_null() ? std::nullopt : std::optional<T>(v.get<T>());
}

// The accessors of the field `F{}(scene)` names (F: a captureless generic lambda returning a reference into
// a Scene, const or not).
template <class F> Json getVia(const Scene& s) {
    return fieldJson(F{}(s));
}
template <class F> void setVia(Scene& s, const Json& v) {
    setField(F{}(s), v);
}

struct Access {
    Json (*get)(const Scene&);
    void (*set)(Scene&, const Json&);
};
template <class F> constexpr Access field(F) {
    return {&getVia<F>, &setVia<F>};
}
#define FS_FIELD(path) field([](auto& s) -> auto& { return s.path; })

// "type": the names of the variants, plus "masked", softmax with masked = true.
Json getType(const Scene& s) {
    return Json(int(s.attention.type));
}
void setType(Scene& s, const Json& v) {
    const int index = v.get<int>();
    const bool masked = index == int(names::kAttention.size());
    s.attention.type = masked ? AttentionType::Softmax : AttentionType(index);
    if (masked) s.attention.masked = true;
}

// "normalization": post is `sphere` (normalizationOf); the others live in `normalization`.
Json getNormalization(const Scene& s) {
    return Json(int(normalizationOf(s.attention)));
}
void setNormalization(Scene& s, const Json& v) {
    const auto scheme = Normalization(v.get<int>());
    s.attention.sphere = scheme == Normalization::Post;
    s.attention.normalization = s.attention.sphere ? Normalization::None : scheme;
}

// ---------------------------------------------------------------------------------------------------------
// Ranges

constexpr ParamRange above(double low) {
    return {low, ParamRange::kInf, true, false};
}
constexpr ParamRange atLeast(double low) {
    return {low, ParamRange::kInf, false, false};
}
constexpr ParamRange closed(double low, double high) {
    return {low, high, false, false};
}
constexpr double kIntMax = double(std::numeric_limits<int>::max());

SceneParam withAccess(SceneParam p, Access a) {
    p.get = a.get;
    p.set = a.set;
    return p;
}

// ---------------------------------------------------------------------------------------------------------
// The table
//
// Notation of docs/scene.md: tokens x_1..x_N in R^d, A = KᵀQ, the score s(x, y) = c (Qx)·(Ky) = c yᵀAx with
// c = β (÷ √k with scale_by_sqrt_k).

const std::vector<SceneParam>& table() {
    static const std::vector<SceneParam> params = [] {
        std::vector<SceneParam> t;
        auto add = [&t](SceneParam p, Access a) { t.push_back(withAccess(p, a)); };

        // ---- the scene (restart)
        add({.pointer = "/d",
             .keyword = "d",
             .label = "d",
             .kind = ParamKind::Integer,
             .range = closed(1, kSceneMaxDimension),
             .required = true,
             .summary = "the token dimension",
             .tooltip = "<b>Dimension d</b> — tokens x<sub>i</sub> ∈ ℝ<sup>d</sup>. A new d resizes the "
                        "matrices: Q, K become I<sub>d</sub>, V and the initial mean/covariance keep their "
                        "leading block. Restarts the run.",
             .anchor = "docs/scene.md#top-level"},
            FS_FIELD(d));
        add({.pointer = "/n",
             .keyword = "n",
             .label = "N",
             .kind = ParamKind::Integer,
             .range = closed(1, double(kSceneMaxTokens)),
             .required = true,
             .summary = "the number of tokens",
             .tooltip = "<b>Tokens N</b> — the cloud is μ = (1/N) Σ<sub>j</sub> δ<sub>x<sub>j</sub></sub>; "
                        "cost O(N²d) per velocity evaluation. 1 ≤ N ≤ 2<sup>24</sup>.",
             .anchor = "docs/scene.md#top-level"},
            FS_FIELD(n));
        add({.pointer = "/precision",
             .keyword = "precision",
             .label = "Precision",
             .kind = ParamKind::Choice,
             .choices = names::kPrecision,
             .choiceNoun = "precision",
             .summary = "the arithmetic of the particle simulation",
             .tooltip = "<b>Precision</b> — arithmetic of the particle simulation: float64 (the reference "
                        "path) or float32 (faster).",
             .anchor = "docs/scene.md#top-level"},
            FS_FIELD(precision));

        // ---- initial (restart)
        add({.pointer = "/initial/kind",
             .keyword = "init",
             .label = "Initial",
             .kind = ParamKind::Choice,
             .choices = names::kInit,
             .choiceNoun = "initial kind",
             .summary = "how the initial tokens are drawn",
             .tooltip =
                 "<b>Initial tokens</b> — <b>gaussian</b> N(α, Σ<sub>0</sub>); <b>uniform</b> in a "
                 "box; <b>rings</b>: concentric circles in the first two coordinates; <b>file</b>: "
                 "tokens from a .npy or .csv file; <b>points</b>: points you draw with the mouse in the "
                 "particle view.",
             .anchor = "docs/scene.md#initial-the-initial-tokens"},
            FS_FIELD(initial.kind));
        add({.pointer = "/initial/seed",
             .keyword = "seed",
             .label = "Seed",
             .kind = ParamKind::Seed,
             .summary = "the seed of the initial tokens' random stream",
             .tooltip = "<b>Seed</b> — of the random stream std::mt19937_64(seed); the same seed gives the "
                        "same tokens, and the first tokens of a larger N are the same tokens.",
             .anchor = "docs/scene.md#initial-the-initial-tokens"},
            FS_FIELD(initial.seed));
        add({.pointer = "/initial/noise",
             .keyword = "noise",
             .label = "Noise",
             .kind = ParamKind::Number,
             .range = atLeast(0),
             .step = 0.01,
             .summary = "rings, points: the standard deviation of the jitter added to every coordinate",
             .tooltip = "<b>Noise</b> (rings, points) — standard deviation of the Gaussian jitter added to "
                        "every coordinate: x<sub>i</sub> + noise · N(0, I<sub>d</sub>). noise ≥ 0.",
             .anchor = "docs/scene.md#initial-the-initial-tokens"},
            FS_FIELD(initial.noise));

        // ---- attention (live)
        add({.pointer = "/attention/type",
             .keyword = "type",
             .label = "Type",
             .kind = ParamKind::Choice,
             .choices = names::kAttentionType,
             .choiceNoun = "attention type",
             .required = true,
             .edit = ParamEdit::Live,
             .summary = "the attention variant (\"masked\" is softmax with masked = true)",
             .tooltip =
                 "<b>Attention type</b> — the velocity field Γ of the particle ODE x<sub>i</sub>′ = "
                 "Σ<sub>heads</sub> Γ(x<sub>i</sub>):<br>"
                 "<b>softmax</b> V Σ<sub>j</sub> P<sub>ij</sub> x<sub>j</sub>, P<sub>ij</sub> ∝ "
                 "exp(s(x<sub>i</sub>, x<sub>j</sub>));<br>"
                 "<b>linear</b> c V M A x<sub>i</sub>, M = (1/N) Σ<sub>j</sub> "
                 "x<sub>j</sub>x<sub>j</sub>ᵀ;<br>"
                 "<b>l2</b> V Σ<sub>j</sub> P<sub>ij</sub> x<sub>j</sub>, P<sub>ij</sub> ∝ exp(−c "
                 "|Qx<sub>i</sub> "
                 "− Kx<sub>j</sub>|²);<br>"
                 "<b>sinkhorn</b> (1/ε) V Σ<sub>j</sub> P<sub>ij</sub> x<sub>j</sub>, P doubly "
                 "stochastic;<br>"
                 "<b>exp / relu / sigmoid</b> V (1/N) Σ<sub>j</sub> x<sub>j</sub> f(s(x<sub>i</sub>, "
                 "x<sub>j</sub>)), f = exp, max(·, 0), 1/(1 + e<sup>−z</sup>) (unnormalized);<br>"
                 "<b>rwpo</b> one RWPO layer per step: x ← x + ½[S<sub>λh</sub>(x) − Σ<sub>j</sub> "
                 "w<sub>j</sub>(x) x<sub>j</sub>] (no Q, K, V);<br>"
                 "<b>drifting</b> Γ<sup>G</sup><sub>ν</sub>(x<sub>i</sub>) − Σ<sub>j</sub> k<sub>ij</sub> "
                 "x<sub>j</sub> / Σ<sub>j</sub> k<sub>ij</sub>, k<sub>ij</sub> = exp(−|x<sub>i</sub> − "
                 "x<sub>j</sub>|²/2) (no Q, K, V);<br>"
                 "<b>hardmax</b> V times the mean of the tokens of highest score (the β → ∞ limit of "
                 "softmax).",
             .anchor = "docs/math/attention.md"},
            {&getType, &setType});
        add({.pointer = "/attention/beta",
             .keyword = "beta",
             .label = "β",
             .kind = ParamKind::Number,
             .range = above(0),
             .edit = ParamEdit::Live,
             .summary = "the inverse temperature multiplying every score",
             .tooltip = "<b>β</b> — inverse temperature multiplying every score: s(x, y) = β (Qx)·(Ky) (÷ √k "
                        "with scale_by_sqrt_k), e.g. softmax P<sub>ij</sub> = exp(β⟨Qx<sub>i</sub>, "
                        "Kx<sub>j</sub>⟩) / Σ<sub>l</sub> exp(β⟨Qx<sub>i</sub>, Kx<sub>l</sub>⟩). RWPO: the "
                        "layer's β (kernel bandwidth √(2h/β)). Unused by drifting. β &gt; 0.",
             .anchor = "docs/math/attention.md#softmax"},
            FS_FIELD(attention.beta));
        add({.pointer = "/attention/scale_by_sqrt_k",
             .keyword = "scale_by_sqrt_k",
             .label = "Scale scores by 1/√k",
             .kind = ParamKind::Boolean,
             .edit = ParamEdit::Live,
             .summary = "also divide every score by sqrt(k), k = rows of Q",
             .tooltip = "<b>Scale by 1/√k</b> — also divide every score by √k, k = rows of Q: s(x, y) = β "
                        "(Qx)·(Ky) / √k (the authors' code convention; multi-head: 1/√(d/H)).",
             .anchor = "docs/math/attention.md#multi-head"},
            FS_FIELD(attention.scaleByRootK));
        add({.pointer = "/attention/masked",
             .keyword = "masked",
             .label = "Masked (causal)",
             .kind = ParamKind::Boolean,
             .edit = ParamEdit::Live,
             .summary = "causal attention: token i attends to tokens j <= i only",
             .tooltip = "<b>Masked (causal)</b> — token i attends to tokens j ≤ i only: the sums over j run "
                        "over j ≤ i, P<sub>ij</sub> = 0 for j &gt; i. Softmax, l2, exp, relu, sigmoid and "
                        "hardmax only.",
             .anchor = "docs/math/attention.md#masked"},
            FS_FIELD(attention.masked));
        add({.pointer = "/attention/sphere",
             .keyword = "sphere",
             .label = "On the unit sphere",
             .kind = ParamKind::Boolean,
             .written = false,
             .edit = ParamEdit::Live,
             .summary = "the older name of normalization \"post\"",
             .tooltip = "<b>Sphere</b> — tokens live on the unit sphere: they are projected onto it and the "
                        "velocity onto its tangent space, x<sub>i</sub>′ = (I − "
                        "x<sub>i</sub>x<sub>i</sub>ᵀ/|x<sub>i</sub>|²) Γ(x<sub>i</sub>) (normalization "
                        "post). Needs d ≥ 2.",
             .anchor = "docs/math/attention.md#sphere"},
            FS_FIELD(attention.sphere));
        add({.pointer = "/attention/normalization",
             .keyword = "normalization",
             .label = "Normalization",
             .kind = ParamKind::Choice,
             .choices = names::kNormalization,
             .choiceNoun = "normalization",
             .edit = ParamEdit::Live,
             .summary = "layer normalisation: none, post (on the sphere), pre, peri",
             .tooltip =
                 "<b>Normalization</b> — with θ<sub>j</sub> = x<sub>j</sub>/|x<sub>j</sub>| and "
                 "A<sub>i</sub>(Θ) the attention field at the directions: <b>none</b> the plain field; "
                 "<b>post</b> tokens on the unit sphere; <b>pre</b> x<sub>i</sub>′ = "
                 "A<sub>i</sub>(Θ); <b>peri</b> x<sub>i</sub>′ = A<sub>i</sub>(Θ) / "
                 "|A<sub>i</sub>(Θ)|.",
             .anchor = "docs/math/theory.md#normalization"},
            {&getNormalization, &setNormalization});
        add({.pointer = "/attention/positional_decay",
             .keyword = "positional_decay",
             .label = "Positional decay λ",
             .kind = ParamKind::Number,
             .range = atLeast(0),
             .edit = ParamEdit::Live,
             .summary =
                 "ALiBi-style decay: key j's weight for query i times exp(-(lambda/N)|i - j|); 0 is off",
             .tooltip = "<b>Positional decay λ</b> — the weight of key j for query i is multiplied by "
                        "e<sup>−(λ/N)|i − j|</sup>, computed in the kernel. Softmax, l2 and exp. 0 is off.",
             .anchor = "docs/math/theory.md#positional-decay"},
            FS_FIELD(attention.positionalDecay));
        add({.pointer = "/attention/interpolation",
             .keyword = "interpolation",
             .label = "Keyframes",
             .kind = ParamKind::Choice,
             .choices = names::kInterpolation,
             .choiceNoun = "interpolation",
             .edit = ParamEdit::Live,
             .summary = "how keyframes are interpolated",
             .tooltip = "<b>Keyframe interpolation</b> — <b>piecewise</b>: the parameters of the last "
                        "keyframe with t<sub>k</sub> ≤ t; <b>linear</b>: (1 − w) P<sub>k</sub> + w "
                        "P<sub>k+1</sub>, w = (t − t<sub>k</sub>) / (t<sub>k+1</sub> − t<sub>k</sub>), "
                        "entry-wise in Q, K, V. Clamped before the first and after the last keyframe.",
             .anchor = "docs/scene.md#attention-the-velocity-field"},
            FS_FIELD(attention.interpolation));
        add({.pointer = "/attention/linear_eps",
             .keyword = "linear_eps",
             .label = "lin,ε",
             .kind = ParamKind::Number,
             .range = above(0),
             .nullable = true,
             .edit = ParamEdit::Live,
             .summary = "linear only: the lin,eps variant when set (null: pure linear attention)",
             .tooltip = "<b>lin,ε</b> (linear only) — the second-order expansion of softmax: "
                        "Γ(x<sub>i</sub>) = (1/ε) V m + c V (M − m mᵀ) A x<sub>i</sub>, m = (1/N) "
                        "Σ<sub>j</sub> x<sub>j</sub>, M = (1/N) Σ<sub>j</sub> x<sub>j</sub>x<sub>j</sub>ᵀ. "
                        "Off: pure linear attention c V M A x<sub>i</sub>. ε &gt; 0.",
             .anchor = "docs/math/attention.md#linear"},
            FS_FIELD(attention.linearEps));
        add({.pointer = "/attention/sinkhorn/eps",
             .keyword = "sinkhorn_eps",
             .label = "Sinkhorn ε",
             .kind = ParamKind::Number,
             .range = above(0),
             .edit = ParamEdit::Live,
             .summary = "sinkhorn: the temperature epsilon",
             .tooltip = "<b>Sinkhorn ε</b> — temperature ε &gt; 0: the kernel exp(−c |Qx<sub>i</sub> − "
                        "Kx<sub>j</sub>|² / (2ε)) is made doubly stochastic (P) by Sinkhorn–Knopp, and "
                        "Γ(x<sub>i</sub>) = (1/ε) V Σ<sub>j</sub> P<sub>ij</sub> x<sub>j</sub>. The mean "
                        "follows exp(tV/ε) α<sub>0</sub>.",
             .anchor = "docs/math/attention.md#sinkhorn"},
            FS_FIELD(attention.sinkhornEps));
        add({.pointer = "/attention/sinkhorn/iterations",
             .keyword = "sinkhorn_iterations",
             .label = "Iterations",
             .kind = ParamKind::Integer,
             .range = closed(1, 1000000),
             .edit = ParamEdit::Live,
             .summary = "sinkhorn: at most this many row/column passes",
             .tooltip = "<b>Sinkhorn iterations</b> — at most this many row/column normalization passes; "
                        "stops earlier when max<sub>j</sub> |column marginal<sub>j</sub> − 1| ≤ tol.",
             .anchor = "docs/math/attention.md#sinkhorn"},
            FS_FIELD(attention.sinkhornIterations));
        add({.pointer = "/attention/sinkhorn/tol",
             .keyword = "sinkhorn_tol",
             .label = "Sinkhorn tol",
             .kind = ParamKind::Number,
             .range = atLeast(0),
             .edit = ParamEdit::Live,
             .digits = 12,
             .step = 1e-9,
             .summary = "sinkhorn: stop when every column marginal is within tol of 1 (0: every pass)",
             .tooltip = "<b>Sinkhorn tol</b> — stop when max<sub>j</sub> |column marginal<sub>j</sub> − 1| ≤ "
                        "tol; 0 runs every pass.",
             .anchor = "docs/math/attention.md#sinkhorn"},
            FS_FIELD(attention.sinkhornTol));
        add({.pointer = "/attention/rwpo/lambda",
             .keyword = "rwpo_lambda",
             .label = "RWPO λ",
             .kind = ParamKind::Number,
             .range = atLeast(0),
             .edit = ParamEdit::Live,
             .summary = "rwpo: the weight of the L1 prior lambda |x|_1",
             .tooltip = "<b>RWPO λ</b> — weight of the L1 prior ψ(x) = λ‖x‖<sub>1</sub>; soft threshold "
                        "S<sub>λh</sub>(x)<sub>i</sub> = sign(x<sub>i</sub>) max(|x<sub>i</sub>| − λh, 0). "
                        "Layer: x ← x + ½[S<sub>λh</sub>(x) − Σ<sub>j</sub> w<sub>j</sub>(x) x<sub>j</sub>]. "
                        "λ = 0: pure diffusion. λ ≥ 0.",
             .anchor = "docs/math/attention.md#rwpo"},
            FS_FIELD(attention.lambda));
        add({.pointer = "/attention/rwpo/h",
             .keyword = "rwpo_h",
             .label = "RWPO h",
             .kind = ParamKind::Number,
             .range = above(0),
             .edit = ParamEdit::Live,
             .digits = 6,
             .step = 0.001,
             .summary = "rwpo: the layer step (threshold lambda h, bandwidth sqrt(2h/beta))",
             .tooltip = "<b>RWPO h</b> — layer step: threshold λh and kernel bandwidth √(2h/β). Choose "
                        "T/steps = h with the Euler integrator for one layer per step. h &gt; 0.",
             .anchor = "docs/math/attention.md#rwpo"},
            FS_FIELD(attention.h));
        add({.pointer = "/attention/rwpo/kernel",
             .keyword = "rwpo_kernel",
             .label = "Kernel",
             .kind = ParamKind::Choice,
             .choices = names::kRwpoKernel,
             .choiceNoun = "RWPO kernel",
             .edit = ParamEdit::Live,
             .summary = "rwpo: the interaction kernel (corrected, as printed, per coordinate)",
             .tooltip = "<b>RWPO kernel</b> U, with w = softmax<sub>j</sub> U(x, x<sub>j</sub>): "
                        "<b>corrected</b> U(x, y) = −(β/4h) |x − y|² + (β/2) M<sub>λh</sub>(y), M the "
                        "Huber–Moreau envelope of λ‖·‖<sub>1</sub>; <b>as printed</b>: the paper's formula "
                        "with S<sub>λh</sub>(x) (a typo); <b>per coordinate</b>: one softmax per coordinate "
                        "(the authors' MATLAB code).",
             .anchor = "docs/math/flows.md#kernel-typo"},
            FS_FIELD(attention.rwpoKernel));

        // ---- integrator (live)
        add({.pointer = "/integrator/method",
             .keyword = "method",
             .label = "Method",
             .kind = ParamKind::Choice,
             .choices = names::kMethod,
             .choiceNoun = "integrator method",
             .edit = ParamEdit::Live,
             .summary = "the integrator: euler, heun, rk4 or adaptive dopri5",
             .tooltip = "<b>Integrator</b> — <b>euler</b>: x ← x + hΓ(x) (one Transformer layer per step); "
                        "<b>heun</b>: RK2; <b>rk4</b>: classical Runge–Kutta; <b>dopri5</b>: adaptive "
                        "Dormand–Prince 5(4) (rtol, atol), landing on every nominal time.",
             .anchor = "docs/scene.md#integrator"},
            FS_FIELD(integrator.method));
        add({.pointer = "/integrator/T",
             .keyword = "T",
             .label = "T",
             .unit = "time",
             .kind = ParamKind::Number,
             .range = above(0),
             .edit = ParamEdit::Live,
             .step = 0.5,
             .summary = "the horizon: the run covers [0, T]",
             .tooltip = "<b>Horizon T</b> — the run covers t ∈ [0, T]; time is depth (x ← x + hΓ(x) is one "
                        "residual layer). T &gt; 0.",
             .anchor = "docs/scene.md#integrator"},
            FS_FIELD(integrator.T));
        add({.pointer = "/integrator/steps",
             .keyword = "steps",
             .label = "Steps",
             .kind = ParamKind::Integer,
             .range = closed(1, kIntMax),
             .edit = ParamEdit::Live,
             .summary = "M: the nominal step is h = T / M",
             .tooltip = "<b>Steps M</b> — nominal step h = T/M; fixed-step methods take exactly M steps, "
                        "dopri5 lands on each nominal time.",
             .anchor = "docs/scene.md#integrator"},
            FS_FIELD(integrator.steps));
        add({.pointer = "/integrator/rtol",
             .keyword = "rtol",
             .label = "rtol",
             .kind = ParamKind::Number,
             .range = above(0),
             .edit = ParamEdit::Live,
             .summary = "dopri5: the relative tolerance (at least 100 ulps of float64)",
             .tooltip = "<b>rtol</b> — Dormand–Prince relative tolerance.",
             .anchor = "docs/scene.md#integrator"},
            FS_FIELD(integrator.rtol));
        add({.pointer = "/integrator/atol",
             .keyword = "atol",
             .label = "atol",
             .kind = ParamKind::Number,
             .range = above(0),
             .edit = ParamEdit::Live,
             .summary = "dopri5: the absolute tolerance",
             .tooltip = "<b>atol</b> — Dormand–Prince absolute tolerance.",
             .anchor = "docs/scene.md#integrator"},
            FS_FIELD(integrator.atol));
        add({.pointer = "/integrator/divergence_norm",
             .keyword = "divergence_norm",
             .label = "Divergence norm",
             .kind = ParamKind::Number,
             .range = above(0),
             .edit = ParamEdit::Live,
             .summary = "stop (a diverged event) when max_i |x_i| exceeds it",
             .tooltip = "<b>Divergence norm</b> — the run stops with a “diverged” event when max<sub>i</sub> "
                        "|x<sub>i</sub>| exceeds it.",
             .anchor = "docs/scene.md#integrator"},
            FS_FIELD(integrator.divergenceNorm));
        add({.pointer = "/integrator/min_step",
             .keyword = "min_step",
             .label = "Min step",
             .kind = ParamKind::Number,
             .range = above(0),
             .edit = ParamEdit::Live,
             .summary = "dopri5: stop when the step falls below it",
             .tooltip = "<b>Min step</b> — Dormand–Prince stops with a “step collapse” event when its step "
                        "falls below it.",
             .anchor = "docs/scene.md#integrator"},
            FS_FIELD(integrator.minStep));

        // ---- output (restart)
        add({.pointer = "/output/every",
             .keyword = "every",
             .label = "Record every",
             .kind = ParamKind::Integer,
             .range = closed(1, kIntMax),
             .summary = "record every K-th nominal step (plus t = 0 and the final state)",
             .tooltip = "<b>Record every</b> K-th nominal step, plus t = 0 and the final state.",
             .anchor = "docs/scene.md#output"},
            FS_FIELD(output.every));
        add({.pointer = "/output/entropy",
             .keyword = "entropy",
             .label = "Entropy and energy",
             .kind = ParamKind::Boolean,
             .summary =
                 "compute the attention entropy and interaction energy at records (extra O(N^2) passes)",
             .tooltip = "<b>Entropy and energy</b> — the attention entropy and the interaction energy at "
                        "every record (extra O(N²) passes).",
             .anchor = "docs/scene.md#output"},
            FS_FIELD(output.entropy));
        add({.pointer = "/output/cluster_tol",
             .keyword = "cluster_tol",
             .label = "Cluster tolerance",
             .kind = ParamKind::Number,
             .range = above(0),
             .summary = "tokens closer than this belong to one cluster",
             .tooltip = "<b>Cluster tolerance</b> — tokens closer than this belong to one cluster.",
             .anchor = "docs/scene.md#output"},
            FS_FIELD(output.clusterTol));
        add({.pointer = "/output/rank_tol",
             .keyword = "rank_tol",
             .label = "Rank tolerance",
             .kind = ParamKind::Number,
             .range = {0.0, 1.0, true, true},
             .summary = "numerical rank: covariance eigenvalues > rank_tol x the largest",
             .tooltip = "<b>Rank tolerance</b> — the numerical rank counts the covariance's eigenvalues "
                        "above rank_tol × the largest.",
             .anchor = "docs/scene.md#output"},
            FS_FIELD(output.rankTol));

        // ---- moments (restart)
        add({.pointer = "/moments/method",
             .keyword = "moment_method",
             .label = "Moment solver",
             .kind = ParamKind::Choice,
             .choices = names::kMomentMethod,
             .choiceNoun = "moment method",
             .summary =
                 "Gaussian mode: adaptive Dormand-Prince on a square-root factor, or the paper's Euler",
             .tooltip = "<b>Moment solver</b> — <b>adaptive</b>: Dormand–Prince 5(4) on a square-root factor "
                        "Σ = R Rᵀ; <b>paper_euler</b>: the authors' projected Euler step.",
             .anchor = "docs/scene.md#moments-gaussian-mode"},
            FS_FIELD(moments.method));
        add({.pointer = "/moments/step",
             .keyword = "moment_step",
             .label = "Euler step τ",
             .kind = ParamKind::Number,
             .range = above(0),
             .step = 0.01,
             .summary = "paper_euler: the step tau",
             .tooltip = "<b>Euler step τ</b> of paper_euler.",
             .anchor = "docs/scene.md#moments-gaussian-mode"},
            FS_FIELD(moments.step));
        add({.pointer = "/moments/tol_low",
             .keyword = "tol_low",
             .label = "Converged below",
             .kind = ParamKind::Number,
             .range = atLeast(0),
             .summary = "stop converged when |dSigma/dt|_F < tol_low (0: never)",
             .tooltip = "<b>Converged below</b> — stop when ‖Σ′‖<sub>F</sub> &lt; tol_low; 0 never.",
             .anchor = "docs/scene.md#moments-gaussian-mode"},
            FS_FIELD(moments.tolLow));
        add({.pointer = "/moments/tol_high",
             .keyword = "tol_high",
             .label = "Blow-up above",
             .kind = ParamKind::Number,
             .range = above(0),
             .summary = "stop blow-up when tr Sigma > tol_high",
             .tooltip = "<b>Blow-up above</b> — stop when tr Σ &gt; tol_high.",
             .anchor = "docs/scene.md#moments-gaussian-mode"},
            FS_FIELD(moments.tolHigh));
        add({.pointer = "/moments/max_iter",
             .keyword = "max_iter",
             .label = "Max steps",
             .kind = ParamKind::Integer,
             .range = closed(1, 1e9),
             .summary = "paper_euler: at most this many steps",
             .tooltip = "<b>Max steps</b> of paper_euler.",
             .anchor = "docs/scene.md#moments-gaussian-mode"},
            FS_FIELD(moments.maxIter));
        return t;
    }();
    return params;
}

#undef FS_FIELD

std::string_view lastPart(std::string_view pointer) {
    return pointer.substr(pointer.rfind('/') + 1);
}

} // namespace

// ---------------------------------------------------------------------------------------------------------
// Entries

std::string SceneParam::key() const {
    std::string k(pointer.substr(1));
    std::replace(k.begin(), k.end(), '/', '.');
    return k;
}

std::string_view SceneParam::name() const {
    return lastPart(pointer);
}

std::string_view SceneParam::parent() const {
    return pointer.substr(0, pointer.rfind('/'));
}

std::span<const SceneParam> sceneParams() {
    return table();
}

const SceneParam* findSceneParam(std::string_view pointer) {
    for (const SceneParam& p : table())
        if (p.pointer == pointer) return &p;
    return nullptr;
}

const SceneParam& sceneParam(std::string_view pointer) {
    if (const SceneParam* p = findSceneParam(pointer)) return *p;
    throw std::logic_error("no scene parameter at " + std::string(pointer));
}

// ---------------------------------------------------------------------------------------------------------
// Values

std::string acceptedText(const SceneParam& p) {
    const ParamRange& r = p.range;
    const std::string noun = p.kind == ParamKind::Integer ? "integer" : "number";
    auto bound = [&](double v) { return numberText(v); };
    switch (p.kind) {
    case ParamKind::Boolean:
        return "boolean";
    case ParamKind::Seed:
        return "integer in [0, 18446744073709551615]";
    case ParamKind::Choice: {
        std::string text = "one of ";
        for (std::size_t i = 0; i < p.choices.size(); ++i)
            text += (i ? ", " : "") + std::string(p.choices[i]);
        return text;
    }
    case ParamKind::Number:
    case ParamKind::Integer:
        break;
    }
    const bool hasLow = r.low > -ParamRange::kInf, hasHigh = r.high < ParamRange::kInf;
    std::string text = noun;
    if (hasLow && hasHigh)
        text += std::string(" in ") + (r.lowOpen ? "(" : "[") + bound(r.low) + ", " + bound(r.high) +
                (r.highOpen ? ")" : "]");
    else if (hasLow)
        text += (r.lowOpen ? " > " : " >= ") + bound(r.low);
    else if (hasHigh)
        text += (r.highOpen ? " < " : " <= ") + bound(r.high);
    if (p.nullable) text += " or null";
    return text;
}

Json readParam(const SceneParam& p, const JsonReader& j) {
    switch (p.kind) {
    case ParamKind::Boolean:
        return Json(j.boolean());
    case ParamKind::Seed:
        return Json(j.unsignedInteger());
    case ParamKind::Choice:
        return Json(j.choice(p.choiceNoun, p.choices));
    case ParamKind::Integer:
        return Json(j.integer((long long)p.range.low, (long long)p.range.high));
    case ParamKind::Number:
        break;
    }
    if (p.nullable && j.json().is_null()) return Json(nullptr);
    const double v = j.number();
    if (!p.range.contains(v)) j.fail("expected " + acceptedText(p) + ", got " + j.describe());
    return Json(v);
}

Json paramWritten(const SceneParam& p, Json value) {
    if (p.kind == ParamKind::Choice) return Json(std::string(p.choices[value.get<std::size_t>()]));
    return value;
}

Json paramJson(const SceneParam& p, const Scene& s) {
    return paramWritten(p, p.get(s));
}

Json paramDefault(const SceneParam& p) {
    static const Scene defaults;
    return paramJson(p, defaults);
}

// ---------------------------------------------------------------------------------------------------------
// Sections

void readSceneParams(const JsonReader& section, std::span<const std::string_view> structured, Scene& s) {
    section.expectObject();
    const std::string_view at = section.pointer();
    // The members this object may have: its parameters, its objects of parameters, and `structured`.
    std::vector<std::string_view> allowed(structured.begin(), structured.end());
    std::vector<std::string_view> objects;
    for (const SceneParam& p : table()) {
        if (!pointerIsUnder(p.pointer, at)) continue;
        const std::string_view rest = p.pointer.substr(at.size() + 1);
        const std::string_view member = rest.substr(0, rest.find('/'));
        if (std::find(allowed.begin(), allowed.end(), member) == allowed.end()) {
            allowed.push_back(member);
            if (member.size() != rest.size()) objects.push_back(member);
        }
    }
    section.expectObject(allowed);
    for (const SceneParam& p : table()) {
        if (p.parent() != at) continue;
        if (auto v = section.find(p.name()))
            p.set(s, readParam(p, *v));
        else if (p.required)
            section.failAt(p.name(), "required field is missing (" + std::string(p.summary) + ", " +
                                         (p.kind == ParamKind::Choice ? "" : "an ") + acceptedText(p) + ")");
    }
    for (std::string_view member : objects)
        if (std::find(structured.begin(), structured.end(), member) == structured.end())
            if (auto v = section.find(member)) readSceneParams(*v, {}, s);
}

void writeSceneParams(std::string_view section, const Scene& s, Json& out) {
    for (const SceneParam& p : table()) {
        if (!p.written || !pointerIsUnder(p.pointer, section)) continue;
        out[Json::json_pointer(std::string(p.pointer.substr(section.size())))] = paramJson(p, s);
    }
}

} // namespace flowscope
