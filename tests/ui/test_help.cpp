// Help: the welcome pane and its guided starts, the keyboard shortcuts and the command palette.
#include "MainWindowFixture.h"
#include "UiTestUtil.h"

#include "engine/inverse/PosteriorIo.h"
#include "ui/panels/PlotsPanel.h"
#include "ui/panels/PresetBrowser.h"
#include "ui/shell/CommandPalette.h"
#include "ui/shell/GuidedStarts.h"
#include "ui/views/ConeView.h"
#include "ui/views/FlowView.h"
#include "ui/views/ParticleView.h"
#include "ui/widgets/ElidedLabel.h"
#include "ui/workspaces/flows/FlowsWorkspace.h"
#include "ui/workspaces/inverse/InverseWorkspace.h"
#include "ui/workspaces/particles/ParticlesWorkspace.h"
#include "ui/workspaces/transformers/TransformersWorkspace.h"

#include <QAction>
#include <QDir>
#include <QDockWidget>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtCharts/QChartView>
#include <QtTest/QTest>

#include <gtest/gtest.h>

namespace flowscope::test {
namespace {

// A window as a first launch makes it: fresh settings (no "welcome/dismissed"), restored, presets listed.
std::unique_ptr<MainWindow> firstLaunch(QSize size = {1280, 800}) {
    auto w = std::make_unique<MainWindow>();
    w->resize(size);
    w->workspace<ParticlesWorkspace>().setPresetDirectory(QStringLiteral(FLOWSCOPE_PRESET_DIR));
    w->restoreSettings();
    w->show();
    EXPECT_TRUE(QTest::qWaitForWindowExposed(w.get()));
    return w;
}

// What the app does at startup (app/gui/main.cpp): plays the Particles tab's scene once it is seen.
void playParticlesWhenSeen(MainWindow& w) {
    auto& particles = w.workspace<ParticlesWorkspace>();
    w.whenSeen(particles, [&particles] { particles.play(); });
}

class WelcomeTest : public ::testing::Test {
  protected:
    void SetUp() override {
        FLOWSCOPE_REQUIRE_GUI();
        QSettings().clear();
    }
    void TearDown() override { QSettings().clear(); }

