// Flowscope UI tests: small helpers several widget tests share.
#pragma once

#include <QAction>
#include <QByteArray>
#include <QDir>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <gtest/gtest.h>

namespace flowscope::test {

// With FLOWSCOPE_SAVE_SHOTS=<dir>, writes a grab of `w` as <dir>/<name> (screenshots to look at).
inline void saveShot(QWidget& w, const QString& name) {
    const QByteArray dir = qgetenv("FLOWSCOPE_SAVE_SHOTS");
    if (dir.isEmpty()) return;
    const QString path = QDir(QString::fromLocal8Bit(dir)).filePath(name);
    EXPECT_TRUE(w.grab().save(path)) << path.toStdString();
}

// The action of `window` (its menus included) whose text is `text`, or null.
inline QAction* findAction(QWidget& window, const QString& text) {
    for (QAction* a : window.findChildren<QAction*>())
        if (a->text() == text) return a;
    return nullptr;
}

// Everything in `dir` (names, hidden ones too), sorted.
inline QStringList entries(const QString& dir) {
    return QDir(dir).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden, QDir::Name);
}

} // namespace flowscope::test
