// Linear attention (no softmax; docs/math/attention.md#linear).
//
//   pure:     Gamma(x_i) = (1/N) sum_j V x_j (x_j^T gamma A x_i) = V M2 gamma A x_i,
//             M2 = (1/N) sum_j x_j x_j^T,
//   lin,eps:  Gamma(x_i) = (1/eps) V m + V (M2 - m m^T) gamma A x_i,   m = (1/N) sum_j x_j,
// summed over heads (A = K^T Q). Because the field is affine in x for any token cloud, it is evaluated
// exactly in O(N d^2) through the moments; particle and Gaussian (moment) modes agree at every N
// (T13, docs/math/attention.md#t13).
// Always computed in double (it costs nothing).
#pragma once

#include "engine/attention/VelocityField.h"

namespace flowscope {

class LinearAttention : public SpecField {
  public:
    LinearAttention(const AttentionSpec& spec, int /*d*/) : SpecField(spec) {}
    void velocity(double t, const Tokens& X, Tokens& dX) override;
    std::string name() const override { return spec_.linearEps ? "linear (eps)" : "linear"; }
};

} // namespace flowscope
