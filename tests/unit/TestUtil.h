// Helpers shared by the engine tests.
#pragma once

#include "engine/core/Types.h"
#include "engine/scene/Scene.h"

#include <cmath>
#include <random>

namespace flowscope::test {

inline Tokens randomTokens(int n, int d, std::uint64_t seed, double scale = 1.0) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0.0, scale);
    Tokens X(n, d);
    for (Eigen::Index i = 0; i < X.size(); ++i) X.data()[i] = normal(rng);
    return X;
}

// Standard normal quantile by bisection on erfc (deterministic "Gaussian" particles, seed-castin §6.4).
inline double normalQuantile(double p) {
    double lo = -10, hi = 10;
    for (int k = 0; k < 200; ++k) {
        const double mid = 0.5 * (lo + hi);
        (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
}

inline Tokens quantileTokens1d(int n, double variance) {
    Tokens X(n, 1);
    for (int i = 0; i < n; ++i) X(i, 0) = std::sqrt(variance) * normalQuantile((i + 0.5) / n);
    return X;
}

inline AttentionSpec singleHead(AttentionType type, const Mat& Q, const Mat& K, const Mat& V) {
    AttentionSpec s;
    s.type = type;
    s.heads = {HeadParams{Q, K, V}};
    return s;
}

inline Mat rotation90() {
    return (Mat(2, 2) << 0, -1, 1, 0).finished();
}

} // namespace flowscope::test
