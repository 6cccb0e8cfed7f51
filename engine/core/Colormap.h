// Flowscope engine: colour maps, as RGB in [0, 1], for the app's per-token colours and the engine's figures.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>

namespace flowscope {

// Matplotlib's viridis at u in [0, 1] (clamped; NaN reads as 0): perceptually uniform and readable by
// colour-blind users. Eleven samples of matplotlib's table; linear interpolation between them differs from
// the full 256-entry table by less than one 8-bit step's worth of visible change.
inline std::array<double, 3> viridisRgb(double u) {
    static constexpr std::array<std::array<double, 3>, 11> kSamples{{
        {0.267004, 0.004874, 0.329415},
        {0.282623, 0.140926, 0.457517},
        {0.253935, 0.265254, 0.529983},
        {0.206756, 0.371758, 0.553117},
        {0.163625, 0.471133, 0.558148},
        {0.127568, 0.566949, 0.550556},
        {0.134692, 0.658636, 0.517649},
        {0.266941, 0.748751, 0.440573},
        {0.477504, 0.821444, 0.318195},
        {0.741388, 0.873449, 0.149561},
        {0.993248, 0.906157, 0.143936},
    }};
    if (!std::isfinite(u)) u = 0.0;
    const double x = std::clamp(u, 0.0, 1.0) * double(kSamples.size() - 1);
    const auto i = std::min<std::size_t>(std::size_t(x), kSamples.size() - 2);
    const double f = x - double(i);
    const auto& a = kSamples[i];
    const auto& b = kSamples[i + 1];
    return {a[0] + f * (b[0] - a[0]), a[1] + f * (b[1] - a[1]), a[2] + f * (b[2] - a[2])};
}

} // namespace flowscope
