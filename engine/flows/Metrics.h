// Flowscope engine: how well a 2-D generative flow fits its data.
//
//  * MMD² between generated samples and data (OT-Flow src/mmd.py, Gaussian kernel exp(-α‖x - y‖²)).
//  * Exact differential entropies and log-densities of the datasets whose law is known in closed form, so
//  that
//    a model's negative log-likelihood on data, NLL = -E_p log q, turns into a divergence:
//        KL(p ‖ q) = E_p log p - E_p log q = NLL - H(p)   (>= 0, and 0 exactly when q = p).
#pragma once

#include "engine/core/Types.h"

#include <cstdint>

namespace flowscope::flows {

// The unbiased estimator of Gretton et al. (2012) with k(x, y) = exp(-α‖x - y‖²):
//     MMD²_u = 1/(m(m-1)) Σ_{i≠j} k(x_i, x_j) + 1/(n(n-1)) Σ_{i≠j} k(y_i, y_j) - 2/(mn) Σ_{i,j} k(x_i, y_j).
// Its mean over draws is the population MMD², so it can be negative. X is m x d, Y is n x d (rows are
// points), m, n >= 2. O((m + n)²) time, O(m + n) memory (no kernel matrix), parallel over rows, summed in
// double in a fixed order (the result does not depend on the thread count). Throws std::invalid_argument
// for fewer than 2 points or different dimensions.
// (OT-Flow's mmd.py differs in two details: its fast path adds 1e-5 to every squared distance, and its path
// for more than 20000 values is the biased V-statistic.)
double mmd2Unbiased(const Mat& X, const Mat& Y, double alpha = 1.0);
double mmd2Unbiased(const Eigen::MatrixXf& X, const Eigen::MatrixXf& Y, double alpha = 1.0);

// checkerboard: uniform on 8 cells of side 2 in [-4, 4)², i.e. density 1/32 on its support.
double checkerboardLogDensity(double x, double y); // log(1/32) inside, -infinity outside
double checkerboardEntropy();                      // log 32

// 8gaussians: the equal-weight mixture of N(c_k / 1.414, s² I), s = 0.5/1.414, with the 8 centres
// c_k = 4·{(±1, 0), (0, ±1), (±1/√2, ±1/√2)}.
double eightGaussiansLogDensity(double x, double y);
// -E log p by Monte Carlo over `samples` draws of the mixture (seeded), with the separated-mixture value
// log 8 + log(2πe s²) as a control variate (see the .cpp): the standard error is about 0.12/√samples
// (1/√samples for the plain average of -log p).
double eightGaussiansEntropy(int samples = 1000000, std::uint64_t seed = 0);

// KL(p ‖ q) = NLL - H(p), NLL = -E_p log q the model's mean negative log-likelihood on samples of p.
inline double klFromNll(double nll, double entropy) {
    return nll - entropy;
}

} // namespace flowscope::flows
