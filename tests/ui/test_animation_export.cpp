// File ▸ Export ▸ Animation and the scene share string (Edit menu): ParticlesWorkspace::exportAnimation
// writes the frames asked for, the same frames as the shared composer (render/animation/AnimationExporter,
// which flowscope-cli render runs in an EGL context), the particles where the view's projection puts the
// tokens; a cancel or a bad path leaves nothing. The share string copies the scene as it runs and pastes
// another one; a corrupt string keeps the scene and says what is wrong.
#include "AnimationExportMenu.h"
#include "MainWindowFixture.h"
#include "TestScenes.h"
#include "UiTestUtil.h"

#include "engine/dynamics/Simulation.h"
#include "engine/gaussian/MomentField.h"
#include "engine/gaussian/MomentFiles.h"
#include "engine/io/Npy.h"
#include "engine/media/FrameSink.h"
#include "engine/scene/SceneShareString.h"
#include "render/ConeData.h"
#include "render/animation/AnimationExporter.h"
#include "render/picture/ConePicture.h"
#include "render/picture/PlotDecorations.h"
#include "ui/export/AnimationExportDialog.h"
#include "ui/export/ExportDialogs.h"
#include "ui/shell/MainWindow.h"
#include "ui/views/ParticleView.h"
#include "ui/workspaces/flows/FlowsWorkspace.h"
#include "ui/workspaces/particles/ParticlesWorkspace.h"
#include "ui/workspaces/transformers/TransformersWorkspace.h"

#if FLOWSCOPE_UI_TESTS_EGL
#include "engine/gpu/gl/GlContext.h"
#include <EGL/egl.h>
#endif

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QImageReader>
#include <QLabel>
#include <QLineEdit>
#include <QOffscreenSurface>
#include <QOpenGLContext>
#include <QProgressDialog>
#include <QSettings>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest/QTest>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

namespace flowscope::test {
namespace {

QString presetPath(const char* name) {
    return QDir(QStringLiteral(FLOWSCOPE_PRESET_DIR)).filePath(QString::fromLatin1(name));
}

QImage rgba(const QImage& image) {
    return image.convertToFormat(QImage::Format_RGBA8888);
}

// A small scene whose tokens spread over the view: 2-D, N = 48, 40 steps.
Scene smallScene() {
    Scene s = tinyScene(48, 40);
    s.name = "export test";
    return s;
}

AnimationOptions smallOptions() {
    return {.frames = 4, .fps = 10, .width = 160, .height = 120};
}

// A current OpenGL context of the test's own (Qt's, on an offscreen surface) and its entry points.
struct OwnGlContext {
    QOffscreenSurface surface;
    QOpenGLContext context;
    GlApi gl;
    std::string why = "no OpenGL context";
    bool ok = false;
    OwnGlContext() {
        surface.setFormat(QSurfaceFormat::defaultFormat());
        surface.create();
        context.setFormat(QSurfaceFormat::defaultFormat());
        ok = context.create() && context.makeCurrent(&surface) &&
             gl.load([this](const char* name) { return GlApi::Proc(context.getProcAddress(name)); }, &why);
    }
    ~OwnGlContext() { context.doneCurrent(); }
    OwnGlContext(const OwnGlContext&) = delete;
    OwnGlContext& operator=(const OwnGlContext&) = delete;
};

class AnimationExportTest : public MainWindowFilesFixture {
  protected:
    AnimationExportTest() : MainWindowFilesFixture({900, 650}) {}
    void prepare() override { ASSERT_TRUE(window->workspace<ParticlesWorkspace>().setScene(smallScene())); }
};

TEST_F(AnimationExportTest, PngSequenceAndGifHaveTheFramesAndSizeAsked) {
    const AnimationOptions o = smallOptions();
    std::vector<long> reported;
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().exportAnimation(o, path("frames/"),
                                                                        [&](long done, long total) {
                                                                            EXPECT_EQ(total, o.frames);
                                                                            reported.push_back(done);
                                                                            return true;
                                                                        }))
        << window->lastError().toStdString();
    EXPECT_EQ(reported, (std::vector<long>{1, 2, 3, 4}));
    const QStringList pngs = entries(path("frames"));
    ASSERT_EQ(pngs,
              (QStringList{"frame_00000.png", "frame_00001.png", "frame_00002.png", "frame_00003.png"}));
    for (const QString& name : pngs) {
        const QImage image(QDir(path("frames")).filePath(name));
        EXPECT_EQ(image.size(), QSize(o.width, o.height)) << name.toStdString();
    }
    // Frames differ: the tokens move (V = -0.4 I contracts the cloud).
    EXPECT_NE(rgba(QImage(QDir(path("frames")).filePath(pngs.front()))),
              rgba(QImage(QDir(path("frames")).filePath(pngs.back()))));

    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().exportAnimation(o, path("anim.gif")))
        << window->lastError().toStdString();
    QFile gif(path("anim.gif"));
    ASSERT_TRUE(gif.open(QIODevice::ReadOnly));
    const QByteArray head = gif.read(10);
    ASSERT_EQ(head.left(6), QByteArray("GIF89a"));
    // The logical screen size, little-endian, after the signature.
    EXPECT_EQ(uchar(head[6]) | uchar(head[7]) << 8, o.width);
    EXPECT_EQ(uchar(head[8]) | uchar(head[9]) << 8, o.height);
    if (QImageReader::supportedImageFormats().contains("gif")) {
        QImageReader reader(path("anim.gif"));
        EXPECT_EQ(reader.imageCount(), int(o.frames));
    }
    // Only the two results: no temporary beside them.
    EXPECT_EQ(entries(dir.path()), (QStringList{"anim.gif", "frames"}));
}

