// Flowscope engine: the one live-run mechanism behind the simulation, flow training and Transformer training.
//
// A live run is a job advanced by a worker thread (WorkerLoop) and the latest snapshot the job published. The
// UI thread sends commands (play, pause, one step, or any edit posted to the job) and reads snapshots; it
// never waits on a step. Each kind of run derives from LiveRun<Snapshot> and adds its own start() and edits;
// the controls below are the same for all of them.
#pragma once

#include "engine/runner/LatestSnapshot.h"
#include "engine/runner/WorkerLoop.h"

#include <cstdint>
#include <memory>
#include <utility>

namespace flowscope {

// The worker's side of a live run: a Steppable that publishes snapshots of type S (S has a `generation`).
template <class S> class LiveJob : public Steppable {
  public:
    using Snapshot = S;
    // Any thread. A snapshot of an older generation than the one shown is dropped (LatestSnapshot).
    void store(std::shared_ptr<const S> s) { latest_.store(std::move(s)); }
    std::shared_ptr<const S> snapshot() const { return latest_.get(); }

  private:
    LatestSnapshot<S> latest_;
};

template <class S> class LiveRun {
  public:
    LiveRun(const LiveRun&) = delete;
    LiveRun& operator=(const LiveRun&) = delete;

    void play() { loop_->play(); }
    void pause() { loop_->pause(); }
    void stepOnce() { loop_->stepOnce(); } // pauses, then advances exactly one step
    bool playing() const { return loop_->playing(); }
    void setMaxStepsPerSecond(double rate) { loop_->setMaxStepsPerSecond(rate); } // <= 0: no cap
    double maxStepsPerSecond() const { return loop_->maxStepsPerSecond(); }

    // Whether start() was called: snapshot() is null before.
    bool started() const { return generation_ > 0; }
    // The latest published state; never waits on a step.
    std::shared_ptr<const S> snapshot() const { return job_->snapshot(); }

  protected:
    explicit LiveRun(std::unique_ptr<LiveJob<S>> job)
        : job_(std::move(job)), loop_(std::make_unique<WorkerLoop>(*job_)) {}
    // The worker stops (its current step finishes, pending commands are dropped) before the job goes.
    ~LiveRun() { loop_.reset(); }

    // Runs command(job) on the worker between steps, in the order posted; J is the derived run's job type.
    template <class J, class F> void post(F command) {
        loop_->post(
            [job = static_cast<J*>(job_.get()), command = std::move(command)]() mutable { command(*job); });
    }
    // Shows a new run's first snapshot at once (the worker installs the run afterwards).
    void show(std::shared_ptr<const S> first) { job_->store(std::move(first)); }
    // The generation of the next start(): it tells the snapshots of successive runs apart.
    std::uint64_t nextGeneration() { return ++generation_; }
    WorkerLoop& loop() { return *loop_; }

  private:
    std::unique_ptr<LiveJob<S>> job_;
    std::unique_ptr<WorkerLoop>
        loop_; // declared after job_: destroyed (joined) first, and by ~LiveRun anyway
    std::uint64_t generation_ = 0;
};

} // namespace flowscope
