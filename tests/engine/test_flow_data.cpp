// The 2-D flow datasets, metrics and Adam, against oracles from their definitions: the generators' laws
// (docs/math/flows.md#datasets), closed-form Gaussian-kernel expectations, exact entropies and
// quadrature, and Adam's update formula.
#include "TestUtil.h"

#include "engine/flows/Adam.h"
#include "engine/flows/Datasets.h"
#include "engine/flows/Metrics.h"
#include "engine/io/Npy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <numbers>
#include <unistd.h>

using namespace flowscope;
using namespace flowscope::flows;
using flowscope::test::tempPath;

namespace {

constexpr double kPi = std::numbers::pi;

double mean(const Vec& v) {
    return v.mean();
}
double stddev(const Vec& v) {
    return std::sqrt((v.array() - v.mean()).square().sum() / double(v.size() - 1));
}
Vec radii(const Mat& X) {
    return X.rowwise().norm();
}
Vec squaredRadii(const Mat& X) {
    return X.rowwise().squaredNorm();
}
// |sample mean - expected| within z standard errors.
void expectMeanNear(const Vec& v, double expected, double z = 5.0) {
    EXPECT_NEAR(mean(v), expected, z * stddev(v) / std::sqrt(double(v.size())));
}

// The 8gaussians means (after /1.414) and per-mode std, from the recipe.
Mat eightMeans() {
    const double r = 1.0 / std::sqrt(2.0);
    Mat C(8, 2);
    C << 1, 0, -1, 0, 0, 1, 0, -1, r, r, r, -r, -r, r, -r, -r;
    return C * 4.0 / 1.414;
}

} // namespace

// ---------------------------------------------------------------------------------------------------------
// Datasets

TEST(FlowData, NamesAndUnknownName) {
    const std::vector<std::string> expected = {"swissroll",  "circles",  "rings",    "moons",
                                               "8gaussians", "pinwheel", "2spirals", "checkerboard"};
    EXPECT_EQ(datasetNames(), expected);
    try {
        sampleDataset("spiral", 10, 1);
        FAIL() << "no exception";
    } catch (const std::invalid_argument& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("spiral'"), std::string::npos) << msg;
        for (const auto& n : expected) EXPECT_NE(msg.find(n), std::string::npos) << msg;
    }
    EXPECT_THROW(sampleDataset("moons", -1, 1), std::invalid_argument);
}

TEST(FlowData, ShapeFiniteAndSeeded) {
    for (const auto& name : datasetNames()) {
        for (int n : {0, 1, 2, 3, 7, 1001}) {
            const Mat X = sampleDataset(name, n, 42);
            ASSERT_EQ(X.rows(), n) << name;
            ASSERT_EQ(X.cols(), 2) << name;
            EXPECT_TRUE(X.allFinite()) << name;
        }
        const Mat A = sampleDataset(name, 1000, 7), B = sampleDataset(name, 1000, 7),
                  C = sampleDataset(name, 1000, 8);
        EXPECT_TRUE(A == B) << name << ": same seed, different samples";
        EXPECT_FALSE(A == C) << name << ": different seeds, same samples";
        Rng rng(7); // the stream form continues one stream: its first batch is the seeded one
        EXPECT_TRUE(sampleDataset(name, 1000, rng) == A) << name;
        EXPECT_FALSE(sampleDataset(name, 1000, rng) == A) << name;
    }
}

TEST(FlowData, RngIsPortable) {
    // std::mt19937_64's 10000th output is fixed by the C++ standard; uniform() takes its top 53 bits.
    Rng r(5489);
    for (int i = 0; i < 9999; ++i) r.nextUint64();
    EXPECT_EQ(r.nextUint64(), 9981545732273789042ULL);
    Rng u(1);
    Vec U(200000), Z(200000);
    for (Eigen::Index i = 0; i < U.size(); ++i) U(i) = u.uniform();
    for (Eigen::Index i = 0; i < Z.size(); ++i) Z(i) = u.normal();
    EXPECT_GE(U.minCoeff(), 0.0);
    EXPECT_LT(U.maxCoeff(), 1.0);
    expectMeanNear(U, 0.5);
    EXPECT_NEAR(stddev(U), std::sqrt(1.0 / 12.0), 0.005 * std::sqrt(1.0 / 12.0));
    expectMeanNear(Z, 0.0);
    EXPECT_NEAR(stddev(Z), 1.0, 0.005);
    int counts[3] = {0, 0, 0};
    for (int i = 0; i < 30000; ++i) ++counts[u.below(3)];
    for (int c : counts) EXPECT_NEAR(c, 10000, 5 * std::sqrt(30000 * (1.0 / 3) * (2.0 / 3)));
}