// Frame 0 shows the initial tokens: each one's pixel (where the export's particle view maps it) is drawn,
// not background; and the GUI's frames are, pixel for pixel, those of the composer in a headless EGL context
// (what flowscope-cli render runs).
TEST_F(AnimationExportTest, FramesAreTheComposersWithTheTokensWhereTheProjectionPutsThem) {
    AnimationOptions o = smallOptions();
    o.frames = 3;
    o.width = 200;
    o.height = 160;
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().exportAnimation(o, path("gui/")))
        << window->lastError().toStdString();
    std::vector<QImage> gui;
    for (int k = 0; k < o.frames; ++k)
        gui.push_back(
            rgba(QImage(path("gui") + QStringLiteral("/frame_%1.png").arg(k, 5, 10, QLatin1Char('0')))));

    // The composer in a Qt context of the test's own, frame 0, with the view's camera after it.
    {
        const OwnGlContext own;
        ASSERT_TRUE(own.ok) << own.why;
        AnimationExporter exporter(*window->workspace<ParticlesWorkspace>().scene(), o);
        ASSERT_TRUE(exporter.initialize(own.gl)) << exporter.error();
        ASSERT_TRUE(exporter.solve());
        QImage frame;
        ASSERT_TRUE(exporter.renderFrame(0, frame));
        EXPECT_EQ(frame, gui[0]);
        const QColor background = PlotStyle().background;
        const Tokens tokens = Simulation(*window->workspace<ParticlesWorkspace>().scene()).tokens();
        int inside = 0, drawn = 0;
        for (Eigen::Index i = 0; i < tokens.rows(); ++i) {
            const auto p = exporter.particlePicture()->worldToPixel(tokens.row(i).transpose());
            ASSERT_TRUE(p.has_value());
            const QPoint px(int(std::floor(p->x())), int(std::floor(p->y())) + exporter.captionHeight());
            // The status box (t, step, N) covers the top of the view: the tokens below 40 % of its height.
            const QRect checked(2, exporter.captionHeight() + o.height * 2 / 5, o.width - 4,
                                o.height * 3 / 5 - 2);
            if (!checked.contains(px)) continue;
            ++inside;
            const QColor c = frame.pixelColor(px);
            const int distance = std::abs(c.red() - background.red()) +
                                 std::abs(c.green() - background.green()) +
                                 std::abs(c.blue() - background.blue());
            drawn += distance > 60;
            if (distance <= 60) ADD_FAILURE() << "token " << i << " at " << p->x() << ", " << p->y();
        }
        EXPECT_GT(inside, int(tokens.rows()) / 3); // the default camera frames the cloud
        EXPECT_EQ(drawn, inside);
        exporter.release();
    }

