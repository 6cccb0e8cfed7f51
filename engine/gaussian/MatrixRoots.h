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

// Matrix exponential: scaling and squaring (||M / 2^s||_1 <= 1/2) with an 18-term Taylor series, accurate to
// round-off for the small matrices of the moment ODEs. (Our own: Eigen's MatrixFunctions module costs
// minutes of compile time per file under the sanitizers.)
Mat expm(const Mat& M);

} // namespace flowscope
