// Flowscope engine: the initial tokens of a scene.
//
// Bit-reproducible in the seed on one build: std::mt19937_64 is fully specified by the standard, but the
// standard distributions are not (their algorithms are implementation-defined), so uniforms and normals are
// derived here from the raw 64-bit words.
#include "engine/scene/Scene.h"

#include "engine/core/Text.h"
#include "engine/io/Npy.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <numbers>
#include <random>

namespace flowscope {

namespace {

// Uniform doubles and standard normals (Box-Muller) from one mt19937_64 stream.
class Sampler {
  public:
    explicit Sampler(std::uint64_t seed) : engine_(seed) {}

    // Uniform in [0, 1): the top 53 bits of a word, exactly representable.
    double uniform() { return double(engine_() >> 11) * 0x1.0p-53; }

    // Standard normal. Box-Muller yields normals in pairs; the second is kept for the next call.
    double normal() {
        if (hasSpare_) {
            hasSpare_ = false;
            return spare_;
        }
        const double u1 = 1.0 - uniform(); // (0, 1]: log(u1) is finite
        const double u2 = uniform();
        const double radius = std::sqrt(-2.0 * std::log(u1));
        const double angle = 2.0 * std::numbers::pi * u2;
        spare_ = radius * std::sin(angle);
        hasSpare_ = true;
        return radius * std::cos(angle);
    }

