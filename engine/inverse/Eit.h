// Flowscope engine: electrical impedance tomography, the conductivity from boundary currents
// (docs/math/inverse.md#eit).
//
//     −∇·(κ ∇w_p) = 0 on [0, 1]²,   w_p = f_p on the boundary,   observed: κ ∂w_p/∂ν on the boundary,
//     κ(s) = κ0 + Σ_k c_k exp(−|s − s_k|² / (2ℓ²)),
//
// for several voltage patterns f_p. The d = 32 centres s_k form a 4 × 8 grid (32 is not a square):
// s_k = ((i + ½)/4, (j + ½)/8), k = i + 4j. Defaults κ0 = 1, ℓ = 0.1; six patterns f = cos(πqτ/2),
// sin(πqτ/2), q = 1, 2, 3, with τ ∈ [0, 4) the arc length along the boundary, counter-clockwise from the
// corner (0, 0).
//
// Discretisation: finite volumes on n × n square cells of side h = 1/n, w at the cell centres. κ is evaluated
// at the midpoint of each cell face (no averaging of cell values: κ is a known smooth function). The current
// through an interior face between cells a and b is κ_e (w_a − w_b) (face length h over distance h); through
// a boundary face, whose voltage is f_e = f(face midpoint) at distance h/2, it is 2 κ_e (w_a − f_e). Current
// balance in every cell gives A(κ) w = b(κ), A symmetric positive definite (the 5-point matrix). The
// observation on boundary face e is the outward current density
//     y_e = κ_e ∂w/∂ν ≈ 2 κ_e (f_e − w_a) / h,
// exact when w is linear in s. Observations are ordered pattern by pattern, each pattern's 4n boundary faces
// counter-clockwise from (0, 0) (bottom, right, top, left): m = patterns · 4n.
//
// The pullback is adjoint: with L = v·y, A λ_p = ∂L/∂w_p (A is symmetric) and
//     ∂L/∂κ_e = Σ_p [∂L/∂κ_e at fixed w_p − λ_pᵀ ∂(A w_p − b_p)/∂κ_e],   Jᵀ v = Φᵀ ∂L/∂κ,
// with Φ the bumps at the face midpoints. linearize factorizes A(κ) once (sparse LDLᵀ, the cells numbered
// once in the constructor in a fill-reducing order) and solves every pattern with it; pullback reuses the
// same factorization for all the adjoint solves.
//
// κ must be positive: if κ_e ≤ 0 on any face (or c is not finite), F is NaN and so is the pullback.
#pragma once

#include "engine/inverse/ForwardModel.h"

#include <functional>
#include <vector>

namespace flowscope::inverse {

// A boundary voltage pattern, f(s1, s2) at boundary points.
using BoundaryPattern = std::function<double(double s1, double s2)>;

struct EitSetup {
    int cells = 24;                        // n: n × n cells
    double kappa0 = 1;                     // background conductivity
    double bumpWidth = 0.1;                // ℓ
    int centresX = 4;                      // centre grid along s1
    int centresY = 8;                      // and s2: d = centresX · centresY
    std::vector<BoundaryPattern> patterns; // empty: trigonometricPatterns(3)

    // cos(πqτ/2) and sin(πqτ/2) for q = 1..frequencies, τ the counter-clockwise arc length from (0, 0).
    static std::vector<BoundaryPattern> trigonometricPatterns(int frequencies);
};

class Eit final : public ForwardModel {
  public:
    // Throws std::invalid_argument for fewer than 2 cells, κ0 ≤ 0, ℓ ≤ 0 or no centres.
    explicit Eit(const EitSetup& setup = {});

    int parameters() const override { return int(centres_.size()); }
    int observations() const override { return patterns() * boundaryFaces(); }
    std::string name() const override { return "eit"; }
    std::unique_ptr<Linearization> linearize(const Vector& c) const override;

    int cells() const { return n_; }
    int patterns() const { return int(boundary_.cols()); }
    int boundaryFaces() const { return 4 * n_; }
    // Midpoint of boundary face e (counter-clockwise from (0, 0)) and its outward normal.
    Eigen::Vector2d boundaryPoint(int e) const;
    Eigen::Vector2d outwardNormal(int e) const;
    // κ at the face midpoints: interior faces first, then the boundary faces in observation order.
    Vector faceConductivity(const Vector& c) const;
    // The bumps at any points of the square (2 x P): Φ (P x d), so that κ = κ0 + Φ c there (the app's
    // picture of the conductivity field).
    Matrix bumpsAt(const Matrix& points) const;
    double kappa0() const { return kappa0_; }

    struct Face {
        int a = 0, b = -1; // the cells on either side (b = -1: a boundary face), in the solver's order
        Eigen::Vector2d midpoint;
    };

  private:
    int n_ = 0;
    double h_ = 0, kappa0_ = 1, bumpWidth_ = 0.1;
    std::vector<Eigen::Vector2d> centres_;
    std::vector<Face> faces_; // interior faces, then the 4n boundary faces
    int interiorFaces_ = 0;
    Matrix bumps_;    // faces × d: Φ
    Matrix boundary_; // 4n × patterns: f_p at the boundary face midpoints

    friend class EitLinearization;
};

} // namespace flowscope::inverse
