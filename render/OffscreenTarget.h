// Flowscope render: a framebuffer object to draw into without a window (headless exports, tests), and its
// pixels read back as RGBA8 rows, top row first (the order of images and of engine/media's FrameSink).
//
// No multisampling: the views anti-alias in their shaders (soft point rims, line fringes), not with MSAA.
#pragma once

#include "render/GlApi.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace flowscope {

// How a view hands its OpenGL part to whoever composes a headless frame: the composer runs draw() into a
// cleared, transparent target of the frame's size and lays the result (premultiplied alpha: the views blend
// with (SRC_ALPHA, ONE_MINUS_SRC_ALPHA) on colour and (ONE, ONE_MINUS_SRC_ALPHA) on alpha) over what the
// frame holds so far; then the view paints on.
using OffscreenLayer = std::function<void(const std::function<void()>& draw)>;

class OffscreenTarget {
  public:
    OffscreenTarget() = default;
    ~OffscreenTarget(); // destroy(): the creating context must still be current
    OffscreenTarget(const OffscreenTarget&) = delete;
    OffscreenTarget& operator=(const OffscreenTarget&) = delete;

    // An RGBA8 colour buffer of width x height pixels in the current context. False with the reason in
    // *whyNot when the size exceeds the context's limits or the framebuffer is incomplete.
    bool create(const GlApi& gl, int width, int height, std::string* whyNot);
    void destroy();
    int width() const { return width_; }
    int height() const { return height_; }

    // Binds the framebuffer for drawing, sets the viewport to all of it and clears it to `rgba`
    // (straight alpha; transparent black by default).
    void begin(float r = 0.0f, float g = 0.0f, float b = 0.0f, float a = 0.0f);
    // Waits for the drawing and reads the pixels into `rgba` (width * height * 4 bytes, top row first);
    // rebinds the default framebuffer.
    void read(std::vector<std::uint8_t>& rgba);

  private:
    const GlApi* gl_ = nullptr;
    GlApi::Uint fbo_ = 0, color_ = 0;
    int width_ = 0, height_ = 0;
};

} // namespace flowscope