// Outer arc 2(cos θ, sin θ) + (-1, -0.2) and inner arc 2(1 - cos θ, 0.5 - sin θ) + (-1, -0.2), noise 0.2,
// half the points each. The overall mean is exactly (0, 0.3): the cosines cancel over the symmetric θ grid
// and the two arcs' sine terms cancel each other.
TEST(FlowData, Moons) {
    const int n = 100000;
    const Mat X = sampleDataset("moons", n, 1);
    expectMeanNear(X.col(0), 0.0);
    expectMeanNear(X.col(1), 0.3);
    // Support: the noise-free arcs fill [-3, 3] x [-1.2, 1.8]; the noise (σ = 0.2) stays within 6σ.
    EXPECT_GE(X.col(0).minCoeff(), -3.0 - 1.2);
    EXPECT_LE(X.col(0).maxCoeff(), 3.0 + 1.2);
    EXPECT_GE(X.col(1).minCoeff(), -1.2 - 1.2);
    EXPECT_LE(X.col(1).maxCoeff(), 1.8 + 1.2);
    // Assign each point to the nearer arc (circles of radius 2 about (-1, -0.2), upper half, and (1, 0.8),
    // lower half); each holds half the points, with centre of mass 2·(0, 2/π) + (-1, -0.2) and
    // 2·(1, 0.5 - 2/π) + (-1, -0.2), and the distances to the arc have the noise's spread.
    auto arcDistance = [](double x, double y, double cx, double cy, bool upper) {
        const double dx = x - cx, dy = y - cy;
        if ((upper && dy >= 0) || (!upper && dy <= 0)) return std::abs(std::hypot(dx, dy) - 2.0);
        return std::min(std::hypot(dx - 2, dy), std::hypot(dx + 2, dy)); // nearest end point
    };
    Eigen::Vector2d sum[2] = {Eigen::Vector2d::Zero(), Eigen::Vector2d::Zero()};
    int count[2] = {0, 0};
    for (int i = 0; i < n; ++i) {
        const double d0 = arcDistance(X(i, 0), X(i, 1), -1, -0.2, true),
                     d1 = arcDistance(X(i, 0), X(i, 1), 1, 0.8, false);
        const int k = d0 <= d1 ? 0 : 1;
        sum[k] += X.row(i).transpose();
        ++count[k];
    }
    EXPECT_NEAR(count[0] / double(n), 0.5, 0.01);
    EXPECT_NEAR(sum[0].x() / count[0], -1.0, 0.02);
    EXPECT_NEAR(sum[0].y() / count[0], 4.0 / kPi - 0.2, 0.02);
    EXPECT_NEAR(sum[1].x() / count[1], 1.0, 0.02);
    EXPECT_NEAR(sum[1].y() / count[1], 0.8 - 4.0 / kPi, 0.02);
}

// Radii 3, 2.25, 1.5, 0.75, a quarter of the points each, noise 0.08 per coordinate:
// E‖x‖² = mean of r² + 2·0.08², and the radius histogram peaks at the four radii.
TEST(FlowData, Rings) {
    const int n = 100000;
    const Mat X = sampleDataset("rings", n, 2);
    const double R[4] = {3.0, 2.25, 1.5, 0.75};
    expectMeanNear(squaredRadii(X), (9.0 + 5.0625 + 2.25 + 0.5625) / 4 + 2 * 0.08 * 0.08);
    const Vec r = radii(X);
    std::vector<int> hist(100, 0); // bins of width 0.05 centred on multiples of 0.05
    for (Eigen::Index i = 0; i < n; ++i)
        ++hist[std::min<std::size_t>(99, std::size_t((r(i) + 0.025) / 0.05))];
    std::vector<int> order(hist.size());
    for (std::size_t b = 0; b < order.size(); ++b) order[b] = int(b);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return hist[a] > hist[b]; });
    std::vector<int> peaks;
    for (int b : order) {
        if (std::none_of(peaks.begin(), peaks.end(), [&](int p) { return std::abs(p - b) <= 3; }))
            peaks.push_back(b);
        if (peaks.size() == 4) break;
    }
    std::sort(peaks.begin(), peaks.end());
    EXPECT_EQ(peaks, (std::vector<int>{15, 30, 45, 60})); // 0.75, 1.5, 2.25, 3 in units of 0.05
    // Nearest ring: a quarter each, residual spread 0.08.
    int count[4] = {0, 0, 0, 0};
    Vec residual(n);
    for (Eigen::Index i = 0; i < n; ++i) {
        int k = 0;
        for (int j = 1; j < 4; ++j)
            if (std::abs(r(i) - R[j]) < std::abs(r(i) - R[k])) k = j;
        ++count[k];
        residual(i) = r(i) - R[k];
    }
    for (int c : count) EXPECT_NEAR(c / double(n), 0.25, 0.005);
    EXPECT_NEAR(stddev(residual), 0.08, 0.08 * 0.03);
}

// Radii 3 and 1.5, half each; sklearn adds noise 0.08 before the ×3, so 0.24 per coordinate.
TEST(FlowData, Circles) {
    const int n = 100000;
    const Mat X = sampleDataset("circles", n, 3);
    expectMeanNear(squaredRadii(X), (9.0 + 2.25) / 2 + 2 * 0.24 * 0.24);
    expectMeanNear(X.col(0), 0.0);
    expectMeanNear(X.col(1), 0.0);
    const Vec r = radii(X);
    Vec outer(n), inner(n);
    int no = 0, ni = 0;
    for (Eigen::Index i = 0; i < n; ++i) (r(i) > 2.25 ? outer(no++) : inner(ni++)) = r(i);
    EXPECT_NEAR(no / double(n), 0.5, 0.005);
    // A noisy point on a circle of radius R has E‖x‖ ≈ R + σ²/(2R).
    EXPECT_NEAR(outer.head(no).mean(), 3.0 + 0.24 * 0.24 / 6.0, 0.01);
    EXPECT_NEAR(inner.head(ni).mean(), 1.5 + 0.24 * 0.24 / 3.0, 0.01);
    EXPECT_NEAR(stddev(outer.head(no)), 0.24, 0.24 * 0.05);
}

