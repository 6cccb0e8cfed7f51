// Flowscope UI: a long job run on a thread of its own while the UI thread keeps answering (repaints, a
// progress dialog's Cancel). For exports that take seconds to minutes (a flow's samples or density with the
// RWPO layer, O(N²) per batch) and must not freeze the window.
#pragma once

#include <QCoreApplication>
#include <QEventLoop>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>

namespace flowscope {

// The job's progress: the fraction done (0..1); returns false once the caller has asked it to stop.
using JobProgress = std::function<bool(double fraction)>;

// Runs job(progress) on a new thread; meanwhile this thread handles its events and calls report(fraction)
// every `interval` with the fraction the job last published. A report that returns false asks the job to
// stop (its progress callback returns false from then on; the job decides how to stop). Returns when the
// job has returned, rethrowing what it threw.
inline void runOffThread(const std::function<void(const JobProgress&)>& job,
                         const std::function<bool(double fraction)>& report,
                         std::chrono::milliseconds interval = std::chrono::milliseconds(50)) {
    std::atomic<double> fraction{0.0};
    std::atomic<bool> stop{false};
    auto done = std::async(std::launch::async, [&] {
        job([&](double f) {
            fraction.store(f);
            return !stop.load();
        });
    });
    while (done.wait_for(interval) != std::future_status::ready) {
        QCoreApplication::processEvents(QEventLoop::AllEvents);
        if (!stop.load() && report && !report(fraction.load())) stop.store(true);
    }
    done.get();
}

} // namespace flowscope
