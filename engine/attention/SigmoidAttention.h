// Unnormalized sigmoid attention (docs/math/attention.md#unnormalized), with the empirical measure's 1/N:
//   sigmoid: Gamma(x_i) = (1/N) sum_j V sigma(s_ij) x_j, sigma(z) = 1/(1+e^{-z}),
//   s_ij = gamma x_j^T A x_i, A = K^T Q, summed over heads; masked: j <= i (still 1/N, the measure form).
// Not Gaussian-preserving; not normalized, so no attention entropy.
#pragma once

#include "engine/attention/KernelAttention.h"

namespace flowscope {

using SigmoidAttention = DotProductAttention<Weighting::Sigmoid>;

} // namespace flowscope
