#include "engine/flows/Datasets.h"

#include "engine/core/PolarNormal.h"
#include "engine/io/Npy.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <numbers>
#include <stdexcept>
#include <utility>

namespace flowscope::flows {

double Rng::normal() {
    if (hasSpare_) {
        hasSpare_ = false;
        return spare_;
    }
    const auto [first, second] = polarNormalPair([this] { return uniform(); });
    spare_ = first;
    hasSpare_ = true;
    return second;
}

// Rejects the 2^64 mod n lowest outputs, so that the accepted range is a whole number of copies of [0, n).
std::uint64_t Rng::below(std::uint64_t n) {
    const std::uint64_t reject = (0 - n) % n;
    for (;;) {
        const std::uint64_t r = engine_();
        if (r >= reject) return r % n;
    }
}

namespace {

constexpr double kPi = std::numbers::pi;

// numpy.linspace(a, b, n, endpoint): a + i*(b-a)/(n-1), or /n without the endpoint; linspace(a, b, 1) = [a].
double linspace(double a, double b, int n, bool endpoint, int i) {
    const int div = endpoint ? n - 1 : n;
    return div > 0 ? a + i * (b - a) / div : a;
}

// Fisher-Yates, as sklearn.utils.shuffle / RandomState.permutation do (with our stream).
void shuffleRows(Mat& X, Rng& rng) {
    for (Eigen::Index i = X.rows() - 1; i > 0; --i) {
        const auto j = Eigen::Index(rng.below(std::uint64_t(i) + 1));
        if (j != i) X.row(i).swap(X.row(j));
    }
}

void addNoise(Mat& X, double sigma, Rng& rng) {
    for (Eigen::Index i = 0; i < X.rows(); ++i)
        for (Eigen::Index c = 0; c < X.cols(); ++c) X(i, c) += sigma * rng.normal();
}

// sklearn make_swiss_roll(n, noise=1.0)[:, [0, 2]] / 5: t = 1.5π(1 + 2U), (x, y, z) = (t cos t, 21 U, t sin
// t), N(0, 1) added to each coordinate. y is dropped, so it is not drawn.
Mat swissroll(int n, Rng& rng) {
    Mat X(n, 2);
    for (int i = 0; i < n; ++i) {
        const double t = 1.5 * kPi * (1.0 + 2.0 * rng.uniform());
        X(i, 0) = t * std::cos(t);
        X(i, 1) = t * std::sin(t);
    }
    addNoise(X, 1.0, rng);
    return X / 5.0;
}

// sklearn make_circles(n, factor=.5, noise=.08) * 3: n/2 points on the unit circle and n - n/2 on the circle
// of radius 0.5, each at linspace(0, 2π, ·, endpoint=False); shuffled; N(0, 0.08²) noise; then scaled by 3
// (so the noise is 0.24 in the result).
Mat circles(int n, Rng& rng) {
    const int nOut = n / 2, nIn = n - nOut;
    Mat X(n, 2);
    for (int i = 0; i < nOut; ++i) {
        const double a = linspace(0, 2 * kPi, nOut, false, i);
        X.row(i) << std::cos(a), std::sin(a);
    }
    for (int i = 0; i < nIn; ++i) {
        const double a = linspace(0, 2 * kPi, nIn, false, i);
        X.row(nOut + i) << 0.5 * std::cos(a), 0.5 * std::sin(a);
    }
    shuffleRows(X, rng);
    addNoise(X, 0.08, rng);
    return 3.0 * X;
}

// Four circles of radii 3·(1, .75, .5, .25) with n/4, n/4, n/4 and the rest of the points at
// linspace(0, 2π, ·, endpoint=False); shuffled; then N(0, 0.08²) noise (after the scaling).
Mat rings(int n, Rng& rng) {
    const int q = n / 4;
    const int counts[4] = {q, q, q, n - 3 * q};
    const double radii[4] = {1.0, 0.75, 0.5, 0.25};
    Mat X(n, 2);
    int row = 0;
    for (int k = 0; k < 4; ++k)
        for (int i = 0; i < counts[k]; ++i, ++row) {
            const double a = linspace(0, 2 * kPi, counts[k], false, i);
            X.row(row) << 3.0 * radii[k] * std::cos(a), 3.0 * radii[k] * std::sin(a);
        }
    shuffleRows(X, rng);
    addNoise(X, 0.08, rng);
    return X;
}

// sklearn make_moons(n, noise=0.1) * 2 + (-1, -0.2): n/2 points (cos θ, sin θ) and n - n/2 points
// (1 - cos θ, 0.5 - sin θ), θ = linspace(0, π, ·) with the endpoint; shuffled; N(0, 0.1²) noise; then
// scaled and shifted (so the noise is 0.2 in the result).
Mat moons(int n, Rng& rng) {
    const int nOut = n / 2, nIn = n - nOut;
    Mat X(n, 2);
    for (int i = 0; i < nOut; ++i) {
        const double a = linspace(0, kPi, nOut, true, i);
        X.row(i) << std::cos(a), std::sin(a);
    }
    for (int i = 0; i < nIn; ++i) {
        const double a = linspace(0, kPi, nIn, true, i);
        X.row(nOut + i) << 1.0 - std::cos(a), 1.0 - std::sin(a) - 0.5;
    }
    shuffleRows(X, rng);
    addNoise(X, 0.1, rng);
    X *= 2.0;
    X.col(0).array() -= 1.0;
    X.col(1).array() -= 0.2;
    return X;
}

// Per point: N(0, 0.5²) in each coordinate, plus one of 8 centres 4·{(1,0), (-1,0), (0,1), (0,-1),
// (±1/√2, ±1/√2)} drawn uniformly; then everything divided by 1.414 (not √2: the original's constant).
Mat eightGaussians(int n, Rng& rng) {
    const double r = 1.0 / std::sqrt(2.0);
    const double centres[8][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}, {r, r}, {r, -r}, {-r, r}, {-r, -r}};
    Mat X(n, 2);
    for (int i = 0; i < n; ++i) {
        const double z0 = 0.5 * rng.normal(), z1 = 0.5 * rng.normal();
        const auto k = rng.below(8);
        X(i, 0) = (z0 + 4.0 * centres[k][0]) / 1.414;
        X(i, 1) = (z1 + 4.0 * centres[k][1]) / 1.414;
    }
    return X;
}

// 5 arms k = 0..4: f = (1 + 0.3 N, 0.1 N), a = 2πk/5 + 0.25 exp(f0), point 2·f·R(a) with the row-vector
// product f·[[cos a, -sin a], [sin a, cos a]] = (f0 cos a + f1 sin a, -f0 sin a + f1 cos a) (the original's
// einsum "ti,tij->tj"); rows permuted.
Mat pinwheel(int n, Rng& rng) {
    const int perArm = n / 5, extra = n % 5;
    Mat X(n, 2);
    int row = 0;
    for (int k = 0; k < 5; ++k)
        for (int i = 0; i < perArm + (k < extra ? 1 : 0); ++i, ++row) {
            const double f0 = 1.0 + 0.3 * rng.normal(), f1 = 0.1 * rng.normal();
            const double a = linspace(0, 2 * kPi, 5, false, k) + 0.25 * std::exp(f0);
            const double c = std::cos(a), s = std::sin(a);
            X.row(row) << 2.0 * (f0 * c + f1 * s), 2.0 * (-f0 * s + f1 * c);
        }
    shuffleRows(X, rng);
    return X;
}

// First spiral (n - n/2 points): t = √U · 540·2π/360 (= 3π √U), d = (-t cos t + 0.5 U, t sin t + 0.5 U), with
// independent U's. Second spiral (n/2 points): -d for the first n/2 points of the first. Divided by 3, then
// N(0, 0.1²) noise on every point. Not shuffled (the original is not either).
Mat twoSpirals(int n, Rng& rng) {
    const int n1 = n - n / 2;
    Mat X(n, 2);
    for (int i = 0; i < n1; ++i) {
        const double t = std::sqrt(rng.uniform()) * 3.0 * kPi;
        const double dx = -std::cos(t) * t + 0.5 * rng.uniform();
        const double dy = std::sin(t) * t + 0.5 * rng.uniform();
        X.row(i) << dx / 3.0, dy / 3.0;
    }
    for (int i = 0; i < n / 2; ++i) X.row(n1 + i) = -X.row(i);
    addNoise(X, 0.1, rng);
    return X;
}

// x1 = U(-2, 2); x2 = U(0, 1) - 2·B + (floor(x1) mod 2) with B uniform on {0, 1} and a mod in {0, 1};
// returns 2·(x1, x2). In cells of side 2, column c = floor(x/2) + 2 and row r = floor(y/2) + 2 (0..3 on
// [-4, 4)²): the point is uniform on the 8 cells with c + r even.
Mat checkerboard(int n, Rng& rng) {
    Mat X(n, 2);
    for (int i = 0; i < n; ++i) {
        const double x1 = 4.0 * rng.uniform() - 2.0;
        const double u = rng.uniform();
        const double b = double(rng.below(2));
        const double parity = double(((long long)std::floor(x1) % 2 + 2) % 2);
        X(i, 0) = 2.0 * x1;
        X(i, 1) = 2.0 * (u - 2.0 * b + parity);
    }
    return X;
}

using Generator = Mat (*)(int, Rng&);
struct Dataset {
    const char* name;
    Generator generate;
};
constexpr Dataset kDatasets[] = {
    {"swissroll", swissroll}, {"circles", circles},           {"rings", rings},
    {"moons", moons},         {"8gaussians", eightGaussians}, {"pinwheel", pinwheel},
    {"2spirals", twoSpirals}, {"checkerboard", checkerboard},
};

std::string joinedNames() {
    std::string s;
    for (const auto& d : kDatasets) s += (s.empty() ? "" : ", ") + std::string(d.name);
    return s;
}

} // namespace

