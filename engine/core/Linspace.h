// Flowscope engine: numpy.linspace, for the grids of scenes (the trace-1 cone grid), sweeps and the cone.
#pragma once

#include <vector>

namespace flowscope {

// numpy.linspace(x0, x1, n): x0 + i (x1 - x0)/(n - 1), the last point exactly x1 (n = 1: {x0}; n <= 0: {}).
inline std::vector<double> linspace(double x0, double x1, int n) {
    std::vector<double> v;
    if (n <= 0) return v;
    v.resize(std::size_t(n));
    if (n == 1) {
        v[0] = x0;
        return v;
    }
    const double step = (x1 - x0) / double(n - 1);
    for (int i = 0; i < n; ++i) v[std::size_t(i)] = x0 + double(i) * step;
    v.back() = x1;
    return v;
}

} // namespace flowscope