// t = 1.5π(1 + 2U), point (t cos t, t sin t)/5 + N(0, 0.2²): ‖·‖ without noise in [0.3π, 0.9π], and
// E‖x‖² = (1.5π)² E(1 + 2U)² / 25 + 2·0.2² = 0.39 π² + 0.08.
TEST(FlowData, Swissroll) {
    const int n = 100000;
    const Mat X = sampleDataset("swissroll", n, 4);
    expectMeanNear(squaredRadii(X), 0.39 * kPi * kPi + 0.08);
    const Vec r = radii(X);
    EXPECT_GE(r.minCoeff(), 0.3 * kPi - 6 * 0.2);
    EXPECT_LE(r.maxCoeff(), 0.9 * kPi + 6 * 0.2);
    // The noise-free radius t/5 is uniform on [0.3π, 0.9π]: its quartiles are q = 0.45π, 0.6π, 0.75π, which
    // the noise moves out by about σ²/(2q) (E‖q u + ε‖ ≈ q + σ²/(2q) in 2-D). Quartile standard error ≈
    // 0.003.
    std::vector<double> s(r.data(), r.data() + n);
    std::sort(s.begin(), s.end());
    for (int k = 1; k <= 3; ++k) {
        const double q = (0.3 + 0.15 * k) * kPi;
        EXPECT_NEAR(s[std::size_t(k * n / 4)], q + 0.04 / (2 * q), 0.01) << "quartile " << k;
    }
}

// Nearest-mean residual has the per-mode std 0.5/1.414 in each coordinate, and every mode holds 1/8.
TEST(FlowData, EightGaussians) {
    const int n = 100000;
    const Mat X = sampleDataset("8gaussians", n, 5);
    const Mat C = eightMeans();
    Mat res(n, 2);
    int count[8] = {};
    for (int i = 0; i < n; ++i) {
        Eigen::Index k;
        (C.rowwise() - X.row(i)).rowwise().squaredNorm().minCoeff(&k);
        ++count[k];
        res.row(i) = X.row(i) - C.row(k);
    }
    const double s = 0.5 / 1.414;
    EXPECT_NEAR(stddev(res.col(0)), s, 0.02 * s);
    EXPECT_NEAR(stddev(res.col(1)), s, 0.02 * s);
    expectMeanNear(res.col(0), 0.0);
    expectMeanNear(res.col(1), 0.0);
    for (int c : count) EXPECT_NEAR(c / double(n), 0.125, 5 * std::sqrt(0.125 * 0.875 / n));
}

// Cells of side 2 on [-4, 4)²: column c = floor(x/2) + 2, row r = floor(y/2) + 2; the law is uniform on the
// 8 cells with c + r even and puts nothing in the other 8.
TEST(FlowData, Checkerboard) {
    const int n = 80000;
    const Mat X = sampleDataset("checkerboard", n, 6);
    int cells[4][4] = {};
    Vec fx(n), fy(n);
    for (int i = 0; i < n; ++i) {
        ASSERT_TRUE(X(i, 0) >= -4 && X(i, 0) < 4 && X(i, 1) >= -4 && X(i, 1) < 4) << X.row(i);
        const int c = int(std::floor(X(i, 0) / 2)) + 2, r = int(std::floor(X(i, 1) / 2)) + 2;
        ++cells[c][r];
        fx(i) = X(i, 0) / 2 - std::floor(X(i, 0) / 2); // position inside the cell, uniform on [0, 1)
        fy(i) = X(i, 1) / 2 - std::floor(X(i, 1) / 2);
    }
    double chi2 = 0;
    for (int c = 0; c < 4; ++c)
        for (int r = 0; r < 4; ++r) {
            if ((c + r) % 2) {
                EXPECT_EQ(cells[c][r], 0) << "cell " << c << "," << r;
            } else {
                const double e = n / 8.0;
                chi2 += (cells[c][r] - e) * (cells[c][r] - e) / e;
            }
        }
    EXPECT_LT(chi2, 29.9); // χ²(7): P(χ² > 29.9) = 1e-4
    expectMeanNear(fx, 0.5);
    expectMeanNear(fy, 0.5);
    EXPECT_NEAR(stddev(fx), std::sqrt(1.0 / 12), 0.01);
    EXPECT_NEAR(stddev(fy), std::sqrt(1.0 / 12), 0.01);
}