#if FLOWSCOPE_UI_TESTS_EGL
    // The same frames from an EGL surfaceless context, as flowscope-cli render draws them; and with the
    // heads-up display and a caption too.
    AnimationOptions decorated = o;
    decorated.hud = true;
    decorated.caption = "auto";
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().exportAnimation(decorated, path("gui-hud/")))
        << window->lastError().toStdString();
    std::string why;
    const auto egl = GlContext::createHeadless(&why);
    if (!egl) GTEST_SKIP() << "no EGL surfaceless context: " << why;
    GlApi gl;
    ASSERT_TRUE(gl.load([](const char* name) { return GlApi::Proc(eglGetProcAddress(name)); }, &why)) << why;
    for (const auto& [options, folder] : {std::pair(o, "gui"), std::pair(decorated, "gui-hud")}) {
        AnimationExporter exporter(*window->workspace<ParticlesWorkspace>().scene(), options);
        ASSERT_TRUE(exporter.initialize(gl)) << exporter.error();
        ASSERT_TRUE(exporter.solve());
        for (int k = 0; k < options.frames; ++k) {
            QImage frame;
            ASSERT_TRUE(exporter.renderFrame(k, frame));
            const QString png =
                path(folder) + QStringLiteral("/frame_%1.png").arg(k, 5, 10, QLatin1Char('0'));
            EXPECT_EQ(frame, rgba(QImage(png))) << folder << " frame " << k;
        }
        exporter.release();
    }
#endif
}

// The automatic caption takes two lines where the scene's name and figure would be cut beside its parameters
// (it read "Castin et al. 2025, ..."), one where they fit.
TEST(AnimationCaption, TwoLinesWhereOneWouldCutTheFigure) {
    FLOWSCOPE_REQUIRE_GUI();
    Scene scene = smallScene();
    scene.name = "fig2d-two-lines";
    scene.figure = "Castin et al. 2025, Fig 2(d)";
    const OwnGlContext own;
    ASSERT_TRUE(own.ok) << own.why;
    for (const auto& [width, lines] : {std::pair(360, 2), std::pair(1600, 1)}) {
        AnimationOptions o = smallOptions();
        o.frames = 1;
        o.width = width;
        o.height = 240;
        o.caption = "auto";
        AnimationExporter exporter(scene, o);
        ASSERT_TRUE(exporter.initialize(own.gl)) << exporter.error();
        EXPECT_EQ(exporter.captionHeight(), captionStripHeight(captionFont(), lines)) << width;
        QImage frame;
        ASSERT_TRUE(exporter.renderFrame(0, frame));
        saveShot(frame, QStringLiteral("caption-%1.png").arg(width));
        exporter.release();
    }
}

// Without the heads-up display a frame has no statistics box either: the frames at 10 and 30 fps are the same
// pictures (the box said "N steps/s" of video, which the frame rate changes).
TEST_F(AnimationExportTest, WithoutTheHudNoStatisticsAreDrawn) {
    AnimationOptions o = smallOptions();
    o.frames = 2;
    o.width = 200;
    o.height = 160;
    o.hud = false;
    o.fps = 10;
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().exportAnimation(o, path("fps10/")))
        << window->lastError().toStdString();
    o.fps = 30;
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().exportAnimation(o, path("fps30/")))
        << window->lastError().toStdString();
    for (int k = 0; k < o.frames; ++k) {
        const QString name = QStringLiteral("/frame_%1.png").arg(k, 5, 10, QLatin1Char('0'));
        EXPECT_EQ(rgba(QImage(path("fps10") + name)), rgba(QImage(path("fps30") + name))) << "frame " << k;
    }
}

