// SimulationRunner: commands reach the worker, snapshots are published without waiting, pacing holds.
#include "../TinyScenes.h"
#include "TestUtil.h"

#include "engine/backend/Registry.h"
#include "engine/runner/SimulationRunner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace flowscope::test {
namespace {

// Starts `scene` on the runner and plays it as fast as it goes.
void playFlatOut(SimulationRunner& runner, const Scene& scene) {
    runner.start(scene);
    runner.setMaxStepsPerSecond(0.0);
    runner.play();
}

// Plays 40 steps of 64 tokens, recorded every `every` steps, to the end (in ASSERT_NO_FATAL_FAILURE).
void playRecordedToEnd(SimulationRunner& runner, int every) {
    Scene scene = tinyScene(64, 40);
    scene.output.every = every;
    playFlatOut(runner, scene);
    ASSERT_TRUE(waitForSnapshot(runner, [](const Snapshot& s) { return s.finished && s.history; }));
}

using namespace std::chrono_literals;

TEST(SimulationRunner, StartShowsTheInitialStateAtOnce) {
    SimulationRunner runner;
    EXPECT_EQ(runner.snapshot(), nullptr);
    const Scene scene = tinyScene();
    runner.start(scene);
    const auto s = runner.snapshot();
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->generation, 1u);
    EXPECT_EQ(s->step, 0);
    EXPECT_EQ(s->totalSteps, scene.integrator.steps);
    EXPECT_EQ(s->tokens.rows(), scene.n);
    EXPECT_EQ(s->tokens.cols(), scene.d);
    EXPECT_EQ(s->tokens, initialTokens(scene));
    EXPECT_FALSE(s->playing);
}

TEST(SimulationRunner, StepOnceAdvancesExactlyOneStepEach) {
    SimulationRunner runner;
    runner.start(tinyScene());
    for (int i = 0; i < 3; ++i) runner.stepOnce();
    ASSERT_TRUE(waitForSnapshot(runner, [](const Snapshot& s) { return s.step == 3; }));
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(runner.snapshot()->step, 3);
    EXPECT_FALSE(runner.playing());
}

TEST(SimulationRunner, PauseStopsStepping) {
    SimulationRunner runner;
    runner.start(tinyScene(256, 100000));
    runner.play();
    ASSERT_TRUE(waitForSnapshot(runner, [](const Snapshot& s) { return s.step >= 5 && s.playing; }));
    runner.pause();
    ASSERT_TRUE(waitForSnapshot(runner, [](const Snapshot& s) { return !s.playing; }));
    const long step = runner.snapshot()->step;
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(runner.snapshot()->step, step);
}

TEST(SimulationRunner, PacingCapsTheStepRate) {
    // An upper bound only: a loaded machine takes fewer steps, never more.
    SimulationRunner runner;
    runner.start(tinyScene(16, 100000));
    runner.setMaxStepsPerSecond(40.0);
    const auto begin = std::chrono::steady_clock::now();
    runner.play();
    std::this_thread::sleep_for(500ms);
    runner.pause();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    ASSERT_TRUE(waitForSnapshot(runner, [](const Snapshot& s) { return !s.playing; }));
    EXPECT_LE(runner.snapshot()->step, long(40.0 * seconds) + 2);
    EXPECT_GT(runner.snapshot()->step, 0);
}

TEST(SimulationRunner, ResetReturnsToTheInitialTokens) {
    SimulationRunner runner;
    const Scene scene = tinyScene();
    runner.start(scene);
    for (int i = 0; i < 4; ++i) runner.stepOnce();
    ASSERT_TRUE(waitForSnapshot(runner, [](const Snapshot& s) { return s.step == 4; }));
    EXPECT_NE(runner.snapshot()->tokens, initialTokens(scene));
    runner.reset();
    ASSERT_TRUE(waitForSnapshot(runner, [](const Snapshot& s) { return s.step == 0; }));
    EXPECT_EQ(runner.snapshot()->tokens, initialTokens(scene));
    EXPECT_EQ(runner.snapshot()->t, 0.0);
}

TEST(SimulationRunner, SetAttentionContinuesFromTheCurrentState) {
    SimulationRunner runner;
    runner.start(tinyScene());
    for (int i = 0; i < 3; ++i) runner.stepOnce();
    ASSERT_TRUE(waitForSnapshot(runner, [](const Snapshot& s) { return s.step == 3; }));
    const Tokens at3 = runner.snapshot()->tokens;

    AttentionSpec still = tinyScene().attention; // V = 0: zero velocity, the tokens must not move
    still.heads[0].V.setZero();
    runner.setAttention(still);
    for (int i = 0; i < 2; ++i) runner.stepOnce();
    ASSERT_TRUE(waitForSnapshot(runner, [](const Snapshot& s) { return s.step == 5; }));
    EXPECT_EQ(runner.snapshot()->tokens, at3);
    EXPECT_TRUE(runner.snapshot()->error.empty());
}

