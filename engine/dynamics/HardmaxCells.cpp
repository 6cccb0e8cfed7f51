#include "engine/dynamics/HardmaxCells.h"

#include <algorithm>
#include <cmath>

namespace flowscope {

namespace {

// The angle in [0, 2 pi).
double wrapped(double a) {
    a = std::fmod(a, 2.0 * M_PI);
    return a < 0.0 ? a + 2.0 * M_PI : a;
}

// The arc's part inside the half-circle of directions at most pi / 2 from the angle of `normal`.
HardmaxArc intersect(const HardmaxArc& arc, const Eigen::Vector2d& normal) {
    const double from = std::atan2(normal.y(), normal.x()) - M_PI / 2; // the half-circle is [from, from + pi]
    const double u = wrapped(arc.start - from);                        // the arc, relative to `from`
    // The arc is at most pi long, so it meets [0, pi] or [2 pi, 3 pi] (its wrap), not both.
    for (const double offset : {0.0, 2.0 * M_PI}) {
        const double lo = std::max(u, offset), hi = std::min(u + arc.length, offset + M_PI);
        if (hi >= lo) return {from + lo - offset, hi - lo};
    }
    return {};
}

} // namespace

std::vector<HardmaxArc> hardmaxCells(const Tokens& X, const Mat& M) {
    std::vector<HardmaxArc> cells(std::size_t(X.rows()));
    for (Eigen::Index k = 0; k < X.rows(); ++k) {
        HardmaxArc arc{0.0, 2.0 * M_PI}; // every direction until a condition applies
        bool bounded = false;
        for (Eigen::Index j = 0; j < X.rows() && !arc.empty(); ++j) {
            const Eigen::Vector2d normal = M * (X.row(k) - X.row(j)).transpose();
            if (normal.squaredNorm() == 0.0) continue; // the key itself, or an equal one: no condition
            if (!bounded) {
                const double a = std::atan2(normal.y(), normal.x());
                arc = {a - M_PI / 2, M_PI};
                bounded = true;
                continue;
            }
            arc = intersect(arc, normal);
        }
        cells[std::size_t(k)] = arc;
    }
    return cells;
}

bool hasHardmaxCells(const AttentionSpec& a, int d) {
    return a.type == AttentionType::Hardmax && d == 2 && a.heads.size() == 1 && !a.masked &&
           a.keyframes.empty();
}

} // namespace flowscope