// A cone animation (flowscope-cli render --view cone): frame k draws each curve up to its time t_k, so the
// curves grow from a point; a run that has finished keeps its dot on its end point, and one that has left
// through the top keeps it where it left; from the frame where the particle run stops (here it diverges
// early) the picture carries a red banner saying so.
TEST(ConeAnimation, CurvesGrowDotsStayAndTheParticlesStopIsInThePicture) {
    FLOWSCOPE_REQUIRE_GUI();
    Scene scene = loadScene(presetPath("cone-fig3d-mixed.json").toStdString());
    scene.moments.grid.nu = scene.moments.grid.nc = 10;
    scene.n = 64;
    scene.integrator.divergenceNorm = 3.0; // max |x_i| is 1.76 at t = 0; the run stops before t = 50
    const OwnGlContext own;
    ASSERT_TRUE(own.ok) << own.why;
    const AnimationOptions o{.view = AnimationView::Cone,
                             .frames = 4,
                             .fps = 10,
                             .width = 480,
                             .height = 360,
                             .dtPerFrame = 50.0}; // t = 0, 50, 100, 150 (the solver's max_iter x step)
    AnimationExporter exporter(scene, o);
    ASSERT_TRUE(exporter.initialize(own.gl)) << exporter.error();
    ASSERT_TRUE(exporter.solve()) << exporter.error();
    const ConePicture& picture = *exporter.conePicture();
    const ConeData& data = *picture.data();
    ASSERT_GT(data.clipped, 0); // blow-ups that leave through the top
    const QColor background = PlotStyle().background;
    const auto drawnAt = [&](const QImage& frame, QPointF p) {
        for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
                const QColor c = frame.pixelColor(int(p.x()) + dx, int(p.y()) + dy);
                if (std::abs(c.red() - background.red()) + std::abs(c.green() - background.green()) +
                        std::abs(c.blue() - background.blue()) >
                    60)
                    return true;
            }
        return false;
    };
    QImage frame;
    for (long k = 0; k < o.frames; ++k) {
        ASSERT_TRUE(exporter.renderFrame(k, frame));
        const double t = double(k) * *o.dtPerFrame;
        int finished = 0, left = 0;
        for (std::size_t i = 0; i < data.trajectories.size(); ++i) {
            const ConeTrajectory& traj = data.trajectories[i];
            const std::vector<Eigen::Vector3d> curve = picture.drawnCurve(i);
            const auto dot = picture.dotPosition(i);
            ASSERT_FALSE(curve.empty()) << i;
            ASSERT_TRUE(dot.has_value()) << "trajectory " << i << " at t = " << t;
            // The curve ends at the dot: no record after t is drawn.
            EXPECT_LT((curve.back() - *dot).norm(), 1e-9) << i;
            const long upToT =
                std::count_if(traj.times.begin(), traj.times.end(), [&](double s) { return s <= t; });
            EXPECT_LE(long(curve.size()), upToT + 1) << "trajectory " << i << " at t = " << t;
            if (k == 0) EXPECT_EQ(curve.size(), 1u) << i;
            if (traj.peakTrace() <= data.heightCap) {
                EXPECT_LT((*dot - traj.at(t)).norm(), 1e-9) << i; // the state at t
            } else if (traj.times.back() <= t) {
                EXPECT_NEAR(dot->z(), data.heightCap, 1e-9 * data.heightCap) << i; // where it left
                ++left;
            }
            const QPointF at = picture.project(*dot);
            const bool covered = picture.legendRect().contains(at) || picture.colorBarRect().contains(at) ||
                                 picture.bannerRect().contains(at);
            if (traj.times.back() <= t) {
                ++finished; // its dot stays on its end point (the state at t), or where it left
                if (!covered) EXPECT_TRUE(drawnAt(frame, at)) << "trajectory " << i << " at t = " << t;
            }
        }
        if (k == o.frames - 1) EXPECT_GT(left, 0);
        if (k == o.frames - 1) EXPECT_GT(finished, left);

        // The banner: none at t = 0 (nothing has run yet), then the particles' stop, in red, in the picture.
        if (k == 0) {
            EXPECT_TRUE(picture.banner().isEmpty()) << picture.banner().toStdString();
            EXPECT_TRUE(picture.bannerRect().isEmpty());
            continue;
        }
        EXPECT_TRUE(picture.banner().startsWith(QStringLiteral("Particles: Diverged at t = ")))
            << picture.banner().toStdString();
        const QRect box = picture.bannerRect().toAlignedRect().intersected(frame.rect());
        ASSERT_GT(box.width() * box.height(), 400);
        long red = 0;
        for (int y = box.top(); y <= box.bottom(); ++y)
            for (int x = box.left(); x <= box.right(); ++x) {
                const QColor c = frame.pixelColor(x, y);
                red += c.red() > 150 && c.green() < 100 && c.blue() < 100;
            }
        EXPECT_GT(red, long(box.width()) * box.height() / 2) << "frame " << k;
    }
    exporter.release();
}

