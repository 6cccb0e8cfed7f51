// MainWindow: opening scenes; a bad file leaves the running scene untouched and explains why.
#include "MainWindowFixture.h"
#include "TestScenes.h"

#include "engine/dynamics/Simulation.h"
#include "engine/io/Npy.h"
#include "ui/panels/MatrixEditor.h"
#include "ui/panels/PlotsPanel.h"
#include "ui/panels/ScenePanel.h"
#include "ui/shell/MainWindow.h"
#include "ui/views/FlowView.h"
#include "ui/views/ParticleView.h"
#include "ui/workspaces/flows/FlowsWorkspace.h"
#include "ui/workspaces/particles/ParticlesWorkspace.h"
#include "ui/workspaces/transformers/TransformersWorkspace.h"

#include <QAbstractButton>
#include <QAbstractSpinBox>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QFile>
#include <QMenu>
#include <QMenuBar>
#include <QProcess>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QTabBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QToolBar>
#include <QToolButton>
#include <QtTest/QTest>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace flowscope::test {
namespace {

QString writeFile(const QTemporaryDir& dir, const QString& name, const QByteArray& content) {
    const QString path = dir.filePath(name);
    QFile f(path);
    EXPECT_TRUE(f.open(QIODevice::WriteOnly));
    f.write(content);
    return path;
}

class MainWindowTest : public MainWindowFilesFixture {
  protected:
    MainWindowTest() : MainWindowFilesFixture({800, 600}) {}
    void prepare() override { ASSERT_TRUE(window->workspace<ParticlesWorkspace>().setScene(tinyScene())); }

    void expectTinySceneStillRunning() {
        ASSERT_TRUE(window->workspace<ParticlesWorkspace>().scene() != nullptr);
        EXPECT_EQ(window->workspace<ParticlesWorkspace>().scene()->name, "tiny");
        EXPECT_EQ(window->workspace<ParticlesWorkspace>().scene()->n, 256);
        EXPECT_EQ(window->workspace<ParticlesWorkspace>().runner().snapshot()->generation, 1u);
        EXPECT_EQ(window->workspace<ParticlesWorkspace>().runner().snapshot()->tokens.rows(), 256);
    }
};

// --- Opening scenes ---

TEST_F(MainWindowTest, MalformedJsonKeepsTheSceneAndExplains) {
    const QString path = writeFile(dir, QStringLiteral("broken.json"), "{ \"version\": 1, \"d\": 2,");
    EXPECT_FALSE(window->workspace<ParticlesWorkspace>().openSceneFile(path));
    EXPECT_FALSE(window->lastError().isEmpty());
    EXPECT_TRUE(window->lastError().contains(QStringLiteral("broken.json")))
        << window->lastError().toStdString();
    expectTinySceneStillRunning();
}

TEST_F(MainWindowTest, InvalidFieldKeepsTheSceneAndNamesTheField) {
    Scene bad = tinyScene();
    auto json = nlohmann::json::parse(sceneToJson(bad));
    json["n"] = -5;
    const QString path = writeFile(dir, QStringLiteral("bad-n.json"), QByteArray::fromStdString(json.dump()));
    EXPECT_FALSE(window->workspace<ParticlesWorkspace>().openSceneFile(path));
    EXPECT_TRUE(window->lastError().contains(QStringLiteral("/n"))) << window->lastError().toStdString();
    expectTinySceneStillRunning();
}

TEST_F(MainWindowTest, MissingFileKeepsTheScene) {
    EXPECT_FALSE(window->workspace<ParticlesWorkspace>().openSceneFile(
        dir.filePath(QStringLiteral("does-not-exist.json"))));
    EXPECT_FALSE(window->lastError().isEmpty());
    expectTinySceneStillRunning();
}

TEST_F(MainWindowTest, OpensAValidSceneFile) {
    Scene other = tinyScene(300);
    other.name = "from file";
    const QString path = dir.filePath(QStringLiteral("other.json"));
    saveScene(other, path.toStdString());
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().openSceneFile(path))
        << window->lastError().toStdString();
    EXPECT_TRUE(window->lastError().isEmpty());
    EXPECT_EQ(window->workspace<ParticlesWorkspace>().scene()->name, "from file");
    EXPECT_EQ(window->workspace<ParticlesWorkspace>().scenePath(), path);
    EXPECT_EQ(window->workspace<ParticlesWorkspace>().runner().snapshot()->generation, 2u);
    EXPECT_EQ(window->workspace<ParticlesWorkspace>().runner().snapshot()->tokens.rows(), 300);
    EXPECT_TRUE(window->windowTitle().contains(QStringLiteral("from file")));
}

