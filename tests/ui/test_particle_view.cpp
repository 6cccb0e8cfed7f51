// ParticleView: the points land where the view's transform says, in the right colours; events show a banner.
#include "GuiEnvironment.h"
#include "TestScenes.h"

#include "render/picture/Colormap.h"
#include "render/picture/PlotDecorations.h"
#include "ui/export/ExportService.h"
#include "ui/panels/ScenePanel.h"
#include "ui/shell/MainWindow.h"
#include "ui/views/ParticleView.h"
#include "ui/workspaces/flows/FlowsWorkspace.h"
#include "ui/workspaces/particles/ParticlesWorkspace.h"
#include "ui/workspaces/transformers/TransformersWorkspace.h"

#include <QFontMetricsF>
#include <QImage>
#include <QPushButton>
#include <QTemporaryDir>
#include <QtTest/QTest>

#include <gtest/gtest.h>

#include <algorithm>

namespace flowscope::test {
namespace {

// Sizes w, sets `scene` on its Particles workspace, shows w and waits until it is exposed (an assertion that
// fails ends the caller's ASSERT_NO_FATAL_FAILURE).
void showScene(MainWindow& w, int width, int height, const Scene& scene) {
    w.resize(width, height);
    ASSERT_TRUE(w.workspace<ParticlesWorkspace>().setScene(scene));
    w.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
}

// The same with the view's HUD hidden: these tests look at the particles and the banner only.
void showSceneWithoutHud(MainWindow& w, int width, int height, const Scene& scene) {
    w.workspace<ParticlesWorkspace>().particleView()->setHudVisible(false);
    showScene(w, width, height, scene);
}

// The Draw button of w's scene panel.
QPushButton* drawButton(MainWindow& w) {
    return w.workspace<ParticlesWorkspace>().scenePanel()->findChild<QPushButton*>(
        QStringLiteral("initial.points.draw"));
}

// Shows `scene` (with or without the HUD), paints a frame (which fixes the camera that maps pixels to the
// plane) and presses Draw: the view then draws points.
void showAndStartDrawing(MainWindow& w, int width, int height, const Scene& scene, bool hud) {
    if (hud)
        showScene(w, width, height, scene);
    else
        showSceneWithoutHud(w, width, height, scene);
    if (::testing::Test::HasFatalFailure()) return;
    ParticleView* view = w.workspace<ParticlesWorkspace>().particleView();
    view->refresh();
    view->grabFramebuffer();
    QPushButton* draw = drawButton(w);
    ASSERT_NE(draw, nullptr);
    draw->click();
    ASSERT_TRUE(view->drawing());
}

// Viridis colours are saturated; the background, grid, labels and the status box are grey. So "chromatic"
// pixels are particle pixels (an event banner is red, and these tests look for it separately).
int chroma(QRgb c) {
    const int r = qRed(c), g = qGreen(c), b = qBlue(c);
    return std::max({r, g, b}) - std::min({r, g, b});
}
bool isParticle(QRgb c) {
    return chroma(c) > 60 && !(qRed(c) > 150 && qGreen(c) < 90 && qBlue(c) < 90);
}
bool isBannerRed(QRgb c) {
    return qRed(c) > 150 && qGreen(c) < 90 && qBlue(c) < 90;
}

struct Shown {
    QImage image;
    std::shared_ptr<const Snapshot> snapshot;
};

// Advances `w`'s run to `steps` steps, then grabs exactly what the view draws for that snapshot.
Shown advanceAndGrab(MainWindow& w, int steps) {
    for (int i = 0; i < steps; ++i) w.workspace<ParticlesWorkspace>().runner().stepOnce();
    EXPECT_TRUE(waitForSnapshot(w.workspace<ParticlesWorkspace>().runner(),
                                [steps](const Snapshot& s) { return s.step >= steps; }));
    w.workspace<ParticlesWorkspace>().particleView()->refresh();
    Shown out;
    out.image = w.workspace<ParticlesWorkspace>().particleView()->grabFramebuffer().convertToFormat(
        QImage::Format_RGB32);
    out.snapshot = w.workspace<ParticlesWorkspace>().particleView()->displayedSnapshot();
    return out;
}

TEST(ParticleView, DrawsTheTokensWhereItsTransformPutsThem) {
    FLOWSCOPE_REQUIRE_GUI();
    MainWindow w;
    ASSERT_NO_FATAL_FAILURE(showSceneWithoutHud(w, 900, 700, tinyScene(256)));
    ParticleView* view = w.workspace<ParticlesWorkspace>().particleView();
    ASSERT_TRUE(view->glError().isEmpty()) << view->glError().toStdString();

    const Shown shown = advanceAndGrab(w, 5);
    ASSERT_EQ(shown.snapshot->step, 5);
    const QImage& img = shown.image;
    const double dpr = view->devicePixelRatioF();
    ASSERT_EQ(img.width(), int(std::lround(view->width() * dpr)));

    long count = 0;
    double sx = 0.0, sy = 0.0;
    for (int y = 0; y < img.height(); ++y) {
        const auto* row = reinterpret_cast<const QRgb*>(img.constScanLine(y));
        for (int x = 0; x < img.width(); ++x)
            if (isParticle(row[x])) ++count, sx += x + 0.5, sy += y + 0.5;
    }
    // 256 discs of a few pixels each, some overlapping: far more than a stray line, far less than the view.
    ASSERT_GT(count, 256);
    ASSERT_LT(count, long(img.width()) * img.height() / 2);

    const Tokens& X = shown.snapshot->tokens;
    const QPointF mean(X.col(0).mean(), X.col(1).mean());
    const QPointF expected = view->transform().worldToPixel(mean) * dpr;
    // The map is affine, so the centroid of the discs is the projection of the mean, up to overlaps and
    // discs hidden under the status box.
    EXPECT_NEAR(sx / count, expected.x(), 0.02 * img.width());
    EXPECT_NEAR(sy / count, expected.y(), 0.02 * img.height());

    // The last token is drawn last (on top) in the last viridis colour, centred on its projection.
    const Eigen::Index last = X.rows() - 1;
    const QPoint p = (view->transform().worldToPixel({X(last, 0), X(last, 1)}) * dpr).toPoint();
    ASSERT_TRUE(img.rect().contains(p));
    if (p.x() > 400 * dpr || p.y() > 100 * dpr) { // not under the status box
        const QColor got(img.pixel(p)), want = viridis(1.0);
        EXPECT_NEAR(got.red(), want.red(), 40);
        EXPECT_NEAR(got.green(), want.green(), 40);
        EXPECT_NEAR(got.blue(), want.blue(), 40);
    }
}

// The Quick controls sit in the bottom-left corner inside the tick labels' bands: no tick label of the
// plane is under them (they covered the bottom-left labels), at the default size and a small window's.
// Whether the view's Quick controls have been laid out (frames drawn until they are), then one frame more at
// the view's final size.
bool quickControlsLaidOut(ParticleView* view) {
    const bool laidOut = waitFor([&] {
        view->refresh();
        view->grabFramebuffer();
        const HudRect r = view->quickLayout().window;
        return r.right > r.left && r.bottom > r.top;
    });
    view->grabFramebuffer();
    return laidOut;
}

TEST(ParticleView, TheQuickControlsCoverNoTickLabel) {
    FLOWSCOPE_REQUIRE_GUI();
    for (const QSize size : {QSize(1280, 800), QSize(1024, 640)}) {
        MainWindow w;
        ASSERT_NO_FATAL_FAILURE(showScene(w, size.width(), size.height(), tinyScene(256)));
        ParticleView* view = w.workspace<ParticlesWorkspace>().particleView();
        ASSERT_TRUE(quickControlsLaidOut(view));
        view->grabFramebuffer();
        const HudRect r = view->quickLayout().window;
        const QRectF quick(QPointF(r.left, r.top), QPointF(r.right, r.bottom));
        ASSERT_TRUE(QRectF(view->rect()).contains(quick)) << size.width();
        // Open, the controls cover at most 15 % of the view (issue 45 item 12).
        EXPECT_LE(quick.width() * quick.height(), 0.15 * view->width() * view->height())
            << size.width() << ": " << quick.width() << " x " << quick.height() << " of " << view->width()
            << " x " << view->height();
        const std::vector<TickLabel> labels = gridTickLabels(view->transform(), QFontMetricsF(view->font()));
        int xLabels = 0, yLabels = 0;
        for (const TickLabel& l : labels) {
            (l.yAxis ? yLabels : xLabels) += 1;
            EXPECT_FALSE(quick.intersects(l.box)) << size.width() << ": label " << l.text.toStdString();
        }
        EXPECT_GE(xLabels, 3);
        EXPECT_GE(yLabels, 2);
    }
}

// Issue 45 item 13: View as PNG is the picture and its HUD, without the Quick controls floating over it.
// Inside the controls' rectangle the export with the HUD on is the export with the HUD off, pixel for pixel
// (the run is paused: both draw the same frame); a plain grab there differs (the controls are drawn on
// screen).
TEST(ParticleView, TheExportedPngHasNoQuickControls) {
    FLOWSCOPE_REQUIRE_GUI();
    MainWindow w;
    ASSERT_NO_FATAL_FAILURE(showScene(w, 1024, 640, tinyScene(256)));
    ParticleView* view = w.workspace<ParticlesWorkspace>().particleView();
    ASSERT_TRUE(quickControlsLaidOut(view));
    const HudRect r = view->quickLayout().window;
    const double dpr = view->devicePixelRatioF();
    const QRect quick = QRectF(QPointF(r.left * dpr, r.top * dpr), QPointF(r.right * dpr, r.bottom * dpr))
                            .toAlignedRect()
                            .adjusted(1, 1, -1, -1);
    QTemporaryDir dir;
    ASSERT_TRUE(dir.isValid());
    const auto exported = [&](const QString& name) {
        const QString path = dir.filePath(name);
        EXPECT_TRUE(exportWidgetPng(view, path).ok());
        return QImage(path).convertToFormat(QImage::Format_RGB32);
    };
    const QImage withHud = exported(QStringLiteral("hud.png"));
    const QImage onScreen = view->grabFramebuffer().convertToFormat(QImage::Format_RGB32);
    view->setHudVisible(false);
    const QImage withoutHud = exported(QStringLiteral("plain.png"));
    view->setHudVisible(true);
    ASSERT_EQ(withHud.size(), withoutHud.size());
    long differ = 0, drawn = 0;
    for (int y = quick.top(); y <= quick.bottom(); ++y)
        for (int x = quick.left(); x <= quick.right(); ++x) {
            differ += withHud.pixel(x, y) != withoutHud.pixel(x, y);
            drawn += onScreen.pixel(x, y) != withoutHud.pixel(x, y);
        }
    EXPECT_EQ(differ, 0) << "pixels of the Quick controls in the export";
    EXPECT_GT(drawn, quick.width() * quick.height() / 4) << "the controls are drawn on screen";
}

TEST(ParticleView, FramesAllTokensOfANewScene) {
    FLOWSCOPE_REQUIRE_GUI();
    MainWindow w;
    Scene far = tinyScene(128);
    far.initial.mean = Vec::Constant(2, 1000.0); // far from the origin, spread 1: only framing finds it
    ASSERT_NO_FATAL_FAILURE(showSceneWithoutHud(w, 700, 500, far));
    const Shown shown = advanceAndGrab(w, 0); // the framed state itself: this cloud moves fast afterwards
    const QRectF visible = w.workspace<ParticlesWorkspace>().particleView()->transform().visibleWorld();
    const Tokens& X = shown.snapshot->tokens;
    for (Eigen::Index i = 0; i < X.rows(); ++i) ASSERT_TRUE(visible.contains(QPointF(X(i, 0), X(i, 1))));
    long count = 0;
    for (int y = 0; y < shown.image.height(); ++y)
        for (int x = 0; x < shown.image.width(); ++x) count += isParticle(shown.image.pixel(x, y));
    EXPECT_GT(count, 128);
}

TEST(ParticleView, ShowsARedBannerWhenTheRunDiverges) {
    FLOWSCOPE_REQUIRE_GUI();
    MainWindow w;
    ASSERT_NO_FATAL_FAILURE(showSceneWithoutHud(w, 800, 600, divergingScene()));
    w.workspace<ParticlesWorkspace>().setMaxSpeed(true);
    w.workspace<ParticlesWorkspace>().play();
    ASSERT_TRUE(waitForSnapshot(w.workspace<ParticlesWorkspace>().runner(),
                                [](const Snapshot& s) { return s.finished && !s.playing; }));
    w.workspace<ParticlesWorkspace>().particleView()->refresh();
    const QImage img = w.workspace<ParticlesWorkspace>().particleView()->grabFramebuffer().convertToFormat(
        QImage::Format_RGB32);
    ASSERT_TRUE(w.workspace<ParticlesWorkspace>().particleView()->displayedSnapshot()->event.has_value());

    long red = 0;
    for (int y = 0; y < img.height() / 3; ++y) // the banner sits at the top
        for (int x = img.width() / 4; x < img.width() * 3 / 4; ++x) red += isBannerRed(img.pixel(x, y));
    EXPECT_GT(red, 2000); // a banner, not a few stray pixels
}

// Draw → points under the cursor → Apply: the run restarts from exactly the drawn points.
TEST(ParticleView, DrawnPointsBecomeTheInitialTokens) {
    FLOWSCOPE_REQUIRE_GUI();
    MainWindow w;
    ASSERT_NO_FATAL_FAILURE(showAndStartDrawing(w, 1200, 760, tinyScene(256), false));
    ParticleView* view = w.workspace<ParticlesWorkspace>().particleView();
    EXPECT_FALSE(w.workspace<ParticlesWorkspace>().runner().playing());

    // One stroke: press, a 100-pixel horizontal drag, release.
    const QPoint a(view->width() / 2 - 50, view->height() / 3), b = a + QPoint(100, 0);
    QTest::mousePress(view, Qt::LeftButton, {}, a);
    QTest::mouseMove(view, a + QPoint(50, 0));
    QTest::mouseMove(view, b);
    QTest::mouseRelease(view, Qt::LeftButton, {}, b);
    const Tokens P = view->drawnPoints();
    // A point at the press, then one every kDrawSpacing pixels: 1 + 100 / 4.
    ASSERT_EQ(P.rows(), 1 + int(100 / ParticleView::kDrawSpacing));
    for (Eigen::Index i = 0; i < P.rows(); ++i) {
        const auto pixel = view->worldToPixel(P.row(i).transpose());
        ASSERT_TRUE(pixel.has_value());
        EXPECT_NEAR(pixel->x(), a.x() + i * ParticleView::kDrawSpacing, 1e-6) << i;
        EXPECT_NEAR(pixel->y(), a.y(), 1e-6) << i;
    }

    if (const QString dir = qEnvironmentVariable("FLOWSCOPE_SAVE_SHOTS"); !dir.isEmpty()) {
        view->grabFramebuffer().save(dir + QStringLiteral("/drawing-view.png"));
        w.grab().save(dir + QStringLiteral("/drawing.png"));
    }

    // The panel staged them (kind points, N = m); Apply restarts from them and ends drawing.
    const Scene& edited = w.workspace<ParticlesWorkspace>().scenePanel()->editedScene();
    EXPECT_EQ(edited.initial.kind, InitKind::Points);
    EXPECT_EQ(edited.n, P.rows());
    EXPECT_TRUE(w.workspace<ParticlesWorkspace>().scenePanel()->stagedError().isEmpty())
        << w.workspace<ParticlesWorkspace>().scenePanel()->stagedError().toStdString();
    w.workspace<ParticlesWorkspace>().scenePanel()->findChild<QPushButton*>(QStringLiteral("apply"))->click();
    EXPECT_FALSE(view->drawing());
    EXPECT_FALSE(drawButton(w)->isChecked());
    ASSERT_TRUE(w.workspace<ParticlesWorkspace>().scene() != nullptr);
    EXPECT_EQ(w.workspace<ParticlesWorkspace>().scene()->initial.kind, InitKind::Points);
    ASSERT_TRUE(waitForSnapshot(w.workspace<ParticlesWorkspace>().runner(),
                                [&](const Snapshot& s) { return s.tokens.rows() == P.rows(); }));
    EXPECT_EQ(w.workspace<ParticlesWorkspace>().runner().snapshot()->tokens, P);
}

// Clear drops the points, and the panel says why it cannot apply; Escape ends drawing.
TEST(ParticleView, ClearAndEscapeWhileDrawing) {
    FLOWSCOPE_REQUIRE_GUI();
    MainWindow w;
    ASSERT_NO_FATAL_FAILURE(showAndStartDrawing(w, 900, 700, tinyScene(64), true));
    ParticleView* view = w.workspace<ParticlesWorkspace>().particleView();
    QTest::mouseClick(view, Qt::LeftButton, {}, QPoint(400, 400));
    ASSERT_EQ(view->drawnPoints().rows(), 1);
    w.workspace<ParticlesWorkspace>()
        .scenePanel()
        ->findChild<QPushButton*>(QStringLiteral("initial.points.clear"))
        ->click();
    EXPECT_EQ(view->drawnPoints().rows(), 0);
    EXPECT_TRUE(w.workspace<ParticlesWorkspace>().scenePanel()->stagedError().startsWith(
        QStringLiteral("initial.points:")))
        << w.workspace<ParticlesWorkspace>().scenePanel()->stagedError().toStdString();
    QTest::keyClick(view, Qt::Key_Escape);
    EXPECT_FALSE(view->drawing());
    EXPECT_FALSE(drawButton(w)->isChecked());
}

#if FLOWSCOPE_HAVE_GPU
// The OpenGL backend keeps the tokens on the GPU and the view draws them from there (docs/ARCHITECTURE.md,
// threads).
// The oracle is the CPU drawing path: at the last step the run also downloads the tokens, so the device copy
// and Snapshot::tokens hold the same state, and the two pictures must agree pixel for pixel up to float32
// rounding at disc edges.
TEST(ParticleView, DrawsGpuResidentTokensStraightFromGpuMemory) {
    FLOWSCOPE_REQUIRE_GUI();
    MainWindow w;
    Scene scene = tinyScene(256, 12);
    scene.precision = Precision::Float32;
    ASSERT_NO_FATAL_FAILURE(showSceneWithoutHud(w, 900, 700, scene));
    w.workspace<ParticlesWorkspace>().setBackend(QStringLiteral("gl"));
    ASSERT_TRUE(waitForSnapshot(w.workspace<ParticlesWorkspace>().runner(), [](const Snapshot& s) {
        return s.backend.rfind("OpenGL", 0) == 0 || !s.backendNote.empty();
    }));
    if (const auto s = w.workspace<ParticlesWorkspace>().runner().snapshot(); !s->backendNote.empty())
        GTEST_SKIP() << s->backendNote;

    ParticleView* view = w.workspace<ParticlesWorkspace>().particleView();
    view->setFollow(false); // one camera for both pictures (following would ease it on between them)
    const Shown device = advanceAndGrab(w, 12);
    ASSERT_EQ(device.snapshot->step, 12);
    ASSERT_TRUE(device.snapshot->device) << device.snapshot->backend;
    EXPECT_EQ(device.snapshot->backend, "OpenGL float32, tokens on the GPU");
    EXPECT_EQ(device.snapshot->device->step, 12);
    EXPECT_TRUE(view->drewFromDevice());

    // The same state through the CPU path: the snapshot without its device copy, shown as a preview.
    auto cpu = std::make_shared<Snapshot>(*device.snapshot);
    cpu->device.reset();
    view->setPreview(cpu);
    const QImage host = view->grabFramebuffer().convertToFormat(QImage::Format_RGB32);
    EXPECT_FALSE(view->drewFromDevice());
    view->setPreview(nullptr);

    const QImage& gpu = device.image;
    ASSERT_EQ(gpu.size(), host.size());
    long particles = 0, disagree = 0;
    for (int y = 0; y < gpu.height(); ++y) {
        const auto* a = reinterpret_cast<const QRgb*>(gpu.constScanLine(y));
        const auto* b = reinterpret_cast<const QRgb*>(host.constScanLine(y));
        for (int x = 0; x < gpu.width(); ++x) {
            particles += isParticle(a[x]);
            disagree += isParticle(a[x]) != isParticle(b[x]);
        }
    }
    ASSERT_GT(particles, 256); // the GPU path drew the cloud
    EXPECT_LT(double(disagree), 0.02 * double(particles)) << disagree << " of " << particles;
}
#endif

} // namespace
} // namespace flowscope::test
