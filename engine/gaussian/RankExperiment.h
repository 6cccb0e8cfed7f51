// Flowscope engine: the rank-histogram experiment of Fig 4 (softmax) and Fig 11 (l2)
// (docs/math/gaussian.md#rank-histograms; the authors' code `histograms.py` / `create_histograms`).
//
// Protocol, per dimension d in `dims` (runs per dimension = n):
//  * Q list: under np.random.seed(qSeed) (40), Q_r = randn(floor(d/2), d) for every (d, r) in the order
//    dims[0] x n, dims[1] x n, ... (numpy: [randn(d // 2, d) for d in repeat(dims, n)]); K = -Q.
//    Scores use the authors' scaling A = K^T Q / sqrt(d) = -Q^T Q / sqrt(d) (symmetric NSD of rank
//    floor(d/2)): the head is built as Q / sqrt(d), K = -Q, so for l2 the K^T K = Q^T Q term stays unscaled,
//    as theirs.
//  * V = I, or V = V0^T V0 with V0 = randn(d, d) drawn in the same (d, r) order under seed vSeed
//    (26 softmax, 27 l2): a random SPD matrix per run.
//  * Initial covariances: np.random.seed(sigmaSeed) (41) at the start of each dimension, then attempt k draws
//    Sigma0 = S S^T, S = randn(d, d). Attempt k integrates run r = (number of converged attempts so far);
//    a non-converged attempt (blow-up tr Sigma > tolHigh, max_iter, horizon, non-finite) retries the same run
//    with the next Sigma0, up to nMax attempts per dimension in total.
//  * A converged run's rank = #{eigenvalues of the final Sigma > threshold} (absolute, default 0.1). Runs
//  with
//    rank > ceil(d/2) are "exceptions": they use up their run but are left out of the histogram (as the
//    authors do, E11(3): docs/math/gaussian.md#e11) unless includeExceptions.
//  * V = I: the exact limit is known in closed form (Prop 2, both softmax and l2, since only ker(A + A^T)
//    matters): Sigma* = U (U^T Sigma0^{-1} U)^{-1} U^T, U an orthonormal basis of ker(A + A^T) = ker Q. Its
//    thresholded rank and its exact rank (eigenvalues > exactRankTol * largest; = ceil(d/2) generically) are
//    histogrammed for the same Sigma0 as the counted run: the ground truth next to the integrated result.
//
// Methods: PaperEuler (the authors' projected Euler: the table's step per dimension, tol_low, max_iter,
// n_max) or Adaptive (Dormand-Prince 5(4) on a square-root factor, rtol 1e-9; converged when ||Sigma'||_F <
// tolLow).
//
// Runs are integrated in parallel and the result does not depend on the thread count: all random matrices
// are drawn serially, and an attempt's outcome is a pure function of (run, Sigma0 draw). Within a dimension
// attempts are chained (a failure shifts later runs onto later draws), so each round evaluates the most
// likely (attempt, run) pairs speculatively and keeps only those on the realised path.
#pragma once

#include "engine/core/Types.h"
#include "engine/gaussian/MomentSolver.h"
#include "engine/scene/Scene.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace flowscope {

enum class RankMethod { PaperEuler, Adaptive };
const char* toString(RankMethod m);

struct RankExperimentConfig {
    AttentionType attention = AttentionType::Softmax; // Softmax or L2
    std::vector<int> dims{3, 4, 5};                   // each >= 2
    int runs = 100;                                   // converged runs per dimension
    bool randomV = false;                             // V = V0^T V0 (random SPD) instead of I
    RankMethod method = RankMethod::PaperEuler;

    std::uint32_t qSeed = 40;
    std::uint32_t sigmaSeed = 41;
    std::optional<std::uint32_t> vSeed; // empty: 26 (softmax) / 27 (l2)

    double threshold = 0.1;     // counted rank: eigenvalues > threshold (absolute)
    double exactRankTol = 1e-6; // exact rank: eigenvalues > exactRankTol * largest
    bool includeExceptions = false;

    // Stopping rules (both methods) and the Euler steps; paperProtocol() fills in the paper's table.
    std::vector<double> steps; // PaperEuler: tau per entry of dims (empty: paperEulerStep)
    double tolLow = 1e-4;      // converged when ||Sigma'||_F < tolLow
    double tolHigh = 1e3;      // blow-up when tr Sigma > tolHigh
    long maxIter = 60000;      // PaperEuler
    long nMax = 1000;          // attempts per dimension
    // Adaptive
    double rtol = 1e-9, atol = 1e-12;
    double horizon = 1e9; // give up (non-converged, event None) at this time
    long maxEvaluations =
        2000000; // give up (non-converged, event MaxIter) after this many field evaluations:
                 // near the limit the ODE is stiff (fast modes ~ ||V|| ||Sigma|| ||A|| while
                 // ||Sigma'|| decays like 1/t^2), so an explicit method can need millions
};

// The paper's settings (the authors' histograms.py; docs/math/gaussian.md#rank-histograms): tol_low,
// max_iter, n_max for (attention, V row); seeds 40/41/26|27.
RankExperimentConfig paperProtocol(AttentionType attention, bool randomV,
                                   RankMethod method = RankMethod::PaperEuler);
// The table's Euler step for dimension d (d <= 3 uses the d = 3 column, d >= 5 the d = 5 column).
double paperEulerStep(AttentionType attention, bool randomV, int d);

// One converged run.
struct RankRun {
    int run = 0;      // index of the (Q, V) pair within the dimension
    long attempt = 0; // index of the Sigma0 draw within the dimension
    Vec eigenvalues;  // of the final Sigma, ascending
    int rank = 0;     // #eigenvalues > threshold
    bool exception = false;
    long iterations = 0; // Euler steps / field evaluations (adaptive)
    double time = 0.0;   // final (physical) time
    // V = I only (empty / -1 otherwise): the exact limit for the same Sigma0
    Vec exactEigenvalues;
    int exactThresholdRank = -1; // #eigenvalues of Sigma* > threshold
    int exactRank = -1;          // #eigenvalues of Sigma* > exactRankTol * largest
    double distanceToExact = -1; // ||Sigma_final - Sigma*||_F
};

struct RankDimensionResult {
    int d = 0;
    double step = 0.0;                    // PaperEuler step used
    std::vector<long> histogram;          // bins 0..d (exceptions left out unless includeExceptions)
    int exceptions = 0;                   // converged runs with rank > ceil(d/2)
    long nonConverged = 0;                // failed attempts (retried with a fresh Sigma0)
    std::vector<long> failures;           // failed attempts by MomentEvent (index = int(event))
    long attempts = 0;                    // attempts made
    int completed = 0;                    // converged runs (< runs when nMax ran out)
    std::vector<long> exactHistogram;     // V = I: thresholded rank of Sigma*, bins 0..d (all completed runs)
    std::vector<long> exactRankHistogram; // V = I: exact rank of Sigma*, bins 0..d
    std::vector<RankRun> runs;            // the completed runs in order
    double seconds = 0.0;                 // wall time (informational; not deterministic)
};

struct RankExperimentResult {
    RankExperimentConfig config; // with vSeed and steps resolved
    std::vector<RankDimensionResult> dimensions;
};

// Validates the configuration (std::invalid_argument naming the field) and runs it. progress(done, total)
// is called from the calling thread after each round: done = runs finished so far, total = dims x runs.
RankExperimentResult runRankExperiment(const RankExperimentConfig& config,
                                       const std::function<void(int done, int total)>& progress = {});

} // namespace flowscope
