// Softmax attention (Castin et al. eqs (4),(5); docs/math/attention.md#softmax); masked/causal when
// spec.masked (eq (8); docs/math/attention.md#masked).
//
//   P_ij = exp(s_ij) / sum_l exp(s_il),  s_ij = gamma (Q x_i).(K x_j) = gamma x_j^T A x_i,  A = K^T Q,
//   Gamma(x_i) = sum_h V_h sum_j P^h_ij x_j,
// gamma = beta (or beta / sqrt(k) with scale_by_sqrt_k). Masked: the sums run over j <= i only.
// Streaming (online) softmax per query; never an N x N matrix.
#pragma once

#include "engine/attention/KernelAttention.h"

namespace flowscope {

using SoftmaxAttention = DotProductAttention<Weighting::Softmax>;

} // namespace flowscope
