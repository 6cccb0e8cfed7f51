// Flowscope engine: the worker thread of every live run (simulation, flow training, Transformer training).
//
// The UI thread never waits on science (docs/ARCHITECTURE.md, "Threads"): it sends commands, which the worker
// runs between steps, and reads the latest snapshot, which the worker publishes. A WorkerLoop owns the
// thread, the command queue and the pacing, and advances any Steppable; LiveRun (LiveRun.h) pairs one with
// the snapshot it publishes.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
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

} // namespace flowscope
