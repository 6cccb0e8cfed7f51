// Unnormalized relu attention (docs/math/attention.md#unnormalized), with the 1/N of the empirical measure:
//   ReLU: Gamma(x_i) = (1/N) sum_j V max(s_ij, 0) x_j,
//   s_ij = gamma x_j^T A x_i, A = K^T Q, summed over heads; masked: j <= i (still 1/N, the measure form).
// Not Gaussian-preserving; not normalized, so no attention entropy.
#pragma once

#include "engine/attention/KernelAttention.h"

namespace flowscope {

using ReluAttention = DotProductAttention<Weighting::Relu>;

} // namespace flowscope