// Arm k: the noise-free point 2 f0 (cos a, -sin a) with a = 2πk/5 + 0.25 exp(f0), f0 = ‖x‖/2 up to the
// tangential noise. So -atan2(y, x) - 0.25 exp(‖x‖/2) lands near a multiple of 2π/5, 1/5 of the points each.
TEST(FlowData, Pinwheel) {
    const int n = 100000;
    const Mat X = sampleDataset("pinwheel", n, 7);
    int arms[5] = {}, near = 0;
    for (int i = 0; i < n; ++i) {
        const double phase = -std::atan2(X(i, 1), X(i, 0)) - 0.25 * std::exp(X.row(i).norm() / 2);
        const double q = phase / (2 * kPi / 5);
        const long k = std::lround(q);
        arms[((k % 5) + 5) % 5]++;
        if (std::abs(q - double(k)) * 2 * kPi / 5 < 0.35) ++near; // 3.5 tangential σ at f0 = 1
    }
    EXPECT_GT(near, 0.98 * n);
    for (int c : arms) EXPECT_NEAR(c / double(n), 0.2, 0.01);
    // Radial law: ‖x‖/2 = √(f0² + f1²) with f0 ~ N(1, 0.3²), f1 ~ N(0, 0.1²): E‖x‖² = 4(1 + 0.09 + 0.01).
    expectMeanNear(squaredRadii(X), 4.4);
}

// Two spirals, the second the mirror image of the first before the noise: row i and row n/2 + i sum to the
// difference of two noise draws, N(0, 2·0.1²). Noise-free radius ≤ (3π + 0.5√2)/3.
TEST(FlowData, TwoSpirals) {
    const int n = 100000;
    const Mat X = sampleDataset("2spirals", n, 8);
    const Mat S = X.topRows(n / 2) + X.bottomRows(n / 2);
    EXPECT_NEAR(stddev(S.col(0)), 0.1 * std::sqrt(2.0), 0.02 * 0.1 * std::sqrt(2.0));
    EXPECT_NEAR(stddev(S.col(1)), 0.1 * std::sqrt(2.0), 0.02 * 0.1 * std::sqrt(2.0));
    expectMeanNear(S.col(0), 0.0);
    const Vec r = radii(X);
    const double bound = (3 * kPi + 0.5 * std::sqrt(2.0)) / 3;
    EXPECT_LE(r.maxCoeff(), bound + 6 * 0.1);
    std::vector<double> s(r.data(), r.data() + n);
    std::sort(s.begin(), s.end());
    EXPECT_LE(s[n - n / 100], 3.6); // the 99th percentile
    EXPECT_GT(s[n - n / 100], 3.0);
    // ‖d‖ ≈ t = 3π√U, so (3‖x‖/(3π))² is about uniform: the median radius is about π/√2.
    EXPECT_NEAR(s[n / 2], kPi / std::sqrt(2.0), 0.1);
}

TEST(FlowData, PointSampler) {
    Mat P(3, 2);
    P << 0, 0, 1, 0, 0, 1;
    PointSampler a(P, 9), b(P, 9);
    const Mat A = a.sample(30000);
    EXPECT_TRUE(A == b.sample(30000));
    int counts[3] = {};
    for (Eigen::Index i = 0; i < A.rows(); ++i) {
        int k = -1;
        for (int j = 0; j < 3; ++j)
            if (A.row(i) == P.row(j)) k = j;
        ASSERT_GE(k, 0) << "not one of the points";
        ++counts[k];
    }
    for (int c : counts) EXPECT_NEAR(c, 10000, 5 * std::sqrt(30000 * (2.0 / 9)));
    PointSampler j(P, 10, 0.05);
    const Mat J = j.sample(30000);
    Vec dev(2 * J.rows());
    for (Eigen::Index i = 0; i < J.rows(); ++i) {
        Eigen::Index k;
        (P.rowwise() - J.row(i)).rowwise().squaredNorm().minCoeff(&k);
        dev.segment<2>(2 * i) = (J.row(i) - P.row(k)).transpose();
    }
    EXPECT_NEAR(stddev(dev), 0.05, 0.05 * 0.02);
    EXPECT_THROW(PointSampler(Mat(0, 2), 1), std::invalid_argument);
    EXPECT_THROW(PointSampler(P, 1, -1.0), std::invalid_argument);
}

TEST(FlowData, LoadPointsRoundTrip) {
    const Mat X = sampleDataset("moons", 257, 11);
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> rowMajor = X;
    const std::string npy = tempPath("points.npy"), npy32 = tempPath("points32.npy"),
                      csv = tempPath("points.csv");
    writeNpy(npy, {X.rows(), X.cols()}, rowMajor.data(), false);
    writeNpy(npy32, {X.rows(), X.cols()}, rowMajor.data(), true);
    {
        std::ofstream out(csv);
        out << "x,y\n" << std::setprecision(17);
        for (Eigen::Index i = 0; i < X.rows(); ++i) out << X(i, 0) << "," << X(i, 1) << "\n";
    }
    EXPECT_TRUE(loadPoints(npy) == X);
    EXPECT_TRUE(loadPoints(csv) == X);
    EXPECT_TRUE(loadPoints(npy32) == X.cast<float>().cast<double>());
    // n x d with d != 2 is accepted (the caller checks d).
    const Mat Y = Mat::Random(5, 3);
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> Yr = Y;
    writeNpy(npy, {5, 3}, Yr.data(), false);
    EXPECT_TRUE(loadPoints(npy) == Y);
    for (const auto& p : {npy, npy32, csv}) std::filesystem::remove(p);
}

