// File ▸ Export ▸ Animation on the Flows tab: FlowsWorkspace::exportAnimation with the training view writes
// the frames of the shared composer (render/animation/FlowAnimator, which flowscope-cli render --view
// training runs too), trained afresh from the Flows tab's config while the tab's own run is left as it is;
// frame k is the model after k · K iterations, the same parameters as a trainer stepped k · K times; a cancel
// leaves nothing; the dialog offers the view on the Flows tab and names a bad field.
#include "AnimationExportMenu.h"
#include "MainWindowFixture.h"
#include "TestScenes.h"
#include "UiTestUtil.h"

#include "engine/flows/Trainer.h"
#include "engine/runner/FlowRunner.h"
#include "engine/runner/TrainerSteps.h"
#include "render/animation/FlowAnimator.h"
#include "ui/export/AnimationExportDialog.h"
#include "ui/shell/MainWindow.h"
#include "ui/workspaces/flows/FlowsWorkspace.h"
#include "ui/workspaces/particles/ParticlesWorkspace.h"
#include "ui/workspaces/transformers/TransformersWorkspace.h"

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QProgressDialog>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest/QTest>

#include <gtest/gtest.h>

namespace flowscope::test {
namespace {

// A flow small enough to train a few iterations in milliseconds: moons, 2 layers of width 8, batch 64.
flows::TrainerConfig smallFlow(bool rwpo) {
    flows::TrainerConfig c;
    c.dataset = "moons";
    c.flow.rwpo = rwpo;
    c.flow.layers = 2;
    c.flow.width = 8;
    c.batch = 64;
    c.evalSamples = 200;
    return c;
}

AnimationOptions trainingOptions() {
    return {.view = AnimationView::Training,
            .frames = 3,
            .fps = 10,
            .width = 360,
            .height = 220,
            .caption = "auto",
            .itersPerFrame = 2,
            .pictureSamples = 200};
}

class FlowAnimationTest : public MainWindowFilesFixture {
  protected:
    FlowAnimationTest() : MainWindowFilesFixture({1000, 700}) {}
    void prepare() override {
        ASSERT_TRUE(window->workspace<ParticlesWorkspace>().setScene(tinyScene(16, 10)));
        ASSERT_TRUE(window->workspace<FlowsWorkspace>().start(smallFlow(false), false, false))
            << window->lastError().toStdString();
        window->showPage(window->workspace<FlowsWorkspace>().view());
    }
};

TEST_F(FlowAnimationTest, ExportIsTheAnimatorsFramesAndLeavesTheRunAlone) {
    const AnimationOptions o = trainingOptions();
    std::vector<long> frames;
    ASSERT_TRUE(window->workspace<FlowsWorkspace>().exportAnimation(o, path("frames/"),
                                                                    [&](long done, long total) {
                                                                        EXPECT_EQ(total, o.frames);
                                                                        if (frames.empty() ||
                                                                            frames.back() != done)
                                                                            frames.push_back(done);
                                                                        return true;
                                                                    }))
        << window->lastError().toStdString();
    // Progress after every frame (and, with the same count, between iterations: the cancel poll).
    EXPECT_EQ(frames, (std::vector<long>{0, 1, 2, 3}));
    const QStringList pngs = entries(path("frames"));
    ASSERT_EQ(pngs.size(), 3) << pngs.join(' ').toStdString();

    FlowAnimator reference(trainingConfigs(smallFlow(false), false), o, "moons");
    std::vector<QImage> expected(3);
    for (QImage& frame : expected) ASSERT_TRUE(reference.nextFrame(frame));
    for (int k = 0; k < 3; ++k) {
        const QImage png =
            QImage(path("frames/") + QStringLiteral("frame_%1.png").arg(k, 5, 10, QLatin1Char('0')))
                .convertToFormat(QImage::Format_RGBA8888);
        EXPECT_EQ(png.size(), QSize(o.width, o.height)) << k;
        EXPECT_EQ(png, expected[size_t(k)]) << "frame " << k;
    }
    EXPECT_NE(expected[0], expected[2]); // the model moved
    // The Flows tab's own run is still paused at iteration 0.
    const auto s = window->workspace<FlowsWorkspace>().runner().snapshot();
    ASSERT_TRUE(s);
    EXPECT_EQ(s->iteration(), 0);
    EXPECT_FALSE(s->playing);
}

// Frame k is the model after k · K iterations: the parameters of a trainer of the same config (the learning
// rate decaying over the animation's iterations) stepped as many times; side by side both trainers advance.
TEST_F(FlowAnimationTest, FrameKShowsTheModelAfterKTimesKIterations) {
    AnimationOptions o = trainingOptions();
    o.frames = 4;
    o.itersPerFrame = 3;
    FlowAnimator animator(trainingConfigs(smallFlow(true), true), o, "moons");
    ASSERT_TRUE(animator.comparison());
    QImage frame;
    for (long k = 0; k < o.frames; ++k) ASSERT_TRUE(animator.nextFrame(frame));
    EXPECT_EQ(animator.framesDone(), 4);
    EXPECT_EQ(animator.lastIteration(), 9);

    const auto configs = trainingConfigs(smallFlow(true), true);
    const auto trainers = animator.trainers();
    ASSERT_EQ(trainers.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
        flows::TrainerConfig c = configs[i];
        c.adam.decaySteps = 9;
        c.evalSamples = 1000;
        flows::FlowTrainer direct(c);
        for (int it = 0; it < 9; ++it) stepTrainer(direct, FlowRunOptions().evaluateEvery);
        EXPECT_EQ(trainers[i]->iteration(), 9);
        EXPECT_EQ(trainers[i]->config().flow.rwpo, i == 0); // with the RWPO layer first
        const auto& a = trainers[i]->model().params().phi;
        const auto& b = direct.model().params().phi;
        EXPECT_EQ(a.w, b.w) << i;
        EXPECT_EQ(a.K0, b.K0) << i;
        EXPECT_EQ(trainers[i]->model().params().lambdaRaw, direct.model().params().lambdaRaw) << i;
        EXPECT_EQ(trainers[i]->learningRate(), direct.learningRate()) << i;
    }
}

TEST_F(FlowAnimationTest, CancelAndBadFieldsLeaveNothing) {
    for (const char* name : {"cancel.gif", "cancel/"}) {
        EXPECT_FALSE(window->workspace<FlowsWorkspace>().exportAnimation(
            trainingOptions(), path(name), [&](long done, long) { return done < 2; }));
        EXPECT_TRUE(window->lastError().contains(QStringLiteral("cancelled")))
            << window->lastError().toStdString();
        EXPECT_TRUE(entries(dir.path()).isEmpty()) << entries(dir.path()).join(' ').toStdString();
    }
    AnimationOptions o = trainingOptions();
    o.itersPerFrame = 0;
    EXPECT_FALSE(window->workspace<FlowsWorkspace>().exportAnimation(o, path("bad.gif")));
    EXPECT_TRUE(window->lastError().contains(QStringLiteral("Iterations per frame")))
        << window->lastError().toStdString();
    o = trainingOptions();
    o.hud = true;
    EXPECT_FALSE(window->workspace<FlowsWorkspace>().exportAnimation(o, path("bad.gif")));
    EXPECT_TRUE(window->lastError().contains(QStringLiteral("Heads-up display")))
        << window->lastError().toStdString();
    o = trainingOptions();
    o.height = 20; // the caption strip leaves no room
    EXPECT_FALSE(window->workspace<FlowsWorkspace>().exportAnimation(o, path("bad.gif")));
    EXPECT_TRUE(window->lastError().contains(QStringLiteral("no room"))) << window->lastError().toStdString();
    EXPECT_FALSE(
        window->workspace<FlowsWorkspace>().exportAnimation(trainingOptions(), path("no-such-dir/a.gif")));
    EXPECT_TRUE(window->lastError().contains(QStringLiteral("no-such-dir")))
        << window->lastError().toStdString();
    EXPECT_TRUE(entries(dir.path()).isEmpty()) << entries(dir.path()).join(' ').toStdString();
}

// The menu on the Flows tab: the dialog preselects the training view (iterations per frame on, time per
// frame off); the progress dialog names the iteration; the file is written.
TEST_F(FlowAnimationTest, MenuOnTheFlowsTabExportsTheTraining) {
    const QString target = path("menu.gif");
    ModalRun run;
    ASSERT_NO_FATAL_FAILURE(exportAnimationFromMenu(
        *window, target,
        [&](AnimationExportDialog& d) {
            EXPECT_EQ(d.options().view, AnimationView::Training);
            EXPECT_TRUE(d.findChild<QSpinBox*>(QStringLiteral("itersPerFrame"))->isEnabled());
            EXPECT_FALSE(d.findChild<QDoubleSpinBox*>(QStringLiteral("dtPerFrame"))->isEnabled());
            d.findChild<QLineEdit*>(QStringLiteral("path"))->setText(target);
            setSpin(d, "frames", 6);
            setSpin(d, "itersPerFrame", 2);
            setSpin(d, "width", 400);
            setSpin(d, "height", 240);
        },
        QStringLiteral("training-export"), run));
    const QString& progressLabel = run.progressLabel;
    EXPECT_TRUE(progressLabel.startsWith(QStringLiteral("Training and rendering frame ")))
        << progressLabel.toStdString();
    EXPECT_TRUE(progressLabel.contains(QStringLiteral(" of 6 (iteration "))) << progressLabel.toStdString();
}

} // namespace
} // namespace flowscope::test
