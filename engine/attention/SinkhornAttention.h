// Sinkhorn attention (Sinkformers; Castin et al. eqs (6),(7); docs/math/attention.md#sinkhorn).
//
// Cost c(x,y) = gamma |Q x - K y|^2 / (2 eps). The |Qx|^2 and |Ky|^2 parts are absorbed by the potentials, so
// the plan depends only on the score s_ij = gamma x_j^T A x_i / eps (A = K^T Q; Remark 5.2). In the log
// domain,
//   f_i = -log (1/N) sum_j exp(g_j + s_ij),     g_j = -log (1/N) sum_i exp(f_i + s_ij),
//   P_ij = (1/N) exp(f_i + g_j + s_ij)  (bistochastic at convergence: rows and columns sum to 1),
//   Gamma(x_i) = (1/eps) sum_h V_h sum_j P^h_ij x_j.
// Each potential update is one streamed log-sum-exp pass over all pairs (memory O(N d)). Iterations stop when
// the column marginals are within `tol` of 1 (rows are exact after the final f-update), or after
// `iterations` passes; the reached error is reported in diagnostics(). The potentials of the previous call
// are the warm start of the next (tokens move little between calls). Float32 floors the tolerance at 2e-6;
// tol = 0 runs every iteration in both precisions.
#pragma once

#include "engine/attention/KernelAttention.h"

#include <vector>

namespace flowscope {

class SinkhornAttention : public SoftmaxRowField {
  public:
    using SoftmaxRowField::SoftmaxRowField;
    void velocity(double t, const Tokens& X, Tokens& dX) override;
    std::string name() const override { return "sinkhorn"; }
    FieldDiagnostics diagnostics() const override { return diag_; }

    // Potentials (f, g) of head h from the last velocity evaluation.
    const Vec& rowPotential(int h) const { return f_[std::size_t(h)]; }
    const Vec& columnPotential(int h) const { return g_[std::size_t(h)]; }
    // Score matrix B of head h at time t: s_ij = x_j^T B x_i.
    Mat scoreMatrix(const HeadParams& head) const;

  protected:
    // The plan's rows, renormalized (they sum to 1/N up to the tolerance): the first head's scores with the
    // column potential g as key bias, from the last velocity evaluation over tokens as many as X's.
    std::optional<HeadSetup> distributionHead(double t, const Tokens& X) const override;
    bool causalDistribution() const override { return false; } // the plan is never masked

  private:
    // Solves for the potentials of one head; returns the final column-marginal error.
    double solve(const Mat& B, const Tokens& X, Vec& f, Vec& g, int& iterations) const;

    std::vector<Vec> f_, g_;
    FieldDiagnostics diag_;
};

} // namespace flowscope
