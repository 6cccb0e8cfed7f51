// Unnormalized exp attention (docs/math/attention.md#unnormalized), with the 1/N of the empirical measure:
//   exponential: Gamma(x_i) = (1/N) sum_j V exp(s_ij) x_j
//     (computed as e^{m_i} (1/N) sum_j e^{s_ij - m_i} V x_j; overflow is a real blow-up and is reported as
//     non-finite), s_ij = gamma x_j^T A x_i, A = K^T Q, summed over heads; masked: j <= i (still 1/N, the
//     measure form).
// Not Gaussian-preserving; not normalized, so no attention entropy.
#pragma once

#include "engine/attention/KernelAttention.h"

namespace flowscope {

using ExpAttention = DotProductAttention<Weighting::Exp>;

} // namespace flowscope
