// Flowscope engine: the RWPO-L1 sparse-transformer layer of a generative flow (Han, Osher, Li;
// docs/math/flows.md#rwpo-layer, #rwpo-jacobian), recorded on the matrix tape so that training differentiates
// it in X, λ and β.
//
// Tokens are the columns of X (d x N); N is the batch. Every token is a query, and the keys y_l are the same
// tokens (attention across the samples of the batch; l = j included unless leaveOneOut). One sub-step is
//     F(x) = x + 1/2 G(x),   G(x) = S(x) - m(x),   m(x) = sum_l w_l(x) y_l,   w(x) = softmax_l U(x, y_l),
//     S(x)_i = sign(x_i) max(|x_i| - λh, 0)              (soft thresholding WITH its sign)
// with the same sign in generation (22) and in the backward/density pass (23) (docs/math/flows.md#layers,
// #rwpo-direction). Kernels:
//   Corrected (default)  U(x, y) = -β/(4h) |x - y|² + β/2 M(y),  M(y) = sum_i huber(y_i) the Moreau
//                        envelope of λ|.|₁ (ad::huberL1). The logits are the features' dot product of the
//                        expansion (β/(2h)) x.y - β/(4h)|x|² - β/(4h)|y|² + β/2 M(y), max-subtracted in the
//                        softmax.
//   AsPrinted            eq. (22) literally, U = -β/2 ((|x-y|² - |S(x)-y|²)/(2h) - λ|S(y)|₁): logits
//                        (β/(2h)) (x - S(x)).y plus the key bias (βλ/2) |S(y)|₁. Linear in y, so it has no
//                        locality; at λ = 0 the weights are uniform (the typo:
//                        docs/math/flows.md#kernel-typo).
//   Separable            one 1-D corrected softmax per coordinate (the authors' score_L1.m).
//
// logDetTerm is the per-token log-density increment of the sub-step with the keys FROZEN (the field
// x -> F(x; X) that a density ODE integrates, docs/math/flows.md#rwpo-jacobian): with κ = β/(4h),
// D = diag(1{|x_i| > λh}), C_w = sum_l w_l (y_l - m)(y_l - m)^T and n_act = tr D,
//   first order (paper, eq. (24)): 1/2 div G =
//     Corrected   1/2 n_act - κ tr C_w
//     AsPrinted   1/2 n_act - κ sum_{i inactive} (C_w)_ii
//     Separable   1/2 n_act - κ sum_i Var_{w_i}(y_i)
//   exactLogDet: log det J_F (foldGuardedLog: a folded token, det <= 0, is penalized, not counted as |det|)
//     Corrected   J_F = I + D/2 - κ C_w              (d = 2, 3)
//     AsPrinted   J_F = I + D/2 - κ C_w (I - D)      (d = 2, 3)
//     Separable   J_F = diag(1 + D_ii/2 - κ Var_i)   (diagonal: exact for any d)
// n_act is piecewise constant: it carries no gradient. The VALUE is the frozen-key quantity; its gradient
// flows through queries and keys alike (both depend on the parameters through earlier layers).
// activeSetGradient adds to logDetTerm the zero-valued Σ_i Δ_i (s_i - [s_i]), s_i = σ((x_i - λh)/ε_i) +
// σ((-x_i - λh)/ε_i) the indicator 1{|x_i| > λh} smoothed face by face, [.] a constant of the same value, Δ_i
// the term's jump when coordinate i turns active: its gradient is a kernel estimate, bandwidth ε_i, of the
// boundary term of d/dλ (and d/dx) of the expected log-det (docs/math/flows.md#active-set-gradient).
//
// Cost per layer O(N² d) time but only O(N d) memory: the softmax and the weighted moments are one
// ad::attention node, which keeps no N x N matrix (it recomputes its weights in backward()).
#pragma once

#include "engine/autodiff/Tape.h"

#include <Eigen/Core>

