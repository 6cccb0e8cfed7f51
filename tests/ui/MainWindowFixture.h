// Flowscope UI tests: the fixture of the tests that drive a whole MainWindow, and what they wait for.
#pragma once

#include "GuiEnvironment.h"
#include "TestScenes.h"

#include "ui/shell/MainWindow.h"

#include <QPushButton>
#include <QSize>
#include <QString>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest/QTest>

#include <gtest/gtest.h>

#include <memory>
#include <type_traits>
#include <utility>

namespace flowscope::test {

// A MainWindow of `size`, made in SetUp (skipped without a GUI): prepared (a scene set, a run started...),
// shown and exposed, then ready() for what the test needs of it once shown. A failed assertion in prepare
// or ready ends SetUp.
class MainWindowFixture : public ::testing::Test {
  protected:
    explicit MainWindowFixture(QSize size) : size_(size) {}

    virtual void prepare() {}
    virtual void ready() {}

    void SetUp() override {
        FLOWSCOPE_REQUIRE_GUI();
        window = std::make_unique<MainWindow>();
        window->resize(size_);
        prepare();
        if (HasFatalFailure()) return;
        window->show();
        ASSERT_TRUE(QTest::qWaitForWindowExposed(window.get()));
        ready();
    }

    std::unique_ptr<MainWindow> window;

  private:
    QSize size_;
};

// The same with a temporary directory for the files a test writes (checked before the window is made).
class MainWindowFilesFixture : public MainWindowFixture {
  protected:
    using MainWindowFixture::MainWindowFixture;

    void SetUp() override {
        FLOWSCOPE_REQUIRE_GUI();
        ASSERT_TRUE(dir.isValid());
        MainWindowFixture::SetUp();
    }
    QString path(const char* name) const { return dir.filePath(QString::fromLatin1(name)); }

    QTemporaryDir dir;
};

// A training tab (Flows, Transformers, Inverse) of a 1200x800 window, shown: its workspace's panel and view,
// the panel's buttons by name, and waiting for the trainers. A test's ready() that adds to it calls
// showTab().
template <class Workspace> class TrainingTabFixture : public MainWindowFixture {
  protected:
    using Panel = std::remove_pointer_t<decltype(std::declval<const Workspace&>().panel())>;
    using View = std::remove_pointer_t<decltype(std::declval<const Workspace&>().view())>;

    TrainingTabFixture() : MainWindowFixture({1200, 800}) {}

    void ready() override { showTab(); }
    // Shows the tab and takes its panel and view.
    void showTab() {
        window->showPage(workspace().view());
        panel = workspace().panel();
        view = workspace().view();
    }
    Workspace& workspace() { return window->template workspace<Workspace>(); }

    QPushButton* button(const char* name) {
        return panel->template findChild<QPushButton*>(QString::fromLatin1(name));
    }

    // The window's seven tabs (Particles, Covariance cone, Flows, Transformers, Inverse, Sweeps, Models):
    // this one's is `title` at `index`, current and shown, and it raised its panel.
    void expectTheCurrentTab(int index, const char* title) {
        auto* tabs = window->template findChild<QTabWidget*>();
        ASSERT_NE(tabs, nullptr);
        ASSERT_EQ(tabs->count(), 7);
        EXPECT_EQ(tabs->tabText(index), QString::fromUtf8(title));
        EXPECT_EQ(tabs->currentWidget(), view);
        EXPECT_TRUE(view->isVisible());
        EXPECT_TRUE(panel->isVisible());
    }

    // Waits until every trainer shows `iteration` with a picture of it, and the view displays that snapshot.
    bool waitForIteration(long iteration) {
        return waitFor([&] {
            view->refresh();
            const auto s = view->displayedSnapshot();
            if (!s || s->trainers.empty()) return false;
            for (const auto& t : s->trainers)
                if (t.iteration != iteration || !t.picture || t.picture->iteration != iteration) return false;
            return true;
        });
    }

    // Clicks Step `steps` times and waits for that iteration (false on a timeout).
    bool step(int steps) {
        for (int i = 0; i < steps; ++i) button("step")->click();
        return waitForIteration(steps);
    }

    // From no run yet: `steps` steps, after which the runner is paused.
    void expectStepsFromNoRun(int steps) {
        EXPECT_EQ(workspace().runner().snapshot(), nullptr);
        ASSERT_TRUE(step(steps));
        EXPECT_FALSE(workspace().runner().playing());
    }

    // Start: the runner plays (the button says Pause) until the view displays a playing snapshot of
    // iteration `iterations` or later; then Pause: the runner is paused.
    void expectStartThenPause(long iterations) {
        button("start")->click();
        EXPECT_TRUE(workspace().runner().playing());
        EXPECT_EQ(button("start")->text(), QStringLiteral("Pause"));
        ASSERT_TRUE(waitFor([&] {
            view->refresh();
            const auto s = view->displayedSnapshot();
            return s && s->playing && s->iteration() >= iterations;
        }));
        button("start")->click();
        EXPECT_FALSE(workspace().runner().playing());
    }

    // After one step: `startInvalid` (a start of an invalid configuration) is refused and names `field` in
    // the window's error and the panel's warning; the run (generation 1) stays, paused.
    template <class Start> void expectInvalidStartKeepsTheRun(Start startInvalid, const char* field) {
        ASSERT_TRUE(step(1));
        EXPECT_FALSE(startInvalid());
        const QString name = QString::fromLatin1(field);
        EXPECT_TRUE(window->lastError().contains(name)) << window->lastError().toStdString();
        EXPECT_TRUE(panel->warningText().contains(name));
        EXPECT_EQ(workspace().runner().snapshot()->generation, 1u);
        EXPECT_FALSE(workspace().runner().playing());
    }

    Panel* panel = nullptr;
    View* view = nullptr;
};

} // namespace flowscope::test
