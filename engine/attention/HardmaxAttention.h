// Hardmax attention, the beta -> infinity limit of softmax (Alcalde, Geshkovski, Ruiz-Balet, arXiv
// 2508.09628; docs/math/theory.md#hardmax):
//     Gamma(x_i) = sum_h V_h (1 / |C_i^h|) sum_{j in C_i^h} x_j,   C_i^h = argmax_j (Q_h x_i) . (K_h x_j)
// (j <= i when masked): each token moves toward the mean of the tokens that maximise its score, the cells
// {x : argmax_j <A x, x_j> = k} being Voronoi-like cells of the keys. Ties: scores within 1e-12 of the
// largest (relative to its size) count as maximal, so equal scores share the weight as softmax's limit does.
// Float64 whatever the precision, O(N^2 d) per head.
#pragma once

#include "engine/attention/VelocityField.h"

namespace flowscope {

class HardmaxAttention : public SpecField {
  public:
    HardmaxAttention(const AttentionSpec& spec, int /*d*/) : SpecField(spec) {}
    void velocity(double t, const Tokens& X, Tokens& dX) override;
    std::string name() const override { return spec_.masked ? "masked hardmax" : "hardmax"; }
};

} // namespace flowscope
