// Flowscope picture: the QGuiApplication of a process that draws the pictures without a display
// (flowscope-cli render, and the tests that check the pictures it draws).
#pragma once

#include <QGuiApplication>

#include <memory>

namespace flowscope {

// A QGuiApplication called `name` (a literal: Qt keeps its argv) on Qt's "offscreen" platform, whatever the
// environment says (no X, no Wayland; OpenGL comes from EGL, never from the platform:
// QT_QPA_OFFSCREEN_NO_GLX), with the app's dark palette, so that fonts, and the layouts made with them, are
// the same in every process that draws headless. One per process.
std::unique_ptr<QGuiApplication> makeOffscreenApplication(const char* name);

} // namespace flowscope