TEST(SimulationRunner, SetSceneRestartsAndNeverShowsTheOldRunAgain) {
    SimulationRunner runner;
    playFlatOut(runner, tinyScene(256, 100000));
    ASSERT_TRUE(waitForSnapshot(runner, [](const Snapshot& s) { return s.step >= 3; }));

    runner.setScene(tinyScene(100, 100000));
    auto s = runner.snapshot();
    EXPECT_EQ(s->generation, 2u);
    EXPECT_EQ(s->tokens.rows(), 100);
    EXPECT_TRUE(runner.playing()); // the play state carries over
    // Publications of the old run still in flight must be dropped.
    const auto until = std::chrono::steady_clock::now() + 200ms;
    while (std::chrono::steady_clock::now() < until) {
        s = runner.snapshot();
        ASSERT_EQ(s->generation, 2u);
        ASSERT_EQ(s->tokens.rows(), 100);
    }
}

TEST(SimulationRunner, ABadSceneThrowsAndKeepsTheCurrentRun) {
    SimulationRunner runner;
    runner.start(tinyScene());
    Scene bad = tinyScene(50);
    bad.initial.kind = InitKind::File;
    bad.initial.path = "/nonexistent/tokens.npy";
    EXPECT_THROW(runner.start(bad), SceneError);
    const auto s = runner.snapshot();
    EXPECT_EQ(s->generation, 1u);
    EXPECT_EQ(s->tokens.rows(), 256);
    runner.stepOnce();
    EXPECT_TRUE(waitForSnapshot(runner, [](const Snapshot& s) { return s.step == 1; }));
}

TEST(SimulationRunner, PausesAtTheEndOfTheRun) {
    SimulationRunner runner;
    playFlatOut(runner, tinyScene(64, 10));
    ASSERT_TRUE(waitForSnapshot(runner, [](const Snapshot& s) { return s.finished && !s.playing; }));
    EXPECT_EQ(runner.snapshot()->step, 10);
    EXPECT_FALSE(runner.playing());
    EXPECT_FALSE(runner.snapshot()->event.has_value());
}

TEST(SimulationRunner, StopsOnDivergenceWithTheEvent) {
    SimulationRunner runner;
    playFlatOut(runner, divergingScene());
    ASSERT_TRUE(waitForSnapshot(runner, [](const Snapshot& s) { return s.finished && !s.playing; }));
    const auto s = runner.snapshot();
    ASSERT_TRUE(s->event.has_value());
    EXPECT_EQ(s->event->kind, RunEvent::Kind::Diverged);
    EXPECT_GT(s->event->t, 0.0);
    EXPECT_LT(s->step, s->totalSteps);
}

TEST(SimulationRunner, DestroysCleanlyWhilePlaying) {
    auto runner = std::make_unique<SimulationRunner>();
    playFlatOut(*runner, tinyScene(256, 100000));
    runner->reset();
    runner.reset(); // joins the worker mid-run, with a command possibly pending
    SUCCEED();
}

TEST(SimulationRunner, HistoryRecordsEveryFrameAndResetClearsIt) {
    SimulationRunner runner;
    ASSERT_NO_FATAL_FAILURE(playRecordedToEnd(runner, 4));
    const auto history = runner.snapshot()->history;
    ASSERT_EQ(history->size(), 11u); // t = 0 and every 4th of 40 steps
    for (std::size_t k = 0; k < history->size(); ++k) {
        const RecordedFrame f = history->at(k);
        EXPECT_EQ(f.step, long(4 * k));
        EXPECT_NEAR(f.t, 4.0 * 4 * double(k) / 40, 1e-12);
        ASSERT_NE(f.tokens, nullptr);
        EXPECT_LE((f.obs.mean - tokenMean(*f.tokens)).norm(), 1e-12);
    }
    runner.reset();
    ASSERT_TRUE(
        waitForSnapshot(runner, [&](const Snapshot& s) { return s.step == 0 && s.history->size() == 1; }));
    EXPECT_EQ(runner.snapshot()->history, history); // the same log, cleared: readers see a new revision
    EXPECT_GT(history->revision(), 0u);
}

