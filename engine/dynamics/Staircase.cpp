#include "engine/dynamics/Staircase.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace flowscope {

namespace {

// y at u by linear interpolation between the samples (u ascending).
double at(const std::vector<double>& u, const std::vector<double>& y, double x) {
    const auto hi = std::lower_bound(u.begin(), u.end(), x);
    if (hi == u.begin()) return y.front();
    if (hi == u.end()) return y.back();
    const std::size_t k = std::size_t(hi - u.begin());
    const double w = (x - u[k - 1]) / (u[k] - u[k - 1]);
    return (1.0 - w) * y[k - 1] + w * y[k];
}

} // namespace

std::vector<Plateau> plateaus(const std::vector<double>& t, const std::vector<double>& y,
                              const PlateauRule& rule) {
    if (t.size() != y.size()) throw std::invalid_argument("plateaus: t and y differ in length");
    std::vector<double> u, v;
    for (std::size_t k = 0; k < t.size(); ++k)
        if (t[k] >= rule.tMin && t[k] > 0.0 && (u.empty() || std::log(t[k]) > u.back())) {
            u.push_back(std::log(t[k]));
            v.push_back(y[k]);
        }
    if (u.size() < 2) return {};
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    const double range = *hi - *lo;
    if (!(range > 0.0)) return {{std::exp(u.front()), std::exp(u.back()), v.front()}};

    // The grid, and which of its cells are flat.
    const int cells = std::max(1, int(std::floor((u.back() - u.front()) / rule.cell)));
    const double du = (u.back() - u.front()) / cells;
    std::vector<double> g(std::size_t(cells) + 1);
    for (int c = 0; c <= cells; ++c) g[std::size_t(c)] = at(u, v, u.front() + c * du);

    std::vector<Plateau> out;
    auto close = [&](int first, int last) { // cells [first, last) flat
        if ((last - first) * du < rule.minLength) return;
        double sum = 0;
        for (int c = first; c <= last; ++c) sum += g[std::size_t(c)];
        const Plateau p{std::exp(u.front() + first * du), std::exp(u.front() + last * du),
                        sum / double(last - first + 1)};
        if (!out.empty() && std::abs(p.level - out.back().level) < rule.levelGap * range) {
            out.back().t1 = p.t1; // the same level resumed after a wiggle: one plateau
            return;
        }
        out.push_back(p);
    };
    int start = -1;
    for (int c = 0; c < cells; ++c) {
        const bool flat = std::abs(g[std::size_t(c) + 1] - g[std::size_t(c)]) <= rule.flatSlope * range * du;
        if (flat && start < 0) start = c;
        if (!flat && start >= 0) close(start, c), start = -1;
    }
    if (start >= 0) close(start, cells);
    return out;
}

} // namespace flowscope
