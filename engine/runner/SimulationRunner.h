// Flowscope engine: runs a Simulation in a worker thread and publishes immutable snapshots.
//
// The UI thread never waits on science (DESIGN.md, "Threads"): it sends commands, which the worker applies
// between steps, and reads the latest Snapshot, which the worker publishes by swapping a shared_ptr under a
// mutex. The thread, the command queue and the pacing live in WorkerLoop, which advances any Steppable, so a
// training loop can reuse them by implementing Steppable (one optimizer step per advance()).
#pragma once

#include "engine/attention/Backend.h"
#include "engine/dynamics/Simulation.h"
#include "engine/runner/RunHistory.h"

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace flowscope {

// Something a WorkerLoop advances one step at a time. Every call happens on the worker thread.
class Steppable {
  public:
    virtual ~Steppable() = default;
    // One step. Returns false when the target cannot go on (finished, stopped by an event, failed); the loop
    // then pauses instead of spinning.
    virtual bool advance() = 0;
    // Makes the current state visible to other threads. stepsPerSecond is the measured rate (0 when idle).
    virtual void publish(double stepsPerSecond, bool playing) = 0;
    // Called once on the worker thread just before it exits: release what belongs to that thread (a GPU
    // context current there, and the buffers made in it).
    virtual void finish() {}
};

// A worker thread that advances a Steppable while playing (at most maxStepsPerSecond) and runs posted
// commands in order between steps. It sleeps on a condition variable while paused, so an idle loop costs
// nothing. While playing it publishes at most ~120 times per second: copying state every step would dominate
// at "max speed" for small N, and no display shows more.
class WorkerLoop {
  public:
    static constexpr double kDefaultStepsPerSecond = 120.0;

    explicit WorkerLoop(Steppable& target);
    ~WorkerLoop(); // lets the current step finish, drops pending commands, joins
    WorkerLoop(const WorkerLoop&) = delete;
    WorkerLoop& operator=(const WorkerLoop&) = delete;

    // Runs `command` on the worker between steps; commands run in the order posted, then the state is
    // published.
    void post(std::function<void()> command);
    void play();
    void pause();
    void stepOnce(); // pauses, then advances exactly one step
    bool playing() const;
    void setMaxStepsPerSecond(double rate); // <= 0: as fast as possible
    double maxStepsPerSecond() const;

  private:
    void run();
    bool hasWork() const; // with mutex_ held

    Steppable& target_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::vector<std::function<void()>> commands_;
    int singleSteps_ = 0;
    bool playing_ = false;
    bool publishedPlaying_ = false; // the play state the last publication showed
    bool quit_ = false;
    double maxRate_ = kDefaultStepsPerSecond;
    std::thread thread_; // last: starts after every other member is initialized
};

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

class SimulationRunner {
  public:
    SimulationRunner();
    ~SimulationRunner();
    SimulationRunner(const SimulationRunner&) = delete;
    SimulationRunner& operator=(const SimulationRunner&) = delete;

    // Builds the Simulation on the calling thread, so that a bad scene throws SceneError here and leaves the
    // runner untouched; then hands it to the worker, replacing the current run. The play state is kept.
    // snapshot() shows the new scene's initial state as soon as this returns.
    void start(const Scene& scene);
    void setScene(const Scene& scene) { start(scene); }

    void play();
    void pause();
    void stepOnce();
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
    // A backend that cannot be opened, or that rejects the scene, leaves the CPU running, and
    // Snapshot::backendNote says why. Null: the CPU.
    using BackendOpener = std::function<ComputeBackend()>;
    void setBackend(BackendOpener open);
    void setMaxStepsPerSecond(double rate) { loop_->setMaxStepsPerSecond(rate); }
    double maxStepsPerSecond() const { return loop_->maxStepsPerSecond(); }

    bool playing() const { return loop_->playing(); }
    // The latest published state; never waits on a step. Null before the first start().
    std::shared_ptr<const Snapshot> snapshot() const;

  private:
    class Job;
    std::unique_ptr<Job> job_;
    std::unique_ptr<WorkerLoop> loop_; // declared after job_: destroyed (joined) before it
    std::uint64_t generation_ = 0;
};

} // namespace flowscope
