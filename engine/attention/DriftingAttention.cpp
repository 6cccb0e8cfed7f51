#include "engine/attention/DriftingAttention.h"

#include "engine/attention/KernelAttention.h"

namespace flowscope {

namespace {

// The self-interaction head: scores x_j . x_i - |x_j|^2 / 2 = -|x_i - x_j|^2 / 2 + |x_i|^2 / 2.
HeadSetup selfHead(const Tokens& X) {
    const int d = int(X.cols());
    HeadSetup h;
    h.B = Mat::Identity(d, d);
    h.bias = -0.5 * X.rowwise().squaredNorm();
    h.V = Mat::Identity(d, d);
    return h;
}

} // namespace

void DriftingAttention::velocity(double, const Tokens& X, Tokens& dX) {
    const Vec m = spec_.targetMean.size() ? spec_.targetMean : Vec(Vec::Zero(d_));
    const Mat S = spec_.targetCov.size() ? spec_.targetCov : Mat(Mat::Identity(d_, d_));
    // Gamma^G_nu(x) = m + S (S + I)^{-1} (x - m); with G = S (S + I)^{-1} (rows: x^T G^T).
    const Mat G = (S + Mat::Identity(d_, d_)).transpose().ldlt().solve(S.transpose()).transpose();
    Tokens avg;
    kernelAverage(*runner_, X, selfHead(X), false, avg);
    dX = ((X.rowwise() - m.transpose()) * G.transpose()).rowwise() + m.transpose();
    dX -= avg;
}

std::optional<HeadSetup> DriftingAttention::distributionHead(double, const Tokens& X) const {
    return selfHead(X);
}

} // namespace flowscope