TEST_F(AnimationExportTest, CancelAfterTheSecondFrameLeavesNothing) {
    for (const char* name : {"cancel.gif", "cancel/"}) {
        long calls = 0;
        EXPECT_FALSE(window->workspace<ParticlesWorkspace>().exportAnimation(smallOptions(), path(name),
                                                                             [&](long done, long) {
                                                                                 ++calls;
                                                                                 return done < 2;
                                                                             }));
        EXPECT_EQ(calls, 2) << name;
        EXPECT_TRUE(window->lastError().contains(QStringLiteral("cancelled")))
            << window->lastError().toStdString();
        EXPECT_TRUE(entries(dir.path()).isEmpty()) << entries(dir.path()).join(' ').toStdString();
    }
}

TEST_F(AnimationExportTest, MissingDirectoryFailsNamingItAndWritesNothing) {
    const QString target = path("no-such-dir/anim.gif");
    EXPECT_FALSE(window->workspace<ParticlesWorkspace>().exportAnimation(smallOptions(), target));
    EXPECT_TRUE(window->lastError().contains(QStringLiteral("no-such-dir")))
        << window->lastError().toStdString();
    EXPECT_TRUE(entries(dir.path()).isEmpty());
    // Bad options name their field; the scene keeps running.
    AnimationOptions o = smallOptions();
    o.hud = true;
    o.view = AnimationView::Disc;
    EXPECT_FALSE(window->workspace<ParticlesWorkspace>().exportAnimation(o, path("disc.gif")));
    EXPECT_TRUE(window->lastError().contains(QStringLiteral("Heads-up display")))
        << window->lastError().toStdString();
    o = smallOptions();
    o.width = 4;
    EXPECT_FALSE(window->workspace<ParticlesWorkspace>().exportAnimation(o, path("small.gif")));
    EXPECT_TRUE(window->lastError().contains(QStringLiteral("Size"))) << window->lastError().toStdString();
    EXPECT_TRUE(entries(dir.path()).isEmpty());
    EXPECT_EQ(window->workspace<ParticlesWorkspace>().scene()->name, "export test");
}

// The menu path: the dialog (filled in by a timer while it is modal), the progress dialog, the status bar.
TEST_F(AnimationExportTest, MenuExportShowsProgressAndReportsInTheStatusBar) {
    const QString target = path("menu.gif");
    ModalRun run;
    ASSERT_NO_FATAL_FAILURE(exportAnimationFromMenu(
        *window, target,
        [&](AnimationExportDialog& d) {
            d.findChild<QLineEdit*>(QStringLiteral("path"))->setText(target);
            setSpin(d, "frames", 40);
            setSpin(d, "width", 320);
            setSpin(d, "height", 240);
            d.findChild<QComboBox*>(QStringLiteral("caption"))->setCurrentIndex(1);
        },
        QStringLiteral("animation-export"), run));
    const QString& progressLabel = run.progressLabel;
    EXPECT_TRUE(progressLabel.startsWith(QStringLiteral("Rendering frame "))) << progressLabel.toStdString();
    EXPECT_TRUE(progressLabel.endsWith(QStringLiteral(" of 40"))) << progressLabel.toStdString();
    const QString status = window->statusBar()->currentMessage();
    EXPECT_TRUE(status.contains(QStringLiteral("menu.gif")) && status.contains(QStringLiteral("frames/s")) &&
                status.contains(QStringLiteral("KiB")))
        << status.toStdString();
}

