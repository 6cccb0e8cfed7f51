#include "TestScenes.h"

#include "engine/scene/DefaultScene.h"

#include <QCoreApplication>

#include <thread>

namespace flowscope::test {

Scene tinyScene(int n, int steps) {
    // The built-in default (softmax, Q = K = I, V = -0.4 I, Gaussian tokens in the plane), small and exact.
    Scene s = builtinDefaultScene();
    s.name = "tiny";
    s.n = n;
    s.precision = Precision::Float64;
    s.initial.seed = 7;
    s.integrator.T = 4.0;
    s.integrator.steps = steps;
    s.output.entropy = false;
    return s;
}

Scene divergingScene() {
    Scene s = tinyScene(64, 400);
    s.name = "diverging";
    s.attention.heads = {HeadParams{Mat::Identity(2, 2), Mat::Identity(2, 2), Mat::Identity(2, 2)}};
    s.integrator.method = Method::Euler;
    s.integrator.T = 20.0;
    s.integrator.divergenceNorm = 50.0;
    return s;
}

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
