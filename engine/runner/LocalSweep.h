// Flowscope engine: a sweep run on this process's threads in the background: the run of the app's Sweeps
// workspace (docs/sweeps.md, "The app").
//
// start() hands every run of the spec to `threads` workers (engine/sweep/SweepRunner.h: runSweepThreads over
// a dynamic SweepQueue; the CPU's fields, or a backend's opened on each worker) on a thread of its own and
// returns at once; the UI thread polls progress() and entries() (the finished runs, as the CLI's journal
// holds them) and never waits on a run. cancel() stops the hand-out and returns at once: the runs in flight
// finish (a run cannot be interrupted), then the state becomes Cancelled with the finished runs kept. The
// destructor cancels and joins, so it waits for the runs in flight only.
#pragma once

#include "engine/sweep/SweepRunner.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace flowscope {

struct LocalSweepProgress {
    enum class State { Idle, Running, Cancelling, Finished, Cancelled, Failed };
    State state = State::Idle;
    long done = 0, total = 0;
    double seconds = 0;     // wall time since the start (to the end once it has ended)
    double secondsLeft = 0; // estimate from the rate so far (NaN before the first run has finished)
    std::string error;      // Failed: the run's message
    bool ended() const {
        return state == State::Finished || state == State::Cancelled || state == State::Failed;
    }
};

class LocalSweep {
  public:
    LocalSweep() = default;
    ~LocalSweep();
    LocalSweep(const LocalSweep&) = delete;
    LocalSweep& operator=(const LocalSweep&) = delete;

    // Starts every run of `spec` on `threads` workers (>= 1), each computing on what `openCompute` opens on
    // its thread (null: the CPU). A sweep still running is cancelled and waited for first. A backend that
    // fails to open fails the sweep with its message.
    void start(std::shared_ptr<const SweepSpec> spec, int threads,
               std::function<SweepCompute()> openCompute = {});
    // Hands out no more runs; returns at once (the runs in flight finish).
    void cancel();
    // Waits for the worker thread to end (after cancel(): the runs in flight).
    void wait();

    LocalSweepProgress progress() const;
    // The finished runs so far, by run index; `version` counts the runs added (a cheap "anything new?").
    std::map<long, SweepJournalEntry> entries() const;
    long version() const { return version_.load(); }
    std::shared_ptr<const SweepSpec> spec() const { return spec_; }

  private:
    using Clock = std::chrono::steady_clock;
    std::shared_ptr<const SweepSpec> spec_;
    std::unique_ptr<SweepQueue> queue_;
    std::thread thread_;
    mutable std::mutex mutex_;
    std::map<long, SweepJournalEntry> entries_;
    std::atomic<long> version_{0};
    LocalSweepProgress::State state_ = LocalSweepProgress::State::Idle;
    std::string error_;
    Clock::time_point started_, ended_;
};

} // namespace flowscope
