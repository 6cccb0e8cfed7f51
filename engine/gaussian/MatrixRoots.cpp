#include "engine/gaussian/MatrixRoots.h"

#include <cmath>

namespace flowscope {

Mat psdSqrt(const Mat& S) {
    return psdSqrtOf(S);
}

Mat expm(const Mat& M) {
    const double norm = M.cwiseAbs().colwise().sum().maxCoeff(); // ||M||_1
    int s = 0;
    while (norm / std::ldexp(1.0, s) > 0.5 && s < 1000) ++s;
    const Mat X = M / std::ldexp(1.0, s);
    Mat term = Mat::Identity(M.rows(), M.cols()), sum = term;
    for (int k = 1; k <= 18; ++k) {
        term = term * X / double(k);
        sum += term;
    }
    for (int i = 0; i < s; ++i) sum = (sum * sum).eval();
    return sum;
}

} // namespace flowscope