  private:
    std::mt19937_64 engine_;
    double spare_ = 0.0;
    bool hasSpare_ = false;
};

// A factor L with L L^T = cov, for any symmetric positive semi-definite cov (singular ones included, where a
// Cholesky factorization would fail): L = U sqrt(max(Lambda, 0)) from the eigendecomposition cov = U Lambda
// U^T.
Mat covarianceFactor(const Mat& cov) {
    const Mat symmetric = 0.5 * (cov + cov.transpose());
    Eigen::SelfAdjointEigenSolver<Mat> eigen(symmetric);
    const Vec roots = eigen.eigenvalues().cwiseMax(0.0).cwiseSqrt();
    return eigen.eigenvectors() * roots.asDiagonal();
}

Tokens gaussianTokens(const InitialSpec& spec, int n, int d) {
    const Vec mean = spec.mean.size() ? spec.mean : Vec::Zero(d);
    const Mat L = spec.cov.size() ? covarianceFactor(spec.cov) : Mat::Identity(d, d);
    Sampler sampler(spec.seed);
    // Token by token (row-major draw order), so that token i does not depend on N.
    Tokens Z(n, d);
    for (int i = 0; i < n; ++i)
        for (int c = 0; c < d; ++c) Z(i, c) = sampler.normal();
    Tokens X = Z * L.transpose();
    X.rowwise() += mean.transpose();
    return X;
}

Tokens uniformTokens(const InitialSpec& spec, int n, int d) {
    const Vec low = spec.low.size() ? spec.low : Vec::Constant(d, -1.0);
    const Vec high = spec.high.size() ? spec.high : Vec::Constant(d, 1.0);
    Sampler sampler(spec.seed);
    Tokens X(n, d);
    for (int i = 0; i < n; ++i)
        for (int c = 0; c < d; ++c) X(i, c) = low(c) + (high(c) - low(c)) * sampler.uniform();
    return X;
}

// Token i lies on ring floor(i R / N): contiguous blocks, so that the ring sizes differ by at most one and a
// colour map by token index shows the rings.
Tokens ringTokens(const InitialSpec& spec, int n, int d) {
    const std::vector<double> radii = spec.radii.empty() ? std::vector<double>{1.0} : spec.radii;
    const long long rings = (long long)radii.size();
    Sampler sampler(spec.seed);
    Tokens X = Tokens::Zero(n, d);
    for (int i = 0; i < n; ++i) {
        const double r = radii[std::size_t((long long)i * rings / n)];
        const double angle = 2.0 * std::numbers::pi * sampler.uniform();
        X(i, 0) = r * std::cos(angle);
        if (d > 1) X(i, 1) = r * std::sin(angle);
        if (spec.noise > 0)
            for (int c = 0; c < d; ++c) X(i, c) += spec.noise * sampler.normal();
    }
    return X;
}

Tokens fileTokens(const InitialSpec& spec, int n, int d) {
    const std::string pointer = "/initial/path";
    const std::string quoted = quoteForMessage(spec.path, kMaxQuotedPath);
    std::string ext = std::filesystem::path(spec.path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    if (ext != ".npy" && ext != ".csv")
        throw SceneError(pointer, "expected a .npy or .csv file, got " + quoted);
    // The file may have changed since the scene was read; a FIFO would block the read.
    if (const std::string why = notARegularFile(spec.path); !why.empty())
        throw SceneError(pointer, "cannot read tokens from " + quoted + ": " + why);
    // A 1-D array is a column of scalars, accepted when d = 1.
    const auto checkShape = [&](std::vector<std::int64_t> shape) {
        if (shape.size() == 1 && d == 1) shape.push_back(1);
        if (shape.size() == 2 && shape[0] == n && shape[1] == d) return;
        std::string text;
        for (std::size_t k = 0; k < shape.size(); ++k) text += (k ? ", " : "") + std::to_string(shape[k]);
        throw SceneError(pointer, "expected tokens of shape (" + std::to_string(n) + ", " +
                                      std::to_string(d) + ") (n x d of the scene), got shape (" + text +
                                      ") in " + quoted);
    };
    NpyArray array;
    try {
        if (ext == ".npy") {
            // The header's shape first: a wrong-shaped file of gigabytes is refused without reading it.
            checkShape(readNpyHeader(spec.path).shape);
            array = readNpy(spec.path);
        } else {
            array = readCsv(spec.path);
        }
    } catch (const SceneError&) {
        throw;
    } catch (const std::exception& e) {
        throw SceneError(pointer, "cannot read tokens from " + quoted + ": " + e.what());
    }
    checkShape(array.shape);
    Tokens X(n, d);
    for (int i = 0; i < n; ++i)
        for (int c = 0; c < d; ++c) {
            const double v = array.data[std::size_t(i) * std::size_t(d) + std::size_t(c)];
            if (!std::isfinite(v))
                throw SceneError(pointer, "expected finite numbers, got " + std::to_string(v) + " at row " +
                                              std::to_string(i) + ", column " + std::to_string(c) + " of " +
                                              quoted);
            X(i, c) = v;
        }
    return X;
}

// Token i is point (i mod m) plus jitter: the drawn points themselves when N = m, each repeated when N > m.
Tokens pointTokens(const InitialSpec& spec, int n, int d) {
    const Eigen::Index m = spec.points.rows();
    if (m == 0 || spec.points.cols() != d)
        throw SceneError("/initial/points", "expected at least one point of " + std::to_string(d) +
                                                " coordinates, got " + std::to_string(m) + " x " +
                                                std::to_string(spec.points.cols()));
    Sampler sampler(spec.seed);
    Tokens X(n, d);
    for (int i = 0; i < n; ++i)
        for (int c = 0; c < d; ++c) {
            X(i, c) = spec.points(i % m, c);
            if (spec.noise > 0) X(i, c) += spec.noise * sampler.normal();
        }
    return X;
}

} // namespace

void checkTokenFile(const std::string& path) {
    if (const std::string why = notARegularFile(path); !why.empty())
        throw SceneError("/initial/path", why + ": " + quoteForMessage(path, kMaxQuotedPath));
}

Tokens initialTokens(const Scene& s) {
    switch (s.initial.kind) {
    case InitKind::Gaussian:
        return gaussianTokens(s.initial, s.n, s.d);
    case InitKind::Uniform:
        return uniformTokens(s.initial, s.n, s.d);
    case InitKind::Rings:
        return ringTokens(s.initial, s.n, s.d);
    case InitKind::File:
        return fileTokens(s.initial, s.n, s.d);
    case InitKind::Points:
        return pointTokens(s.initial, s.n, s.d);
    }
    throw SceneError("/initial/kind", "unknown initial kind");
}

} // namespace flowscope