// --- Running ---

TEST_F(MainWindowTest, WindowImageIncludesTheParticles) {
    window->workspace<ParticlesWorkspace>().stepOnce();
    ASSERT_TRUE(waitForSnapshot(window->workspace<ParticlesWorkspace>().runner(),
                                [](const Snapshot& s) { return s.step == 1; }));
    window->workspace<ParticlesWorkspace>().particleView()->refresh();
    const QImage img = window->grabWindowImage().convertToFormat(QImage::Format_RGB32);
    const double dpr = window->devicePixelRatioF();
    EXPECT_EQ(img.width(), int(std::lround(window->width() * dpr)));
    EXPECT_EQ(img.height(), int(std::lround(window->height() * dpr)));
    long colourful = 0;
    for (int y = 0; y < img.height(); ++y)
        for (int x = 0; x < img.width(); ++x) {
            const QColor c(img.pixel(x, y));
            colourful +=
                (std::max({c.red(), c.green(), c.blue()}) - std::min({c.red(), c.green(), c.blue()})) > 60;
        }
    EXPECT_GT(colourful, 256);
}

TEST_F(MainWindowTest, PlayPauseAndResetDriveTheRunner) {
    window->workspace<ParticlesWorkspace>().togglePlay();
    EXPECT_TRUE(window->workspace<ParticlesWorkspace>().runner().playing());
    ASSERT_TRUE(waitForSnapshot(window->workspace<ParticlesWorkspace>().runner(),
                                [](const Snapshot& s) { return s.step >= 2; }));
    window->workspace<ParticlesWorkspace>().togglePlay();
    EXPECT_FALSE(window->workspace<ParticlesWorkspace>().runner().playing());
    window->workspace<ParticlesWorkspace>().reset();
    ASSERT_TRUE(waitForSnapshot(window->workspace<ParticlesWorkspace>().runner(),
                                [](const Snapshot& s) { return s.step == 0 && !s.playing; }));
}

// The Run tool bar's Play/Pause and the particle view's HUD ("running"/"paused") show one state, at once:
// the HUD does not wait for the worker's next snapshot (the screenshot mode pauses and draws right away).
TEST_F(MainWindowTest, PlayButtonAndHudShowTheSameRunState) {
    const auto* run = window->findChild<QToolBar*>(QStringLiteral("runToolBar"));
    ASSERT_NE(run, nullptr);
    QAction* play = nullptr;
    for (QAction* a : run->actions())
        if (a->shortcut() == QKeySequence(Qt::Key_Space)) play = a;
    ASSERT_NE(play, nullptr);
    ParticleView* view = window->workspace<ParticlesWorkspace>().particleView();
    const auto check = [&](bool playing) {
        EXPECT_EQ(play->text(), playing ? QStringLiteral("Pause") : QStringLiteral("Play"));
        EXPECT_EQ(view->hudStats().playing, playing);
    };
    window->workspace<ParticlesWorkspace>().play();
    check(true);
    ASSERT_TRUE(waitForSnapshot(window->workspace<ParticlesWorkspace>().runner(),
                                [](const Snapshot& s) { return s.step >= 2; }));
    view->refresh();
    check(true);
    window->workspace<ParticlesWorkspace>().pause();
    view->refresh();
    check(false);
    window->workspace<ParticlesWorkspace>().togglePlay();
    check(true);
    window->workspace<ParticlesWorkspace>().togglePlay();
    check(false);
}

