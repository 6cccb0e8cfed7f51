// ParticleDocument, the one owner of a particle run's scene: a command it takes is what runs (the runner's
// tokens equal, bit for bit in float64, a Simulation given the same edit at the same step), and a command it
// refuses changes nothing (the scene, the run and its later steps are those of the unedited scene).
#include "TestScenes.h"

#include "engine/dynamics/LiveEdit.h"
#include "engine/dynamics/Simulation.h"
#include "ui/document/ParticleDocument.h"

#include <gtest/gtest.h>

#include <QSignalSpy>

namespace flowscope::test {
namespace {

// Steps the document's run by `count` from the step it is at, and waits for it.
void stepRun(ParticleDocument& doc, int count) {
    const long target = doc.runner().snapshot()->step + count;
    for (int i = 0; i < count; ++i) doc.runner().stepOnce();
    ASSERT_TRUE(waitForSnapshot(doc.runner(), [target](const Snapshot& s) { return s.step == target; }));
}

// A small float64 scene with a random head, so that every attention type moves the tokens differently.
Scene liveScene() {
    Scene s = tinyScene(40, 200);
    s.attention.heads[0].V = Mat{{-0.3, 0.8}, {-0.5, -0.2}};
    return s;
}

TEST(ParticleDocument, ARefusedCommandLeavesTheSceneAndTheRunWhole) {
    ParticleDocument doc;
    const Scene scene = liveScene();
    ASSERT_TRUE(doc.open(scene, {}));
    QSignalSpy edits(&doc, &ParticleDocument::edited), opens(&doc, &ParticleDocument::opened);
    stepRun(doc, 3);

    QString why;
    EXPECT_FALSE(doc.set({"/attention/beta", -1.0}, nullptr, &why));
    EXPECT_TRUE(why.startsWith(QStringLiteral("/attention/beta: expected number > 0"))) << why.toStdString();
    AttentionSpec wrongShape = scene.attention;
    wrongShape.heads[0].V = Mat::Identity(3, 3);
    EXPECT_FALSE(doc.setAttention(wrongShape, nullptr, &why));
    EXPECT_TRUE(why.startsWith(QStringLiteral("/attention/heads/0/V"))) << why.toStdString();
    IntegratorSpec noSteps = scene.integrator;
    noSteps.steps = 0;
    EXPECT_FALSE(doc.setIntegrator(noSteps, nullptr, &why));
    EXPECT_TRUE(why.startsWith(QStringLiteral("/integrator/steps"))) << why.toStdString();
    EXPECT_FALSE(doc.set({"/n", 0}, nullptr, &why)); // a restart field refused: no new run either
    EXPECT_TRUE(why.startsWith(QStringLiteral("/n"))) << why.toStdString();
    EXPECT_EQ(edits.count(), 0);
    EXPECT_EQ(opens.count(), 0);
    EXPECT_EQ(sceneToJson(doc.scene()), sceneToJson(scene));

    // The run goes on as the unedited scene's would.
    stepRun(doc, 3);
    Simulation reference(scene);
    for (int i = 0; i < 6; ++i) ASSERT_TRUE(reference.step());
    EXPECT_EQ(doc.runner().snapshot()->generation, 1u);
    EXPECT_TRUE(doc.runner().snapshot()->tokens == reference.tokens());
}

// The issue-44 bug: on the CPU a live type edit was shown and not run. Switching softmax → l2 → sinkhorn →
// linear while the run goes on: each takes at once, in the run, from the run's state.
TEST(ParticleDocument, EveryTypeSwitchRunsFromTheRunsState) {
    ParticleDocument doc;
    const Scene scene = liveScene();
    ASSERT_TRUE(doc.open(scene, {}));
    QSignalSpy edits(&doc, &ParticleDocument::edited);
    Simulation reference(scene), unedited(scene);
    const auto step = [&](int count) {
        stepRun(doc, count);
        for (int i = 0; i < count; ++i) {
            ASSERT_TRUE(reference.step());
            ASSERT_TRUE(unedited.step());
        }
    };
    step(2);
    QObject panel;
    for (const char* type : {"l2", "sinkhorn", "linear"}) {
        SCOPED_TRACE(type);
        const SceneSetting setting{"/attention/type", type};
        QString why;
        ASSERT_TRUE(doc.set(setting, &panel, &why)) << why.toStdString();
        applyLiveSetting(reference, setting);
        EXPECT_EQ(doc.scene().attention.type, reference.scene().attention.type);
        ASSERT_EQ(edits.count(), 1);
        EXPECT_EQ(edits.takeFirst().at(1).value<QObject*>(), &panel);
        step(3);
        const Tokens& run = doc.runner().snapshot()->tokens;
        EXPECT_TRUE(run == reference.tokens())
            << "largest difference " << (run - reference.tokens()).cwiseAbs().maxCoeff();
        // And it changed the motion: the unedited run went elsewhere.
        EXPECT_GT((run - unedited.tokens()).cwiseAbs().maxCoeff(), 1e-9);
        EXPECT_TRUE(doc.runner().snapshot()->error.empty()) << doc.runner().snapshot()->error;
    }
    EXPECT_EQ(doc.runner().snapshot()->generation, 1u); // live: never a new run
}

TEST(ParticleDocument, ARestartFieldStartsANewRunOfTheEditedScene) {
    ParticleDocument doc;
    ASSERT_TRUE(doc.open(liveScene(), QStringLiteral("scene.json")));
    QSignalSpy opens(&doc, &ParticleDocument::opened);
    stepRun(doc, 2);
    ASSERT_TRUE(doc.set({"/n", 24}, nullptr));
    EXPECT_EQ(opens.count(), 1);
    EXPECT_EQ(doc.scene().n, 24);
    EXPECT_EQ(doc.path(), QStringLiteral("scene.json")); // the same document, edited
    const auto s = doc.runner().snapshot();
    EXPECT_EQ(s->generation, 2u);
    EXPECT_EQ(s->step, 0);
    EXPECT_EQ(s->tokens.rows(), 24);
}

TEST(ParticleDocument, AValueEqualToTheScenesChangesNothing) {
    ParticleDocument doc;
    const Scene scene = liveScene();
    ASSERT_TRUE(doc.open(scene, {}));
    QSignalSpy edits(&doc, &ParticleDocument::edited);
    EXPECT_TRUE(doc.set({"/attention/beta", scene.attention.beta}, nullptr));
    EXPECT_TRUE(doc.set({"/integrator/method", "rk4"}, nullptr));
    EXPECT_EQ(edits.count(), 0);
    EXPECT_TRUE(doc.set({"/integrator/method", "heun"}, nullptr));
    EXPECT_EQ(edits.count(), 1);
    EXPECT_EQ(doc.scene().integrator.method, Method::Heun);
}

TEST(ParticleDocument, WithoutASceneEveryCommandIsRefused) {
    ParticleDocument doc;
    QString why;
    EXPECT_FALSE(doc.set({"/attention/beta", 2.0}, nullptr, &why));
    EXPECT_FALSE(why.isEmpty());
    EXPECT_FALSE(doc.save(QStringLiteral("never-written.json"), &why));
    EXPECT_FALSE(doc.hasScene());
    EXPECT_EQ(doc.shown().d, 2); // what the panels show meanwhile
}

} // namespace
} // namespace flowscope::test
