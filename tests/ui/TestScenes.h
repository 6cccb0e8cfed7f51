// Flowscope UI tests: small scenes (../TinyScenes.h) and waiting helpers shared by the test files.
#pragma once

#include "../TinyScenes.h"

#include "engine/runner/SimulationRunner.h"

#include <chrono>
#include <functional>

namespace flowscope::test {

// How long a test waits for an event before it gives up: a guard against a hang, never a measure of speed. A
// busy CI machine (two jobs on two cores, a software rasterizer) can take many times longer than an idle one,
// so it is long; a case that really hangs fails at this guard or at ctest's TIMEOUT.
inline constexpr std::chrono::milliseconds kEventGuard = std::chrono::seconds(150);

// Polls `done` (processing Qt events when a QCoreApplication exists) until it holds or `timeout` passes.
bool waitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout = kEventGuard);
// Waits until the runner's snapshot satisfies `done`.
bool waitForSnapshot(const SimulationRunner& runner, const std::function<bool(const Snapshot&)>& done,
                     std::chrono::milliseconds timeout = kEventGuard);

} // namespace flowscope::test
