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

#include <string>
#include <vector>

namespace flowscope {

// "<stem>_<name>.npy" beside PATH (stem: PATH without its .npy).
std::string momentsCompanionPath(const std::string& path, const std::string& name);

// Throws std::invalid_argument for no trajectories or ones of different dimensions, and what writeNpy
// throws.
void writeMomentsNpy(const std::string& path, const std::vector<MomentTrajectory>& trajectories);

} // namespace flowscope
