// l2 attention (Kim et al.; docs/math/attention.md#l2).
//
//   P_ij = exp(-gamma |Q x_i - K x_j|^2) / sum_l exp(-gamma |Q x_i - K x_l|^2),
//   Gamma(x_i) = V sum_j P_ij x_j.
// Expanding the square, the |Q x_i|^2 term cancels in the normalization, leaving a dot-product score with a
// key bias:  s_ij = 2 gamma x_j^T A x_i - gamma |K x_j|^2  (A = K^T Q). Depends on Q and K separately.
#pragma once

#include "engine/attention/KernelAttention.h"

namespace flowscope {

class L2Attention : public KernelAttention {
  public:
    using KernelAttention::KernelAttention;
    std::string name() const override { return maskedName("l2"); }

    // -gamma |K x_j|^2 = -x_j^T (gamma K^T K) x_j.
    std::optional<Mat> quadraticKeyBias(const HeadParams& head) const override;

  protected:
    HeadSetup setupHead(const HeadParams& head, const Tokens& X) const override;
};

} // namespace flowscope
