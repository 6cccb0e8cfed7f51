// Flowscope engine: the small matrix functions the Gaussian formulas share.
#pragma once

#include "engine/core/Types.h"

namespace flowscope {

// The symmetric part (M + M^T) / 2.
inline Mat symmetricPart(const Mat& M) {
    return 0.5 * (M + M.transpose());
}

// Principal square root of a symmetric positive semi-definite matrix (round-off negative eigenvalues -> 0).
Mat psdSqrt(const Mat& S);

// psdSqrt for any square matrix type M: with a fixed-size M (the moment solver's d <= 4 path) it touches no
// heap. psdSqrt(Mat) is psdSqrtOf<Mat>.
template <class M> M psdSqrtOf(const M& S) {
    const M symmetric = 0.5 * (S + S.transpose());
    const Eigen::SelfAdjointEigenSolver<M> eig(symmetric);
    const auto root = eig.eigenvalues().cwiseMax(0.0).cwiseSqrt().eval();
    return eig.eigenvectors() * root.asDiagonal() * eig.eigenvectors().transpose();
}

// Matrix exponential: scaling and squaring (||M / 2^s||_1 <= 1/2) with an 18-term Taylor series, accurate to
// round-off for the small matrices of the moment ODEs. (Our own: Eigen's MatrixFunctions module costs
// minutes of compile time per file under the sanitizers.)
Mat expm(const Mat& M);

} // namespace flowscope
