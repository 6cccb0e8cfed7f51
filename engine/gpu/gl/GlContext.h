// Flowscope GPU: a headless OpenGL 4.3 core context (EGL, no window, no surface).
//
// Tests, the CLI and benchmarks run the compute kernels without a display: EGL's surfaceless platform
// (EGL_MESA_platform_surfaceless; Mesa's llvmpipe where there is no GPU) with a context that is made current
// without any surface (EGL_KHR_surfaceless_context). The GUI does not need this class: it loads a
// GlFunctions table from the QOpenGLWidget's context instead.
#pragma once

#include "engine/gpu/gl/GlFunctions.h"

#include <memory>
#include <string>

namespace flowscope {

class GlContext {
  public:
    // A new context, current on the calling thread; null when EGL or OpenGL 4.3 compute is unavailable,
    // with the reason in *whyNot. With `shareWith`, the new context shares its objects (buffers, textures,
    // programs) with that one: a buffer one context writes, the other can draw (fenced by the caller).
    static std::unique_ptr<GlContext> createHeadless(std::string* whyNot,
                                                     const GlContext* shareWith = nullptr);
    // Resolves OpenGL entry points in whichever EGL context is current (eglGetProcAddress).
    static GlProcLoader procLoader();
    ~GlContext();
    GlContext(const GlContext&) = delete;
    GlContext& operator=(const GlContext&) = delete;

    // Makes the context current on the calling thread (a context is current on one thread at a time).
    bool makeCurrent();
    const GlFunctions& gl() const { return gl_; }
    std::string describe() const { return gl_.describe(); }

  private:
    GlContext() = default;
    void* display_ = nullptr; // EGLDisplay
    void* context_ = nullptr; // EGLContext
    GlFunctions gl_;
};

} // namespace flowscope
