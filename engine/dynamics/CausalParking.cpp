#include "engine/dynamics/CausalParking.h"

#include "engine/dynamics/Equiangular.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace flowscope {

double parkingSpacing(double beta) {
    return beta > 0 ? 4.0 / std::sqrt(beta) : std::numeric_limits<double>::quiet_NaN();
}

std::vector<int> parkingLeaders(const Tokens& X, double delta) {
    std::vector<int> leaders;
    std::vector<Eigen::Index> rows; // the leaders' rows, normalised below
    Tokens directions = X;
    for (Eigen::Index k = 0; k < X.rows(); ++k) {
        const double r = X.row(k).norm();
        if (!(r > 0) || !std::isfinite(r)) continue;
        directions.row(k) /= r;
        // Geodesic distance >= delta  <=>  cosine <= cos(delta) (delta in [0, pi]).
        const double most = std::cos(std::clamp(delta, 0.0, M_PI));
        const bool far = std::all_of(rows.begin(), rows.end(), [&](Eigen::Index l) {
            return directions.row(k).dot(directions.row(l)) <= most;
        });
        if (far) {
            leaders.push_back(int(k));
            rows.push_back(k);
        }
    }
    return leaders;
}

bool hasParkingPicture(const AttentionSpec& a, int d) {
    if (a.type != AttentionType::Softmax || !a.keyframes.empty() || a.heads.size() != 1 || !a.masked ||
        a.positionalDecay != 0.0 || a.scaleByRootK || normalizationOf(a) != Normalization::Post)
        return false;
    const HeadParams& h = a.heads.front();
    return isIdentity(h.Q, d) && isIdentity(h.K, d) && isIdentity(h.V, d);
}

} // namespace flowscope
