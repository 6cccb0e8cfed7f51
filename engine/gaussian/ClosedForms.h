// Flowscope engine: closed-form solutions of the Gaussian moment ODEs (docs/math/gaussian.md#exact-cases;
// the labels T1..T11 are defined there; the paper's numbering is Castin et al.'s).
//
// They are the app's exact overlays ("ground truth" curves next to the integrated ones) and the tests'
// oracles. Every formula below is exact; the implicit 1-D solutions are solved to round-off by a safeguarded
// Newton iteration in log-space (bisection whenever Newton leaves the bracket).
//
// Softmax covariance (16): Sigma' = V Sigma A Sigma + Sigma A^T Sigma V^T.
//  * Commuting case (Prop 2, Remark 4.2, T3): with B = V A + A^T V^T, if V and V^T commute with Sigma0 and
//    with B then
//        Sigma(t) = (Sigma0^{-1} - t B)^{-1} = S (I - t S B S)^{-1} S,   S = Sigma0^{1/2},
//    (the second form is inverse-free, so rank-deficient Sigma0 work too), until the blow-up time
//        t_max = 1 / lambda_max(S B S)   (+inf when lambda_max <= 0).
//    V = I always commutes (then only sym(A) matters); so does V = eps I (T2: B = 2 eps A).
//  * Limit for B <= 0 (V = I, B = A + A^T; T3, T8, docs/math/gaussian.md#rank-histograms):
//    Sigma(t) -> Sigma* = U (U^T Sigma0^{-1} U)^{-1} U^T with U an orthonormal basis of ker B: the mass
//    concentrates on an affine subspace of dimension dim ker B.
//  * 1-D (Prop 3, T1): s' = 2 a v s^2, s(t) = 1/(1/s0 - 2 a v t), t_max = 1/(2 a v s0) if a v > 0;
//    mean alpha' = v (1 + a s) alpha, alpha(t) = alpha0 e^{v t} sqrt(s(t)/s0).
//  * Rotation (T4): V = J, A = -I gives Sigma(t) = R(-w t) Sigma0 R(-w t)^T, w = tr Sigma0 (isospectral).
//  * Rank one (Lemma 4.4, eq (18), T6): Sigma0 = u0 u0^T stays u u^T with u' = (u^T A u) V u.
// l2 1-D (Prop 7, T9): s' = 4 a v s^2 / (1 + 2 k^2 s), a = q k; implicit solution
//        -1/s + 2 k^2 ln s = -1/s0 + 2 k^2 ln s0 + 4 a v t   (global: never blows up).
// Sinkhorn 1-D (Prop 9, T10): s' = (v/(a eps)) (sqrt(4 a^2 s^2 + eps^2) - eps); with w = 2|a| s / eps and
//        Phi(w) = asinh(w) - (1 + sqrt(1 + w^2)) / w   (strictly increasing),
//        Phi(w(t)) = Phi(w0) + 2 v sign(a) t / eps.
// Sinkhorn mean (Prop 8, T11): alpha(t) = expm(t V / eps) alpha0, independent of Sigma.
// Drifting (App. B, Prop 11, docs/math/gaussian.md#drifting), 1-D: s' = 2 s (1/(s + 1) - 1/(s_nu + 1));
// implicit solution
//        ln s - (1 + s_nu) ln|s_nu - s| = ln s0 - (1 + s_nu) ln|s_nu - s0| + 2 s_nu t / (s_nu + 1)
//    (s_nu = 0: ln s - 1/s = ln s0 - 1/s0 - 2 t);
//    mean m(t) = m_nu + expm(-t (Sigma_nu + I)^{-1}) (m0 - m_nu).
#pragma once

#include "engine/core/Types.h"
#include "engine/gaussian/MatrixRoots.h"

#include <optional>