// The HUD shows Dormand-Prince's sub-steps per nominal step (at least one: it lands on every nominal time)
// and how many it rejected; a fixed method shows none.
TEST_F(MainWindowTest, TheHudShowsDormandPrincesSubSteps) {
    ParticleView* view = window->workspace<ParticlesWorkspace>().particleView();
    window->workspace<ParticlesWorkspace>().stepOnce();
    ASSERT_TRUE(waitForSnapshot(window->workspace<ParticlesWorkspace>().runner(),
                                [](const Snapshot& s) { return s.step == 1; }));
    view->refresh();
    EXPECT_EQ(view->hudStats().subStepsPerStep, 0.0); // RK4
    Scene scene = test::tinyScene();
    scene.integrator.method = Method::DormandPrince;
    scene.integrator.rtol = 1e-9;
    scene.integrator.steps = 10; // h = 0.4: the tolerance takes several sub-steps per step
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().setScene(scene));
    for (int k = 0; k < 3; ++k) window->workspace<ParticlesWorkspace>().stepOnce();
    ASSERT_TRUE(waitForSnapshot(window->workspace<ParticlesWorkspace>().runner(),
                                [](const Snapshot& s) { return s.step == 3; }));
    view->refresh();
    const HudStats hud = view->hudStats();
    EXPECT_GT(hud.subStepsPerStep, 1.0);
    const auto live = window->workspace<ParticlesWorkspace>().runner().snapshot();
    EXPECT_EQ(hud.subStepsPerStep, live->subStepsPerStep);
    EXPECT_EQ(hud.rejectedSubSteps, live->rejectedSubSteps);
    EXPECT_GE(hud.rejectedSubSteps, 0);
}

// --- Exports ---

// File ▸ Export ▸ Trajectory: every recorded frame, read back; the last one is the run's current state.
TEST_F(MainWindowTest, ExportsTheTrajectoryAndItsTimes) {
    EXPECT_FALSE(window->workspace<ParticlesWorkspace>().exportTrajectory(
        dir.filePath(QStringLiteral("missing/dir/run.npy"))));
    EXPECT_TRUE(window->lastError().contains(QStringLiteral("run.npy"))) << window->lastError().toStdString();
    for (int k = 0; k < 3; ++k) window->workspace<ParticlesWorkspace>().stepOnce();
    ASSERT_TRUE(waitForSnapshot(window->workspace<ParticlesWorkspace>().runner(),
                                [](const Snapshot& s) { return s.step == 3; }));
    const auto live = window->workspace<ParticlesWorkspace>().runner().snapshot();
    const std::size_t recorded = live->history->size();
    ASSERT_GE(recorded, 2u);
    const QString path = dir.filePath(QStringLiteral("run.npy"));
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().exportTrajectory(path))
        << window->lastError().toStdString();
    const NpyArray x = readNpy(path.toStdString());
    ASSERT_EQ(x.shape, (std::vector<std::int64_t>{std::int64_t(recorded), 256, 2}));
    const RecordedFrame last = live->history->at(recorded - 1);
    ASSERT_TRUE(last.tokens);
    const std::size_t offset = (recorded - 1) * 256 * 2;
    for (Eigen::Index i = 0; i < 256; ++i)
        for (Eigen::Index c = 0; c < 2; ++c)
            ASSERT_EQ(x.data[offset + std::size_t(i * 2 + c)], (*last.tokens)(i, c)); // float64: exact
    const NpyArray t = readNpy(dir.filePath(QStringLiteral("run_times.npy")).toStdString());
    ASSERT_EQ(t.shape, (std::vector<std::int64_t>{std::int64_t(recorded)}));
    EXPECT_EQ(t.data.front(), 0.0);
    for (std::size_t k = 1; k < t.data.size(); ++k) EXPECT_GT(t.data[k], t.data[k - 1]);
    EXPECT_EQ(t.data.back(), last.t);
}