TEST(AnimationExportDialogTest, DefaultsFollowTheSceneAndBadFieldsAreNamed) {
    FLOWSCOPE_REQUIRE_GUI();
    Scene scene = smallScene();
    scene.output.every = 3;
    QTemporaryDir dir;
    AnimationExportDialog dialog(scene, QSize(811, 433), dir.filePath(QStringLiteral("a.gif")));
    AnimationOptions o = dialog.options();
    EXPECT_EQ(o.width, 811);
    EXPECT_EQ(o.height, 433);
    EXPECT_FALSE(o.dtPerFrame.has_value()); // the CLI's default: h * output.every
    EXPECT_TRUE(dialog.problem().isEmpty()) << dialog.problem().toStdString();
    // An MP4 of an odd size says it is encoded one pixel larger (its summary; a GIF keeps any size).
    EXPECT_TRUE(dialog.mp4SizeNote().isEmpty());
    dialog.findChild<QLineEdit*>(QStringLiteral("path"))->setText(dir.filePath(QStringLiteral("a.mp4")));
    EXPECT_EQ(
        dialog.mp4SizeNote(),
        QStringLiteral(" An MP4 needs even sizes: 811x433 is encoded as 812x434, its last column and row "
                       "repeated."));
    EXPECT_TRUE(dialog.findChild<QLabel*>(QStringLiteral("summary"))->text().endsWith(dialog.mp4SizeNote()));
    dialog.findChild<QLineEdit*>(QStringLiteral("path"))->setText(dir.filePath(QStringLiteral("a.avi")));
    EXPECT_TRUE(dialog.problem().startsWith(QStringLiteral("Output"))) << dialog.problem().toStdString();
    dialog.findChild<QLineEdit*>(QStringLiteral("path"))->setText(dir.filePath(QStringLiteral("nope/a.gif")));
    EXPECT_TRUE(dialog.problem().contains(QStringLiteral("nope"))) << dialog.problem().toStdString();

    // A scene without Gaussian initial tokens has no cone: both cone items are disabled, their tooltip says
    // why.
    ASSERT_TRUE(coneUnsupported(scene) == std::nullopt);
    const Scene rings = loadScene(QFile::encodeName(presetPath("relu.json")).toStdString());
    const auto why = coneUnsupported(rings);
    ASSERT_TRUE(why.has_value());
    AnimationExportDialog ringsDialog(rings, QSize(640, 480), dir.filePath(QStringLiteral("b.gif")));
    auto* view = ringsDialog.findChild<QComboBox*>(QStringLiteral("view"));
    auto* model = qobject_cast<QStandardItemModel*>(view->model());
    for (int row : {1, 2}) {
        EXPECT_FALSE(model->item(row)->isEnabled());
        EXPECT_TRUE(model->item(row)->toolTip().contains(QString::fromStdString(*why)));
    }
    saveShot(ringsDialog, QStringLiteral("animation-export-dialog-rings.png"));
}

// ---- Moment trajectories (File ▸ Export ▸ Moment trajectories as .npy)

