// Particles: Follow keeps a drifting cloud in view; with it off, the tokens outside the view are counted.
// The scene is the Fig 2(d) preset, whose sample mean runs off to thousands by t = 25 (issue 31).
#include "GuiEnvironment.h"
#include "TestScenes.h"
#include "UiTestUtil.h"

#include "engine/scene/Scene.h"
#include "ui/shell/MainWindow.h"
#include "ui/views/ParticleView.h"
#include "ui/workspaces/particles/ParticlesWorkspace.h"

#include <QAction>
#include <QDir>
#include <QWheelEvent>
#include <QtTest/QTest>

#include <gtest/gtest.h>

namespace flowscope::test {
namespace {

// The Fig 2(d) preset with 256 of its 2048 tokens (the runaway is the same: the sample mean leaves the
// unstable fixed point 0, only sooner and in its own direction) in a 1280 x 800 window with `follow` as
// asked, played at full speed (no steps/s cap: the test waits for t >= 25, not for the default rate's
// seconds) until the view shows t >= 25. After every paint (each one a follow step) `eachFrame` looks at the
// view.
void runFig2dTo25(MainWindow& w, bool follow, const std::function<void(ParticleView&)>& eachFrame) {
    w.resize(1280, 800);
    Scene scene = loadScene(
        QDir(FLOWSCOPE_PRESET_DIR).filePath(QStringLiteral("cone-fig2d-two-lines.json")).toStdString());
    scene.n = 256;
    ASSERT_TRUE(w.workspace<ParticlesWorkspace>().setScene(scene)) << w.lastError().toStdString();
    w.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
    ParticleView& view = *w.workspace<ParticlesWorkspace>().particleView();
    w.workspace<ParticlesWorkspace>().setFollow(follow);
    ASSERT_EQ(view.follow(), follow);
    w.workspace<ParticlesWorkspace>().setMaxSpeed(true);
    w.workspace<ParticlesWorkspace>().play();
    ASSERT_TRUE(waitFor(
        [&] {
            view.refresh();
            view.grabFramebuffer(); // a paint: the follow step and the camera the test reads
            eachFrame(view);
            const auto s = view.displayedSnapshot();
            return s && s->t >= 25.0;
        },
        kEventGuard)); // the preset's cone (276 moment runs) shares the cores at first
    w.workspace<ParticlesWorkspace>().pause();
}

// Where the corners of the displayed tokens' box are drawn, inside the view or not.
bool boxInView(const ParticleView& view) {
    const Tokens& X = view.displayedSnapshot()->tokens;
    const QPointF lo(X.col(0).minCoeff(), X.col(1).minCoeff()), hi(X.col(0).maxCoeff(), X.col(1).maxCoeff());
    for (const QPointF corner : {lo, hi, QPointF(lo.x(), hi.y()), QPointF(hi.x(), lo.y())}) {
        const QPointF p = view.transform().worldToPixel(corner);
        if (p.x() < 0 || p.x() > view.width() || p.y() < 0 || p.y() > view.height()) return false;
    }
    return true;
}

TEST(Follow, KeepsTheFig2dCloudInViewToT25) {
    FLOWSCOPE_REQUIRE_GUI();
    MainWindow w;
    long frames = 0, framesOut = 0;
    ASSERT_NO_FATAL_FAILURE(runFig2dTo25(w, true, [&](ParticleView& view) {
        if (!view.displayedSnapshot()) return;
        ++frames;
        framesOut += !boxInView(view);
    }));
    ParticleView& view = *w.workspace<ParticlesWorkspace>().particleView();
    const Tokens& X = view.displayedSnapshot()->tokens;
    ASSERT_TRUE(X.allFinite());
    EXPECT_GT(X.colwise().mean().norm(),
              1000.0); // it did run away: a view that stayed put would have lost it
    // How many frames are painted before t = 25 depends on the machine's speed (a quiet machine ran it in 8):
    // every one of them, and the last, must show the whole cloud.
    EXPECT_GE(frames, 1);
    EXPECT_EQ(framesOut, 0) << "of " << frames << " frames";
    EXPECT_TRUE(boxInView(view));
    EXPECT_EQ(view.picture().offView().count, 0);
    saveShot(view.grabFramebuffer(), QStringLiteral("follow-on-fig2d-t25.png"));

    // The Gaussian overlay is the moment ODE from the scene's N(α₀ = 0, Σ₀), and α = 0 is a fixed point of
    // α' = V(I + ΣA)α: the ellipses stay at the origin, rightly, while the sample mean (off 0 by about
    // √(Σ₀/N) at t = 0; the same ODE from it runs away too) leaves. The overlay's tooltip says so.
    const auto gaussian = view.picture().overlay().at(view.displayedSnapshot()->t);
    ASSERT_TRUE(gaussian.has_value());
    EXPECT_LT(gaussian->mean.norm(), 1e-12);
    QAction* overlay = nullptr;
    for (QAction* a : w.findChildren<QAction*>())
        if (a->text() == QStringLiteral("Gaussian overlay")) overlay = a;
    ASSERT_NE(overlay, nullptr);
    EXPECT_TRUE(overlay->toolTip().contains(QStringLiteral("not from the sampled tokens")))
        << overlay->toolTip().toStdString();
    EXPECT_TRUE(overlay->toolTip().contains(QStringLiteral("unstable fixed point")));
}

TEST(Follow, OffTheIndicatorCountsTheTokensOutsideTheView) {
    FLOWSCOPE_REQUIRE_GUI();
    MainWindow w;
    ASSERT_NO_FATAL_FAILURE(runFig2dTo25(w, false, [](ParticleView&) {}));
    ParticleView& view = *w.workspace<ParticlesWorkspace>().particleView();
    view.refresh();
    const QImage image = view.grabFramebuffer().convertToFormat(QImage::Format_RGB32);
    saveShot(image, QStringLiteral("follow-off-fig2d-t25.png"));
    const Tokens& X = view.displayedSnapshot()->tokens;
    long outside = 0;
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
        const QPointF p = view.transform().worldToPixel(QPointF(X(i, 0), X(i, 1)));
        outside += !QRectF(0, 0, view.width(), view.height()).contains(p);
    }
    EXPECT_GT(outside, 0);
    EXPECT_EQ(view.picture().offView().count, outside);
    // The arrow and the note are drawn, in their orange.
    long orange = 0;
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x) orange += image.pixel(x, y) == qRgb(255, 170, 60);
    EXPECT_GT(orange, 50);
}

TEST(Follow, IsOnByDefaultAndZoomingByHandTurnsItOff) {
    FLOWSCOPE_REQUIRE_GUI();
    MainWindow w;
    w.resize(900, 600);
    ASSERT_TRUE(w.workspace<ParticlesWorkspace>().setScene(tinyScene()));
    w.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
    ParticleView& view = *w.workspace<ParticlesWorkspace>().particleView();
    QAction* follow = nullptr;
    for (QAction* a : w.findChildren<QAction*>())
        if (a->text() == QStringLiteral("Follow")) follow = a;
    ASSERT_NE(follow, nullptr);
    EXPECT_TRUE(view.follow());
    EXPECT_TRUE(follow->isChecked());

    const QPointF at(view.width() / 2.0, view.height() / 2.0);
    QWheelEvent wheel(at, view.mapToGlobal(at), QPoint(), QPoint(0, 120), Qt::NoButton, Qt::NoModifier,
                      Qt::NoScrollPhase, false);
    QCoreApplication::sendEvent(&view, &wheel);
    EXPECT_FALSE(view.follow());
    EXPECT_FALSE(follow->isChecked()); // the action says what the view does
    follow->trigger();
    EXPECT_TRUE(view.follow());
}

} // namespace
} // namespace flowscope::test
