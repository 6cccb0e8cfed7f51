// Flowscope UI: the OpenGL version the views need, requested once for the whole application.
#pragma once

#include <QString>

// Desktop GL 3.2; absent from the GLES headers QOpenGLExtraFunctions uses. The renderers need it for point
// sprites.
#ifndef GL_PROGRAM_POINT_SIZE
#define GL_PROGRAM_POINT_SIZE 0x8642
#endif

namespace flowscope {

// The views draw with GLSL 3.30 core; compute (GPU backend) needs 4.3. Mesa's llvmpipe gives 4.5.
inline constexpr int kGLMajor = 4, kGLMinor = 3;

// Call before constructing QApplication: makes OpenGL 4.3 core the default format (drivers return the
// highest compatible version), and shares contexts between top-level windows (so a view can be re-parented
// without losing its GL resources).
void requestOpenGLCore();

// Tries to create the default context on an offscreen surface and checks that the views can draw (3.3
// core at least). Needs a QGuiApplication. On failure returns false and, when `why` is given, says what
// was obtained instead.
bool openGLCoreAvailable(QString* why = nullptr);

} // namespace flowscope
