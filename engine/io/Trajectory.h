// Flowscope engine: token trajectories as NumPy arrays — `flowscope-cli simulate --out` and the app's
// File ▸ Export ▸ Trajectory write the same files.
#pragma once

#include "engine/core/Types.h"

#include <string>
#include <vector>

namespace flowscope {

// The frames (each N x d, all the same shape) as one (frames, N, d) array, atomically; float32 or float64.
// Throws std::invalid_argument when there is no frame or the shapes differ, std::runtime_error when the
// file cannot be written.
void writeTrajectoryNpy(const std::string& path, const std::vector<const Tokens*>& frames, bool asFloat32);

} // namespace flowscope
