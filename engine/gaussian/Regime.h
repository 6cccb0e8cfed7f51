// Flowscope engine: what the theory predicts for a softmax scene before it runs (docs/math/gaussian.md#t3,
// #regimes).
//
// With B = sum_h (V_h A_h + A_h^T V_h^T) (A_h the head's score matrix, code scaling included):
//  * Prop 2 (single head, V and V^T commuting with Sigma0 and with B): Sigma(t) = (Sigma0^{-1} - t B)^{-1}.
//    A positive eigenvalue of B means finite-time blow-up at t_max = 1 / lambda_max(Sigma0^{1/2} B
//    Sigma0^{1/2}); B negative semi-definite means convergence to a covariance of rank = multiplicity of 0 in
//    B (the mass concentrates on an affine subspace of that dimension; 0: one cluster).
//  * Without commutation there is no theorem; the sign pattern of B still indicates the likely regime.
// For l2 (no finite-time blow-up, Lemma 4.9), Sinkhorn (exponential growth at most, Prop 9) and linear the
// summary says so. The matrix editor shows this next to the eigenvalues.
#pragma once

#include "engine/scene/Scene.h"

#include <optional>
#include <string>

namespace flowscope {

struct RegimePrediction {
    Vec eigenvaluesSymA;          // of A + A^T (summed over heads), ascending
    Vec eigenvaluesB;             // of B = sum_h V_h A_h + A_h^T V_h^T, ascending
    bool commuting = false;       // Prop 2's hypothesis holds for this Sigma0 (single head)
    bool blowUp = false;          // B has a positive eigenvalue
    std::optional<double> tMax;   // Prop 2's blow-up time (commuting case)
    std::optional<int> limitRank; // Prop 2's limit rank (commuting case, B <= 0)
    std::string summary;          // one or two sentences for the user
};

// The prediction at time t (time-dependent parameters are frozen at t) for the covariance sigma0 at time
// `from` (0: the initial one; after a live edit, the tokens' covariance then): t_max counts from 0.
RegimePrediction predictRegime(const Scene& scene, const Mat& sigma0, double t = 0.0, double from = 0.0);

} // namespace flowscope
