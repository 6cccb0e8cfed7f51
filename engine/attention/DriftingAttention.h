// Gaussian-kernel drifting field (Castin et al. App. B, Prop 11; docs/math/attention.md#drifting).
//
//   Gamma(x_i) = Gamma^G_nu(x_i) - Gamma^G_X(x_i),
//   Gamma^G_X(x) = sum_j k(x, x_j) x_j / sum_j k(x, x_j),   k(x, y) = exp(-|x - y|^2 / 2),
//   Gamma^G_nu(x) = m_nu + Sigma_nu (Sigma_nu + I)^{-1} (x - m_nu)
//                                              (nu = N(m_nu, Sigma_nu), in closed form).
// The self term is the l2 field with Q = K = I/sqrt(2), V = I (streamed, never an N x N matrix); the
// tokens drift from their own kernel mean towards the target's. The bandwidth is fixed at 1 (beta unused).
#pragma once

#include "engine/attention/KernelAttention.h"

namespace flowscope {

class DriftingAttention : public SoftmaxRowField {
  public:
    using SoftmaxRowField::SoftmaxRowField;
    void velocity(double t, const Tokens& X, Tokens& dX) override;
    std::string name() const override { return "drifting"; }

  protected:
    // The self term's kernel (never masked).
    std::optional<HeadSetup> distributionHead(double t, const Tokens& X) const override;
    bool causalDistribution() const override { return false; }
};

} // namespace flowscope
