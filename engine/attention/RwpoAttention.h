// RWPO-L1 sparse layer (Han, Osher, Li; docs/math/attention.md#rwpo), as a velocity field.
//
// The layer maps each token x (keys y_l = the current tokens, the query's own key included) to
//     x + 1/2 [ S(x) - sum_l softmax_l(U(x, y_l)) y_l ],   S(x)_c = sign(x_c) max(|x_c| - lambda h, 0),
// so the velocity is Gamma(x) = (S(x) - m(x)) / (2h): one Euler step of size h IS one layer. Kernels:
//   corrected (default):  U(x,y) = -beta/(4h) |x - y|^2 + beta/2 M(y),  M(y) = sum_c huber(y_c),
//                         huber(s) = s^2/(2h) if |s| <= lambda h, else lambda |s| - lambda^2 h / 2;
//                         as attention: scores (beta/(2h)) x.y plus key bias -beta/(4h)|y|^2 + beta/2 M(y);
//   as printed (eq (3)):  U(x,y) = -beta/2 ((|x-y|^2 - |S(x)-y|^2)/(2h) - lambda |S(y)|_1), i.e. scores
//                         (beta/(2h)) (x - S(x)).y plus key bias (beta lambda / 2) |S(y)|_1 (x-only terms
//                         cancel);
//   per coordinate:       one 1-D softmax per coordinate c with the corrected kernel on (x_c, y_c)
//                         (the authors' MATLAB score_L1.m).
// With lambda = 0 the layer is pure diffusion: the variance grows by about 2h/beta per layer.
#pragma once

#include "engine/attention/KernelAttention.h"

namespace flowscope {

class RwpoAttention : public SoftmaxRowField {
  public:
    using SoftmaxRowField::SoftmaxRowField;
    void velocity(double t, const Tokens& X, Tokens& dX) override;
    std::string name() const override { return "rwpo"; }

    // Soft thresholding S_{lambda h}, coordinate-wise.
    static Tokens softThreshold(const Tokens& X, double threshold);
    // The vector kernel (corrected or as printed) as an attention head on keys X.
    HeadSetup vectorKernel(const Tokens& X) const;

  protected:
    // The vector kernel; none per coordinate (one distribution per coordinate, not one per token).
    std::optional<HeadSetup> distributionHead(double t, const Tokens& X) const override;
};

} // namespace flowscope
