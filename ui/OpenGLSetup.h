// Flowscope UI: the OpenGL version the views need, requested once for the whole application.
#pragma once

#include <QString>

namespace flowscope {

// Call before constructing QApplication: makes OpenGL 3.3 core the default format, and shares contexts
// between top-level windows (so a view can be re-parented without losing its GL resources).
void requestOpenGL33Core();

// Tries to create a 3.3 core context on an offscreen surface. Needs a QGuiApplication. On failure returns
// false and, when `why` is given, says what was obtained instead.
bool openGL33CoreAvailable(QString* why = nullptr);

} // namespace flowscope