// What the app shows is what runs, and what the CLI runs: after a live edit (β) the app saves its scene,
// steps and exports the trajectory; flowscope-cli simulate of the saved file writes the same frames, bit for
// bit (float64: one Simulation code path, whatever front end drives it).
TEST_F(MainWindowTest, TheExportedTrajectoryIsTheCliRunOfTheSavedScene) {
    ParticlesWorkspace& particles = window->workspace<ParticlesWorkspace>();
    AttentionSpec edited = particles.scene()->attention;
    edited.beta = 2.5;
    QString why;
    ASSERT_TRUE(particles.document().setAttention(edited, nullptr, &why)) << why.toStdString();
    const QString scenePath = path("edited.json");
    ASSERT_TRUE(particles.saveSceneFile(scenePath)) << window->lastError().toStdString();
    for (int k = 0; k < 6; ++k) particles.stepOnce();
    ASSERT_TRUE(waitForSnapshot(particles.runner(), [](const Snapshot& s) { return s.step == 6; }));
    const QString appPath = path("app.npy");
    ASSERT_TRUE(particles.exportTrajectory(appPath)) << window->lastError().toStdString();

    const QString cliPath = path("cli.npy");
    QProcess cli;
    cli.start(QString::fromUtf8(FLOWSCOPE_CLI),
              {QStringLiteral("simulate"), scenePath, QStringLiteral("--out"), cliPath});
    ASSERT_TRUE(cli.waitForFinished(int(kEventGuard.count()))) << "flowscope-cli simulate did not finish";
    ASSERT_EQ(cli.exitCode(), 0) << cli.readAllStandardOutput().toStdString()
                                 << cli.readAllStandardError().toStdString();
    const NpyArray app = readNpy(appPath.toStdString()), whole = readNpy(cliPath.toStdString());
    ASSERT_EQ(app.shape.size(), 3u);
    ASSERT_GE(app.shape[0], 2); // the initial frame and at least one recorded step
    ASSERT_EQ(whole.shape.size(), 3u);
    ASSERT_GT(whole.shape[0], app.shape[0]); // the CLI runs to T; the app stopped at step 6
    EXPECT_EQ(whole.shape[1], app.shape[1]);
    EXPECT_EQ(whole.shape[2], app.shape[2]);
    for (std::size_t i = 0; i < app.data.size(); ++i)
        ASSERT_EQ(app.data[i], whole.data[i]) << "entry " << i << " of the app's frames";
    // Without the edit the run would differ: the comparison can fail.
    Scene plain = tinyScene();
    Simulation unedited(plain);
    for (int k = 0; k < 6; ++k) unedited.step();
    const std::size_t last = app.data.size() - std::size_t(app.shape[1] * app.shape[2]);
    EXPECT_NE(app.data[last], unedited.tokens()(0, 0));
}

// File ▸ Export ▸ View: the shown tab's pixels, GL view or not; a path that cannot be written is refused.
TEST_F(MainWindowTest, ExportsTheShownViewAsPng) {
    window->workspace<ParticlesWorkspace>().stepOnce();
    ASSERT_TRUE(waitForSnapshot(window->workspace<ParticlesWorkspace>().runner(),
                                [](const Snapshot& s) { return s.step == 1; }));
    window->workspace<ParticlesWorkspace>().particleView()->refresh();
    const QString particles = dir.filePath(QStringLiteral("particles.png"));
    ASSERT_TRUE(window->exportViewPng(particles)) << window->lastError().toStdString();
    const QImage image(particles);
    const double dpr = window->workspace<ParticlesWorkspace>().particleView()->devicePixelRatioF();
    EXPECT_EQ(image.width(),
              int(std::lround(window->workspace<ParticlesWorkspace>().particleView()->width() * dpr)));
    EXPECT_EQ(image.height(),
              int(std::lround(window->workspace<ParticlesWorkspace>().particleView()->height() * dpr)));

    window->showPage(window->workspace<TransformersWorkspace>().view());
    const QString transformers = dir.filePath(QStringLiteral("transformers.png"));
    ASSERT_TRUE(window->exportViewPng(transformers));
    EXPECT_FALSE(QImage(transformers).isNull());
    EXPECT_FALSE(window->exportViewPng(dir.filePath(QStringLiteral("missing/dir/x.png"))));
    EXPECT_TRUE(window->lastError().contains(QStringLiteral("x.png"))) << window->lastError().toStdString();
}

