// Flowscope engine: one job run on a thread of its own while the caller (a UI thread) polls it: its progress,
// then its result or its error. For work that takes seconds and returns one value (a real model's forward
// pass, the ODE of one of its heads), where a live run (LiveRun.h) would be more than is needed.
//
// start() cancels the job in flight and waits for it, then starts the new one; the job gets a progress
// callback that stores the fraction done (0..1) and returns false once cancel() was called, and decides
// itself how to stop (typically by throwing). A cancelled job leaves neither a result nor an error.
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace flowscope {

template <class R> class BackgroundJob {
  public:
    using Progress = std::function<bool(double fraction)>;
    using Job = std::function<R(const Progress& progress)>;

    BackgroundJob() = default;
    ~BackgroundJob() {
        cancel();
        wait();
    }
    BackgroundJob(const BackgroundJob&) = delete;
    BackgroundJob& operator=(const BackgroundJob&) = delete;

    void start(Job job) {
        cancel();
        wait();
        cancelled_.store(false);
        fraction_.store(0.0);
        {
            std::lock_guard lock(mutex_);
            result_.reset();
            error_.clear();
        }
        running_.store(true);
        thread_ = std::thread([this, job = std::move(job)] {
            std::shared_ptr<const R> result;
            std::string error;
            try {
                result = std::make_shared<const R>(job([this](double f) {
                    fraction_.store(f);
                    return !cancelled_.load();
                }));
            } catch (const std::exception& e) {
                error = e.what();
            } catch (...) {
                error = "unknown error";
            }
            {
                std::lock_guard lock(mutex_);
                if (!cancelled_.load()) {
                    result_ = std::move(result);
                    error_ = std::move(error);
                }
            }
            running_.store(false);
        });
    }
    void cancel() { cancelled_.store(true); }
    // Returns when the job in flight (if any) has returned.
    void wait() {
        if (thread_.joinable()) thread_.join();
    }
    bool running() const { return running_.load(); }
    double progress() const { return fraction_.load(); }
    // The finished job's value; null while running, after cancel(), or when it threw (error()).
    std::shared_ptr<const R> result() const {
        std::lock_guard lock(mutex_);
        return result_;
    }
    std::string error() const {
        std::lock_guard lock(mutex_);
        return error_;
    }

  private:
    std::thread thread_;
    std::atomic<bool> running_{false}, cancelled_{false};
    std::atomic<double> fraction_{0.0};
    mutable std::mutex mutex_;
    std::shared_ptr<const R> result_;
    std::string error_;
};

} // namespace flowscope
