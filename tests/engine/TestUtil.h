// Helpers shared by the engine tests.
#pragma once

#include "engine/attention/VelocityField.h"
#include "engine/core/Types.h"
#include "engine/dynamics/Integrator.h"
#include "engine/scene/Scene.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <thread>

#include <unistd.h>

namespace flowscope::test {

// The message of the exception f throws, "" when it throws none.
inline std::string errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

// Polls runner.snapshot() until done(snapshot) holds (true) or the timeout passes (false). The timeout is a
// guard against a hang, never a measure of speed: a busy CI machine can be many times slower than an idle
// one.
template <class Runner, class Done>
bool waitForSnapshot(const Runner& runner, Done done,
                     std::chrono::milliseconds timeout = std::chrono::seconds(150)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (const auto s = runner.snapshot(); s && done(*s)) return true;
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

inline Tokens randomTokens(int n, int d, std::uint64_t seed, double scale = 1.0) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0.0, scale);
    Tokens X(n, d);
    for (Eigen::Index i = 0; i < X.size(); ++i) X.data()[i] = normal(rng);
    return X;
}

// A 1 x 1 matrix holding s (the autodiff tests' scalar inputs).
inline Mat scalar(double s) {
    return Mat::Constant(1, 1, s);
}

// `name` in a folder of this test process's own under TMPDIR (made on first use).
inline std::filesystem::path tempPath(const std::string& name) {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("flowscope-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    return dir / name;
}

// M equals R in shape and within `tol` in every entry; prints both when not.
inline void expectMat(const Mat& M, const Mat& R, double tol) {
    ASSERT_EQ(M.rows(), R.rows());
    ASSERT_EQ(M.cols(), R.cols());
    EXPECT_LE((M - R).cwiseAbs().maxCoeff(), tol) << "got\n" << M << "\nexpected\n" << R;
}

// The same normal draws as an r x c matrix in the autodiff tests' index type (ad::Matrix<double> is Mat).
inline Mat randn(Eigen::Index r, Eigen::Index c, std::uint64_t seed, double sigma = 1.0) {
    return randomTokens(int(r), int(c), seed, sigma);
}

// Standard normal quantile by bisection on erfc (deterministic "Gaussian" particles,
// docs/math/attention.md#mean-field).
inline double normalQuantile(double p) {
    double lo = -10, hi = 10;
    for (int k = 0; k < 200; ++k) {
        const double mid = 0.5 * (lo + hi);
        (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
}

// n points (2 x n) of N(μ, σ² I) with distinct coordinates and no clusters: Roberts' R2 low-discrepancy
// sequence mapped through the normal quantile. A line moving by δ crosses ≈ n ρ δ of them, smoothly.
inline Eigen::MatrixXd quasiNormal(int n, const Eigen::Vector2d& mu, double sigma) {
    const double phi = 1.32471795724474602596; // the plastic number: α = (1/φ, 1/φ²)
    const double a1 = 1 / phi, a2 = 1 / (phi * phi);
    Eigen::MatrixXd X(2, n);
    for (int k = 0; k < n; ++k) {
        const double u1 = std::fmod(0.5 + a1 * (k + 1), 1.0), u2 = std::fmod(0.5 + a2 * (k + 1), 1.0);
        X.col(k) = mu + sigma * Eigen::Vector2d(normalQuantile(u1), normalQuantile(u2));
    }
    return X;
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

// Small literals: 2x2 (row-major), symmetric 2x2 [[a, c], [c, b]], 1x1, 2-vectors.
inline Mat m2(double a, double b, double c, double d) {
    return (Mat(2, 2) << a, b, c, d).finished();
}
inline Mat sym2(double a, double c, double b) {
    return m2(a, c, c, b);
}
inline Mat m1(double a) {
    return Mat::Constant(1, 1, a);
}
inline Vec v2(double x, double y) {
    return (Vec(2) << x, y).finished();
}

inline Mat rotation90() {
    return (Mat(2, 2) << 0, -1, 1, 0).finished();
}

// Integrates the particle system of `spec` from X over [0, T] in `steps` calls of the integrator.
inline Tokens integrate(const AttentionSpec& spec, Tokens X, Method method, double T, int steps,
                        Precision p = Precision::Float64, double rtol = 1e-6, double atol = 1e-9) {
    auto field = makeCpuField(spec, int(X.cols()), p);
    IntegratorSpec is;
    is.method = method;
    is.rtol = rtol;
    is.atol = atol;
    auto integ = makeIntegrator(is);
    const Field f = [&](double t, const Tokens& Y, Tokens& dY) { field->velocity(t, Y, dY); };
    const double h = T / steps;
    for (int k = 0; k < steps; ++k) EXPECT_TRUE(integ->advance(f, k * h, h, X).ok);
    return X;
}

} // namespace flowscope::test
