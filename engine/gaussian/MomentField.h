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
//
// For d <= 4 a field made by makeMomentField also carries a heap-free form (MomentFieldOf<d>): the same
// formulas on Eigen types stored inline, with the per-head matrices (V, A_h, G_h) computed once. The solver
// (MomentSolver.h) evaluates that one: no heap allocation in an evaluation or a step.
#pragma once

#include "engine/core/Types.h"
#include "engine/scene/Scene.h"

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace flowscope {

struct GaussianState {
    Vec mean; // alpha (size d)
    Mat cov;  // Sigma (d x d, symmetric positive semi-definite)
};

// The tokens' mean and covariance (engine/dynamics/Observables), the Gaussian a moment ODE continues from
// after a live edit; none with fewer than two tokens or one not finite (a GPU-resident snapshot holds none).
std::optional<GaussianState> tokenGaussian(const Tokens& X);

// Gamma(x) = b + L x on the Gaussian.
struct AffineField {
    Vec b;
    Mat L;
};

// Types of dimension D stored inline up to MaxD (D = MaxD: fixed-size; D = Eigen::Dynamic with a finite MaxD:
// sized at run time, still without the heap; D = MaxD = Eigen::Dynamic: Vec, Mat).
template <int D, int MaxD = D> using VecN = Eigen::Matrix<double, D, 1, Eigen::ColMajor, MaxD, 1>;
template <int D, int MaxD = D> using MatN = Eigen::Matrix<double, D, D, Eigen::ColMajor, MaxD, MaxD>;

// The moment field of an attention spec on heap-free types: affine() writes (b, L) and allocates nothing.
// Constant heads or piecewise-constant keyframes (linearly interpolated keyframes have no heap-free form
// here: their fields keep the dynamic path).
template <int D, int MaxD = D> class FixedMomentField {
  public:
    static constexpr int Dim = D, MaxDim = MaxD;
    using Vector = VecN<D, MaxD>;
    using Matrix = MatN<D, MaxD>;

    FixedMomentField(const AttentionSpec& spec, int d);
    void affine(double t, const Vector& mean, const Matrix& cov, Vector& b, Matrix& L) const;

  private:
    struct Head {
        Matrix V, A, G; // value, A = gamma K^T Q, G = gamma K^T K (l2)
    };
    const std::vector<Head>& headsAt(double t) const;

    AttentionType type_;
    std::optional<double> linearEps_;
    double sinkhornEps_;
    std::vector<double> times_;            // keyframe times (empty: constant heads)
    std::vector<std::vector<Head>> heads_; // the heads of each keyframe (one entry: constant heads)
    Vector targetMean_;                    // drifting: m_nu
    Matrix targetInverse_;                 // drifting: (Sigma_nu + I)^{-1}
};

// Two heap-free forms: d = 2, the papers' plane and every timed figure, on fixed 2 x 2 types (unrolled), and
// d = 1, 3, 4 on one type sized at run time and stored inline up to 4 x 4. One compiled copy of the field and
// the solvers per form: a fixed-size copy for each of 1, 3 and 4 cost about 25 s of CPU in every clean build
// (docs/build.md), for dimensions no figure times.
using SmallMomentField = FixedMomentField<Eigen::Dynamic, 4>;
template <int D> using MomentFieldOf = std::conditional_t<D == 2, FixedMomentField<2>, SmallMomentField>;

// The heap-free form of a field, when it has one.
using FixedMomentFields = std::variant<std::monostate, FixedMomentField<2>, SmallMomentField>;

class MomentField {
  public:
    virtual ~MomentField() = default;
    // The affine field on N(mean, cov) at time t.
    virtual AffineField affine(double t, const Vec& mean, const Mat& cov) const = 0;
    virtual std::string name() const = 0;

    // alpha' = b + L alpha, Sigma' = L Sigma + Sigma L^T (returned in a GaussianState).
    GaussianState rates(double t, const GaussianState& s) const;

    // The same field on fixed-size types, for the solver's allocation-free path; monostate when there is
    // none (d > 4, linearly interpolated keyframes, or a subclass of one's own: the solver then calls
    // affine()).
    const FixedMomentFields& fixedSize() const { return fixed_; }

  protected:
    FixedMomentFields fixed_;
};

// The moment field of an attention spec in dimension d. Throws SceneError (pointer "/attention/type" or the
// offending field) when the variant has no closed Gaussian dynamics or a parameter is unusable.
std::unique_ptr<MomentField> makeMomentField(const Scene& scene);

} // namespace flowscope
