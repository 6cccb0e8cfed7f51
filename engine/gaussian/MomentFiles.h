// Flowscope engine: the moment trajectories of a Gaussian scene as NumPy arrays, the same bytes from
// `flowscope-cli moments --out x.npy` and the app's File ▸ Export ▸ Moment trajectories.
//
// R trajectories (one per initial Gaussian, in initialGaussians() order), K = the most records any of them
// has; a trajectory that stopped earlier (converged, blew up) is padded with NaN after its last record:
//   PATH              covariances Σ(t), float64 (R, K, d, d)
//   <stem>_means.npy  means α(t), float64 (R, K, d)
//   <stem>_times.npy  the record times, float64 (R, K)
// Each file is written atomically.
#pragma once

#include "engine/gaussian/MomentSolver.h"

#include <cstdint>
#include <string>
#include <vector>

namespace flowscope {

// "<stem>_<name>.npy" beside PATH (stem: PATH without its .npy).
std::string momentsCompanionPath(const std::string& path, const std::string& name);

// The three arrays above, in C order (R x K x d x d, R x K x d, R x K), NaN after each trajectory's end; what
// the files hold and the Python module returns. Throws std::invalid_argument for no trajectories or ones
// of different dimensions.
struct MomentArrays {
    std::int64_t trajectories = 0, records = 0, d = 0; // R, K, d
    std::vector<double> covs, means, times;
};
MomentArrays momentArrays(const std::vector<MomentTrajectory>& trajectories);

// Throws what momentArrays and writeNpy throw.
void writeMomentsNpy(const std::string& path, const std::vector<MomentTrajectory>& trajectories);

} // namespace flowscope
