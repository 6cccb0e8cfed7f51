// flowscope-cli sweep on MPI ranks (SweepMpi.h).
#include "SweepMpi.h"

#include "Commands.h"

#include "engine/core/Parallel.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <mutex>
#include <thread>
#include <vector>

#ifdef FLOWSCOPE_HAVE_MPI
#include <mpi.h>
#endif

namespace flowscope::cli {

namespace {

// The world size an MPI launcher gave this process (OpenMPI, MPICH/PMI, PMIx), 1 when none did.
int launcherSize() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
        if (const char* v = std::getenv(name)) return std::max(1, std::atoi(v));
    return 1;
}

#ifdef FLOWSCOPE_HAVE_MPI
constexpr int kTagResult = 1; // worker -> 0: "" (first request) or the journal lines of its last runs
constexpr int kTagError = 2;  // worker -> 0: why it failed
constexpr int kTagAssign = 3; // 0 -> worker: the runs to do (long long each; a guided chunk), none: stop
// The most runs one message hands out. A chunk's results come back together when it is done, so this also
// bounds what a killed rank takes with it.
constexpr std::size_t kMostRunsPerMessage = 32;
// A chunk is sized to last about this long at the mean run time so far (one run until a run has finished):
// cheap runs go out many to a message, costly ones one at a time, where balance matters more than messages.
constexpr double kChunkSeconds = 0.02;

void sendText(const std::string& text, int tag) {
    MPI_Send(text.data(), int(text.size()), MPI_CHAR, 0, tag, MPI_COMM_WORLD);
}

std::vector<long long> receiveAssignment() {
    MPI_Status status;
    MPI_Probe(0, kTagAssign, MPI_COMM_WORLD, &status);
    int count = 0;
    MPI_Get_count(&status, MPI_LONG_LONG, &count);
    std::vector<long long> runs(static_cast<std::size_t>(count));
    MPI_Recv(runs.data(), count, MPI_LONG_LONG, 0, kTagAssign, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return runs;
}
#endif

} // namespace

bool sweepMpiBuilt() {
#ifdef FLOWSCOPE_HAVE_MPI
    return true;
#else
    return false;
#endif
}

SweepMpi::SweepMpi() {
    if (launcherSize() <= 1) return;
#ifdef FLOWSCOPE_HAVE_MPI
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    initialised_ = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
#else
    throw UsageError("started as one of " + std::to_string(launcherSize()) +
                     " MPI ranks, but this flowscope-cli was built without MPI (install libopenmpi-dev and "
                     "rebuild; or run the sweep without mpirun, or as a Slurm array with --shard)");
#endif
}

SweepMpi::~SweepMpi() {
#ifdef FLOWSCOPE_HAVE_MPI
    if (initialised_) MPI_Finalize();
#endif
}

int SweepMpi::guard(const std::function<int()>& body) {
    if (size_ <= 1) return body();
    try {
        return body();
    } catch (...) {
#ifdef FLOWSCOPE_HAVE_MPI
        if (rank_ == 0) {
            const int code = reportFailure("sweep");
            std::cerr << std::flush;
            MPI_Abort(MPI_COMM_WORLD, code);
            return code;
        }
        // Rank 0 fails the same way on a bad spec and aborts everyone; else it reports this and stops.
        std::string why = "rank " + std::to_string(rank_) + ": ";
        try {
            throw;
        } catch (const std::exception& e) {
            why += e.what();
        } catch (...) {
            why += "unknown error";
        }
        if (!serving_) {
            sendText(why, kTagError);
            (void)receiveAssignment();
        }
        return 1;
#else
        throw;
#endif
    }
}

void SweepMpi::serve(const SweepSpec& spec, SweepQueue& queue, int threads,
                     const std::function<SweepCompute()>& fields,
                     const std::function<void(const std::vector<SweepJournalEntry>&)>& done) {
#ifdef FLOWSCOPE_HAVE_MPI
    std::mutex doneMutex;
    std::exception_ptr failure;
    double runSeconds = 0; // of the runs finished so far, and their count (under doneMutex)
    long runsTimed = 0;
    const auto record = [&](const std::vector<SweepJournalEntry>& entries) {
        std::lock_guard lock(doneMutex);
        for (const SweepJournalEntry& e : entries) runSeconds += e.seconds;
        runsTimed += long(entries.size());
        done(entries);
    };
    std::thread local([&] {
        try {
            runSweepThreads(spec, queue, threads, 0, fields,
                            [&](const SweepJournalEntry& e) { record(std::vector<SweepJournalEntry>{e}); });
        } catch (...) {
            queue.stop();
            std::lock_guard lock(doneMutex);
            if (!failure) failure = std::current_exception();
        }
    });
    const std::size_t measures = spec.measureColumns().size();
    int active = size_ - 1;
    std::string buffer;
    while (active > 0) {
        int flag = 0;
        MPI_Status status;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status);
        if (!flag) {
            std::this_thread::sleep_for(std::chrono::microseconds(100));
            continue;
        }
        int count = 0;
        MPI_Get_count(&status, MPI_CHAR, &count);
        buffer.assign(std::size_t(count), '\0');
        MPI_Recv(buffer.data(), count, MPI_CHAR, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        std::vector<long long> next;
        if (status.MPI_TAG == kTagError) {
            queue.stop();
            std::lock_guard lock(doneMutex);
            if (!failure) failure = std::make_exception_ptr(std::runtime_error(buffer));
        } else {
            try {
                std::vector<SweepJournalEntry> chunk; // a journal line (ending in \n) per run
                for (std::size_t at = 0; at < buffer.size();) {
                    const std::size_t end = std::min(buffer.find('\n', at), buffer.size());
                    if (end > at)
                        chunk.push_back(parseSweepJournalLine(buffer.substr(at, end - at), measures));
                    at = end + 1;
                }
                if (!chunk.empty()) record(chunk);
                std::size_t most = 1;
                {
                    std::lock_guard lock(doneMutex);
                    if (runsTimed > 0 && runSeconds > 0)
                        most = std::size_t(std::clamp(kChunkSeconds * double(runsTimed) / runSeconds, 1.0,
                                                      double(kMostRunsPerMessage)));
                }
                for (long run : queue.take(threads + status.MPI_SOURCE - 1, most)) next.push_back(run);
            } catch (...) {
                queue.stop();
                std::lock_guard lock(doneMutex);
                if (!failure) failure = std::current_exception();
            }
        }
        MPI_Send(next.data(), int(next.size()), MPI_LONG_LONG, status.MPI_SOURCE, kTagAssign, MPI_COMM_WORLD);
        if (next.empty()) --active;
    }
    local.join();
    if (failure) std::rethrow_exception(failure);
#else
    runSweepThreads(spec, queue, threads, 0, fields,
                    [&](const SweepJournalEntry& e) { done(std::vector<SweepJournalEntry>{e}); });
#endif
}

void SweepMpi::work(const SweepSpec& spec, int threads, const std::function<SweepCompute()>& fields) {
#ifdef FLOWSCOPE_HAVE_MPI
    serving_ = true; // from here on this rank's failures go to rank 0 as messages
    setThreadCount(threads);
    std::string lines;
    try {
        const SweepCompute compute = fields();
        for (;;) {
            sendText(lines, kTagResult);
            const std::vector<long long> runs = receiveAssignment();
            if (runs.empty()) return;
            lines.clear();
            for (long long run : runs) lines += sweepJournalLine(timedSweepRun(spec, long(run), compute));
        }
    } catch (const std::exception& e) {
        sendText("rank " + std::to_string(rank_) + ": " + e.what(), kTagError);
        (void)receiveAssignment();
    }
#else
    (void)spec;
    (void)threads;
    (void)fields;
#endif
}

} // namespace flowscope::cli
