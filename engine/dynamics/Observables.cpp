#include "engine/dynamics/Observables.h"

#include <Eigen/Eigenvalues>
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

int countClusters(const Tokens& X, double tol, int maxClusters) {
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

Observables observe(const Tokens& X, const Tokens& V, double clusterTol, double rankTol) {
    Observables o;
    o.mean = tokenMean(X);
    o.cov = tokenCovariance(X);
    o.kinetic = V.size() ? 0.5 * V.rowwise().squaredNorm().mean() : 0.0;
    o.clusters = countClusters(X, clusterTol);
    o.rank = numericalRank(o.cov, rankTol);
    o.maxNorm = X.rows() ? X.rowwise().norm().maxCoeff() : 0.0;
    return o;
}

} // namespace flowscope