TEST(FlowData, LoadPointsErrors) {
    auto messageOf = [](const std::string& path) -> std::string {
        try {
            loadPoints(path);
        } catch (const std::exception& e) {
            return e.what();
        }
        return "no exception";
    };
    auto contains = [](const std::string& s, const std::string& part) {
        return s.find(part) != std::string::npos;
    };

    const std::string cube = tempPath("cube.npy");
    const std::vector<double> data(24, 1.0);
    writeNpy(cube, {2, 3, 4}, data.data(), false);
    std::string msg = messageOf(cube);
    EXPECT_TRUE(contains(msg, "2-D") && contains(msg, "(2, 3, 4)")) << msg;

    const std::string nan = tempPath("nan.csv");
    std::ofstream(nan) << "1,2\n3,4\n5,nan\n";
    msg = messageOf(nan);
    EXPECT_TRUE(contains(msg, "NaN") && contains(msg, "row 2") && contains(msg, "column 1")) << msg;

    const std::string inf = tempPath("inf.npy");
    const double values[4] = {1, 2, INFINITY, 4};
    writeNpy(inf, {2, 2}, values, false);
    msg = messageOf(inf);
    EXPECT_TRUE(contains(msg, "infinity") && contains(msg, "row 1") && contains(msg, "column 0")) << msg;

    const std::string empty = tempPath("empty.csv");
    std::ofstream(empty).flush();
    msg = messageOf(empty);
    EXPECT_TRUE(contains(msg, "empty")) << msg;

    const std::string noRows = tempPath("norows.npy");
    writeNpy(noRows, {0, 2}, data.data(), false);
    msg = messageOf(noRows);
    EXPECT_TRUE(contains(msg, "no points")) << msg;

    msg = messageOf(tempPath("missing.npy"));
    EXPECT_TRUE(contains(msg, "no such file")) << msg;

    const std::string bad = tempPath("points.json");
    std::ofstream(bad) << "[]";
    msg = messageOf(bad);
    EXPECT_TRUE(contains(msg, "extension")) << msg;

    for (const auto& p : {cube, nan, inf, empty, noRows, bad}) std::filesystem::remove(p);
}

// ---------------------------------------------------------------------------------------------------------
// Metrics

namespace {

Mat gaussianSample(int n, double mx, double my, double s, Rng& rng) {
    Mat X(n, 2);
    for (int i = 0; i < n; ++i) X.row(i) << mx + s * rng.normal(), my + s * rng.normal();
    return X;
}

// E k(a, b) for independent a ~ N(μa, σa² I_d), b ~ N(μb, σb² I_d), k = exp(-α‖a - b‖²).
double expectedKernel(double alpha, double dmu2, double va, double vb, int d = 2) {
    const double q = 1.0 + 2.0 * alpha * (va + vb);
    return std::pow(q, -d / 2.0) * std::exp(-alpha * dmu2 / q);
}

double mmd2Dense(const Mat& X, const Mat& Y, double alpha) {
    auto k = [&](const Mat& A, const Mat& B, bool skipDiagonal) {
        double s = 0;
        for (Eigen::Index i = 0; i < A.rows(); ++i)
            for (Eigen::Index j = 0; j < B.rows(); ++j)
                if (!skipDiagonal || i != j) s += std::exp(-alpha * (A.row(i) - B.row(j)).squaredNorm());
        return s;
    };
    const double m = double(X.rows()), n = double(Y.rows());
    return k(X, X, true) / (m * (m - 1)) + k(Y, Y, true) / (n * (n - 1)) - 2 * k(X, Y, false) / (m * n);
}

} // namespace

TEST(FlowMetrics, Mmd2MatchesDenseFormula) {
    Rng rng(20);
    const Mat X = gaussianSample(157, 0.0, 0.0, 1.0, rng), Y = gaussianSample(131, 0.5, -0.2, 0.7, rng);
    for (double alpha : {0.1, 1.0, 5.0}) {
        const double ref = mmd2Dense(X, Y, alpha);
        EXPECT_NEAR(mmd2Unbiased(X, Y, alpha), ref, 1e-13 * (1 + std::abs(ref)));
        EXPECT_NEAR(mmd2Unbiased(Y, X, alpha), ref, 1e-13 * (1 + std::abs(ref))); // symmetric
    }
    const Eigen::MatrixXf Xf = X.cast<float>(), Yf = Y.cast<float>();
    EXPECT_NEAR(mmd2Unbiased(Xf, Yf), mmd2Dense(Xf.cast<double>(), Yf.cast<double>(), 1.0), 1e-13);
    EXPECT_THROW(mmd2Unbiased(X.topRows(1), Y), std::invalid_argument);
    EXPECT_THROW(mmd2Unbiased(X, Mat(Y.leftCols(1))), std::invalid_argument);
}

