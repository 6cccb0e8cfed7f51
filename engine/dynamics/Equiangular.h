// Flowscope engine: the equiangular reduction of softmax attention with Q = K = V = I, a closed-form oracle.
//
// When n tokens all have one radius r and all pairwise cosines equal rho, symmetry keeps them so: the n-token
// system reduces to an ODE for (rho, r). Post-LN (tokens on the unit sphere, r = 1):
//     rho' = 2 e^{beta rho} (1 - rho) ((n - 1) rho + 1) / (e^beta + (n - 1) e^{beta rho}),
// pre-LN divides it by r (and r' = <A_i, theta_i>), peri-LN by r |A_i| (and r' = <A_i, theta_i> / |A_i|).
// docs/math/theory.md#equiangular derives them from the dynamics the code runs (the constant is 1).
#pragma once

#include "engine/core/Types.h"
#include "engine/scene/Scene.h"

#include <limits>
#include <optional>
#include <vector>

namespace flowscope {

// The mean cosine over distinct pairs, (1 / (n (n - 1))) sum_{i != j} <x_i, x_j> / (|x_i| |x_j|), from
// |sum_i theta_i|^2 = n + sum_{i != j} <theta_i, theta_j> in O(n d). Tokens at the origin count as 0
// vectors. NaN when n < 2.
double meanCosine(const Tokens& X);

// Whether m is the d x d identity (a k x d matrix with k < d is not): the theory closed forms' Q = K = V = I.
bool isIdentity(const Mat& m, int d);

// The reduced system's state and its time derivative.
struct Equiangular {
    double rho = 0.0; // the common pairwise cosine
    double r = 1.0;   // the common radius
};
// (rho', r') under `scheme` (Post, Pre or Peri; throws std::invalid_argument for None).
Equiangular equiangularRate(Normalization scheme, int n, double beta, const Equiangular& s);

// rho at each of `times` (ascending, >= 0) from `start` at t = 0: the project's Dormand-Prince 5(4) on the
// two-component state, landing on every requested time, at rtol 1e-13 (atol 1e-15).
std::vector<double> equiangularRho(Normalization scheme, int n, double beta, const Equiangular& start,
                                   const std::vector<double>& times);

// Whether the reduction describes a run of `attention` in dimension d: softmax with one head Q = K = V = I
// (no keyframes, no 1/sqrt(k), unmasked, no positional decay) under post-, pre- or peri-LN.
bool hasEquiangularReduction(const AttentionSpec& attention, int d);
// Whether the consensus laws below describe a run of `attention` in dimension d: softmax with one head whose
// V = I (any Q, K: near consensus the weights are nearly uniform), unmasked, no decay, no keyframes, under a
// normalization (docs/math/theory.md#rates; with another V the exponents are not 2).
bool hasConsensusLaw(const AttentionSpec& attention, int d);
// The common (rho, r) of tokens that are equiangular with equal radii, each to `tolerance` (relative to the
// radius; cosines absolute); nullopt otherwise, or for fewer than 2 tokens. O(n^2 d).
std::optional<Equiangular> equiangularState(const Tokens& X, double tolerance = 1e-9);

// How fast a run reaches consensus (docs/math/theory.md#rates): near it, 1 - rho ~ e^{-2t} under post-LN
// and ~ t^{-2} under pre- and peri-LN. consensusRate fits the least-squares slope of log(1 - rho) against t
// (post, and no scheme) or log t (pre, peri) over the samples with t >= t_last / 2 and 1e-12 < 1 - rho; NaN
// slope with fewer than 4 such samples. `predicted` is -2 for the three schemes, NaN for none.
struct ConsensusRate {
    double slope = std::numeric_limits<double>::quiet_NaN();
    double predicted = std::numeric_limits<double>::quiet_NaN();
    bool perLogT = false; // the slope is per log t (a power law), else per t (an exponential)
    int samples = 0;      // how many samples the fit used
};
ConsensusRate consensusRate(Normalization scheme, const std::vector<double>& t,
                            const std::vector<double>& rho);

} // namespace flowscope
