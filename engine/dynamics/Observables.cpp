#include "engine/dynamics/Observables.h"

#include "engine/dynamics/Equiangular.h"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace flowscope {

Vec tokenMean(const Tokens& X) {
    return X.colwise().mean().transpose();
}

Mat tokenCovariance(const Tokens& X) {
    if (X.rows() == 0) return Mat::Zero(X.cols(), X.cols());
    const Tokens C = X.rowwise() - X.colwise().mean();
    return C.transpose() * C / double(X.rows());
}

namespace {

struct Cell {
    std::int64_t c[3];
    bool operator==(const Cell& o) const { return c[0] == o.c[0] && c[1] == o.c[1] && c[2] == o.c[2]; }
};
struct CellHash {
    std::size_t operator()(const Cell& k) const {
        std::uint64_t h = 1469598103934665603ull;
        for (std::int64_t v : k.c) h = (h ^ std::uint64_t(v)) * 1099511628211ull;
        return std::size_t(h ^ (h >> 29));
    }
};

} // namespace

int countClusters(const Tokens& X, double tol, int maxClusters) {
    const Eigen::Index n = X.rows(), k = std::min<Eigen::Index>(X.cols(), 3);
    // Cells as 64-bit integers: coordinates beyond 2^52 cells (or not finite) take the brute-force path.
    if (!(tol > 0.0) || n == 0 || !X.allFinite() || X.cwiseAbs().maxCoeff() / tol > 4.5e15)
        return countClustersBruteForce(X, tol, maxClusters);
    const double tol2 = tol * tol;
    std::unordered_map<Cell, std::vector<Eigen::Index>, CellHash> grid;
    grid.reserve(std::size_t(std::min<Eigen::Index>(n, maxClusters)) * 2);
    int leaders = 0;
    for (Eigen::Index i = 0; i < n; ++i) {
        Cell home{{0, 0, 0}};
        for (Eigen::Index c = 0; c < k; ++c) home.c[c] = std::int64_t(std::floor(X(i, c) / tol));
        bool joined = false;
        const int span = k == 1 ? 3 : k == 2 ? 9 : 27;
        for (int o = 0; o < span && !joined; ++o) {
            Cell near = home;
            for (Eigen::Index c = 0, code = o; c < k; ++c, code /= 3) near.c[c] += code % 3 - 1;
            const auto it = grid.find(near);
            if (it == grid.end()) continue;
            for (Eigen::Index l : it->second)
                if ((X.row(i) - X.row(l)).squaredNorm() <= tol2) {
                    joined = true;
                    break;
                }
        }
        if (!joined) {
            grid[home].push_back(i);
            if (++leaders >= maxClusters) return maxClusters;
        }
    }
    return leaders;
}

int countClustersBruteForce(const Tokens& X, double tol, int maxClusters) {
    std::vector<Eigen::Index> leaders;
    const double tol2 = tol * tol;
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
        bool joined = false;
        for (Eigen::Index l : leaders)
            if ((X.row(i) - X.row(l)).squaredNorm() <= tol2) {
                joined = true;
                break;
            }
        if (!joined) {
            leaders.push_back(i);
            if (int(leaders.size()) >= maxClusters) return maxClusters;
        }
    }
    return int(leaders.size());
}

int numericalRank(const Mat& cov, double relTol) {
    if (cov.size() == 0 || !cov.allFinite()) return 0;
    const Eigen::SelfAdjointEigenSolver<Mat> es(cov, Eigen::EigenvaluesOnly);
    const Vec ev = es.eigenvalues();
    const double top = ev.maxCoeff();
    if (!(top > 0.0)) return 0;
    return int((ev.array() > relTol * top).count());
}

Observables observeMoments(const Tokens& X, const Tokens& V, double rankTol) {
    Observables o;
    o.mean = tokenMean(X);
    o.cov = tokenCovariance(X);
    o.kinetic = V.size() ? 0.5 * V.rowwise().squaredNorm().mean() : 0.0;
    o.rank = numericalRank(o.cov, rankTol);
    o.maxNorm = X.rows() ? X.rowwise().norm().maxCoeff() : 0.0;
    o.meanCosine = meanCosine(X);
    return o;
}

Observables observe(const Tokens& X, const Tokens& V, double clusterTol, double rankTol) {
    Observables o = observeMoments(X, V, rankTol);
    o.clusters = countClusters(X, clusterTol);
    return o;
}

} // namespace flowscope
