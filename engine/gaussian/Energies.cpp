// Gradient-flow energies and the Bures-Wasserstein distance; formulas in Energies.h.
#include "engine/gaussian/Energies.h"
#include "engine/gaussian/MatrixRoots.h"

#include <algorithm>
#include <cmath>

namespace flowscope {

namespace {

bool nearlySymmetric(const Mat& M, double tol) {
    return (M - M.transpose()).norm() <= tol * std::max(M.norm(), 1e-300);
}

} // namespace

std::optional<double> softmaxGaussianEnergy(const Mat& A, const Vec& alpha, const Mat& Sigma) {
    const Eigen::Index d = Sigma.rows();
    const Mat S = psdSqrt(Sigma);
    const Mat ASAt = symmetricPart(A * Sigma * A.transpose());
    const Mat IminusP = Mat::Identity(d, d) - symmetricPart(S * ASAt * S);
    const Eigen::LLT<Mat> llt(IminusP);
    if (llt.info() != Eigen::Success) return std::nullopt;
    const Vec c = S * A * (alpha + Sigma * (A.transpose() * alpha));
    const double exponent = alpha.dot(A * alpha) + 0.5 * alpha.dot(ASAt * alpha) + 0.5 * c.dot(llt.solve(c));
    const Vec L = llt.matrixLLT().diagonal(); // det(I - P)^{1/2} = prod L_ii
    if (!(L.minCoeff() > 0.0)) return std::nullopt;
    return 0.5 * std::exp(exponent - L.array().log().sum());
}

bool softmaxEnergyHypothesis(const Mat& A, const Mat& V, double tol) {
    if (!nearlySymmetric(A, tol)) return false;
    // A is symmetric here: invertible iff no eigenvalue is (relatively) zero.
    const Eigen::SelfAdjointEigenSolver<Mat> ea(symmetricPart(A), Eigen::EigenvaluesOnly);
    if (!(ea.eigenvalues().cwiseAbs().minCoeff() >
          1e-12 * std::max(1.0, ea.eigenvalues().cwiseAbs().maxCoeff())))
        return false;
    const Mat B = -V * A.transpose().partialPivLu().inverse();
    if (!nearlySymmetric(B, tol)) return false;
    const Eigen::SelfAdjointEigenSolver<Mat> es(symmetricPart(B), Eigen::EigenvaluesOnly);
    return es.eigenvalues().minCoeff() > tol * es.eigenvalues().cwiseAbs().maxCoeff();
}

double particleEnergy(const Tokens& X, const Mat& A) {
    const Eigen::Index n = X.rows();
    if (n == 0) return 0.0;
    const Mat XA = X * A; // row i = x_i^T A
    double sum = 0.0;
    for (Eigen::Index i = 0; i < n; ++i) sum += (X * XA.row(i).transpose()).array().exp().sum();
    return sum / (2.0 * double(n) * double(n));
}

double sinkhornGaussianEnergy(const Mat& A, double eps, const Vec& alpha, const Mat& Sigma) {
    const Mat S = psdSqrt(Sigma);
    // Only the squared singular values d^2 of S A S enter: the eigenvalues of (S A S)(S A S)^T.
    const Mat SAS = S * A * S;
    const Vec d2s =
        Eigen::SelfAdjointEigenSolver<Mat>(symmetricPart(SAS * SAS.transpose()), Eigen::EigenvaluesOnly)
            .eigenvalues()
            .cwiseMax(0.0);
    // With R = sqrt(d^2 + eps^2/4): d^2 w = R - eps/2 = d^2/(R + eps/2) and 1 - d^2 w^2 = eps/(R + eps/2).
    double trace = 0.0, logDet = 0.0;
    for (Eigen::Index i = 0; i < d2s.size(); ++i) {
        const double d2 = d2s(i);
        const double R = std::sqrt(d2 + 0.25 * eps * eps);
        trace += d2 / (R + 0.5 * eps);
        logDet += std::log(eps / (R + 0.5 * eps));
    }
    return (trace + alpha.dot(A * alpha)) / (2.0 * eps) + 0.25 * logDet;
}

bool sinkhornEnergyHypothesis(const Mat& A, const Mat& V, double tol) {
    const double scale = std::max(A.norm(), 1e-300);
    return nearlySymmetric(A, tol) && (A + V).norm() <= tol * scale;
}

Mat sinkhornCrossCovariance(const Mat& A, double eps, const Mat& Sigma) {
    const Mat S = psdSqrt(Sigma);
    const Eigen::SelfAdjointEigenSolver<Mat> es(symmetricPart(S * A * Sigma * A.transpose() * S));
    const Vec w =
        ((es.eigenvalues().cwiseMax(0.0).array() + 0.25 * eps * eps).sqrt() + 0.5 * eps).inverse().matrix();
    const Mat W = es.eigenvectors() * w.asDiagonal() * es.eigenvectors().transpose();
    return S * W * S * A * Sigma;
}

double buresWasserstein2(const Vec& m1, const Mat& S1, const Vec& m2, const Mat& S2) {
    const Mat R1 = psdSqrt(S1);
    const Mat C = psdSqrt(R1 * S2 * R1);
    const double w2 = (m1 - m2).squaredNorm() + S1.trace() + S2.trace() - 2.0 * C.trace();
    return std::max(w2, 0.0);
}

double buresWasserstein(const Vec& m1, const Mat& S1, const Vec& m2, const Mat& S2) {
    return std::sqrt(buresWasserstein2(m1, S1, m2, S2));
}

} // namespace flowscope