// Population MMD² = E k(x, x') + E k(y, y') - 2 E k(x, y); the estimator's mean over repeated draws is
// within its standard error of it.
TEST(FlowMetrics, Mmd2UnbiasedAgainstGaussianClosedForm) {
    const double alpha = 1.0, s1 = 1.0, s2 = 0.6, dmu2 = 0.5 * 0.5 + 0.3 * 0.3;
    const double population = expectedKernel(alpha, 0, s1 * s1, s1 * s1) +
                              expectedKernel(alpha, 0, s2 * s2, s2 * s2) -
                              2 * expectedKernel(alpha, dmu2, s1 * s1, s2 * s2);
    const int reps = 40, n = 400;
    Rng rng(21);
    Vec diff(reps), same(reps);
    for (int r = 0; r < reps; ++r) {
        diff(r) = mmd2Unbiased(gaussianSample(n, 0, 0, s1, rng), gaussianSample(n, 0.5, 0.3, s2, rng), alpha);
        same(r) =
            mmd2Unbiased(gaussianSample(n, 0.5, 0.3, s2, rng), gaussianSample(n, 0.5, 0.3, s2, rng), alpha);
    }
    EXPECT_GT(population, 0.05);
    expectMeanNear(diff, population, 4.0);
    expectMeanNear(same, 0.0, 4.0);
    EXPECT_LT(same.minCoeff(), 0.0); // unbiased: the same law gives negative values too
    EXPECT_LT(std::abs(same.mean()), 0.05 * population);
}

TEST(FlowMetrics, CheckerboardEntropy) {
    EXPECT_DOUBLE_EQ(checkerboardEntropy(), std::log(32.0));
    const Mat X = sampleDataset("checkerboard", 20000, 30);
    double sum = 0;
    for (Eigen::Index i = 0; i < X.rows(); ++i) sum -= checkerboardLogDensity(X(i, 0), X(i, 1));
    EXPECT_NEAR(sum / double(X.rows()), checkerboardEntropy(), 1e-12);
    // The density integrates to 1 (midpoint rule, exact for a piecewise constant on this grid).
    double mass = 0;
    const double h = 0.05;
    for (double x = -5 + h / 2; x < 5; x += h)
        for (double y = -5 + h / 2; y < 5; y += h) mass += std::exp(checkerboardLogDensity(x, y)) * h * h;
    EXPECT_NEAR(mass, 1.0, 1e-9);
    EXPECT_EQ(checkerboardLogDensity(-3, 3), -INFINITY); // an empty cell
    EXPECT_EQ(checkerboardLogDensity(4.5, 0), -INFINITY);
}

// -∫ p log p and ∫ p by the midpoint rule on [-7, 7]² (spectrally accurate for this smooth, fast-decaying
// integrand), against the Monte Carlo entropy and the generator's samples.
TEST(FlowMetrics, EightGaussiansEntropyAndDensity) {
    const double h = 0.02;
    double mass = 0, entropy = 0;
    for (double x = -7 + h / 2; x < 7; x += h)
        for (double y = -7 + h / 2; y < 7; y += h) {
            const double lp = eightGaussiansLogDensity(x, y), p = std::exp(lp);
            mass += p * h * h;
            entropy -= p * lp * h * h;
        }
    EXPECT_NEAR(mass, 1.0, 1e-9);
    const double mc = eightGaussiansEntropy(1000000, 31); // standard error ≈ 0.12/√samples ≈ 1.2e-4
    EXPECT_NEAR(mc, entropy, 1e-3);
    // The separated-mixture value log 8 + log(2πe s²) is an upper bound; the overlap lowers it a little.
    const double s = 0.5 / 1.414;
    const double separated = std::log(8.0) + std::log(2 * kPi * std::exp(1.0) * s * s);
    EXPECT_LT(entropy, separated);
    EXPECT_GT(entropy, separated - 0.01);
    // The density is the law of the 8gaussians generator: -mean log p over its samples is H.
    const Mat X = sampleDataset("8gaussians", 100000, 32);
    Vec nll(X.rows());
    for (Eigen::Index i = 0; i < X.rows(); ++i) nll(i) = -eightGaussiansLogDensity(X(i, 0), X(i, 1));
    expectMeanNear(nll, entropy, 4.0);
    EXPECT_DOUBLE_EQ(klFromNll(nll.mean(), entropy), nll.mean() - entropy);
}

// ---------------------------------------------------------------------------------------------------------
// Adam

TEST(Adam, TwoStepsMatchHandFormula) {
    AdamOptions o;
    o.lr = 0.1;
    Eigen::MatrixXd w(2, 1), g(2, 1);
    w << 1.0, -2.0;
    Adam<double> adam(o);
    adam.add(w, g);
    const double g1[2] = {0.5, -3.0}, g2[2] = {-1.0, 0.25};
    double m[2] = {0, 0}, v[2] = {0, 0}, expected[2] = {1.0, -2.0};
    for (int t = 1; t <= 2; ++t) {
        const double* gt = t == 1 ? g1 : g2;
        g << gt[0], gt[1];
        ASSERT_TRUE(adam.step());
        for (int i = 0; i < 2; ++i) {
            m[i] = 0.9 * m[i] + 0.1 * gt[i];
            v[i] = 0.999 * v[i] + 0.001 * gt[i] * gt[i];
            const double mh = m[i] / (1 - std::pow(0.9, t)), vh = v[i] / (1 - std::pow(0.999, t));
            expected[i] -= 0.1 * mh / (std::sqrt(vh) + 1e-8);
            EXPECT_NEAR(w(i), expected[i], 1e-15) << "step " << t << ", parameter " << i;
        }
        if (t == 1) { // the first step is lr·sign(g), up to ε
            EXPECT_NEAR(w(0), 0.9, 1e-8);
            EXPECT_NEAR(w(1), -1.9, 1e-8);
        }
    }
    EXPECT_EQ(adam.steps(), 2);
    adam.zeroGrad();
    EXPECT_EQ(g.norm(), 0.0);
}

