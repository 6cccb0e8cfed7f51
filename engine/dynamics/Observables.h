// Flowscope engine: observables of a token cloud, computed at recorded steps.
#pragma once

#include "engine/core/Types.h"

namespace flowscope {

struct Observables {
    Vec mean;                                                  // (1/N) sum_i x_i
    Mat cov;                                                   // (1/N) sum_i (x_i - mean)(x_i - mean)^T
    double kinetic = 0.0;                                      // (1/N) sum_i |dx_i/dt|^2 / 2
    double entropy = std::numeric_limits<double>::quiet_NaN(); // mean attention entropy (nats)
    Vec tokenEntropy; // H_i of each token's attention row (nats), when the entropy is computed
    // Interaction energy of the variant when it has one (softmax: (1/(2 N^2)) sum_ij exp(beta x_i^T A x_j),
    // first head; seed-castin.md §5.4), else NaN.
    double energy = std::numeric_limits<double>::quiet_NaN();
    int clusters = 0;     // groups of tokens within clusterTol of a group's first token
    int rank = 0;         // numerical rank of cov: eigenvalues > rankTol * largest
    double maxNorm = 0.0; // max_i |x_i|
};

Vec tokenMean(const Tokens& X);
Mat tokenCovariance(const Tokens& X);
// Greedy leader clustering: token i joins the first leader within tol (Euclidean), else becomes a leader.
// Stops counting at maxClusters (returns maxClusters then).
int countClusters(const Tokens& X, double tol, int maxClusters = 4096);
int numericalRank(const Mat& cov, double relTol);

// Fills everything except entropy (which needs the field).
Observables observe(const Tokens& X, const Tokens& V, double clusterTol, double rankTol);

} // namespace flowscope
