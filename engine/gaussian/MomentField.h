// Flowscope engine: the Gaussian (moment) dynamics of the Transformer PDE (docs/math/gaussian.md).
//
// On a Gaussian cloud mu = N(alpha, Sigma) every Gaussian-preserving attention field is affine,
//     Gamma_mu(x) = b + L x,
// so the affine flow pushes Gaussians to Gaussians and (docs/math/gaussian.md#affine)
//     alpha' = b + L alpha,      Sigma' = L Sigma + Sigma L^T.
// A variant only says how to compute (b, L) from (alpha, Sigma); all formulas are inverse-free, so they keep
// working as Sigma loses rank. Per head h (A_h = gamma_h K_h^T Q_h with gamma_h the score scale of
// engine/attention/KernelAttention.h: beta, optionally / sqrt(k)); heads are summed:
//   softmax      b = V alpha,                        L = V Sigma A                           (Lemma 4.1)
//   linear       b = 0,                              L = V (Sigma + alpha alpha^T) A          (pure)
//   lin,eps      b = V alpha / eps,                  L = V Sigma A
//   l2           b = V (I + 2 Sigma G)^{-1} alpha,   L = 2 V (I + 2 Sigma G)^{-1} Sigma A
//                (G = gamma K^T K; corrected eq (19), E1)
//   Sinkhorn     b = (V/eps)(alpha - M^{-1} Sigma A alpha),  L = (V/eps) M^{-1} Sigma A,
//                M = (Sigma A Sigma A^T + eps^2/4 I)^{1/2} + eps/2 I   (M^{-1} Sigma A Sigma = S_yx)
//   drifting     Gamma = Gamma^G_nu - Gamma^G_mu: L = (Sigma + I)^{-1} - (Sigma_nu + I)^{-1},
//                b = (Sigma_nu + I)^{-1} m_nu - (Sigma + I)^{-1} alpha   (App. B, Prop 11)
// Each variant's derivation: docs/math/gaussian.md#softmax .. #drifting; the errata (E1): #e1.
// exp, ReLU, sigmoid, RWPO and masked attention do not preserve Gaussians
// (docs/math/gaussian.md#not-gaussian): makeMomentField refuses them.
#pragma once

#include "engine/core/Types.h"
#include "engine/scene/Scene.h"

#include <memory>
#include <string>

namespace flowscope {

struct GaussianState {
    Vec mean; // alpha (size d)
    Mat cov;  // Sigma (d x d, symmetric positive semi-definite)
};

// Gamma(x) = b + L x on the Gaussian.
struct AffineField {
    Vec b;
    Mat L;
};

class MomentField {
  public:
    virtual ~MomentField() = default;
    // The affine field on N(mean, cov) at time t.
    virtual AffineField affine(double t, const Vec& mean, const Mat& cov) const = 0;
    virtual std::string name() const = 0;

    // alpha' = b + L alpha, Sigma' = L Sigma + Sigma L^T (returned in a GaussianState).
    GaussianState rates(double t, const GaussianState& s) const;
};

// The moment field of an attention spec in dimension d. Throws SceneError (pointer "/attention/type" or the
// offending field) when the variant has no closed Gaussian dynamics or a parameter is unusable.
std::unique_ptr<MomentField> makeMomentField(const Scene& scene);

} // namespace flowscope
