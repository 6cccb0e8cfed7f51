// Flowscope engine: a sweep's runs on this process's threads (SweepRunner.h).
#include "engine/sweep/SweepRunner.h"

#include "engine/core/Parallel.h"

#include <chrono>
#include <exception>
#include <thread>

namespace flowscope {

SweepQueue::SweepQueue(std::vector<long> pending, int workers, bool dynamic)
    : pending_(std::move(pending)), workers_(std::max(1, workers)), dynamic_(dynamic) {
    for (int w = 0; w < workers_; ++w) nextOf_.push_back(std::size_t(w));
}

std::optional<long> SweepQueue::next(int worker) {
    std::lock_guard lock(mutex_);
    if (stopped_) return std::nullopt;
    std::size_t& k = dynamic_ ? next_ : nextOf_[std::size_t(worker % workers_)];
    if (k >= pending_.size()) return std::nullopt;
    const long run = pending_[k];
    k += dynamic_ ? 1 : std::size_t(workers_);
    return run;
}

std::vector<long> SweepQueue::take(int worker, std::size_t most) {
    std::lock_guard lock(mutex_);
    std::vector<long> runs;
    if (stopped_ || most == 0) return runs;
    const std::size_t stride = dynamic_ ? 1 : std::size_t(workers_);
    std::size_t& k = dynamic_ ? next_ : nextOf_[std::size_t(worker % workers_)];
    std::size_t count = most;
    if (dynamic_) {
        const std::size_t left = k < pending_.size() ? pending_.size() - k : 0;
        const std::size_t share = 2 * std::size_t(workers_);
        count = std::min(most, std::max<std::size_t>(1, (left + share - 1) / share));
    }
    for (; runs.size() < count && k < pending_.size(); k += stride) runs.push_back(pending_[k]);
    return runs;
}

void SweepQueue::stop() {
    std::lock_guard lock(mutex_);
    stopped_ = true;
}

std::vector<long> pendingRuns(const SweepSpec& spec, const std::map<long, SweepJournalEntry>& finished,
                              int shard, int shards) {
    std::vector<long> pending;
    for (long r = shard - 1; r < spec.runs(); r += shards)
        if (!finished.count(r)) pending.push_back(r);
    return pending;
}

SweepJournalEntry timedSweepRun(const SweepSpec& spec, long run, const SweepCompute& compute) {
    const auto start = std::chrono::steady_clock::now();
    SweepJournalEntry e;
    e.run = run;
    e.result = runSweepRun(spec, run, compute);
    e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return e;
}

void runSweepThreads(const SweepSpec& spec, SweepQueue& queue, int threads, int firstWorker,
                     const std::function<SweepCompute()>& openCompute,
                     const std::function<void(const SweepJournalEntry&)>& done) {
    std::mutex doneMutex;
    std::exception_ptr failure;
    const auto work = [&](int worker) {
        try {
            const SweepCompute compute = openCompute ? openCompute() : SweepCompute{};
            while (const std::optional<long> run = queue.next(worker)) {
                const SweepJournalEntry e = timedSweepRun(spec, *run, compute);
                std::lock_guard lock(doneMutex);
                done(e);
            }
        } catch (...) {
            queue.stop();
            std::lock_guard lock(doneMutex);
            if (!failure) failure = std::current_exception();
        }
    };
    if (threads <= 1) {
        work(firstWorker);
    } else {
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                const InlineParallelFor inlineLoops;
                work(firstWorker + t);
            });
        for (std::thread& t : pool) t.join();
    }
    if (failure) std::rethrow_exception(failure);
}

} // namespace flowscope