TEST(Adam, WeightDecayIsAddedToTheGradient) {
    AdamOptions o;
    o.lr = 0.01;
    o.weightDecay = 0.5;
    Eigen::MatrixXd w = Eigen::MatrixXd::Constant(1, 1, 2.0), g = Eigen::MatrixXd::Constant(1, 1, -0.4);
    Adam<double> adam(o);
    adam.add(w, g);
    adam.step(); // g + wd·w = -0.4 + 1 = 0.6 > 0: the step goes down by lr
    EXPECT_NEAR(w(0, 0), 2.0 - 0.01, 1e-9);
}

TEST(Adam, MinimizesConvexQuadratic) {
    // f(x) = ½ (x - c)ᵀ A (x - c), A symmetric positive definite (condition number 100), float and double.
    Eigen::Matrix2d A;
    A << 10.0, 3.0, 3.0, 1.0; // eigenvalues ~10.9, ~0.08
    const Eigen::Vector2d c(1.5, -2.0);
    AdamOptions o;
    o.lr = 0.05;
    o.lrFinal = 1e-3;
    o.decaySteps = 3000;
    Eigen::MatrixXd x = Eigen::MatrixXd::Zero(2, 1), g(2, 1);
    Adam<double> adam(o);
    adam.add(x, g);
    Eigen::MatrixXf xf = Eigen::MatrixXf::Zero(2, 1), gf(2, 1);
    Adam<float> adamf(o);
    adamf.add(xf, gf);
    for (int k = 0; k < 3000; ++k) {
        g = A * (x - c);
        adam.step();
        gf = (A * (xf.cast<double>() - c)).cast<float>();
        adamf.step();
    }
    EXPECT_LT((x - c).norm(), 1e-5);
    EXPECT_LT((xf.cast<double>() - c).norm(), 1e-4); // float gradients: ~cond(A) · 2^-24 · ‖c‖
}

TEST(Adam, MinimizesRosenbrock) {
    // f = (1 - x)² + 100 (y - x²)², from the standard start (-1.2, 1); minimum 0 at (1, 1).
    AdamOptions o;
    o.lr = 0.02;
    Eigen::MatrixXd p(2, 1), g(2, 1);
    p << -1.2, 1.0;
    Adam<double> adam(o);
    adam.add(p, g);
    for (int k = 0; k < 5000; ++k) {
        const double x = p(0), y = p(1);
        g << -2 * (1 - x) - 400 * x * (y - x * x), 200 * (y - x * x);
        adam.step();
    }
    const double x = p(0), y = p(1);
    EXPECT_LT((1 - x) * (1 - x) + 100 * (y - x * x) * (y - x * x), 1e-12);
    EXPECT_NEAR(x, 1.0, 1e-6);
    EXPECT_NEAR(y, 1.0, 1e-6);
}

TEST(Adam, ClippingCapsTheGlobalNorm) {
    AdamOptions o;
    o.clipNorm = 1.0;
    Eigen::MatrixXd a = Eigen::MatrixXd::Zero(2, 2), ga(2, 2), b = Eigen::MatrixXd::Zero(3, 1), gb(3, 1);
    ga << 3, 0, 0, 4;
    gb << 0, 12, 0; // global norm √(9 + 16 + 144) = 13
    Adam<double> adam(o);
    adam.add(a, ga);
    adam.add(b, gb);
    EXPECT_NEAR(adam.gradientNorm(), 13.0, 1e-12);
    ASSERT_TRUE(adam.step());
    EXPECT_NEAR(adam.lastGradientNorm(), 13.0, 1e-12);
    EXPECT_NEAR(adam.gradientNorm(), 1.0, 1e-12); // clipped in place, directions kept
    EXPECT_NEAR(ga(1, 1) / ga(0, 0), 4.0 / 3.0, 1e-12);
    EXPECT_NEAR(gb(1), 12.0 / 13.0, 1e-12);
    // Below the cap nothing changes.
    ga << 0.1, 0, 0, 0;
    gb.setZero();
    adam.step();
    EXPECT_EQ(ga(0, 0), 0.1);
}

