// Flowscope UI: what the covariance-cone view shows, computed off the UI thread (no Qt, no GL).
//
// A 2x2 covariance Sigma = [[a, c], [c, b]] is the cone point (x, y, z) = (a - b, 2c, a + b)
// (docs/math/gaussian.md#cone, engine/gaussian/Cone.h). The map is linear, so a trajectory Sigma(t) is stored
// as its cone points, and the state at a time between two records is the linear interpolation of the cone
// points.
// The view's hints come from the scene's opaque view JSON, {"cone": {"elev", "azim", "color_by", "plot",
// "reference_rays", "reference_plane_normal"}}.
//
// Height cap: a blow-up drives tr Sigma to tol_high (1e3 or more) while converging runs stay near their
// initial trace 1, so one common scale would squash everything that converges into the apex. Curves are
// therefore drawn up to
//     cap = min(highest trace reached, 10 x median over the runs of their highest trace)
// and cut where they cross z = cap; the view says how many curves leave through the top. When most runs
// blow up (the median is itself near tol_high) nothing is cut: the solver's own stop at tol_high bounds
// the picture.
#pragma once

#include "engine/gaussian/MomentSolver.h"
#include "engine/scene/Scene.h"

#include <Eigen/Dense>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace flowscope {

// Cone: the 3-D PSD cone. Disc: the trace-1 slice Sigma / tr Sigma in the unit disc
// (docs/math/gaussian.md#trace-slice).
enum class ConeMode { Cone, Disc };
// Colour of a trajectory (viridis): its initial y = 2c, or its final trace z
// (docs/math/gaussian.md#cone-drawing).
enum class ConeColorBy { InitialY, FinalTrace };

// View hints of a scene; absent or malformed fields keep these defaults.
struct ConeHints {
    double elev = 20.0;  // degrees above the (x, y) plane
    double azim = -60.0; // degrees, matplotlib's convention: the eye at (cos azim, sin azim) in the plane
    ConeColorBy colorBy = ConeColorBy::InitialY;
    ConeMode plot = ConeMode::Cone;
    std::vector<Eigen::Vector3d> referenceRays;          // cone points; each is drawn as the ray through it
    std::optional<Eigen::Vector3d> referencePlaneNormal; // the plane n . p = 0 through the apex
};

// Reads scene.viewJson's "cone" object. Never throws.
ConeHints coneHints(const std::string& viewJson);

struct ConeTrajectory {
    std::vector<double> times;           // ascending
    std::vector<Eigen::Vector3d> points; // cone point of Sigma(times[k]); finite
    MomentEvent event = MomentEvent::None;
    std::optional<double> tMax; // finite blow-up time, when the solver found one

    // The state at time t: linear interpolation between records, the first state before the start and the
    // last state after the end.
    Eigen::Vector3d at(double t) const;
    // Highest trace along the trajectory.
    double peakTrace() const;
};

struct ConeData {
    std::vector<ConeTrajectory> trajectories;
    std::string message;    // non-empty: why there is nothing to draw
    double heightCap = 1.0; // curves are drawn up to z = heightCap (see the header comment)
    double peakTrace = 0.0; // highest trace reached by any trajectory
    int clipped = 0;        // trajectories that rise above heightCap
    int converged = 0;      // MomentEvent::Converged
    int blowUp = 0;         // MomentEvent::BlowUp
    int other = 0;          // every other event (horizon reached, max_iter, non-finite, step collapse)
    std::string otherKinds; // e.g. "13 max-iter"

    // Per-trajectory colour values (initial y or final z) and their range.
    std::vector<double> colorValues(ConeColorBy by) const;
};

// Why the cone cannot show this scene (d != 2, a non-Gaussian initial distribution, attention without
// moment equations), or nullopt. Cheap: nothing is integrated.
std::optional<std::string> coneUnsupported(const Scene& scene);

// Integrates every initial Gaussian of the scene (solveAllMoments with momentOptions) and converts the
// trajectories. Failures end up in `message`; never throws.
ConeData computeConeData(const Scene& scene);

// The height cap of the header comment.
double coneHeightCap(const std::vector<ConeTrajectory>& trajectories);

// Runs `job` on a new thread that nobody waits for, except the end of the process: still-running jobs are
// joined at static destruction (before the engine's thread pool goes away), so exit never races a solve.
void runDetached(std::function<void()> job);

} // namespace flowscope