// The app's files are the bytes of the shared writer on the shared solver (what flowscope-cli moments --out
// x.npy writes), for the scene as it runs; a scene without moment equations is named.
TEST_F(AnimationExportTest, MomentTrajectoriesAreTheCliBytes) {
    Scene grid = smallScene();
    grid.moments.grid = {6, 6, -0.5, 0.5, -0.5, 0.5};
    grid.integrator.T = 1.0;
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().setScene(grid));
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().exportMoments(path("app.npy")))
        << window->lastError().toStdString();
    const Scene shown = *window->workspace<ParticlesWorkspace>().scene();
    writeMomentsNpy(path("ref.npy").toStdString(), solveAllMoments(shown, momentOptions(shown)));
    for (const char* suffix : {"", "_means", "_times"}) {
        QFile a(path("app") + QString::fromLatin1(suffix) + QStringLiteral(".npy")),
            b(path("ref") + QString::fromLatin1(suffix) + QStringLiteral(".npy"));
        ASSERT_TRUE(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly)) << suffix;
        EXPECT_EQ(a.readAll(), b.readAll()) << suffix;
    }
    EXPECT_EQ(readNpy(path("app.npy").toStdString()).shape[0], std::int64_t(initialGaussians(shown).size()));

    Scene relu = smallScene();
    relu.attention.type = AttentionType::Relu;
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().setScene(relu));
    EXPECT_FALSE(window->workspace<ParticlesWorkspace>().exportMoments(path("relu.npy")));
    EXPECT_TRUE(window->lastError().contains(QStringLiteral("no moment trajectories")))
        << window->lastError().toStdString();
    EXPECT_FALSE(QFile::exists(path("relu.npy")));
}

// ---- The share string

TEST_F(AnimationExportTest, CopyPutsTheRunningSceneOnTheClipboard) {
    emit window->workspace<ParticlesWorkspace>().particleView()->quickBetaChanged(2.5); // a live edit
    ASSERT_DOUBLE_EQ(window->workspace<ParticlesWorkspace>().scene()->attention.beta, 2.5);
    QAction* copy = findAction(*window, QStringLiteral("&Copy scene as share string"));
    ASSERT_NE(copy, nullptr);
    EXPECT_EQ(copy->shortcut(), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C));
    QGuiApplication::clipboard()->clear();
    copy->trigger();
    const QString text = QGuiApplication::clipboard()->text();
    ASSERT_FALSE(text.isEmpty());
    EXPECT_EQ(text, window->workspace<ParticlesWorkspace>().shareString());
    const Scene decoded = decodeShareString(text.toStdString());
    EXPECT_EQ(nlohmann::json::parse(sceneToJson(decoded)),
              nlohmann::json::parse(sceneToJson(*window->workspace<ParticlesWorkspace>().scene())));
    EXPECT_DOUBLE_EQ(decoded.attention.beta, 2.5);
}

TEST_F(AnimationExportTest, PasteOpensTheSceneOfTheString) {
    const Scene preset = loadScene(QFile::encodeName(presetPath("fig2b-line.json")).toStdString());
    ASSERT_NE(preset.n, window->workspace<ParticlesWorkspace>().scene()->n);
    QAction* paste = findAction(*window, QStringLiteral("&Paste scene from share string"));
    ASSERT_NE(paste, nullptr);
    EXPECT_EQ(paste->shortcut(), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_V));
    // As pasted from a chat: surrounding whitespace.
    QGuiApplication::clipboard()->setText(
        QStringLiteral("\n  ") + QString::fromStdString(encodeShareString(preset)) + QStringLiteral("  \n"));
    paste->trigger();
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().scene() != nullptr);
    EXPECT_EQ(window->workspace<ParticlesWorkspace>().scene()->n, preset.n);
    EXPECT_EQ(window->workspace<ParticlesWorkspace>().scene()->d, preset.d);
    EXPECT_EQ(
        nlohmann::json::parse(sceneToJson(*window->workspace<ParticlesWorkspace>().scene()))["attention"],
        nlohmann::json::parse(sceneToJson(preset))["attention"]);
    EXPECT_EQ(window->workspace<ParticlesWorkspace>().runner().snapshot()->tokens.rows(), preset.n);
}