TEST(Adam, ClippingToTheMedianCapsASpikeAtAMultipleOfTheRecentNorms) {
    AdamOptions o;
    o.clipToMedian = 5.0;
    Eigen::MatrixXd a = Eigen::MatrixXd::Zero(2, 1), g(2, 1);
    Adam<double> adam(o);
    adam.add(a, g);
    // Norms 1, 2, 3, ... : no cap until kClipWindow / 4 = 16 steps are known, however large the gradient.
    for (int k = 1; k <= 16; ++k) {
        EXPECT_EQ(adam.clipCap(), 0.0) << k;
        g << 0.6 * k, 0.8 * k;
        ASSERT_TRUE(adam.step());
        EXPECT_FALSE(adam.lastClipped());
        EXPECT_NEAR(g.norm(), double(k), 1e-12);
    }
    // The median of 1..16 (the upper one, 9) times 5: a spike of norm 1000 leaves at 45, its direction kept.
    EXPECT_NEAR(adam.clipCap(), 45.0, 1e-12);
    g << 600, 800;
    ASSERT_TRUE(adam.step());
    EXPECT_TRUE(adam.lastClipped());
    EXPECT_NEAR(adam.lastGradientNorm(), 1000.0, 1e-9); // the norm before the cap
    EXPECT_NEAR(g(0), 27.0, 1e-12);
    EXPECT_NEAR(g(1), 36.0, 1e-12);
    // The spike counts among the recent norms but cannot move their median much; the window keeps the last
    // 64 steps: after 64 steps of norm 2 the cap is 10, the spike forgotten.
    for (int k = 0; k < 64; ++k) {
        g << 1.2, 1.6;
        ASSERT_TRUE(adam.step());
    }
    EXPECT_NEAR(adam.clipCap(), 10.0, 1e-12);
    // With a fixed cap as well, the lower of the two applies; reset() forgets the norms.
    o.clipNorm = 3.0;
    adam.setOptions(o);
    EXPECT_NEAR(adam.clipCap(), 3.0, 1e-12);
    adam.reset();
    EXPECT_NEAR(adam.clipCap(), 3.0, 1e-12);
}

// One weight w = 0 under the constant gradient g = 1, its rate decaying from 0.1 to 0.001 over 100 steps
// after `warmupSteps` steps of linear warm-up.
struct ScheduledAdam {
    explicit ScheduledAdam(long long warmupSteps = 0) : adam(options(warmupSteps)) { adam.add(w, g); }
    static AdamOptions options(long long warmupSteps) {
        AdamOptions o;
        o.lr = 0.1;
        o.lrFinal = 0.001;
        o.decaySteps = 100;
        o.warmupSteps = warmupSteps;
        return o;
    }

    Eigen::MatrixXd w = Eigen::MatrixXd::Zero(1, 1), g = Eigen::MatrixXd::Ones(1, 1);
    Adam<double> adam;
};

TEST(Adam, ScheduleReachesFinalRate) {
    ScheduledAdam s;
    Adam<double>& adam = s.adam;
    EXPECT_DOUBLE_EQ(adam.learningRate(), 0.1);
    for (int k = 0; k < 50; ++k) adam.step();
    EXPECT_NEAR(adam.learningRate(), 0.01, 1e-15); // the geometric midpoint
    for (int k = 0; k < 50; ++k) adam.step();
    EXPECT_NEAR(adam.learningRate(), 0.001, 1e-15);
    for (int k = 0; k < 50; ++k) adam.step();
    EXPECT_NEAR(adam.learningRate(), 0.001, 1e-15); // clamped after K
    adam.halveLearningRate();
    EXPECT_NEAR(adam.learningRate(), 0.0005, 1e-15);
    adam.reset();
    EXPECT_EQ(adam.steps(), 0);
    EXPECT_DOUBLE_EQ(adam.learningRate(), 0.1);
}

TEST(Adam, WarmupRisesLinearlyThenFollowsTheDecay) {
    ScheduledAdam s(4);
    const Eigen::MatrixXd& w = s.w;
    Adam<double>& adam = s.adam;
    for (int k = 0; k < 6; ++k) {
        const double decayed = 0.1 * std::pow(0.01, k / 100.0);
        EXPECT_NEAR(adam.learningRate(), decayed * std::min(1.0, (k + 1) / 4.0), 1e-15) << k;
        // Adam's first update moves the parameter by the rate itself (m / sqrt(v) = 1 for a constant g).
        const double before = w(0, 0), lr = adam.learningRate();
        adam.step();
        if (k == 0) {
            EXPECT_NEAR(before - w(0, 0), lr, 1e-9);
        }
    }
}

TEST(Adam, NonFiniteGradientIsRefusedAndHalvingWorks) {
    AdamOptions o;
    o.lr = 0.1;
    Eigen::MatrixXf w = Eigen::MatrixXf::Ones(2, 2), g = Eigen::MatrixXf::Ones(2, 2);
    Adam<float> adam(o);
    adam.add(w, g);
    ASSERT_TRUE(adam.step());
    const Eigen::MatrixXf after = w;
    g(1, 0) = std::nanf("");
    EXPECT_FALSE(adam.gradientsFinite());
    EXPECT_FALSE(adam.step()); // refused: parameters, moments and count untouched
    EXPECT_TRUE(w == after);
    EXPECT_EQ(adam.steps(), 1);
    g(1, 0) = INFINITY;
    EXPECT_FALSE(adam.gradientsFinite());
    adam.halveLearningRate();
    EXPECT_DOUBLE_EQ(adam.learningRate(), 0.05);
    // The next good step is the second Adam step with the halved rate: with a constant gradient m̂/√v̂ = 1.
    g.setOnes();
    EXPECT_TRUE(adam.gradientsFinite());
    ASSERT_TRUE(adam.step());
    EXPECT_EQ(adam.steps(), 2);
    EXPECT_NEAR(w(0, 0), after(0, 0) - 0.05, 1e-6);
}
