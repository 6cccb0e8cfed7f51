// Flowscope engine: the 1-D elliptic inverse problem (docs/math/inverse.md#elliptic).
//
//     −α w'' + w = u  on [0, 1],   w'(0) = w'(1) = 0,   u(s) = Σ_{j=1}^{d} c_j exp(−(s − s_j)² / (2·0.1²)),
//
// unknowns the bump amplitudes c ∈ ℝ^d at the centres s_j = (j − ½)/d; observations w at m equispaced
// interior points γ_k = (k + ½)/m, k = 0..m−1. The paper leaves the dimension, α and Γ open; the choices here
// (1-D, α = 0.01, d = 128, m = 32) are explained in the doc.
//
// Discretisation: n nodes s_k = k h, h = 1/(n − 1), second-order differences, the Neumann condition by a
// mirrored ghost node (w_{−1} = w_1). The two boundary rows are halved, which makes the matrix symmetric:
//     A = (α/h²) K + M,   K = tridiag(−1, 2, −1) with K_00 = K_{n−1,n−1} = 1,   M = diag(½, 1, …, 1, ½),
// and A w = M u_h with u_h the source at the nodes. The source at the nodes is Φ c (Φ_kj = the j-th bump at
// s_k), so with B = M Φ and O the linear interpolation from the nodes to Γ,
//     F(c) = O A⁻¹ B c,   Jᵀ v = Bᵀ A⁻¹ Oᵀ v   (A is symmetric: one adjoint solve),
// F is linear in c. A is factorized once in the constructor (sparse LDLᵀ) and G = O A⁻¹ B (m × d) is formed
// there with d solves. Since G does not depend on c, apply and the pullback use it: F(c) = G c and
// Jᵀ v = Gᵀ v cost about 1 µs, where the solve path (one forward solve, one adjoint solve, kept as
// applyBySolve and pullbackBySolve, which the tests compare with G) costs about 15 µs. G also gives the
// closed-form Gaussian posterior.
#pragma once

#include "engine/inverse/ForwardModel.h"

#include <Eigen/SparseCholesky>
#include <Eigen/SparseCore>

namespace flowscope::inverse {

struct EllipticSetup {
    double alpha = 0.01;    // diffusion coefficient
    int centres = 128;      // d, bumps at (j − ½)/d
    double bumpWidth = 0.1; // the bumps' standard deviation
    int observed = 32;      // m, points (k + ½)/m, k = 0..m−1
    int nodes = 257;        // n, h = 1/(n − 1)
};

class Elliptic final : public ForwardModel {
  public:
    // Throws std::invalid_argument for α ≤ 0, fewer than 3 nodes, or no centres or observation points.
    explicit Elliptic(const EllipticSetup& setup = {});

    int parameters() const override { return setup_.centres; }
    int observations() const override { return setup_.observed; }
    std::string name() const override { return "elliptic"; }
    std::unique_ptr<Linearization> linearize(const Vector& c) const override;
    Vector apply(const Vector& c) const override;

    const EllipticSetup& setup() const { return setup_; }
    // The discrete solution w at the nodes for a source given at the nodes: A⁻¹ M u.
    Vector solve(const Vector& sourceAtNodes) const;
    // Jᵀ v = Gᵀ v (F is linear: the same at every c).
    Vector pullback(const Vector& v) const;
    // The same two maps through the factorization: O A⁻¹ B c, and Bᵀ A⁻¹ Oᵀ v (one adjoint solve).
    Vector applyBySolve(const Vector& c) const;
    Vector pullbackBySolve(const Vector& v) const;
    // G = O A⁻¹ B, m × d: F(c) = G c.
    const Matrix& G() const { return G_; }
    double nodeSpacing() const { return h_; }
    double node(int k) const { return k * h_; }
    double observationPoint(int k) const { return (k + 0.5) / setup_.observed; }

  private:
    EllipticSetup setup_;
    double h_ = 0;
    Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>> solver_;
    Matrix B_;                      // n × d: M Φ
    Eigen::SparseMatrix<double> O_; // m × n: linear interpolation
    Matrix G_;
};

} // namespace flowscope::inverse
