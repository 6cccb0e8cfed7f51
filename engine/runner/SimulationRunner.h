// Flowscope engine: runs a Simulation in a worker thread and publishes immutable snapshots.
//
// A LiveRun (LiveRun.h): the worker advances the Simulation one step at a time and publishes a Snapshot; the
// UI thread sends play/pause/step and the live edits below, and never waits on a step.
#pragma once

#include "engine/backend/ComputeBackend.h"
#include "engine/dynamics/Simulation.h"
#include "engine/runner/LiveRun.h"
#include "engine/runner/RunHistory.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

class SimulationRunner : public LiveRun<Snapshot> {
  public:
    SimulationRunner();
    ~SimulationRunner();

    // Builds the Simulation on the calling thread, so that a bad scene throws SceneError here and leaves the
    // runner untouched; then hands it to the worker, replacing the current run. The play state is kept.
    // snapshot() shows the new scene's initial state as soon as this returns.
    void start(const Scene& scene);
    void setScene(const Scene& scene) { start(scene); }

    void reset(); // back to the scene's initial tokens
    // Applied by the worker between steps; the run continues from its current state. A spec the field
    // rejects is reported in Snapshot::error and leaves the old parameters in force.
    void setAttention(const AttentionSpec& spec);
    // Live: method, T and steps; the run keeps its time and state and continues at the new step.
    void setIntegrator(const IntegratorSpec& spec);
    // Rewinds to the recorded frame at or before t that kept its tokens (the time scrubber's "continue from
    // here"): the state becomes that frame's, the frames after it are dropped. Pauses the run.
    void seek(double t);
    // Where velocities are computed from now on. `open` runs on the worker thread (a GPU context must be
    // current on the thread that uses it); the run continues from its current state and keeps its history.
    // A backend that cannot be opened, or that does not support the scene (ComputeBackend::supports), leaves
    // the CPU running, and Snapshot::backendNote says why. Null: the CPU.
    using BackendOpener = std::function<ComputeBackend()>;
    void setBackend(BackendOpener open);

  private:
    class Job;
};

} // namespace flowscope
