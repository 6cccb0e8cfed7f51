// The particle runner on the GPU: a run switched to the OpenGL backend mid-run (the app's Backend box)
// continues from where it was, on the worker's own context.
#include "../TinyScenes.h"
#include "../engine/TestUtil.h"

#include "engine/backend/Registry.h"
#include "engine/runner/SimulationRunner.h"

#include <gtest/gtest.h>

namespace flowscope::test {
namespace {

// Switching to the OpenGL backend mid-run continues from the current state, on the worker's own context; the
// trajectory stays with the CPU float32 one (both float32: 1e-4 on coordinates of order 1 is ~1000 ulps).
TEST(SimulationRunner, SwitchingToTheGlBackendContinuesTheRun) {
    Scene scene = tinyScene(64);
    scene.precision = Precision::Float32;
    SimulationRunner cpu, gpu;
    cpu.start(scene);
    gpu.start(scene);
    for (int i = 0; i < 3; ++i) gpu.stepOnce();
    ASSERT_TRUE(waitForSnapshot(gpu, [](const Snapshot& s) { return s.step == 3; }));
    gpu.setBackend([] { return openBackend("gl"); });
    for (int i = 0; i < 7; ++i) gpu.stepOnce();
    for (int i = 0; i < 10; ++i) cpu.stepOnce();
    ASSERT_TRUE(waitForSnapshot(gpu, [](const Snapshot& s) { return s.step == 10; }));
    ASSERT_TRUE(waitForSnapshot(cpu, [](const Snapshot& s) { return s.step == 10; }));
    const auto g = gpu.snapshot();
    if (!g->backendNote.empty()) GTEST_SKIP() << g->backendNote;
    EXPECT_EQ(g->backend, "OpenGL float32, tokens on the GPU");     // the stepper takes softmax whole steps
    EXPECT_EQ(g->history->size(), cpu.snapshot()->history->size()); // the history was kept
    EXPECT_LT((g->tokens - cpu.snapshot()->tokens).cwiseAbs().maxCoeff(), 1e-4);
}

} // namespace
} // namespace flowscope::test
