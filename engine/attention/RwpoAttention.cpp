#include "engine/attention/RwpoAttention.h"

#include <cmath>

namespace flowscope {

namespace {

// Huber function of the L1 prior's Moreau envelope, summed over coordinates of each row.
Vec moreauEnvelope(const Tokens& Y, double lambda, double h) {
    const double th = lambda * h;
    return Y
        .unaryExpr([&](double s) {
            const double a = std::abs(s);
            return a <= th ? s * s / (2.0 * h) : lambda * a - lambda * lambda * h / 2.0;
        })
        .rowwise()
        .sum();
}

} // namespace

Tokens RwpoAttention::softThreshold(const Tokens& X, double th) {
    return X.unaryExpr([th](double s) { return s > th ? s - th : (s < -th ? s + th : 0.0); });
}

HeadSetup RwpoAttention::vectorKernel(const Tokens& X) const {
    const double beta = spec_.beta, h = spec_.h, lambda = spec_.lambda;
    HeadSetup k;
    k.B = Mat::Identity(X.cols(), X.cols()) * (beta / (2.0 * h));
    k.V = Mat::Identity(X.cols(), X.cols());
    if (spec_.rwpoKernel == RwpoKernel::AsPrinted) {
        const Tokens S = softThreshold(X, lambda * h);
        k.queries = (beta / (2.0 * h)) * (X - S);
        k.bias = (beta * lambda / 2.0) * S.cwiseAbs().rowwise().sum();
    } else {
        k.bias =
            -(beta / (4.0 * h)) * X.rowwise().squaredNorm() + (beta / 2.0) * moreauEnvelope(X, lambda, h);
    }
    return k;
}

void RwpoAttention::velocity(double, const Tokens& X, Tokens& dX) {
    const double h = spec_.h;
    Tokens mean(X.rows(), X.cols());
    if (spec_.rwpoKernel == RwpoKernel::PerCoordinate) {
        Tokens avg;
        for (Eigen::Index c = 0; c < X.cols(); ++c) {
            const Tokens Xc = X.col(c);
            HeadSetup k = vectorKernel(Xc); // 1-D corrected kernel on coordinate c
            kernelAverage(*runner_, Xc, k, spec_.masked, avg);
            mean.col(c) = avg.col(0);
        }
    } else {
        kernelAverage(*runner_, X, vectorKernel(X), spec_.masked, mean);
    }
    dX = (softThreshold(X, spec_.lambda * h) - mean) / (2.0 * h);
}

std::optional<HeadSetup> RwpoAttention::distributionHead(double, const Tokens& X) const {
    if (spec_.rwpoKernel == RwpoKernel::PerCoordinate) return std::nullopt;
    return vectorKernel(X);
}

} // namespace flowscope
