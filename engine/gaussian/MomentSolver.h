// Flowscope engine: integrating the Gaussian moment ODEs (docs/math/gaussian.md#solver).
//
// Two methods:
//  * Adaptive (default): Dormand-Prince 5(4) with error control on a square-root factor. Sigma0 = R0 R0^T
//    (R0 = d x r, r = rank Sigma0) and R' = L R, alpha' = b + L alpha; then Sigma = R R^T is symmetric
//    positive semi-definite by construction and keeps its rank exactly (Lemma D.3: Sigma(t) = Phi Sigma0
//    Phi^T), with no eigenvalue clipping.
//  * PaperEuler: the authors' scheme, Sigma_{k+1} = Proj_PSD(Sigma_k + tau Sigma'(Sigma_k)), negative
//    eigenvalues replaced by 1e-14, with their stopping rules: converged when ||Sigma'(Sigma_k)||_F < tol_low
//    (tested before the step; the trajectory ends at Sigma_k), blow-up when tr Sigma_{k+1} > tol_high, and
//    max_iter steps. The mean takes the plain Euler step. This reproduces their figures as drawn.
// Both stop on tol_low (adaptive: tested at the record times), tol_high (adaptive: caught within about twice
// tol_high) and at non-finite values.
//
// Finite-time blow-up: near t_max, tr Sigma ~ c / (t_max - t), so t_max ~ t + g with g = tr Sigma / (tr
// Sigma)'. Past tol_high the adaptive solver keeps integrating (without recording), each time by g/2, until
// tr Sigma > blowupTrace. A finite-time blow-up shows as g shrinking with tr Sigma (g ~ 1/tr); exponential
// growth (l2, Sinkhorn: divergence at infinity) keeps g constant and gets no t_max.
#pragma once

#include "engine/gaussian/MomentField.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace flowscope {

// Converged: ||Sigma'||_F < tol_low. BlowUp: tr Sigma > tol_high (tMax says whether it is a finite-time
// blow-up). MaxIter: paper mode ran max_iter steps. NonFinite: NaN/Inf. StepCollapse: the adaptive step fell
// below integrator.min_step before tol_high.
enum class MomentEvent { None, Converged, BlowUp, MaxIter, NonFinite, StepCollapse };
const char* toString(MomentEvent e);

struct MomentTrajectory {
    std::vector<double> times;
    std::vector<GaussianState> states;     // same length as times; states.front() is the initial Gaussian
    MomentEvent event = MomentEvent::None; // None: reached the horizon T (adaptive) / max_iter not hit
    double eventTime = 0.0;                // time of the event (the last recorded time)
    std::optional<double> tMax;            // BlowUp: the finite blow-up time, when there is one
    long iterations = 0;                   // paper Euler: steps taken; adaptive: record intervals
    long evaluations = 0;                  // field evaluations
};

struct MomentSolveOptions {
    double T = 1.0;            // horizon (adaptive); PaperEuler ignores it and stops by its rules
    double recordEvery = 0.0;  // adaptive: record (and test tol_low) at multiples of this (0: only at T)
    long recordEveryIter = 1;  // PaperEuler: record every K-th iterate (plus the first and last)
    double blowupTrace = 1e12; // adaptive: keep integrating to this trace to estimate t_max
    // solveAllMoments stops with a SceneError at /moments/max_iter once its trajectories have recorded more
    // states than this (the memory limit over momentStateBytes, engine/scene/RunBudget.h): how early paper
    // Euler trajectories stop is known only as they run.
    double maxRecordedStates = std::numeric_limits<double>::infinity();
};

// Integrates one initial Gaussian. `scene.moments` selects the method and the stopping rules,
// `scene.integrator` supplies rtol/atol/min_step (adaptive).
MomentTrajectory solveMoments(const MomentField& field, const GaussianState& initial, const Scene& scene,
                              const MomentSolveOptions& options);

// Options from a scene: T = integrator.T, recordEvery = T / integrator.steps (adaptive),
// recordEveryIter = output.every (paper mode).
MomentSolveOptions momentOptions(const Scene& scene);

// momentOptions within `memoryLimit` bytes: refuses a scene whose budget exceeds it (checkRunBudget with
// `hint`; engine/scene/RunBudget.h), and bounds the total of recorded states (maxRecordedStates) by it.
// `jsonOutput`: the states will also be written as JSON (about 48 bytes a number).
MomentSolveOptions boundedMomentOptions(const Scene& scene, std::uint64_t memoryLimit, bool jsonOutput,
                                        const std::string& hint);

// Solves every initial Gaussian of the scene (initialGaussians), in parallel across threads; the result
// does not depend on the thread count. `progress(done, total)` is called from worker threads as
// trajectories finish (may be empty); returning false from it is not supported: runs are short.
std::vector<MomentTrajectory> solveAllMoments(const Scene& scene, const MomentSolveOptions& options,
                                              const std::function<void(int, int)>& progress = {});

// The initial Gaussians of a scene: the trace-1 cone grid (moments.grid, d = 2) when set, else the single
// N(initial.mean, initial.cov). Throws SceneError when the initial distribution is not Gaussian.
std::vector<GaussianState> initialGaussians(const Scene& scene);

} // namespace flowscope
