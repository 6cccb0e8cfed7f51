// Flowscope engine: energies of the gradient-flow view and the Bures-Wasserstein distance
// (docs/math/gaussian.md#energies).
//
// Softmax twisted energy (eq (33), App. E.2; docs/math/gaussian.md#softmax-energy):
// F(mu) = (1/2) ∫∫ e^{y^T A x} dmu(x) dmu(y). On mu = N(alpha, Sigma), integrating x then y
// (y = alpha + S z, S = Sigma^{1/2}, z ~ N(0, I)):
//     F = exp( alpha^T A alpha + (1/2) alpha^T A Sigma A^T alpha + (1/2) c^T (I - P)^{-1} c )
//         / (2 det(I - P)^{1/2}),      P = S A Sigma A^T S,   c = S A (I + Sigma A^T) alpha,
// equal to the paper's form with Sigma^{-1} but inverse-free. Finite iff I - P > 0, i.e.
// Sigma^{-1} - A Sigma A^T > 0 (||Sigma^{1/2} A Sigma^{1/2}||_2 < 1); otherwise the integral diverges.
// The softmax flow is the d_{A,V} gradient flow of F when A is symmetric invertible and B = -V A^{-T} is SPD.
// Particle version: E_N(X) = (1/(2 N^2)) sum_{i,j} exp(x_i^T A x_j), non-increasing along the discrete
// softmax flow under the same hypothesis.
//
// Sinkhorn energy (eqs (30)-(32), App. E.1; explicit form derived for this project,
// docs/math/gaussian.md#sinkhorn-energy): with the optimal self-coupling's cross-covariance S_yx
// (docs/math/gaussian.md#sinkhorn) and S_xy = S_yx^T,
//     F_eps(alpha, Sigma) = (1/(2 eps)) [ tr(A S_xy) + alpha^T A alpha ]
//                           + (1/4) log det( I - Sigma^{-1} S_xy Sigma^{-1} S_yx ).
// Writing Z = S A S = U D W^T (SVD, singular values d_i) both terms are spectral: tr(A S_xy) =
// sum_i (sqrt(d_i^2 + eps^2/4) - eps/2) and the determinant is prod_i (1 - d_i^2 w_i^2) with
// w_i = 1/(sqrt(d_i^2 + eps^2/4) + eps/2); so F_eps is finite for every Sigma >= 0 and needs no inverse.
// The Sinkformer flow is the Bures-Wasserstein gradient flow of F_eps when A = A^T = -V, with
// Sigma' = -2 (G Sigma + Sigma G), G = grad_Sigma F_eps (erratum E3, docs/math/gaussian.md#e3: the factor 2).
//
// Bures-Wasserstein distance (docs/math/gaussian.md#bures):
//     W2^2(N(m1, S1), N(m2, S2)) = |m1 - m2|^2 + tr(S1 + S2 - 2 (S1^{1/2} S2 S1^{1/2})^{1/2}).
#pragma once

#include "engine/core/Types.h"

#include <optional>

namespace flowscope {

// F(alpha, Sigma) above; std::nullopt when Sigma^{-1} - A Sigma A^T is not positive definite (F = +inf).
std::optional<double> softmaxGaussianEnergy(const Mat& A, const Vec& alpha, const Mat& Sigma);

// Whether the softmax gradient-flow hypothesis holds: A symmetric and invertible, B = -V A^{-T} symmetric
// positive definite (relative tolerance tol on the symmetry checks).
bool softmaxEnergyHypothesis(const Mat& A, const Mat& V, double tol = 1e-10);

// E_N(X) = (1/(2 N^2)) sum_{i,j} exp(x_i^T A x_j), X = N x d tokens (rows). O(N^2 d).
double particleEnergy(const Tokens& X, const Mat& A);

// F_eps(alpha, Sigma) above (A = K^T Q, temperature eps > 0).
double sinkhornGaussianEnergy(const Mat& A, double eps, const Vec& alpha, const Mat& Sigma);

// Whether the Sinkhorn gradient-flow hypothesis holds: A = A^T = -V (relative tolerance tol).
bool sinkhornEnergyHypothesis(const Mat& A, const Mat& V, double tol = 1e-10);

// The cross-covariance S_yx = [ (Sigma A Sigma A^T + eps^2/4 I)^{1/2} + eps/2 I ]^{-1} Sigma A Sigma of the
// entropic optimal self-coupling of N(., Sigma) (docs/math/gaussian.md#sinkhorn), computed as
// S (sqrt(P + eps^2/4 I) + eps/2 I)^{-1} S A Sigma with S = Sigma^{1/2}, P = S A Sigma A^T S (inverse-free,
// valid for singular Sigma).
Mat sinkhornCrossCovariance(const Mat& A, double eps, const Mat& Sigma);

// Squared Bures-Wasserstein (W2) distance between N(m1, S1) and N(m2, S2), clamped at 0.
double buresWasserstein2(const Vec& m1, const Mat& S1, const Vec& m2, const Mat& S2);
// Its square root.
double buresWasserstein(const Vec& m1, const Mat& S1, const Vec& m2, const Mat& S2);

} // namespace flowscope