// The plots as vector graphics: the SVG's view box is the plots' size and their titles are text in it (not
// pixels); as PNG, the plots' pixels; a name that is neither is refused and nothing is written.
TEST_F(MainWindowTest, ExportsThePlotsAsSvgAndPng) {
    const auto svgText = [](const QString& path) {
        QFile f(path);
        return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
    };
    const auto viewBox = [](const QWidget* w) {
        return QStringLiteral("viewBox=\"0 0 %1 %2\"").arg(w->width()).arg(w->height());
    };
    // The charts at their full height (the panel scrolls them in a short dock; the export has them all).
    QWidget* plots = window->shownPlots();
    ASSERT_EQ(plots, window->workspace<ParticlesWorkspace>().plotsPanel()->content());
    EXPECT_GE(plots->height(), plots->minimumSizeHint().height());
    const QString svg = dir.filePath(QStringLiteral("plots.svg"));
    ASSERT_TRUE(window->exportPlots(svg)) << window->lastError().toStdString();
    const QString text = svgText(svg);
    EXPECT_TRUE(text.contains(QStringLiteral("<svg"))) << text.left(200).toStdString();
    EXPECT_TRUE(text.contains(viewBox(plots))) << text.left(600).toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("Kinetic energy")));

    const QString png = dir.filePath(QStringLiteral("plots.png"));
    ASSERT_TRUE(window->exportPlots(png)) << window->lastError().toStdString();
    const double dpr = plots->devicePixelRatioF();
    EXPECT_EQ(QImage(png).width(), int(std::lround(plots->width() * dpr)));

    window->showPage(window->workspace<FlowsWorkspace>().view());
    ASSERT_EQ(window->shownPlots(), static_cast<QWidget*>(window->workspace<FlowsWorkspace>().view()));
    const QString flows = dir.filePath(QStringLiteral("flows.svg"));
    ASSERT_TRUE(window->exportPlots(flows)) << window->lastError().toStdString();
    EXPECT_TRUE(svgText(flows).contains(viewBox(window->workspace<FlowsWorkspace>().view())));

    EXPECT_FALSE(window->exportPlots(dir.filePath(QStringLiteral("plots.pdf"))));
    EXPECT_TRUE(window->lastError().contains(QStringLiteral(".svg"))) << window->lastError().toStdString();
    EXPECT_FALSE(QFile::exists(dir.filePath(QStringLiteral("plots.pdf"))));
}

// --- Layout at small screens ---

