// The animation export's menu path in the UI tests: Animation... on a MainWindow, its dialog filled in while
// it is modal, the progress dialog read, the file written.
#pragma once

#include "UiTestUtil.h"

#include "ui/export/AnimationExportDialog.h"
#include "ui/shell/MainWindow.h"

#include <QAction>
#include <QFileInfo>
#include <QSpinBox>
#include <QString>

#include <gtest/gtest.h>

#include <functional>

namespace flowscope::test {

// Sets the spin box `name` of `dialog` to `value`.
inline void setSpin(QWidget& dialog, const char* name, int value) {
    dialog.findChild<QSpinBox*>(QString::fromLatin1(name))->setValue(value);
}

// Animation... on `window`: once its dialog is up, fill() sets it (the path included), the dialog is saved as
// <shot>-dialog.png (FLOWSCOPE_SAVE_SHOTS) and accepted; `run` is what runModal saw. The dialog came up and
// the export wrote `target`.
inline void exportAnimationFromMenu(MainWindow& window, const QString& target,
                                    const std::function<void(AnimationExportDialog&)>& fill,
                                    const QString& shot, ModalRun& run) {
    QAction* action = findAction(window, QStringLiteral("&Animation..."));
    ASSERT_NE(action, nullptr);
    run = runModal<AnimationExportDialog>(
        window, action,
        [&](AnimationExportDialog& d) {
            fill(d);
            saveShot(d, shot + QStringLiteral("-dialog.png"));
            d.accept();
        },
        shot);
    EXPECT_TRUE(run.filled);
    EXPECT_TRUE(QFileInfo(target).isFile()) << window.lastError().toStdString();
}

} // namespace flowscope::test
