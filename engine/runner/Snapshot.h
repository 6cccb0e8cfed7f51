// Flowscope engine: what a particle run looks like at one instant (SimulationRunner publishes it; the views,
// the pictures and the exports read it).
#pragma once

#include "engine/dynamics/DeviceStepper.h"
#include "engine/dynamics/Observables.h"
#include "engine/dynamics/Simulation.h"
#include "engine/runner/RunHistory.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace flowscope {

// The state of a running simulation at one instant; immutable once published, shared by readers.
struct Snapshot {
    std::uint64_t generation = 0; // grows with every start()/setScene(): tells runs of different scenes apart
    double t = 0.0;
    long step = 0;
    long totalSteps = 0;  // M, the nominal step count of the scene
    double horizon = 0.0; // T
    Tokens tokens;        // N x d, a copy
    bool finished = false;
    bool playing = false;
    std::optional<RunEvent> event; // why the run stopped before its horizon (divergence, ...)
    std::string error;             // a failed live edit or step, shown to the user; the run is paused
    double stepsPerSecond = 0.0;
    // Dormand-Prince's work since the run (re)started: sub-steps taken per nominal step, and sub-steps
    // rejected; 0 for the fixed methods (one sub-step per step).
    double subStepsPerStep = 0.0;
    long rejectedSubSteps = 0;
    Observables observables; // at the last recorded frame (see OutputSpec::every)
    // Every recorded frame of this run so far (shared, growing; see RunHistory). Null before the worker
    // installed the scene.
    std::shared_ptr<const RunHistory> history;
    std::string backend = "CPU"; // which VelocityField integrates the run (CPU float32 / float64, GPU)
    std::string backendNote;     // why the requested backend is not the one running (empty when it is)
    // Runs whose tokens stay on the GPU: a device copy of the tokens at t (tokens above are those of the last
    // download, at most ~1/15 s older); null otherwise. Dimensions above kDeviceDrawMaxDim are also
    // downloaded at every publication.
    std::shared_ptr<const DeviceTokens> device;
};

// The largest dimension the particle view projects on the GPU (up to four coordinate attributes).
constexpr int kDeviceDrawMaxDim = 4;

} // namespace flowscope