// Workspaces own their controls: the shown tab's docks, tool bars and menus are shown, every other
// workspace's are hidden, and the run shortcuts of a hidden workspace do nothing. A dock the user closed
// stays closed when its tab comes back.
TEST_F(MainWindowTest, EachTabShowsOnlyItsWorkspacesControls) {
    const auto shown = [this](const char* name) {
        const auto* d = window->findChild<QDockWidget*>(QString::fromLatin1(name));
        return d && d->isVisible();
    };
    const auto* run = window->findChild<QToolBar*>(QStringLiteral("runToolBar"));
    const auto* time = window->findChild<QToolBar*>(QStringLiteral("timeToolBar"));
    ASSERT_TRUE(run && time);
    const auto menuShown = [this](const QString& title) {
        for (QAction* a : window->menuBar()->actions())
            if (a->text() == title) return a->isVisible();
        return false;
    };

    EXPECT_EQ(window->activeWorkspace(), &window->workspace<ParticlesWorkspace>());
    for (const char* dock : {"sceneDock", "matrixDock"}) EXPECT_TRUE(shown(dock)) << dock;
    for (const char* dock : {"trainingDock", "transformerDock"}) EXPECT_FALSE(shown(dock)) << dock;
    EXPECT_TRUE(run->isVisible() && time->isVisible());
    EXPECT_TRUE(menuShown(QStringLiteral("&Simulation")));

    window->showPage(window->workspace<FlowsWorkspace>().view());
    EXPECT_EQ(window->activeWorkspace(), &window->workspace<FlowsWorkspace>());
    EXPECT_TRUE(shown("trainingDock"));
    for (const char* dock : {"sceneDock", "presetsDock", "matrixDock", "plotsDock", "transformerDock"})
        EXPECT_FALSE(shown(dock)) << dock;
    EXPECT_FALSE(run->isVisible() || time->isVisible());
    EXPECT_FALSE(menuShown(QStringLiteral("&Simulation")));
    // Space is the particles' Play: on the Flows tab it leaves the particle run paused.
    window->workspace<ParticlesWorkspace>().runner().pause();
    QTest::keyClick(window.get(), Qt::Key_Space);
    QTest::qWait(50);
    EXPECT_FALSE(window->workspace<ParticlesWorkspace>().runner().playing());
    // The export menu lists the Flows tab's entries, not the particles'.
    QMenu* exports = nullptr;
    for (QMenu* m : window->findChildren<QMenu*>())
        if (m->title() == QStringLiteral("&Export")) exports = m;
    ASSERT_NE(exports, nullptr);
    QStringList entries;
    for (QAction* a : exports->actions()) entries << a->text();
    EXPECT_TRUE(entries.contains(QStringLiteral("&Samples as .npy..."))) << entries.join(", ").toStdString();
    EXPECT_FALSE(entries.contains(QStringLiteral("&Trajectory as .npy...")))
        << entries.join(", ").toStdString();

    window->showPage(window->workspace<TransformersWorkspace>().view());
    EXPECT_TRUE(shown("transformerDock"));
    EXPECT_FALSE(shown("trainingDock"));

    window->showPage(window->workspace<ParticlesWorkspace>().particleView());
    EXPECT_TRUE(shown("sceneDock"));
    EXPECT_FALSE(shown("transformerDock"));
    EXPECT_TRUE(run->isVisible());
    window->findChild<QDockWidget*>(QStringLiteral("matrixDock"))->close(); // the user closes one
    window->showPage(window->workspace<FlowsWorkspace>().view());
    window->showPage(window->workspace<ParticlesWorkspace>().particleView());
    EXPECT_FALSE(shown("matrixDock"));
    EXPECT_TRUE(shown("sceneDock"));
    QAction* play = nullptr;
    for (QAction* a : run->actions())
        if (a->shortcut() == QKeySequence(Qt::Key_Space)) play = a;
    ASSERT_NE(play, nullptr);
    EXPECT_TRUE(play->isEnabled()); // here Space plays
    window->showPage(window->workspace<FlowsWorkspace>().view());
    EXPECT_FALSE(play->isEnabled());
}

// A 1024 x 640 screen holds the whole window: no dock's content sets a minimum size beyond it (the plots'
// six charts scroll in their dock instead of stacking their minimum heights into the window's).
TEST_F(MainWindowTest, FitsA1024By640Screen) {
    window->resize(1024, 640);
    QCoreApplication::processEvents();
    const QSize least = window->minimumSizeHint().expandedTo(window->minimumSize());
    EXPECT_LE(least.width(), 1024);
    EXPECT_LE(least.height(), 640);
    EXPECT_LE(window->height(), 640);
}

// At 1024 and 1280 px wide every control of the Run tool bar is on it, whole, inside the window: none is
// left to the tool bar's overflow menu (Preset and Backend were, below about 1280 px).
TEST_F(MainWindowTest, EveryRunToolBarControlIsShownAt1024And1280) {
    auto* run = window->findChild<QToolBar*>(QStringLiteral("runToolBar"));
    ASSERT_NE(run, nullptr);
    for (const QSize size : {QSize(1024, 640), QSize(1280, 800)}) {
        window->resize(size);
        QCoreApplication::processEvents();
        ASSERT_EQ(window->width(), size.width());
        EXPECT_TRUE(window->rect().contains(QRect(run->mapTo(window.get(), QPoint(0, 0)), run->size())));
        int controls = 0;
        for (QAction* a : run->actions()) {
            if (a->isSeparator()) continue;
            QWidget* w = run->widgetForAction(a);
            ASSERT_NE(w, nullptr) << a->text().toStdString();
            EXPECT_TRUE(w->isVisible()) << size.width() << ": " << a->text().toStdString();
            EXPECT_TRUE(run->rect().contains(w->geometry()))
                << size.width() << ": " << a->text().toStdString();
            ++controls;
        }
        EXPECT_GE(controls, 12); // Open, Play, Step, Reset, Frame, the speed, Max speed, Preset, Backend...
        // No overflow: the extension button (») is not needed.
        for (const auto* b : run->findChildren<QToolButton*>(QStringLiteral("qt_toolbar_ext_button")))
            EXPECT_FALSE(b->isVisible()) << size.width();
    }
}

