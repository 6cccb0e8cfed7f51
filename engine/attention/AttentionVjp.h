// Flowscope engine: one attention head's velocity and its vector-Jacobian product
// (docs/math/attention-vjp.md).
//
// The field of one head on tokens X (N x d, rows x_i), keys and values the tokens themselves:
//     y_i = V a_i,   a_i = sum_j c_ij x_j,   s_ij = q_i . x_j + b_j,   q_i = B x_i,
//     softmax  B = beta K^T Q,    b = 0,                  c_ij = exp(s_ij) / sum_l exp(s_il)
//     l2       B = 2 beta K^T Q,  b_j = -beta |K x_j|^2,  c_ij as softmax
//              (= exp(-beta |Q x_i - K x_j|^2) / Z_i)
//     exp      B = beta K^T Q,    b = 0,                  c_ij = exp(s_ij) / N
//     relu     B = beta K^T Q,    b = 0,                  c_ij = max(s_ij, 0) / N
//     sigmoid  B = beta K^T Q,    b = 0,                  c_ij = 1 / (1 + exp(-s_ij)) / N
// and, with sphere, the tangent part v_i = P_i y_i, P_i = I - x_i x_i^T / |x_i|^2 (x_i = 0: v_i = y_i).
// Every sum over j includes j = i (a token attends to itself), as the particle fields do.
//
// attentionForward runs the streaming kernel (engine/attention/StreamRunner.h) and keeps, per query, a_i and
// one shift mu_i such that c_ij = lambda_i exp(s_ij - mu_i) for the exponential kinds (softmax, l2: the row's
// log-normaliser log Z_i; exp: log N): O(N d) memory. attentionBackward recomputes every c_ij from them in
// two streamed sweeps (one over the keys of each query, one over the queries of each key), so the N x N
// weights are never stored. float64 runs in double throughout; float32 runs the forward on the float32 SIMD
// kernel and the backward's sweeps in float (block sums gathered in double), or for softmax at d = 3 or 4 on
// the tape's SIMD attention kernel (engine/autodiff/AttentionKernel.h).
#pragma once

#include "engine/core/Types.h"
#include "engine/scene/Scene.h"

namespace flowscope {

// The head: its kind (Softmax, L2, Exp, Relu or Sigmoid), Q and K (k x d), V (d x d), beta, and the sphere
// projection.
struct AttentionHead {
    AttentionType type = AttentionType::Softmax;
    Mat Q, K, V;
    double beta = 1.0;
    bool sphere = false;
};

// What the backward needs from the forward: a_i (N x d) and the per-query shift mu_i (N; see above).
struct AttentionSaved {
    Tokens avg;
    Vec shift;
};

// The gradients of <G, v> for an output cotangent G (N x d).
struct AttentionGrads {
    Tokens dX;
    Mat dQ, dK, dV;
    double dBeta = 0.0;
};

// Throws std::invalid_argument naming the argument for a kind without a VJP or shapes that do not fit X.
void checkAttentionHead(const AttentionHead& head, const Tokens& X);

// v (N x d), in double, from a pass in `precision`; fills `saved` when not null.
Tokens attentionForward(const AttentionHead& head, const Tokens& X, Precision precision,
                        AttentionSaved* saved = nullptr);

// The VJP at X for the cotangent G, from the forward's `saved` (run in the same precision).
AttentionGrads attentionBackward(const AttentionHead& head, const Tokens& X, const AttentionSaved& saved,
                                 const Tokens& G, Precision precision);

} // namespace flowscope