namespace flowscope {

// ---- Softmax, commuting case (Prop 2) -------------------------------------------------------------------

// B = V A + A^T V^T.
Mat commutingB(const Mat& V, const Mat& A);

// Whether Prop 2's hypothesis holds: V and V^T commute with Sigma0 and with B = V A + A^T V^T, up to
// ||[X, Y]||_F <= tol ||X||_F ||Y||_F.
bool commutes(const Mat& V, const Mat& A, const Mat& Sigma0, double tol = 1e-10);

// t_max = 1 / lambda_max(Sigma0^{1/2} B Sigma0^{1/2}), or +inf when that is <= 0.
double commutingBlowupTime(const Mat& B, const Mat& Sigma0);

// Sigma(t) = (Sigma0^{-1} - t B)^{-1}, computed inverse-free as S (I - t S B S)^{-1} S; std::nullopt when
// t >= t_max. Valid for the softmax ODE when commutes(V, A, Sigma0) holds.
std::optional<Mat> commutingCovariance(const Mat& B, const Mat& Sigma0, double t);

// Sigma* = lim Sigma(t) = U (U^T Sigma0^{-1} U)^{-1} U^T, U an orthonormal basis of the numerical kernel of B
// (eigenvalues |lambda| <= tol * max|lambda|). std::nullopt when B has an eigenvalue > tol * max|lambda|
// (then Sigma blows up) or Sigma0 is not positive definite. Zero matrix when ker B = {0}.
std::optional<Mat> commutingLimit(const Mat& B, const Mat& Sigma0, double tol = 1e-10);

// Rank bound for stationary points with V = I and A symmetric (Prop 4, T8):
// dim ker A + min(#positive, #negative eigenvalues), eigenvalues within tol * max|lambda| counted as zero.
int stationaryRankBound(const Mat& A, double tol = 1e-10);

// ---- Softmax, other exact cases ---------------------------------------------------------------------------

// T1: s(t) = 1/(1/s0 - 2 a v t); +inf at or after the blow-up time.
double softmaxVariance1d(double a, double v, double s0, double t);
// T1: t_max = 1/(2 a v s0) when a v > 0, else +inf.
double softmaxBlowupTime1d(double a, double v, double s0);
// T1: alpha(t) = alpha0 e^{v t} sqrt(s(t)/s0) (+-inf at or after the blow-up time).
double softmaxMean1d(double a, double v, double s0, double alpha0, double t);

// T4: V = J = [[0, -1], [1, 0]], A = -I (2x2): Sigma(t) = R(-w t) Sigma0 R(-w t)^T, w = tr Sigma0.
Mat rotatingCovariance(const Mat& Sigma0, double t);

// T6 / eq (18): the rank-one rate u' = (u^T A u) V u (Sigma = u u^T solves (16)).
Vec rank1Rate(const Mat& A, const Mat& V, const Vec& u);

// ---- l2, Sinkhorn, drifting -------------------------------------------------------------------------------

// T9 / Prop 7: the 1-D l2 variance for scalar q, k, v (a = q k); global in time.
// Returns +inf if s(t) overflows a double.
double l2Variance1d(double q, double k, double v, double s0, double t);

// T10 / Prop 9: the 1-D Sinkhorn variance for scalar a = k q, v and temperature eps > 0; global in time.
double sinkhornVariance1d(double a, double v, double eps, double s0, double t);
// Phi(w) = asinh(w) - (1 + sqrt(1 + w^2)) / w, w > 0 (T10).
double sinkhornPhi(double w);

// T11 / Prop 8: alpha(t) = expm(t V / eps) alpha0.
Vec sinkhornMean(const Mat& V, double eps, const Vec& alpha0, double t);

// Prop 11 (docs/math/gaussian.md#drifting): the 1-D drifting variance towards the target variance sNu >= 0
// (s0 >= 0).
double driftingVariance1d(double sNu, double s0, double t);
// Eq (48) (docs/math/gaussian.md#drifting): m(t) = m_nu + expm(-t (Sigma_nu + I)^{-1}) (m0 - m_nu).
Vec driftingMean(const Vec& m0, const Vec& mNu, const Mat& SigmaNu, double t);

} // namespace flowscope