std::vector<std::string> datasetNames() {
    std::vector<std::string> names;
    for (const auto& d : kDatasets) names.emplace_back(d.name);
    return names;
}

bool isDatasetName(const std::string& name) {
    return std::any_of(std::begin(kDatasets), std::end(kDatasets),
                       [&](const Dataset& d) { return name == d.name; });
}

Mat sampleDataset(const std::string& name, int n, Rng& rng) {
    if (n < 0) throw std::invalid_argument("sampleDataset: negative sample count " + std::to_string(n));
    for (const auto& d : kDatasets)
        if (name == d.name) return d.generate(n, rng);
    throw std::invalid_argument("unknown dataset '" + name + "' (valid: " + joinedNames() + ")");
}

Mat sampleDataset(const std::string& name, int n, std::uint64_t seed) {
    Rng rng(seed);
    return sampleDataset(name, n, rng);
}

Mat loadPoints(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(path, ec)) throw std::runtime_error(path + ": no such file");
    if (fs::is_directory(path, ec)) throw std::runtime_error(path + ": is a directory, not a point file");
    if (fs::file_size(path, ec) == 0 && !ec) throw std::runtime_error(path + ": empty file");

    std::string ext = fs::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    NpyArray a;
    if (ext == ".npy")
        a = readNpy(path);
    else if (ext == ".csv" || ext == ".txt")
        a = readCsv(path);
    else
        throw std::runtime_error(path + ": unsupported extension '" + ext +
                                 "' (expected .npy, .csv or .txt)");

    if (a.shape.size() != 2) {
        std::string shape;
        for (auto s : a.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(s);
        throw std::runtime_error(path + ": expected a 2-D array of points (n x d), got shape (" + shape +
                                 ")");
    }
    const auto n = a.shape[0], d = a.shape[1];
    if (n == 0) throw std::runtime_error(path + ": contains no points (0 rows)");
    if (d == 0) throw std::runtime_error(path + ": points have no coordinates (0 columns)");

    Mat X(n, d);
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t c = 0; c < d; ++c) {
            const double v = a.data[std::size_t(i * d + c)];
            if (!std::isfinite(v))
                throw std::runtime_error(path + ": non-finite value (" +
                                         (std::isnan(v) ? "NaN" : "infinity") + ") at row " +
                                         std::to_string(i) + ", column " + std::to_string(c) + " (0-based)");
            X(i, c) = v;
        }
    return X;
}

PointSampler::PointSampler(Mat points, std::uint64_t seed, double jitter)
    : points_(std::move(points)), jitter_(jitter), rng_(seed) {
    if (points_.rows() == 0 || points_.cols() == 0) throw std::invalid_argument("PointSampler: no points");
    if (!(jitter_ >= 0.0)) throw std::invalid_argument("PointSampler: jitter must be >= 0");
}

Mat PointSampler::sample(int n) {
    if (n < 0) throw std::invalid_argument("PointSampler: negative sample count");
    Mat X(n, points_.cols());
    for (int i = 0; i < n; ++i)
        X.row(i) = points_.row(Eigen::Index(rng_.below(std::uint64_t(points_.rows()))));
    if (jitter_ > 0.0) addNoise(X, jitter_, rng_);
    return X;
}

} // namespace flowscope::flows
