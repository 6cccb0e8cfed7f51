// Flowscope engine: a small persistent thread pool and parallelFor.
//
// The velocity kernels are called many times per second on modest N, so spawning threads per call would
// dominate; the pool keeps its workers parked on a condition variable. Work is split into chunks handed out
// through an atomic counter (dynamic scheduling), which balances the triangular work of causal attention.
#pragma once

#include <cstddef>
#include <functional>

namespace flowscope {

// Number of worker threads used by parallelFor (defaults to the hardware concurrency).
int threadCount();
void setThreadCount(int n);
// Lowers the scheduling priority (nice +10, Linux; a no-op elsewhere) of the calling thread and of every
// pool worker, now and later. The GUI's simulation thread calls it so that the UI thread wins the CPU when
// the science keeps every core busy: the window stays responsive whatever the simulation costs.
void useBackgroundPriority();

// Calls fn(begin, end) on disjoint sub-ranges covering [0, n), each at most `grain` long, possibly in
// parallel. Returns when all are done. Runs inline when n <= grain or when called from a worker.
void parallelFor(std::size_t n, std::size_t grain, const std::function<void(std::size_t, std::size_t)>& fn);

// Whether the calling thread runs inside a parallelFor (a pool worker, or a caller while its region runs):
// a parallelFor called from it runs inline, on this thread alone.
bool insideParallelFor();

// While one lives, every parallelFor called on this thread runs inline, as from a pool worker: a thread that
// runs whole jobs side by side with others (flowscope-cli sweep's workers) keeps each job on itself.
class InlineParallelFor {
  public:
    InlineParallelFor();
    ~InlineParallelFor();
    InlineParallelFor(const InlineParallelFor&) = delete;
    InlineParallelFor& operator=(const InlineParallelFor&) = delete;

  private:
    bool wasInside_;
};

} // namespace flowscope