    // The start button `id` of the pane of a first launch, clicked; returns the window.
    std::unique_ptr<MainWindow> clickStart(const char* id) {
        auto w = firstLaunch();
        auto* button = w->welcomePane()->findChild<QPushButton*>(QString::fromLatin1(id));
        EXPECT_NE(button, nullptr) << id;
        if (button) button->click();
        EXPECT_FALSE(w->welcomePane()->isVisible());
        return w;
    }
    // Clicks the start `id` of the Particles workspace: it shows `page` (its particle view or its cone) with
    // the preset `preset`, and the status line's message says `says`.
    template <class Page>
    std::unique_ptr<MainWindow> expectParticlesStart(const char* id,
                                                     Page* (ParticlesWorkspace::*page)() const,
                                                     const char* preset, const char* says) {
        auto w = clickStart(id);
        ParticlesWorkspace& particles = w->workspace<ParticlesWorkspace>();
        EXPECT_EQ(w->activeWorkspace(), &particles);
        EXPECT_TRUE((particles.*page)()->isVisible());
        EXPECT_EQ(QFileInfo(particles.scenePath()).fileName(), QString::fromLatin1(preset));
        EXPECT_TRUE(w->statusBar()->currentMessage().contains(QString::fromLatin1(says)))
            << w->statusBar()->currentMessage().toStdString();
        return w;
    }
};

// A model opened on a first launch (flowscope --model, File ▸ Open) is what the user asked for: the pane
// steps aside without being dismissed for good. A file that cannot be opened leaves it up.
TEST_F(WelcomeTest, OpeningAModelPutsItAside) {
    QTemporaryDir dir;
    ASSERT_TRUE(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("p.safetensors"));
    {
        inverse::Problem pr = inverse::loadProblem("linear-gaussian", FLOWSCOPE_PROBLEM_DIR);
        inverse::PosteriorFlow flow(pr.posterior, pr.flow);
        inverse::savePosterior(path.toStdString(), flow, pr, nlohmann::json::object());
    }
    auto w = firstLaunch();
    ASSERT_TRUE(w->welcomePane()->isVisible());
    EXPECT_FALSE(w->openModelFile(dir.filePath(QStringLiteral("none.safetensors"))));
    EXPECT_TRUE(w->welcomePane()->isVisible());
    ASSERT_TRUE(w->openModelFile(path)) << w->lastError().toStdString();
    EXPECT_FALSE(w->welcomePane()->isVisible());
    EXPECT_EQ(w->activeWorkspace(), &w->workspace<InverseWorkspace>());
    EXPECT_FALSE(QSettings().value(QStringLiteral("welcome/dismissed"), false).toBool());
}

TEST_F(WelcomeTest, FreshSettingsShowItAndADismissalIsRemembered) {
    {
        auto w = firstLaunch();
        ASSERT_TRUE(w->welcomePane()->isVisible());
        // Inside the window and over its middle, at 1280 x 800.
        EXPECT_TRUE(w->rect().contains(w->welcomePane()->geometry()));
        EXPECT_TRUE(w->welcomePane()->geometry().contains(w->centralWidget()->geometry().center()));
        saveShot(*w, QStringLiteral("welcome-1280.png"));
        w->welcomePane()->findChild<QPushButton*>(QStringLiteral("welcome.close"))->click();
        EXPECT_FALSE(w->welcomePane()->isVisible());
    }
    {
        auto w = firstLaunch(); // the next start: the settings say it was dismissed
        EXPECT_FALSE(w->welcomePane()->isVisible());
        findAction(*w, QStringLiteral("&Welcome"))->trigger(); // Help ▸ Welcome brings it back
        EXPECT_TRUE(w->welcomePane()->isVisible());
    }
}

// Issue 45 item 14: the default scene does not play unseen under the pane of a first launch; closing the pane
// plays it. A later start, the pane dismissed, plays at once.
TEST_F(WelcomeTest, TheSceneWaitsPausedUnderThePaneAndPlaysWhenItCloses) {
    {
        auto w = firstLaunch();
        ASSERT_TRUE(w->welcomePane()->isVisible());
        ASSERT_TRUE(w->workspace<ParticlesWorkspace>().setScene(tinyScene(64)));
        playParticlesWhenSeen(*w);
        EXPECT_FALSE(w->workspace<ParticlesWorkspace>().runner().playing());
        w->welcomePane()->findChild<QPushButton*>(QStringLiteral("welcome.close"))->click();
        EXPECT_TRUE(w->workspace<ParticlesWorkspace>().runner().playing());
    }
    auto w = firstLaunch();
    ASSERT_FALSE(w->welcomePane()->isVisible());
    ASSERT_TRUE(w->workspace<ParticlesWorkspace>().setScene(tinyScene(64)));
    playParticlesWhenSeen(*w);
    EXPECT_TRUE(w->workspace<ParticlesWorkspace>().runner().playing());
}

// Issue 45 item 12: a message shown before the window (a restored sweep's, at startup) hides the scene's line
// once the window shows; they were drawn over each other for the message's 5 s.
TEST_F(WelcomeTest, AMessageFromBeforeTheWindowShowsAloneOnTheStatusBar) {
    auto w = std::make_unique<MainWindow>();
    w->resize(1024, 640);
    ASSERT_TRUE(w->workspace<ParticlesWorkspace>().setScene(tinyScene(64)));
    w->statusBar()->showMessage(QStringLiteral("a message from before the show"), 60000);
    w->show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(w.get()));
    const auto* line = w->statusBar()->findChild<ElidedLabel*>(QStringLiteral("sceneLine"));
    ASSERT_NE(line, nullptr);
    EXPECT_FALSE(w->statusBar()->currentMessage().isEmpty());
    EXPECT_FALSE(line->isVisible());
}

TEST_F(WelcomeTest, FitsA1024By640Window) {
    auto w = firstLaunch({1024, 640});
    ASSERT_TRUE(w->welcomePane()->isVisible());
    const QRect pane = w->welcomePane()->geometry();
    EXPECT_TRUE(w->rect().contains(pane));
    // Each sentence is shown whole: its label is at least as high as its wrapped text needs.
    for (QLabel* label : w->welcomePane()->findChildren<QLabel*>())
        EXPECT_GE(label->height(), label->heightForWidth(label->width())) << label->text().toStdString();
    saveShot(*w, QStringLiteral("welcome-1024.png"));
}

TEST_F(WelcomeTest, WatchClusteringOpensTheSpherePresetInTheParticleView) {
    auto w = expectParticlesStart("start.clustering", &ParticlesWorkspace::particleView,
                                  "sphere-clustering.json", "clusters");
    EXPECT_TRUE(w->workspace<ParticlesWorkspace>().runner().playing());
    QSettings s;
    EXPECT_TRUE(s.value(QStringLiteral("welcome/dismissed")).toBool()); // a start dismisses it too
}

TEST_F(WelcomeTest, SeeABlowUpOpensTheBlowUpPresetInTheCone) {
    auto w = expectParticlesStart("start.blowup", &ParticlesWorkspace::coneView, "cone-fig1b-blowup.json",
                                  "blows up");
    // The message is about the cone: another page takes it away, and the scene's line of the status bar,
    // which the message hides, is shown alone (not drawn over by it).
    w->showPage(w->workspace<ParticlesWorkspace>().particleView());
    QCoreApplication::processEvents();
    EXPECT_TRUE(w->statusBar()->currentMessage().isEmpty()) << w->statusBar()->currentMessage().toStdString();
    const auto* line = w->statusBar()->findChild<ElidedLabel*>(QStringLiteral("sceneLine"));
    ASSERT_NE(line, nullptr);
    EXPECT_TRUE(line->isVisible());
    EXPECT_TRUE(line->text().contains(QStringLiteral("cone-fig1b-blowup"))) << line->text().toStdString();
    // A message shown, the workspace activated again (as at startup): the line stays under the message, not
    // drawn over it (issue 45 item 12), and comes back when the message goes.
    w->statusBar()->showMessage(QStringLiteral("a message"));
    w->workspace<ParticlesWorkspace>().setActive(true);
    EXPECT_FALSE(line->isVisible());
    w->statusBar()->clearMessage();
    EXPECT_TRUE(line->isVisible());
    // On another workspace's page the line says nothing of the particles.
    w->showPage(w->workspace<FlowsWorkspace>().view());
    EXPECT_TRUE(line->text().isEmpty()) << line->text().toStdString();
}

// The Plots dock shown after the blow-up start (its charts laid out while it was tabbed behind Matrices and
// the cone was shown) has its axes under its curves: the x axis's tick labels span the plot's width, where
// they stayed in the first ~50 px of it.
TEST_F(WelcomeTest, ThePlotsShownAfterTheBlowUpStartHaveTheirAxesUnderTheCurves) {
    auto w = clickStart("start.blowup");
    // The same preset with 256 of its 2048 tokens (a run of seconds, not tens of seconds, on a busy machine),
    // at full speed; the plots are the same kind of curves.
    ASSERT_TRUE(w->workspace<ParticlesWorkspace>().scene() != nullptr);
    Scene scene = *w->workspace<ParticlesWorkspace>().scene();
    scene.n = 256;
    ASSERT_TRUE(w->workspace<ParticlesWorkspace>().setScene(scene)) << w->lastError().toStdString();
    w->workspace<ParticlesWorkspace>().setMaxSpeed(true);
    w->workspace<ParticlesWorkspace>().play();
    // The run reaches its end (t = 3) on the cone: nothing changes the charts after they are shown.
    ASSERT_TRUE(waitFor([&] {
        const auto s = w->workspace<ParticlesWorkspace>().runner().snapshot();
        return s && s->finished;
    }));
    w->showPage(w->workspace<ParticlesWorkspace>().particleView());
    auto* dock = w->findChild<QDockWidget*>(QStringLiteral("plotsDock"));
    ASSERT_NE(dock, nullptr);
    dock->raise();
    PlotsPanel* panel = w->workspace<ParticlesWorkspace>().plotsPanel();
    ASSERT_TRUE(waitFor([&] { return panel->isVisible(); }));
    QChartView* view = nullptr;
    for (QChartView* v : panel->findChildren<QChartView*>())
        if (v->chart() == panel->chart(PlotsPanel::Plot::Kinetic)) view = v;
    ASSERT_NE(view, nullptr);
    // Label pixels (bright on the dark base) under the plot, right of its middle, once the chart is laid out.
    auto labelsRightOfTheMiddle = [&] {
        const QImage image = view->grab().toImage().convertToFormat(QImage::Format_RGB32);
        const QRectF plot = view->chart()->plotArea();
        if (plot.width() <= 200) return 0L;
        long right = 0;
        const double dpr = image.devicePixelRatio();
        for (int y = int((plot.bottom() + 2) * dpr); y < image.height(); ++y)
            for (int x = int(plot.center().x() * dpr); x < image.width(); ++x)
                right += QColor(image.pixel(x, y)).lightness() > 110;
        return right;
    };
    EXPECT_TRUE(waitFor([&] { return labelsRightOfTheMiddle() > 10; }))
        << "no x-axis label right of the plot's middle (plot area " << view->chart()->plotArea().width()
        << " wide)";
}

TEST_F(WelcomeTest, TrainAFlowStartsTrainingInTheFlowsTab) {
    auto w = clickStart("start.flow");
    EXPECT_EQ(w->activeWorkspace(), &w->workspace<FlowsWorkspace>());
    EXPECT_TRUE(w->workspace<FlowsWorkspace>().view()->isVisible());
    EXPECT_TRUE(w->workspace<FlowsWorkspace>().runner().playing());
    EXPECT_EQ(w->workspace<FlowsWorkspace>().panel()->config().dataset, "8gaussians");
    EXPECT_TRUE(w->workspace<FlowsWorkspace>().panel()->comparison());
    EXPECT_TRUE(w->statusBar()->currentMessage().contains(QStringLiteral("eight Gaussians")));
    w->workspace<FlowsWorkspace>().runner().pause();
}

class HelpTest : public MainWindowFixture {
  protected:
    HelpTest() : MainWindowFixture({1280, 800}) {}
    void prepare() override {
        window->workspace<ParticlesWorkspace>().setPresetDirectory(QStringLiteral(FLOWSCOPE_PRESET_DIR));
        ASSERT_TRUE(window->workspace<ParticlesWorkspace>().setScene(tinyScene()));
    }
    // The command palette, opened from the menu, with `text` typed into its filter.
    CommandPalette* paletteTyped(const QString& text) {
        window->showCommandPalette();
        CommandPalette* palette = window->commandPalette();
        QTest::keyClicks(palette->filter(), text);
        return palette;
    }
};

TEST_F(HelpTest, TheShortcutsListHasEveryActionWithAShortcut) {
    for (int page = 0; page < 3; ++page) { // the export menu's entries change with the shown tab
        if (page == 1) window->showPage(window->workspace<FlowsWorkspace>().view());
        if (page == 2) window->showPage(window->workspace<TransformersWorkspace>().view());
        findAction(*window, QStringLiteral("&Keyboard shortcuts..."))->trigger();
        ShortcutsDialog* dialog = window->shortcutsDialog();
        ASSERT_TRUE(dialog->isVisible());
        const QList<QAction*> listed = dialog->listed();
        long withShortcut = 0;
        for (QAction* a : window->findChildren<QAction*>()) {
            if (a->shortcut().isEmpty()) continue;
            ++withShortcut;
            EXPECT_TRUE(listed.contains(a))
                << a->text().toStdString() << " " << a->shortcut().toString().toStdString();
        }
        EXPECT_GE(withShortcut, 15);
        // And the table says which key: Play is Space, Follow Shift+F, the palette Ctrl+K.
        QStringList rows;
        for (int i = 0; i < dialog->findChild<QTreeWidget*>()->topLevelItemCount(); ++i) {
            const QTreeWidgetItem* item = dialog->findChild<QTreeWidget*>()->topLevelItem(i);
            rows << item->text(0) + QStringLiteral(" = ") + item->text(1);
        }
        for (const char* row : {"Simulation ▸ Play = Space", "Display ▸ Follow = Shift+F",
                                "Help ▸ Command palette = Ctrl+K", "File ▸ Quit = Ctrl+Q"})
            EXPECT_TRUE(rows.contains(QString::fromUtf8(row))) << row << "\n"
                                                               << rows.join('\n').toStdString();
        if (page == 0) saveShot(*dialog, QStringLiteral("shortcuts.png"));
        dialog->hide();
    }
}

TEST_F(HelpTest, ThePaletteFiltersFig2ToTheFig2PresetsAndEnterLoadsOne) {
    window->activateWindow();
    ASSERT_TRUE(QTest::qWaitForWindowActive(window.get()));
    QTest::keyClick(window.get(), Qt::Key_K, Qt::ControlModifier); // the shortcut opens it
    CommandPalette* palette = window->commandPalette();
    ASSERT_TRUE(waitFor([&] { return palette->isVisible(); }));
    EXPECT_GT(palette->shown().size(), 60); // every action and preset before typing
    QTest::keyClicks(palette->filter(), QStringLiteral("fig 2"));
    QStringList files;
    for (const QString& name : palette->shown()) {
        ASSERT_TRUE(name.startsWith(QStringLiteral("Preset: "))) << name.toStdString();
        files << name.mid(8).section(QStringLiteral(" — "), 0, 0);
    }
    files.sort();
    // Fig 2's panels, as particle scenes and as cone scenes, Fig 8(c), whose data Fig 2(d) drew, and the
    // causal circle of the 2024 masking paper's Fig. 2.
    EXPECT_EQ(files, (QStringList{"causal-circle-fig2", "cone-fig2a-zero", "cone-fig2b-line",
                                  "cone-fig2c-plane", "cone-fig2d-two-lines", "cone-fig8c-two-lines-l2",
                                  "fig2a-zero", "fig2b-line", "fig2c-plane"}));
    saveShot(*palette, QStringLiteral("palette-fig2.png"));

    QTest::keyClicks(palette->filter(), QStringLiteral("d")); // "fig 2d": Fig 2(d) only
    ASSERT_FALSE(palette->shown().isEmpty());
    const QString first = palette->shown().front();
    EXPECT_TRUE(first.contains(QStringLiteral("fig2d")) || first.contains(QStringLiteral("Fig 2(d)")));
    QTest::keyClick(palette->filter(), Qt::Key_Return);
    EXPECT_FALSE(palette->isVisible());
    const QString loaded = QFileInfo(window->workspace<ParticlesWorkspace>().scenePath()).completeBaseName();
    EXPECT_TRUE(first.startsWith(QStringLiteral("Preset: ") + loaded + QStringLiteral(" — ")))
        << loaded.toStdString() << " from " << first.toStdString();
    EXPECT_EQ(window->workspace<ParticlesWorkspace>().scene()->name, loaded.toStdString());
}

TEST_F(HelpTest, ThePaletteRunsAnAction) {
    CommandPalette* palette = paletteTyped(QStringLiteral("cone"));
    // "View ▸ Covariance cone" comes before the presets: Down skips nothing it should not.
    ASSERT_FALSE(palette->shown().isEmpty());
    EXPECT_EQ(palette->shown().front(), QStringLiteral("View ▸ Covariance cone"));
    QTest::keyClick(palette->filter(), Qt::Key_Enter);
    EXPECT_TRUE(window->workspace<ParticlesWorkspace>().coneView()->isVisible());
}

// The palette's own example: "play" runs Play, not "Display ▸ ..." (whose word holds "play").
TEST_F(HelpTest, ThePaletteRanksAWholeWordOfACommandsNameFirst) {
    CommandPalette* palette = paletteTyped(QStringLiteral("play"));
    ASSERT_FALSE(palette->shown().isEmpty());
    EXPECT_TRUE(palette->shown().front().endsWith(QStringLiteral("▸ Play")))
        << palette->shown().front().toStdString();
    EXPECT_TRUE(palette->shown().join('\n').contains(QStringLiteral("Display"))); // still shown, later
    saveShot(*palette, QStringLiteral("palette-play.png"));
}

TEST(CommandRank, WholeWordsOfTheOwnNameFirst) {
    const QString q = QStringLiteral("play");
    EXPECT_EQ(commandRank(q, QStringLiteral("Simulation ▸ Play")), 0);
    EXPECT_EQ(commandRank(q, QStringLiteral("Simulation ▸ Playback speed")), 1);
    EXPECT_EQ(commandRank(q, QStringLiteral("Play ▸ Reset")), 2);
    EXPECT_EQ(commandRank(q, QStringLiteral("Display ▸ 3-D: axes x0, x1, x2")), 3);
    EXPECT_EQ(commandRank(q, QStringLiteral("Export ▸ PNG")), -1);
    EXPECT_EQ(commandRank(QStringLiteral("open sweep"), QStringLiteral("File ▸ Open sweep…")), 0);
    EXPECT_EQ(commandRank(QStringLiteral(""), QStringLiteral("File ▸ Quit")), 0);
}

// File ▸ Open sweep… exists, so the palette finds it too (it was only a button inside the Sweeps panel).
TEST_F(HelpTest, OpenSweepIsAFileCommandAndInThePalette) {
    QAction* open = window->findChild<QAction*>(QStringLiteral("openSweep"));
    ASSERT_NE(open, nullptr);
    CommandPalette* palette = paletteTyped(QStringLiteral("open sweep"));
    ASSERT_FALSE(palette->shown().isEmpty());
    EXPECT_TRUE(palette->shown().front().startsWith(QStringLiteral("File ▸ Open sweep")))
        << palette->shown().front().toStdString();
}

TEST(CommandMatches, LettersAndDigitsInOrderCaseIgnored) {
    EXPECT_TRUE(commandMatches(QStringLiteral("fig 2"), QStringLiteral("Castin et al. 2025, Fig 2(d)")));
    EXPECT_TRUE(commandMatches(QStringLiteral("fig 2"), QStringLiteral("Preset: cone-fig2d-two-lines")));
    EXPECT_FALSE(commandMatches(QStringLiteral("fig 2"), QStringLiteral("Castin et al. 2025, Fig 1(b)")));
    EXPECT_TRUE(commandMatches(QStringLiteral("open scene"), QStringLiteral("File ▸ Open scene")));
    EXPECT_TRUE(commandMatches(QString(), QStringLiteral("anything")));
}

} // namespace
} // namespace flowscope::test
