// Flowscope engine: the PSD cone of 2x2 covariances and spectral read-outs (docs/math/gaussian.md#cone,
// #rank-histograms, #t7).
//
// Cone coordinates (docs/math/gaussian.md#cone; the authors' to_3d / from_3d):
//     Sigma = [[a, c], [c, b]]  <->  (x, y, z) = (a - b, 2c, a + b),   a = (z + x)/2, b = (z - x)/2, c = y/2.
// Sigma >= 0 iff z >= sqrt(x^2 + y^2): a round cone around the z axis whose boundary is the rank <= 1 set.
// Eigenvalues (z +- sqrt(x^2 + y^2))/2, principal-axis angle atan2(y, x)/2, z = trace. A rank-one matrix
// r^2 u u^T with u = (cos th, sin th) sits at r^2 (cos 2th, sin 2th, 1): a fixed direction is a ray on the
// boundary.
// Trace-1 slice (docs/math/gaussian.md#trace-slice; to_2d): Sigma / tr Sigma drawn as ((a - b)/(a + b),
// 2c/(a + b)) in the unit disc.
// Initial grid (docs/math/gaussian.md#grid; init_grid): x in linspace(x0, x1, nU), y in linspace(y0, y1, nC)
// at z = 1, kept when 1 - x^2 > y^2 (strictly inside the cone), in numpy's meshgrid(...).T order: x outer,
// y inner.
// Isotropic directions (Lemma 4.6, T7): the unit u with u^T M u = 0 for a symmetric 2x2 M. Writing
// u = (cos th, sin th), u^T M u = m + R cos(2th - phi) with m = (p + q)/2, R = sqrt(((p - q)/2)^2 + r^2),
// phi = atan2(r, (p - q)/2) for M = [[p, r], [r, q]]: two directions when |m| < R (M indefinite), one when
// |m| = R (semi-definite: ker M), none when M is definite, all when M = 0.
#pragma once

#include "engine/core/Linspace.h" // linspace, for the grid
#include "engine/core/Types.h"
#include "engine/scene/Scene.h" // ConeGridSpec, insideTraceOneDisc

#include <array>
#include <vector>

namespace flowscope {

// (a - b, 2c, a + b) of a symmetric 2x2 matrix (the symmetric part is used).
Eigen::Vector3d toCone(const Mat& Sigma);
// The symmetric 2x2 matrix of cone point (x, y, z).
Mat fromCone(const Eigen::Vector3d& p);

// ((a - b)/(a + b), 2c/(a + b)): Sigma / tr Sigma in the unit disc (trace must be > 0).
Eigen::Vector2d traceSlice(const Mat& Sigma);
// The point of the trace-1 slice back as a trace-1 matrix.
Mat fromTraceSlice(const Eigen::Vector2d& p);

// Eigenvalues (z + r)/2, (z - r)/2 (descending), r = sqrt(x^2 + y^2), and principal-axis angle atan2(y, x)/2.
Eigen::Vector2d coneEigenvalues(const Eigen::Vector3d& p);
double conePrincipalAngle(const Eigen::Vector3d& p);
// The boundary ray of direction (cos th, sin th) at unit trace: (cos 2th, sin 2th, 1).
Eigen::Vector3d coneRay(double theta);

// The authors' init_grid(nU, nC, 1, limits = {x0, x1, y0, y1}): the cone points (x, y, 1) kept.
// Counts: 10x10 on [-.5, .5]^2 -> 100, 20x20 on [-1, 1]^2 -> 276, 30x30 -> 648, 40x40 -> 1184.
std::vector<Eigen::Vector3d> initGrid(int nU, int nC, const std::array<double, 4>& limits);
// The covariances of a ConeGridSpec (trace 1, full rank); empty when the spec is disabled.
std::vector<Mat> coneGrid(const ConeGridSpec& spec);

// Eigenvalues of a symmetric matrix, descending.
Vec spectrum(const Mat& Sigma);

// Numerical rank: the number of eigenvalues > tol (Absolute; the authors' histograms use tol = 0.1), or
// > tol * lambda_max (Relative; 0 when lambda_max <= 0).
enum class RankThreshold { Absolute, Relative };
int thresholdRank(const Mat& Sigma, double tol, RankThreshold mode);

// Isotropic directions u^T M u = 0 of a symmetric 2x2 matrix. `angles` are th in (-pi/2, pi/2], ascending
// (u and -u are one direction); `everyDirection` is set when M = 0. Eigenvalues within tol * max|lambda| of
// zero count as zero (then the single kernel direction is returned).
struct IsotropicDirections {
    bool everyDirection = false;
    std::vector<double> angles;
    std::vector<Eigen::Vector2d> directions() const; // (cos th, sin th)
};
IsotropicDirections isotropicDirections(const Mat& M, double tol = 1e-12);

} // namespace flowscope
