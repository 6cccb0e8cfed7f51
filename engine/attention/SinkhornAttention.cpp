#include "engine/attention/SinkhornAttention.h"

#include "engine/attention/KernelAttention.h"

#include <cmath>

namespace flowscope {

Mat SinkhornAttention::scoreMatrix(const HeadParams& head) const {
    return scoreScale(spec_, head) / spec_.sinkhornEps * head.K.transpose() * head.Q;
}

double SinkhornAttention::solve(const Mat& B, const Tokens& X, Vec& f, Vec& g, int& iterations) const {
    const Eigen::Index n = X.rows();
    const double logN = std::log(double(n));
    // Float32 cannot see a marginal error much below 2e-6, so it stops there; tol = 0 asks for every
    // iteration in both precisions (benchmarks: the same work at every N).
    const double tol = runner_->precision() == Precision::Float32 && spec_.sinkhornTol > 0
                           ? std::max(spec_.sinkhornTol, 2e-6)
                           : spec_.sinkhornTol;
    if (g.size() != n || !g.allFinite()) g.setZero(n);
    const Mat Bt = B.transpose();
    Vec lse;
    double err = std::numeric_limits<double>::infinity();
    iterations = 0;
    while (iterations < std::max(1, spec_.sinkhornIterations)) {
        ++iterations;
        logSumExp(*runner_, X, B, X, g, lse); // rows: sum_j exp(g_j + x_j^T B x_i)
        f = logN - lse.array();
        logSumExp(*runner_, X, Bt, X, f, lse); // columns: sum_i exp(f_i + x_i^T B^T x_j)
        const Vec gNew = logN - lse.array();
        // With rows exact for (f, g), column j sums to exp(g_j - gNew_j).
        err = ((g - gNew).array().exp() - 1.0).abs().maxCoeff();
        if (!(err > tol)) break; // also stops on NaN
        g = gNew;
    }
    return err;
}

void SinkhornAttention::velocity(double t, const Tokens& X, Tokens& dX) {
    dX.setZero(X.rows(), X.cols());
    const auto heads = spec_.headsAt(t);
    f_.resize(heads.size());
    g_.resize(heads.size());
    diag_ = {};
    diag_.sinkhornMarginalError = 0.0;
    Tokens avg;
    for (std::size_t h = 0; h < heads.size(); ++h) {
        HeadSetup s;
        s.B = scoreMatrix(heads[h]);
        int iters = 0;
        const double err = solve(s.B, X, f_[h], g_[h], iters);
        diag_.sinkhornMarginalError = std::max(diag_.sinkhornMarginalError, err);
        diag_.sinkhornIterations = std::max(diag_.sinkhornIterations, iters);
        // The row-normalized softmax with key bias g is exactly the plan's rows: P_ij = (1/N)
        // e^{f_i+g_j+s_ij}.
        s.bias = g_[h];
        kernelAverage(*runner_, X, s, false, avg);
        dX.noalias() += (1.0 / spec_.sinkhornEps) * avg * heads[h].V.transpose();
    }
}

std::optional<HeadSetup> SinkhornAttention::distributionHead(double t, const Tokens& X) const {
    const auto heads = spec_.headsAt(t);
    if (heads.empty() || g_.empty() || g_[0].size() != X.rows()) return std::nullopt;
    HeadSetup h;
    h.B = scoreMatrix(heads[0]);
    h.bias = g_[0];
    return h;
}

} // namespace flowscope
