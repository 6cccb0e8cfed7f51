// Flowscope engine: running a sweep's runs on this process's threads, handed out dynamically or statically
// (docs/sweeps.md, "Running"). flowscope-cli sweep runs them with it alone, or on every MPI rank with rank 0
// handing out the runs through the same SweepQueue.
#pragma once

#include "engine/sweep/SweepTable.h"

#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

namespace flowscope {

// The runs still to do and who gets which. Dynamic: the next pending run goes to whichever worker asks (runs
// differ in cost by orders of magnitude: nobody waits while work is left). Static: worker w of W gets the
// pending runs k with k mod W = w, in order, decided up front (the sharding baseline). Thread-safe.
class SweepQueue {
  public:
    SweepQueue(std::vector<long> pending, int workers, bool dynamic);
    std::optional<long> next(int worker);
    // Several runs for `worker` at once, for an MPI rank (a message round trip can cost more than a cheap
    // run). Dynamic: the guided chunk ⌈left / 2W⌉ of the runs left, at most `most`, so that chunks shrink to
    // single runs towards the end and no rank is left with a long tail; static: the worker's next `most` runs
    // of its own. Empty when none are left.
    std::vector<long> take(int worker, std::size_t most);
    void stop(); // hands out nothing more (after a failure)
    std::size_t size() const { return pending_.size(); }

  private:
    std::vector<long> pending_;
    int workers_;
    bool dynamic_;
    std::mutex mutex_;
    std::size_t next_ = 0;
    std::vector<std::size_t> nextOf_; // static: the next index k of worker w (k = w, w + W, ...)
    bool stopped_ = false;
};

// The runs of `spec` not in `finished`, restricted to shard `shard` of `shards` (1-based: runs r with
// r mod shards = shard - 1), in run order.
std::vector<long> pendingRuns(const SweepSpec& spec, const std::map<long, SweepJournalEntry>& finished,
                              int shard = 1, int shards = 1);

// Runs the queue's runs on `threads` threads (workers firstWorker .. firstWorker + threads - 1). Each thread
// first calls openCompute() (a backend's fields and stepper live on the thread that opened them); with more
// than one thread each run's own parallel loops run on its thread alone (InlineParallelFor), with one thread
// they use the engine's pool. done(entry) is called, serialised, after each run. The first exception (from a
// run or from done) stops the hand-out and is rethrown once the threads have finished their runs.
void runSweepThreads(const SweepSpec& spec, SweepQueue& queue, int threads, int firstWorker,
                     const std::function<SweepCompute()>& openCompute,
                     const std::function<void(const SweepJournalEntry&)>& done);

// One run timed: the journal entry of runSweepRun.
SweepJournalEntry timedSweepRun(const SweepSpec& spec, long run, const SweepCompute& compute);

} // namespace flowscope
