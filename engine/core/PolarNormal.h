// Flowscope engine: Marsaglia's polar method, shared by the generators that must draw the same normals on
// every platform (flows::Rng; NumpyRandom, numpy's legacy gauss()): std::normal_distribution is
// implementation-defined.
#pragma once

#include <cmath>
#include <utility>

namespace flowscope {

// Two independent N(0, 1) draws from uniforms on [0, 1): a point (u, v) uniform in the unit disc (by
// rejection, two uniforms per try), scaled by sqrt(-2 ln s / s), s = u^2 + v^2. Returns {u f, v f}; a
// generator that caches one returns the second and keeps the first.
template <class Uniform> std::pair<double, double> polarNormalPair(Uniform&& uniform) {
    double u, v, s;
    do {
        u = 2.0 * uniform() - 1.0;
        v = 2.0 * uniform() - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double f = std::sqrt(-2.0 * std::log(s) / s);
    return {u * f, v * f};
}

} // namespace flowscope
