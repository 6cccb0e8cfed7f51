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
    // first head; docs/math/attention.md#energy), else NaN.
    double energy = std::numeric_limits<double>::quiet_NaN();
    // The metastability energy E_beta = (1 / (2 beta N^2)) sum_ij exp(s_ij) = energy / beta
    // (docs/math/theory.md#metastability): with Q = K = I, (1/(2 beta)) sum_ij e^{beta <x_i, x_j>} / N^2.
    double energyBeta = std::numeric_limits<double>::quiet_NaN();
    int clusters = 0;     // groups of tokens within clusterTol of a group's first token
    int rank = 0;         // numerical rank of cov: eigenvalues > rankTol * largest
    double maxNorm = 0.0; // max_i |x_i|
    // Mean cosine over distinct pairs (meanCosine, engine/dynamics/Equiangular.h), NaN when N < 2: the
    // quantity the equiangular closed form predicts (docs/math/theory.md#equiangular).
    double meanCosine = std::numeric_limits<double>::quiet_NaN();
};

Vec tokenMean(const Tokens& X);
Mat tokenCovariance(const Tokens& X);
// Greedy leader clustering: tokens are visited in order; token i joins a leader within tol (Euclidean) when
// there is one, else becomes a leader itself; the count is the number of leaders. Stops counting at
// maxClusters (returns maxClusters then). O(N) expected: the leaders are kept in a hash grid of cells of side
// tol over the first min(d, 3) coordinates, and a token looks only at the leaders of the 3^min(d,3) cells
// around its own (a leader within tol in R^d is within tol in every coordinate, so it is always among them).
int countClusters(const Tokens& X, double tol, int maxClusters = 4096);
// The same count by comparing every token with every leader: O(N * clusters), the reference the tests
// compare the grid against (and the fallback for non-finite or astronomically large coordinates).
int countClustersBruteForce(const Tokens& X, double tol, int maxClusters = 4096);
int numericalRank(const Mat& cov, double relTol);

// Fills everything except entropy (which needs the field).
Observables observe(const Tokens& X, const Tokens& V, double clusterTol, double rankTol);
// The same without the cluster count (left 0): mean, covariance, rank, kinetic energy, max norm.
Observables observeMoments(const Tokens& X, const Tokens& V, double rankTol);

} // namespace flowscope
