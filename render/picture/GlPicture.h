// Flowscope picture: the OpenGL part a picture owns, its renderer (render/PointRenderer, ConeRenderer) in the
// context of initialize(), with the entry points of that context. The particle and cone pictures derive from
// it; invalidate() tells them to upload their vertices again into the new renderer.
#pragma once

#include "render/GlApi.h"

#include <string>

namespace flowscope {

template <class Renderer> class GlPicture {
  public:
    GlPicture() = default;
    GlPicture(const GlPicture&) = delete;
    GlPicture& operator=(const GlPicture&) = delete;

    // The renderer's programs in the current context (gl: its entry points, alive until release()); false
    // with the reason in *whyNot.
    bool initialize(const GlApi& gl, std::string* whyNot) {
        release();
        if (!renderer_.initialize(gl)) {
            if (whyNot) *whyNot = renderer_.log();
            renderer_.destroy();
            return false;
        }
        gl_ = &gl;
        invalidate();
        return true;
    }
    // Its GL objects deleted (the context of initialize() current).
    void release() {
        if (gl_) renderer_.destroy();
        gl_ = nullptr;
    }
    bool ready() const { return gl_ != nullptr; }

  protected:
    ~GlPicture() = default;
    virtual void invalidate() = 0;

    const GlApi* gl_ = nullptr;
    Renderer renderer_;
};

} // namespace flowscope
