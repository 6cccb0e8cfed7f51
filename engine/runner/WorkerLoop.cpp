#include "engine/runner/WorkerLoop.h"

#include "engine/core/Parallel.h"

#include <chrono>

namespace flowscope {

namespace {
using Clock = std::chrono::steady_clock;
constexpr auto kPublishInterval = std::chrono::microseconds(8333); // ~120 Hz, above any display rate
constexpr auto kRateWindow = std::chrono::milliseconds(250);       // steps/s is averaged over this window
} // namespace

WorkerLoop::WorkerLoop(Steppable& target) : target_(target), thread_([this] { run(); }) {}

WorkerLoop::~WorkerLoop() {
    {
        std::lock_guard lock(mutex_);
        quit_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

void WorkerLoop::post(std::function<void()> command) {
    {
        std::lock_guard lock(mutex_);
        commands_.push_back(std::move(command));
    }
    wake_.notify_all();
}

void WorkerLoop::play() {
    {
        std::lock_guard lock(mutex_);
        playing_ = true;
    }
    wake_.notify_all();
}

void WorkerLoop::pause() {
    {
        std::lock_guard lock(mutex_);
        playing_ = false;
    }
    wake_.notify_all();
}

void WorkerLoop::stepOnce() {
    {
        std::lock_guard lock(mutex_);
        playing_ = false;
        ++singleSteps_;
    }
    wake_.notify_all();
}

bool WorkerLoop::playing() const {
    std::lock_guard lock(mutex_);
    return playing_;
}

void WorkerLoop::setMaxStepsPerSecond(double rate) {
    {
        std::lock_guard lock(mutex_);
        maxRate_ = rate;
    }
    wake_.notify_all();
}

double WorkerLoop::maxStepsPerSecond() const {
    std::lock_guard lock(mutex_);
    return maxRate_;
}

bool WorkerLoop::hasWork() const {
    return quit_ || !commands_.empty() || singleSteps_ > 0 || playing_ || playing_ != publishedPlaying_;
}

void WorkerLoop::run() {
    useBackgroundPriority(); // the UI thread comes first (docs/ARCHITECTURE.md, "Threads")
    // A step that throws must not take the process down (std::terminate on an escaping exception); the
    // Steppable is expected to record its own failures, this is the last line of defence.
    auto guardedAdvance = [this] {
        try {
            return target_.advance();
        } catch (...) {
            return false;
        }
    };

    std::unique_lock lock(mutex_);
    Clock::time_point nextStep = Clock::now();
    Clock::time_point lastPublish{};
    Clock::time_point windowStart = Clock::now();
    long windowSteps = 0;
    double rate = 0.0;

    // Publishes with the mutex released: readers of the target's snapshot never contend with our mutex.
    auto publish = [&](bool playing) {
        lock.unlock();
        target_.publish(playing ? rate : 0.0, playing);
        lock.lock();
        publishedPlaying_ = playing;
        lastPublish = Clock::now();
    };

    for (;;) {
        wake_.wait(lock, [this] { return hasWork(); });
        if (quit_) {
            lock.unlock();
            target_.finish();
            return;
        }

        if (!commands_.empty()) {
            auto batch = std::move(commands_);
            commands_.clear();
            lock.unlock();
            for (auto& command : batch) {
                try {
                    command();
                } catch (...) {
                    // Commands report their own errors through the target; see guardedAdvance.
                }
            }
            lock.lock();
            publish(playing_);
            continue;
        }

        if (singleSteps_ > 0) {
            --singleSteps_;
            lock.unlock();
            guardedAdvance();
            lock.lock();
            rate = 0.0;
            publish(playing_);
            continue;
        }

        if (!playing_) { // only the play state changed: show it
            rate = 0.0;
            publish(false);
            continue;
        }

        const auto now = Clock::now();
        if (!publishedPlaying_) { // just started playing: measure the rate afresh
            windowStart = now;
            windowSteps = 0;
            nextStep = now;
        }
        if (maxRate_ > 0.0) {
            if (now < nextStep) {
                wake_.wait_until(lock, nextStep, [this] {
                    return quit_ || !commands_.empty() || singleSteps_ > 0 || !playing_;
                });
                continue;
            }
            const auto period =
                std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / maxRate_));
            // Keep a steady cadence, but do not try to catch up after a slow step or a pause.
            nextStep = (now - nextStep < period) ? nextStep + period : now + period;
        }

        lock.unlock();
        const bool more = guardedAdvance();
        const auto after = Clock::now();
        ++windowSteps;
        if (after - windowStart >= kRateWindow) {
            rate = double(windowSteps) / std::chrono::duration<double>(after - windowStart).count();
            windowStart = after;
            windowSteps = 0;
        }
        lock.lock();

        if (!more) {
            playing_ = false;
            rate = 0.0;
            publish(false);
        } else if (after - lastPublish >= kPublishInterval || !publishedPlaying_) {
            publish(playing_);
        }
    }
}

} // namespace flowscope
