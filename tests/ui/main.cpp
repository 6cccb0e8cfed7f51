// Flowscope UI tests: a QApplication for the widget tests when a display can be opened, none otherwise.
//
// QApplication aborts the process when its platform plugin cannot connect to a display, so the decision is
// made before constructing it; the widget tests then skip instead of the whole binary failing. The
// engine-side tests in this binary (SimulationRunner) run either way.
#include "GuiEnvironment.h"

#include "ui/shell/OpenGLSetup.h"

#include <QApplication>
#include <QByteArray>
#include <QTemporaryDir>
#include <QtGlobal>

#include <gtest/gtest.h>

#include <memory>

namespace flowscope::test {

namespace {
bool gAvailable = false;
QString gReason = QStringLiteral("no display");

// Whether a platform plugin that can host a QOpenGLWidget has somewhere to connect.
bool displayConfigured(QString& why) {
    const QByteArray platform = qgetenv("QT_QPA_PLATFORM");
    if (platform.startsWith("offscreen") || platform.startsWith("minimal") || platform.startsWith("vnc")) {
        why = QStringLiteral("QT_QPA_PLATFORM=%1 cannot host a QOpenGLWidget; run under xvfb-run")
                  .arg(QString::fromLocal8Bit(platform));
        return false;
    }
    if (platform.startsWith("wayland")) return qEnvironmentVariableIsSet("WAYLAND_DISPLAY");
    if (!qEnvironmentVariableIsSet("DISPLAY") && !qEnvironmentVariableIsSet("WAYLAND_DISPLAY")) {
        why = QStringLiteral("no DISPLAY; run under xvfb-run -a -s \"-screen 0 1280x800x24\"");
        return false;
    }
    return true;
}
} // namespace

bool guiAvailable() {
    return gAvailable;
}
QString guiUnavailableReason() {
    return gReason;
}

} // namespace flowscope::test

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    using namespace flowscope::test;

    // Settings (recent files, last scene, layout) go to a private folder, never the user's.
    QTemporaryDir settings;
    qputenv("XDG_CONFIG_HOME", settings.path().toLocal8Bit());
    std::unique_ptr<QApplication> app;
    if (displayConfigured(gReason)) {
        flowscope::requestOpenGLCore();
        app = std::make_unique<QApplication>(argc, argv);
        gAvailable = flowscope::openGLCoreAvailable(&gReason);
    }
    return RUN_ALL_TESTS();
}
