#include "TestScenes.h"

#include <QCoreApplication>

#include <thread>

namespace flowscope::test {

bool waitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        if (QCoreApplication::instance()) QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
}

bool waitForSnapshot(const SimulationRunner& runner, const std::function<bool(const Snapshot&)>& done,
                     std::chrono::milliseconds timeout) {
    return waitFor(
        [&] {
            const auto s = runner.snapshot();
            return s && done(*s);
        },
        timeout);
}

} // namespace flowscope::test
