// Flowscope engine: the small matrix helpers the Gaussian formulas share.
#pragma once

#include "engine/core/Types.h"

namespace flowscope {

// The symmetric part (M + M^T) / 2.
inline Mat symmetricPart(const Mat& M) {
    return 0.5 * (M + M.transpose());
}

// Principal square root of a symmetric positive semi-definite matrix (round-off negative eigenvalues -> 0).
Mat psdSqrt(const Mat& S);

// Principal square root of a matrix with real non-negative spectrum that need not be symmetric, e.g.
// Sigma A Sigma A^T + c I (similar to a PSD matrix). Symmetric input goes through psdSqrt; otherwise a real
// Schur form (Eigen's MatrixFunctions).
Mat principalSqrt(const Mat& M);

} // namespace flowscope
