// flowscope-cli sweep under mpirun (Debian's OpenMPI): rank 0 hands out the runs one at a time to whichever
// rank asks (dynamic, or the static sharding baseline: SweepQueue) and gathers their results into its
// journal, while its own threads run runs too; the other ranks ask, run, send back and ask again. A build
// without MPI (FLOWSCOPE_HAVE_MPI unset) has the same class with one rank, and refuses to run as one of
// several ranks.
#pragma once

#include "engine/sweep/SweepRunner.h"

#include <functional>

namespace flowscope::cli {

bool sweepMpiBuilt();

class SweepMpi {
  public:
    // Initialises MPI when an MPI launcher started this process (its environment says so); else one rank.
    // Throws UsageError when launched as one of several ranks by a build without MPI.
    SweepMpi();
    ~SweepMpi(); // finalises MPI
    SweepMpi(const SweepMpi&) = delete;
    SweepMpi& operator=(const SweepMpi&) = delete;

    int rank() const { return rank_; }
    int size() const { return size_; }

    // Runs body and returns its exit code. With several ranks a failure is reported by rank 0, which then
    // aborts every rank with its exit code; another rank's failure is sent to rank 0, which reports it.
    int guard(const std::function<int()>& body);

    // Rank 0: hands out `queue` to ranks 1 .. size-1 (workers threads + rank - 1) while `threads` threads of
    // its own (workers 0 .. threads-1) run runs; done(entry) is called, serialised, for every finished run.
    // Rethrows the first failure (of a run here or on another rank) once every rank has stopped.
    void serve(const SweepSpec& spec, SweepQueue& queue, int threads,
               const std::function<SweepCompute()>& fields,
               const std::function<void(const std::vector<SweepJournalEntry>&)>& done);
    // Ranks > 0: asks rank 0 for runs and sends back their journal lines until told to stop.
    void work(const SweepSpec& spec, int threads, const std::function<SweepCompute()>& fields);

  private:
    int rank_ = 0, size_ = 1;
    bool initialised_ = false;
    bool serving_ = false;
};

} // namespace flowscope::cli