namespace flowscope::flows {

enum class RwpoKernel { Corrected, AsPrinted, Separable };

struct RwpoOptions {
    RwpoKernel kernel = RwpoKernel::Corrected;
    bool leaveOneOut = false; // exclude the query's own key (not in the paper; for small-N demos)
    bool exactLogDet = false; // log det J_F instead of 1/2 div G (vector kernels: d = 2 or 3)
    double h = 1.0 / 48.0;    // the layer's step: threshold λh, kernel variance s² = 2h/β
    // Adds the active set's boundary term to the gradient of logDetTerm (its value is unchanged): the
    // log-det jumps where a coordinate crosses |x_i| = λh, which the pathwise gradient cannot see
    // (docs/math/flows.md#active-set-gradient). Flows turn it on with a trained λ.
    bool activeSetGradient = false;
    double activeSetWidth = 0; // its kernel's standard deviation in x; 0: Silverman's rule on the keys
};

template <class S> struct RwpoOutputs {
    ad::Var<S> y;          // d x N: x + 1/2 (S_{λh}(x) - sum_l w_l(x) x_l)
    ad::Var<S> logDetTerm; // 1 x N: 1/2 div G (first order), or foldGuardedLog(det J_F) (exactLogDet)
};

// Records one RWPO sub-step on `tape`. X is d x N; lambda (>= 0, e.g. a softplus) and beta (> 0) are 1x1.
// `keys` (d x N_k), when given, replaces the queries as the keys y_l: a density query then sees a reference
// batch's tokens instead of its own (the density grid, docs/math/flows.md#density). queriesAt >= 0 says that
// the queries are keys queriesAt .. queriesAt + N - 1 (one part of a batch split across tapes, BatchSplit.h):
// leave-one-out then leaves query j's own key, key queriesAt + j, out. Throws std::invalid_argument on bad
// shapes or values, for exactLogDet with a vector kernel and d > 3 or d = 1, and for leaveOneOut with N < 2
// or with separate keys among which the queries are not. Instantiated for float and double.
template <class S>
RwpoOutputs<S> recordRwpo(ad::Tape<S>& tape, ad::Var<S> X, ad::Var<S> lambda, ad::Var<S> beta,
                          const RwpoOptions& options, ad::Var<S> keys = {}, ad::Index queriesAt = -1);

// The log of a sub-step's Jacobian determinant where the sub-step may fold: log(det) for det >= kFoldFloor,
// continued below by its tangent, log δ + (det - δ)/δ (δ = kFoldFloor). The loss stays finite where the
// determinant reaches 0 or goes negative, and its gradient keeps pushing the determinant up, out of the
// fold; a NaN would reject every batch holding one such point. (The drift's exact log-det and the RWPO
// layer's exactLogDet both use it.) Between 0 and δ it overstates the density,
// at points where the map is nearly singular.
constexpr double kFoldFloor = 1e-3;
template <class S> ad::Var<S> foldGuardedLog(ad::Var<S> det);

// ---- Diagnostics (no tape; computed in double) ----

// det J_F of the frozen-key sub-step at every token (1 x N; any d, J_F as above), for the "folding" read-out;
// the keys are the tokens themselves, or `keys` (d x N_k; no leave-one-out then, as in recordRwpo).
Eigen::RowVectorXd rwpoJacobianDeterminants(const Eigen::MatrixXd& X, double lambda, double beta,
                                            const RwpoOptions& options,
                                            const Eigen::MatrixXd* keys = nullptr);
Eigen::RowVectorXd rwpoJacobianDeterminants(const Eigen::MatrixXf& X, double lambda, double beta,
                                            const RwpoOptions& options);

// Folding (docs/math/flows.md#folding): det J_F <= 0 where the weights are spread wider than the kernel
// (C_w beyond 2 s² I, typically a query in a low-density gap between clusters): the map folds and the
// first-order trace hides it.
struct RwpoFolding {
    double minDet = 0;         // min over tokens of det J_F
    double foldedFraction = 0; // fraction of tokens with det J_F <= 0
};
RwpoFolding rwpoFolding(const Eigen::RowVectorXd& determinants);
RwpoFolding rwpoFolding(const Eigen::MatrixXd& X, double lambda, double beta, const RwpoOptions& options);
RwpoFolding rwpoFolding(const Eigen::MatrixXf& X, double lambda, double beta, const RwpoOptions& options);

// Kernel resolution rule of thumb (2-D): tokens within one bandwidth, N π s² / area with s² = 2h/β. The
// layer approximates a score only when this is well above 1 (paper: N = 4096, s ≈ 0.2, 8 x 8 gives ≈ 8).
inline double rwpoExpectedNeighbours(double N, double h, double beta, double area) {
    return N * 3.14159265358979323846 * (2.0 * h / beta) / area;
}

} // namespace flowscope::flows
