// Flowscope UI tests: the fixture of the tests that drive a whole MainWindow, and what they wait for.
#pragma once

#include "GuiEnvironment.h"
#include "TestScenes.h"

#include "ui/shell/MainWindow.h"

#include <QSize>
#include <QString>
#include <QTemporaryDir>
#include <QtTest/QTest>

#include <gtest/gtest.h>

#include <memory>

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

// Waits until every trainer of the snapshot `view` displays shows `iteration` with a picture of it (the
// Flows and Transformers views: their snapshots' trainers carry an iteration and a picture).
template <class View> bool waitForTrainersAt(View& view, long iteration) {
    return waitFor([&] {
        view.refresh();
        const auto s = view.displayedSnapshot();
        if (!s || s->trainers.empty()) return false;
        for (const auto& t : s->trainers)
            if (t.iteration != iteration || !t.picture || t.picture->iteration != iteration) return false;
        return true;
    });
}

} // namespace flowscope::test
