// Flowscope engine: a sweep on this process's threads in the background (LocalSweep.h).
#include "engine/runner/LocalSweep.h"

#include <cmath>
#include <exception>

namespace flowscope {

LocalSweep::~LocalSweep() {
    cancel();
    wait();
}

void LocalSweep::start(std::shared_ptr<const SweepSpec> spec, int threads,
                       std::function<SweepCompute()> openCompute) {
    cancel();
    wait();
    spec_ = std::move(spec);
    queue_ = std::make_unique<SweepQueue>(pendingRuns(*spec_, {}), std::max(threads, 1), true);
    {
        std::lock_guard lock(mutex_);
        entries_.clear();
        error_.clear();
        state_ = LocalSweepProgress::State::Running;
        started_ = ended_ = Clock::now();
    }
    version_.store(0);
    thread_ = std::thread([this, threads = std::max(threads, 1), openCompute = std::move(openCompute)] {
        std::string error;
        try {
            runSweepThreads(*spec_, *queue_, threads, 0, openCompute, [this](const SweepJournalEntry& e) {
                std::lock_guard lock(mutex_);
                entries_.emplace(e.run, e);
                version_.fetch_add(1);
            });
        } catch (const std::exception& e) {
            error = e.what();
        } catch (...) {
            error = "unknown error";
        }
        std::lock_guard lock(mutex_);
        ended_ = Clock::now();
        error_ = error;
        state_ = !error.empty()                           ? LocalSweepProgress::State::Failed
                 : long(entries_.size()) == spec_->runs() ? LocalSweepProgress::State::Finished
                                                          : LocalSweepProgress::State::Cancelled;
    });
}

void LocalSweep::cancel() {
    if (!queue_) return;
    queue_->stop();
    std::lock_guard lock(mutex_);
    if (state_ == LocalSweepProgress::State::Running) state_ = LocalSweepProgress::State::Cancelling;
}

void LocalSweep::wait() {
    if (thread_.joinable()) thread_.join();
}

LocalSweepProgress LocalSweep::progress() const {
    std::lock_guard lock(mutex_);
    LocalSweepProgress p;
    p.state = state_;
    p.done = long(entries_.size());
    p.total = spec_ ? spec_->runs() : 0;
    p.error = error_;
    const Clock::time_point end = p.ended() ? ended_ : Clock::now();
    p.seconds =
        state_ == LocalSweepProgress::State::Idle ? 0 : std::chrono::duration<double>(end - started_).count();
    p.secondsLeft = p.ended() ? 0 : p.done > 0 ? p.seconds / double(p.done) * double(p.total - p.done) : NAN;
    return p;
}

std::map<long, SweepJournalEntry> LocalSweep::entries() const {
    std::lock_guard lock(mutex_);
    return entries_;
}

} // namespace flowscope