TEST_F(AnimationExportTest, CorruptStringKeepsTheSceneAndNamesTheFault) {
    const std::string good = encodeShareString(smallScene());
    const QString corrupt[] = {QStringLiteral("fs1.@@@@"),
                               QString::fromStdString(good.substr(0, good.size() / 2)),
                               QStringLiteral("fs9.AAAA"), QStringLiteral("   ")};
    for (const QString& text : corrupt) {
        EXPECT_FALSE(window->workspace<ParticlesWorkspace>().openShareString(text)) << text.toStdString();
        EXPECT_TRUE(window->lastError().contains(QStringLiteral("share string")))
            << window->lastError().toStdString();
        // The decoder's own words, after our heading.
        std::string decoderMessage;
        try {
            decodeShareString(text.toStdString());
        } catch (const ShareStringError& e) {
            decoderMessage = e.what();
        }
        EXPECT_TRUE(window->lastError().contains(QString::fromStdString(decoderMessage)))
            << window->lastError().toStdString() << " vs " << decoderMessage;
        EXPECT_EQ(window->workspace<ParticlesWorkspace>().scene()->name, "export test");
        EXPECT_EQ(window->workspace<ParticlesWorkspace>().scene()->n, 48);
    }
}

// The dialog keeps the user's frames, frame rate, HUD and caption for the next export (it kept the path
// only).
TEST(AnimationExportDialogTest, FramesHudAndCaptionAreKeptForTheNextExport) {
    FLOWSCOPE_REQUIRE_GUI();
    const Scene scene = smallScene();
    QTemporaryDir dir;
    QSettings settings(dir.filePath(QStringLiteral("s.ini")), QSettings::IniFormat);
    {
        AnimationExportDialog first(scene, QSize(320, 240), dir.filePath(QStringLiteral("a.gif")));
        first.findChild<QSpinBox*>(QStringLiteral("frames"))->setValue(37);
        first.findChild<QDoubleSpinBox*>(QStringLiteral("fps"))->setValue(12);
        first.findChild<QCheckBox*>(QStringLiteral("hud"))->setChecked(true);
        first.findChild<QComboBox*>(QStringLiteral("caption"))->setCurrentIndex(2);
        first.findChild<QLineEdit*>(QStringLiteral("captionText"))->setText(QStringLiteral("β = 4, t = {t}"));
        first.saveChoices(settings);
    }
    AnimationExportDialog next(scene, QSize(320, 240), dir.filePath(QStringLiteral("a.gif")));
    const AnimationOptions fresh = next.options();
    EXPECT_NE(fresh.frames, 37);
    next.restoreChoices(settings);
    const AnimationOptions o = next.options();
    EXPECT_EQ(o.frames, 37);
    EXPECT_EQ(o.fps, 12);
    EXPECT_TRUE(o.hud);
    ASSERT_TRUE(o.caption.has_value());
    EXPECT_EQ(*o.caption, "β = 4, t = {t}");
}

// Save dialogs start where the user last saved that kind of file, else at home: never in the shipped
// presets' folder a scene came from.
TEST(SaveDirs, EachKindStartsWhereItWasLastSavedElseAtHome) {
    QSettings().remove(QStringLiteral("saveDirs"));
    EXPECT_EQ(lastSaveDir(QStringLiteral("trajectory")), QDir::homePath());
    const QTemporaryDir a, b;
    ASSERT_TRUE(a.isValid() && b.isValid());
    rememberSaveDir(QStringLiteral("trajectory"), a.filePath(QStringLiteral("t.npy")));
    rememberSaveDir(QStringLiteral("view"), b.filePath(QStringLiteral("v.png")));
    rememberSaveDir(QStringLiteral("plots"), QString()); // cancelled: nothing remembered
    EXPECT_EQ(lastSaveDir(QStringLiteral("trajectory")), QFileInfo(a.path()).absoluteFilePath());
    EXPECT_EQ(lastSaveDir(QStringLiteral("view")), QFileInfo(b.path()).absoluteFilePath());
    EXPECT_EQ(lastSaveDir(QStringLiteral("plots")), QDir::homePath());
    // A remembered folder that is gone: home again.
    rememberSaveDir(QStringLiteral("moments"), a.filePath(QStringLiteral("gone/m.npy")));
    EXPECT_EQ(lastSaveDir(QStringLiteral("moments")), QDir::homePath());
    QSettings().remove(QStringLiteral("saveDirs"));
}

} // namespace
} // namespace flowscope::test