// A first launch in a 1024 x 640 window: the Matrices dock (the Particles tab's right dock) shows the whole
// editor without scrolling sideways: every matrix entry and button lies inside the scroll area's viewport,
// the dock tabs' names are whole, and the window stays 1024 px wide (the editor's minimum width shrank: the
// buttons take two rows, the entries are compact, the head and keyframe one row each).
class MatricesDockTest : public MainWindowFixture {
  protected:
    MatricesDockTest() : MainWindowFixture({1024, 640}) {}
};

TEST_F(MatricesDockTest, TheEditorFitsA1024By640WindowWithoutScrollingSideways) {
    QTest::qWait(50); // the docks' first sizes (MainWindow::showEvent)
    ASSERT_EQ(window->width(), 1024);
    MatrixEditor* editor = window->workspace<ParticlesWorkspace>().matrixEditor();
    ASSERT_TRUE(editor->isVisible());
    auto* area = editor->findChild<QScrollArea*>();
    ASSERT_NE(area, nullptr);
    EXPECT_FALSE(area->horizontalScrollBar()->isVisible())
        << area->viewport()->width() << " px wide, the editor needs "
        << area->widget()->minimumSizeHint().width();
    const QRect viewport = area->viewport()->rect();
    int shown = 0;
    const auto inside = [&](QWidget* w) {
        if (!w->isVisible()) return;
        ++shown;
        const QRect r(w->mapTo(area->viewport(), QPoint(0, 0)), w->size());
        EXPECT_GE(r.left(), viewport.left()) << w->objectName().toStdString();
        EXPECT_LE(r.right(), viewport.right()) << w->objectName().toStdString() << " ends at " << r.right();
        if (!area->verticalScrollBar()->isVisible())
            EXPECT_TRUE(viewport.contains(r)) << w->objectName().toStdString();
    };
    for (QDoubleSpinBox* box : editor->findChildren<QDoubleSpinBox*>()) inside(box);
    for (QAbstractButton* b : editor->findChildren<QAbstractButton*>()) inside(b);
    EXPECT_GE(shown, 3 * (4 + 5 + 1)); // Q, K, V: 2 x 2 entries, five buttons and the factor each
    // The dock tabs (Matrices, Plots) show their names whole.
    int tabs = 0;
    for (QTabBar* bar : window->findChildren<QTabBar*>()) {
        if (!bar->isVisible()) continue;
        for (int i = 0; i < bar->count(); ++i) {
            const QString text = bar->tabText(i);
            if (text != QStringLiteral("Matrices") && text != QStringLiteral("Plots")) continue;
            ++tabs;
            EXPECT_GE(bar->tabRect(i).width(), bar->fontMetrics().horizontalAdvance(text))
                << text.toStdString();
        }
    }
    EXPECT_EQ(tabs, 2);
    const QSize least = window->minimumSizeHint().expandedTo(window->minimumSize());
    EXPECT_LE(least.width(), 1024);
    EXPECT_EQ(window->width(), 1024);
}

// d = 8: the matrices are wider than the docks, and they scroll sideways inside their own grids (the last
// row whole above the scroll bar) instead of widening a dock: the window stays 1024 wide.
TEST_F(MatricesDockTest, WideMatricesScrollInsideTheirGridsAndTheWindowStays1024Wide) {
    Scene scene = test::tinyScene(64);
    scene.d = 8;
    scene.initial.mean = Vec::Zero(8);
    scene.initial.cov = Mat::Identity(8, 8);
    scene.attention.heads = {
        HeadParams{Mat::Identity(8, 8), Mat::Identity(8, 8), -0.4 * Mat::Identity(8, 8)}};
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().setScene(scene)) << window->lastError().toStdString();
    QTest::qWait(100);
    EXPECT_EQ(window->width(), 1024);
    EXPECT_LE(window->minimumSizeHint().expandedTo(window->minimumSize()).width(), 1024);
    int wide = 0;
    for (QWidget* panel : {static_cast<QWidget*>(window->workspace<ParticlesWorkspace>().matrixEditor()),
                           static_cast<QWidget*>(window->workspace<ParticlesWorkspace>().scenePanel())})
        for (MatrixGrid* grid : panel->findChildren<MatrixGrid*>()) {
            if (!grid->isVisible() || grid->matrix().cols() < 8) continue;
            ++wide;
            auto* area = grid->findChild<QScrollArea*>();
            ASSERT_NE(area, nullptr);
            QDoubleSpinBox* last = grid->entry(int(grid->matrix().rows()) - 1, 7);
            ASSERT_NE(last, nullptr);
            // Wider than its grid: the grid scrolls, and its height holds every row and the scroll bar.
            EXPECT_GT(last->mapTo(area->widget(), QPoint(last->width(), 0)).x(), area->viewport()->width());
            EXPECT_TRUE(area->horizontalScrollBar()->isVisible());
            EXPECT_GE(area->viewport()->height(), area->widget()->height());
        }
    EXPECT_GE(wide, 4); // Q, K and V in the editor, the covariance in the scene panel
}

