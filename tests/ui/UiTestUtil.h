// Flowscope UI tests: small helpers several widget tests share.
#pragma once

#include <QAbstractButton>
#include <QAbstractSpinBox>
#include <QAction>
#include <QApplication>
#include <QByteArray>
#include <QComboBox>
#include <QDir>
#include <QImage>
#include <QLineEdit>
#include <QMenu>
#include <QProgressDialog>
#include <QString>
#include <QStringList>
#include <QTimer>
#include <QWidget>

#include <gtest/gtest.h>

#include <functional>

namespace flowscope::test {

// With FLOWSCOPE_SAVE_SHOTS=<dir>, writes `image` as <dir>/<name> (screenshots to look at).
inline void saveShot(const QImage& image, const QString& name) {
    const QByteArray dir = qgetenv("FLOWSCOPE_SAVE_SHOTS");
    if (dir.isEmpty()) return;
    const QString path = QDir(QString::fromLocal8Bit(dir)).filePath(name);
    EXPECT_TRUE(image.save(path)) << path.toStdString();
}
// The same with a grab of `w`.
inline void saveShot(QWidget& w, const QString& name) {
    if (!qEnvironmentVariableIsEmpty("FLOWSCOPE_SAVE_SHOTS")) saveShot(w.grab().toImage(), name);
}

// The action of `window` (its menus included) whose text is `text`, or null.
// The action of that text a user reaches through the window's menus as they are now (the File ▸ Export menu
// lists the shown workspace's entries only), else any action of that text.
inline QAction* findAction(QWidget& window, const QString& text) {
    for (QMenu* m : window.findChildren<QMenu*>())
        for (QAction* a : m->actions())
            if (a->text() == text) return a;
    for (QAction* a : window.findChildren<QAction*>())
        if (a->text() == text) return a;
    return nullptr;
}

// Everything in `dir` (names, hidden ones too), sorted.
inline QStringList entries(const QString& dir) {
    return QDir(dir).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden, QDir::Name);
}

// Every control of `panel` (spin box, combo box, button, and line edit where `lineEdits` is true) has a
// tooltip; not the parts Qt builds inside a control (a spin box's line edit, a line edit's clear button).
inline void expectEveryControlHasATooltip(const QWidget& panel, bool lineEdits) {
    for (QWidget* w : panel.findChildren<QWidget*>()) {
        const bool part =
            qobject_cast<QAbstractSpinBox*>(w->parent()) || qobject_cast<QLineEdit*>(w->parent());
        const bool control = qobject_cast<QAbstractSpinBox*>(w) || qobject_cast<QComboBox*>(w) ||
                             qobject_cast<QAbstractButton*>(w) || (lineEdits && qobject_cast<QLineEdit*>(w));
        if (!control || part) continue;
        EXPECT_FALSE(w->toolTip().isEmpty())
            << panel.objectName().toStdString() << ": " << w->metaObject()->className() << " "
            << w->objectName().toStdString();
    }
}

// What a menu action that opens a modal dialog D and then a progress dialog did.
struct ModalRun {
    bool filled = false;   // the dialog came up and fill() ran
    QString progressLabel; // the progress dialog's label once its value reached 3 (empty if it never did)
};

// Triggers `action`; the first time a modal D is up, fill(D&) sets it and accepts it. While the work runs,
// the progress dialog under `window` is read once it shows 3 or more (saved as <shot>-progress.png with
// FLOWSCOPE_SAVE_SHOTS; the dialog as <shot>-dialog.png before fill accepts it).
template <class D>
ModalRun runModal(QWidget& window, QAction* action, const std::function<void(D&)>& fill,
                  const QString& shot) {
    ModalRun run;
    QTimer poll;
    poll.setInterval(5);
    QObject::connect(&poll, &QTimer::timeout, [&] {
        if (auto* d = qobject_cast<D*>(QApplication::activeModalWidget()); d && !run.filled) {
            run.filled = true;
            fill(*d);
        }
        for (auto* p : window.findChildren<QProgressDialog*>())
            if (p->isVisible() && p->value() >= 3 && run.progressLabel.isEmpty()) {
                run.progressLabel = p->labelText();
                saveShot(*p, shot + QStringLiteral("-progress.png"));
            }
    });
    poll.start();
    action->trigger();
    poll.stop();
    return run;
}

} // namespace flowscope::test