TEST(SimulationRunner, SeekContinuesFromARecordedFrame) {
    SimulationRunner runner;
    ASSERT_NO_FATAL_FAILURE(playRecordedToEnd(runner, 5));
    const auto history = runner.snapshot()->history;
    const RecordedFrame target = history->at(3); // step 15
    const Tokens finalTokens = runner.snapshot()->tokens;
    runner.seek(target.t + 0.01); // between frames: the frame at or before
    ASSERT_TRUE(waitForSnapshot(runner, [&](const Snapshot& s) { return s.step == 15; }));
    EXPECT_EQ(runner.snapshot()->tokens, *target.tokens);
    EXPECT_EQ(history->size(), 4u);
    EXPECT_FALSE(runner.playing());
    // Deterministic dynamics: running on from the rewound state lands on the same final tokens.
    runner.play();
    ASSERT_TRUE(waitForSnapshot(runner, [](const Snapshot& s) { return s.finished; }));
    EXPECT_LE((runner.snapshot()->tokens - finalTokens).cwiseAbs().maxCoeff(), 1e-12);
    EXPECT_EQ(history->size(), 9u);
}

TEST(SimulationRunner, IntegratorEditsTakeEffectWithoutRestarting) {
    SimulationRunner runner;
    Scene scene = tinyScene(32, 10);
    runner.start(scene);
    for (int i = 0; i < 5; ++i) runner.stepOnce();
    ASSERT_TRUE(waitForSnapshot(runner, [](const Snapshot& s) { return s.step == 5; }));
    IntegratorSpec longer = scene.integrator;
    longer.T = 8.0; // same h = T/M when M doubles: 20 steps in all
    longer.steps = 20;
    runner.setIntegrator(longer);
    runner.stepOnce();
    ASSERT_TRUE(waitForSnapshot(runner, [](const Snapshot& s) { return s.step == 6; }));
    const auto s = runner.snapshot();
    EXPECT_EQ(s->totalSteps, 20);
    EXPECT_NEAR(s->t, 6 * 0.4, 1e-12);
    EXPECT_TRUE(s->error.empty()) << s->error;
}

// A backend that cannot be opened leaves the CPU running, with a note saying why; the run goes on.
TEST(SimulationRunner, AnUnavailableBackendFallsBackToTheCpuWithANote) {
    SimulationRunner runner;
    runner.start(tinyScene());
    runner.setBackend(
        []() -> ComputeBackend { throw BackendError("backend warp is unavailable: no device"); });
    runner.stepOnce();
    ASSERT_TRUE(waitForSnapshot(runner, [](const Snapshot& s) { return s.step == 1; }));
    const auto s = runner.snapshot();
    EXPECT_EQ(s->backendNote, "backend warp is unavailable: no device — running on the CPU");
    EXPECT_EQ(s->backend, "CPU float64");
    runner.setBackend(nullptr); // back to the CPU: the note goes away
    runner.stepOnce();
    ASSERT_TRUE(waitForSnapshot(runner, [](const Snapshot& s) { return s.step == 2; }));
    EXPECT_TRUE(runner.snapshot()->backendNote.empty());
}

// A backend is asked whether it supports the scene before anything is made on it: a refusal runs the CPU with
// the backend's reason as the note and never calls its factory; an accepted scene runs on it.
TEST(SimulationRunner, ABackendIsAskedBeforeItsFieldsAreMade) {
    auto made = std::make_shared<std::atomic<int>>(0);
    auto fake = [made](bool refuse) {
        ComputeBackend b;
        b.id = "fake";
        b.runName = "Fake float32";
        b.gpu = true;
        b.makeField = [made](const AttentionSpec& spec, int d, Precision p) {
            ++*made;
            return makeCpuField(spec, d, p);
        };
        if (refuse)
            b.fieldsRefuse = [](const Scene&) { return std::string("/attention/type: fake says no"); };
        return b;
    };
    SimulationRunner runner;
    runner.start(tinyScene());
    runner.setBackend([&] { return fake(true); });
    runner.stepOnce();
    ASSERT_TRUE(waitForSnapshot(runner, [](const Snapshot& s) { return s.step == 1; }));
    auto s = runner.snapshot();
    EXPECT_EQ(s->backendNote, "/attention/type: fake says no — running on the CPU");
    EXPECT_EQ(s->backend, "CPU float64");
    EXPECT_EQ(made->load(), 0);

    runner.setBackend([&] { return fake(false); });
    runner.stepOnce();
    ASSERT_TRUE(waitForSnapshot(runner, [](const Snapshot& s) { return s.step == 2; }));
    s = runner.snapshot();
    EXPECT_TRUE(s->backendNote.empty()) << s->backendNote;
    EXPECT_EQ(s->backend, "Fake float32");
    EXPECT_GE(made->load(), 1);
}

} // namespace
} // namespace flowscope::test
