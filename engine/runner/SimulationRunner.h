// Flowscope engine: runs a Simulation in a worker thread and publishes immutable snapshots.
//
// A LiveRun (LiveRun.h): the worker advances the Simulation one step at a time and publishes a Snapshot; the
// UI thread sends play/pause/step and the live edits below, and never waits on a step.
#pragma once

#include "engine/backend/ComputeBackend.h"
#include "engine/dynamics/Simulation.h"
#include "engine/runner/LiveRun.h"
#include "engine/runner/RunHistory.h"
#include "engine/runner/Snapshot.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace flowscope {

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
