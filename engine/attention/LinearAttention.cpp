#include "engine/attention/LinearAttention.h"

#include "engine/attention/KernelAttention.h"

namespace flowscope {

void LinearAttention::velocity(double t, const Tokens& X, Tokens& dX) {
    const double invN = 1.0 / double(std::max<Eigen::Index>(1, X.rows()));
    const Vec m = X.colwise().sum().transpose() * invN;
    const Mat M2 = X.transpose() * X * invN;
    dX.setZero(X.rows(), X.cols());
    for (const HeadParams& head : spec_.headsAt(t)) {
        const Mat A = scoreScale(spec_, head) * head.K.transpose() * head.Q;
        if (spec_.linearEps) {
            // Gamma(x) = (1/eps) V m + V C A x: rows are x_i^T (V C A)^T + ((1/eps) V m)^T
            const Mat L = head.V * (M2 - m * m.transpose()) * A;
            const Vec b = head.V * m / *spec_.linearEps;
            dX.noalias() += X * L.transpose();
            dX.rowwise() += b.transpose();
        } else {
            const Mat L = head.V * M2 * A;
            dX.noalias() += X * L.transpose();
        }
    }
}

} // namespace flowscope
