#include "engine/flows/Metrics.h"

#include "engine/core/Parallel.h"
#include "engine/flows/Datasets.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

namespace flowscope::flows {

namespace {

// Σ_j k(a_i, b_j) for every row i of A, over all rows j of B, or over j > i only (`upper`, when A is B).
// Points are transposed to contiguous columns; each row's sum is written to its own slot so that the final
// total is summed in a fixed order whatever the thread split.
std::vector<double> kernelRowSums(const Mat& A, const Mat& B, bool upper, double alpha) {
    const Mat At = A.transpose(), Bt = B.transpose();
    const Eigen::Index d = At.rows(), n = Bt.cols();
    std::vector<double> sums(std::size_t(At.cols()), 0.0);
    parallelFor(sums.size(), 16, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
            const double* a = At.data() + Eigen::Index(i) * d;
            double s = 0.0;
            for (Eigen::Index j = upper ? Eigen::Index(i) + 1 : 0; j < n; ++j) {
                const double* b = Bt.data() + j * d;
                double r2 = 0.0;
                for (Eigen::Index c = 0; c < d; ++c) {
                    const double e = a[c] - b[c];
                    r2 += e * e;
                }
                s += std::exp(-alpha * r2);
            }
            sums[i] = s;
        }
    });
    return sums;
}

double total(const std::vector<double>& v) {
    double s = 0.0;
    for (double x : v) s += x;
    return s;
}

// 8gaussians after the generator's division by 1.414: means μ_k = 4 c_k / 1.414, per-mode std s = 0.5/1.414.
constexpr double kEightScale = 4.0 / 1.414;
constexpr double kEightStd = 0.5 / 1.414;
const double kDiag = 1.0 / std::sqrt(2.0);
const double kEightCentres[8][2] = {{1, 0},         {-1, 0},         {0, 1},          {0, -1},
                                    {kDiag, kDiag}, {kDiag, -kDiag}, {-kDiag, kDiag}, {-kDiag, -kDiag}};

// log Σ_k exp(-‖(x, y) - μ_k‖² / (2 s²)), stably.
double eightLogSumExp(double x, double y) {
    double e[8], top = -std::numeric_limits<double>::infinity();
    for (int k = 0; k < 8; ++k) {
        const double dx = x - kEightScale * kEightCentres[k][0], dy = y - kEightScale * kEightCentres[k][1];
        e[k] = -(dx * dx + dy * dy) / (2.0 * kEightStd * kEightStd);
        top = std::max(top, e[k]);
    }
    double s = 0.0;
    for (double v : e) s += std::exp(v - top);
    return top + std::log(s);
}

} // namespace

double mmd2Unbiased(const Mat& X, const Mat& Y, double alpha) {
    if (X.rows() < 2 || Y.rows() < 2)
        throw std::invalid_argument("mmd2Unbiased: each sample needs at least 2 points (got " +
                                    std::to_string(X.rows()) + " and " + std::to_string(Y.rows()) + ")");
    if (X.cols() != Y.cols())
        throw std::invalid_argument("mmd2Unbiased: samples of dimension " + std::to_string(X.cols()) +
                                    " and " + std::to_string(Y.cols()));
    const double m = double(X.rows()), n = double(Y.rows());
    const double xx = 2.0 * total(kernelRowSums(X, X, true, alpha)); // k is symmetric: Σ_{i≠j} = 2 Σ_{i<j}
    const double yy = 2.0 * total(kernelRowSums(Y, Y, true, alpha));
    const double xy = total(kernelRowSums(X, Y, false, alpha));
    return xx / (m * (m - 1.0)) + yy / (n * (n - 1.0)) - 2.0 * xy / (m * n);
}

double mmd2Unbiased(const Eigen::MatrixXf& X, const Eigen::MatrixXf& Y, double alpha) {
    return mmd2Unbiased(Mat(X.cast<double>()), Mat(Y.cast<double>()), alpha);
}

// The checkerboard generator draws x = 2 x1 with x1 ~ U(-2, 2): x is uniform on [-4, 4), density 1/8. Given
// x, y = 2 x2 with x2 = U(0, 1) - 2B + (floor(x1) mod 2): y is uniform on two intervals of length 2 (B is a
// fair coin), density 1/4. So p = 1/8 · 1/4 = 1/32 on the 8 cells of area 4 where (column + row) is even,
// and H = -∫ p log p = log 32.
double checkerboardLogDensity(double x, double y) {
    if (!(x >= -4.0 && x < 4.0 && y >= -4.0 && y < 4.0)) return -std::numeric_limits<double>::infinity();
    const int column = int(std::floor(x / 2.0)) + 2, row = int(std::floor(y / 2.0)) + 2;
    return (column + row) % 2 == 0 ? -std::log(32.0) : -std::numeric_limits<double>::infinity();
}

double checkerboardEntropy() {
    return std::log(32.0);
}

double eightGaussiansLogDensity(double x, double y) {
    return -std::log(8.0) - std::log(2.0 * std::numbers::pi * kEightStd * kEightStd) + eightLogSumExp(x, y);
}

// Draw mode k uniformly and x = μ_k + s z. Then
//     -log p(x) = log 8 + log(2π s²) + ‖z‖²/2 - log Σ_j exp(-(‖x - μ_j‖² - ‖x - μ_k‖²) / (2 s²)),
// and E ‖z‖²/2 = 1 exactly, so H = log 8 + log(2πe s²) - E log Σ_j (...). Only the last term, the overlap of
// the modes (6.3e-3 here: neighbouring means are 6.1 s apart), is estimated by Monte Carlo; it is nearly 0
// for most draws, hence a standard error of ≈ 0.12/√samples instead of the ≈ 1/√samples of averaging -log p.
double eightGaussiansEntropy(int samples, std::uint64_t seed) {
    if (samples < 1) throw std::invalid_argument("eightGaussiansEntropy: need at least one sample");
    Rng rng(seed);
    const double s2 = kEightStd * kEightStd;
    double overlap = 0.0;
    for (int i = 0; i < samples; ++i) {
        const double z0 = rng.normal(), z1 = rng.normal();
        const auto k = rng.below(8);
        const double x = kEightScale * kEightCentres[k][0] + kEightStd * z0;
        const double y = kEightScale * kEightCentres[k][1] + kEightStd * z1;
        overlap +=
            eightLogSumExp(x, y) + 0.5 * (z0 * z0 + z1 * z1); // log Σ_j exp(-‖x - μ_j‖²/(2s²) + ‖z‖²/2)
    }
    return std::log(8.0) + std::log(2.0 * std::numbers::pi * std::numbers::e * s2) - overlap / samples;
}

} // namespace flowscope::flows
