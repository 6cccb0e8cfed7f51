#include "engine/attention/HardmaxAttention.h"

#include "engine/core/Parallel.h"

#include <algorithm>
#include <cmath>

namespace flowscope {

namespace {

// Scores within this much of the largest, relative to max(1, |largest|), are ties.
constexpr double kTieTolerance = 1e-12;

} // namespace

void HardmaxAttention::velocity(double t, const Tokens& X, Tokens& dX) {
    const Eigen::Index n = X.rows();
    dX.setZero(n, X.cols());
    for (const HeadParams& head : spec_.headsAt(t)) {
        const Tokens queries = X * (head.K.transpose() * head.Q).transpose(); // q_i = K^T Q x_i
        Tokens avg = Tokens::Zero(n, X.cols());
        parallelFor(std::size_t(n), 64, [&](std::size_t b, std::size_t e) {
            for (Eigen::Index i = Eigen::Index(b); i < Eigen::Index(e); ++i) {
                const Eigen::Index end = spec_.masked ? i + 1 : n;
                const Vec s = X.topRows(end) * queries.row(i).transpose();
                const double top = s.maxCoeff(), floor = top - kTieTolerance * std::max(1.0, std::abs(top));
                double count = 0;
                for (Eigen::Index j = 0; j < end; ++j)
                    if (s(j) >= floor) avg.row(i) += X.row(j), count += 1;
                avg.row(i) /= count;
            }
        });
        dX.noalias() += avg * head.V.transpose();
    }
}

} // namespace flowscope
