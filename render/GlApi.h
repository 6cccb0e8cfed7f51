// Flowscope render: the OpenGL entry points the renderers call, as a table loaded from any current context.
//
// The renderers draw the same pictures in the app's views (a QOpenGLWidget's context: functions from
// QOpenGLContext::getProcAddress) and in headless exports (an EGL surfaceless context: eglGetProcAddress), so
// they depend on neither Qt nor EGL: only on this table. It is the engine's one GL table
// (engine/gpu/gl/GlFunctions.h, shared with the compute backend), loaded for drawing: OpenGL 3.3 core. No GL
// header is included here (Qt's and Khronos' headers do not mix in one translation unit); the .cpp files take
// the enum values from <GL/glcorearb.h>.
#pragma once

#include "engine/gpu/gl/GlFunctions.h"

#include <string>

namespace flowscope {

struct GlApi : GlFunctions {
    // Loads the table from the context current on this thread and checks that it offers OpenGL 3.3 (the
    // renderers' GLSL 3.30 core). On failure returns false and says why in *whyNot.
    bool load(const Loader& getProcAddress, std::string* whyNot) {
        return GlFunctions::load(getProcAddress, Use::Drawing, whyNot);
    }
};

} // namespace flowscope