// The pages' tab bar shows every tab whole at 1024 px, without scroll arrows: the cone's tab takes its short
// title there (its tooltip still says what it is), and its full title where there is room (1280 px).
TEST_F(MatricesDockTest, EveryPageTabShowsWholeAt1024AndFullTitlesWhereTheyFit) {
    QTest::qWait(50);
    auto* tabs = window->findChild<QTabWidget*>();
    ASSERT_NE(tabs, nullptr);
    const QTabBar* bar = tabs->tabBar();
    ASSERT_EQ(bar->count(), 7);
    EXPECT_EQ(bar->tabText(1), QStringLiteral("Cone"));
    EXPECT_NE(bar->tabToolTip(1).indexOf(QStringLiteral("PSD cone")), -1);
    for (int i = 0; i < bar->count(); ++i) {
        EXPECT_LE(bar->tabRect(i).right(), bar->width()) << bar->tabText(i).toStdString();
        EXPECT_GE(bar->tabRect(i).width(), bar->fontMetrics().horizontalAdvance(bar->tabText(i)))
            << bar->tabText(i).toStdString();
    }
    window->resize(1280, 800);
    QTest::qWait(50);
    EXPECT_EQ(bar->tabText(1), QStringLiteral("Covariance cone"));
    EXPECT_LE(bar->tabRect(bar->count() - 1).right(), bar->width());
}

// The Scene dock too: its form scrolls up and down, never sideways, and the window stays 1024 wide.
TEST_F(MatricesDockTest, TheSceneDockFitsA1024By640WindowWithoutScrollingSideways) {
    QTest::qWait(50);
    ScenePanel* panel = window->workspace<ParticlesWorkspace>().scenePanel();
    ASSERT_TRUE(panel->isVisible());
    auto* area = panel->findChild<QScrollArea*>();
    ASSERT_NE(area, nullptr);
    EXPECT_FALSE(area->horizontalScrollBar()->isVisible());
    const QRect viewport = area->viewport()->rect();
    int shown = 0;
    for (QWidget* w : area->widget()->findChildren<QWidget*>()) {
        if (!w->isVisible() || !qobject_cast<QAbstractSpinBox*>(w)) continue;
        ++shown;
        const QRect r(w->mapTo(area->viewport(), QPoint(0, 0)), w->size());
        EXPECT_LE(r.right(), viewport.right()) << w->objectName().toStdString() << " ends at " << r.right();
    }
    EXPECT_GE(shown, 8);
    EXPECT_EQ(window->width(), 1024);
    // Revert and Apply stay in view under the scrolled fields.
    for (const char* name : {"apply", "revert"}) {
        auto* button = panel->findChild<QPushButton*>(QString::fromLatin1(name));
        ASSERT_NE(button, nullptr) << name;
        EXPECT_TRUE(button->isVisible()) << name;
        EXPECT_FALSE(area->isAncestorOf(button)) << name << " scrolls with the fields";
        const QRect r(button->mapTo(panel, QPoint(0, 0)), button->size());
        EXPECT_TRUE(panel->rect().contains(r)) << name;
    }
}

} // namespace
} // namespace flowscope::test
