#include "render/OffscreenTarget.h"

#include <GL/glcorearb.h>

#include <algorithm>
#include <cstring>

namespace flowscope {

OffscreenTarget::~OffscreenTarget() {
    destroy();
}

bool OffscreenTarget::create(const GlApi& gl, int width, int height, std::string* whyNot) {
    destroy();
    gl_ = &gl;
    GLint maxSize = 0, maxViewport[2] = {0, 0};
    gl.GetIntegerv(GL_MAX_RENDERBUFFER_SIZE, &maxSize);
    gl.GetIntegerv(GL_MAX_VIEWPORT_DIMS, maxViewport);
    const int limit = std::min<int>(maxSize, std::min(maxViewport[0], maxViewport[1]));
    if (width < 1 || height < 1 || width > limit || height > limit) {
        if (whyNot)
            *whyNot = "a " + std::to_string(width) + "x" + std::to_string(height) +
                      " framebuffer is outside this OpenGL's limits (1 to " + std::to_string(limit) +
                      " pixels a side)";
        return false;
    }
    gl.GenFramebuffers(1, &fbo_);
    gl.GenRenderbuffers(1, &color_);
    gl.BindRenderbuffer(GL_RENDERBUFFER, color_);
    gl.RenderbufferStorage(GL_RENDERBUFFER, GL_RGBA8, width, height);
    gl.BindRenderbuffer(GL_RENDERBUFFER, 0);
    gl.BindFramebuffer(GL_FRAMEBUFFER, fbo_);
    gl.FramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, color_);
    const GLenum status = gl.CheckFramebufferStatus(GL_FRAMEBUFFER);
    gl.BindFramebuffer(GL_FRAMEBUFFER, 0);
    if (status != GL_FRAMEBUFFER_COMPLETE) {
        if (whyNot)
            *whyNot = "the offscreen framebuffer is incomplete (status " + std::to_string(status) + ")";
        destroy();
        return false;
    }
    width_ = width;
    height_ = height;
    return true;
}

void OffscreenTarget::destroy() {
    if (!gl_) return;
    if (fbo_) gl_->DeleteFramebuffers(1, &fbo_);
    if (color_) gl_->DeleteRenderbuffers(1, &color_);
    fbo_ = color_ = 0;
    width_ = height_ = 0;
}

void OffscreenTarget::begin(float r, float g, float b, float a) {
    gl_->BindFramebuffer(GL_FRAMEBUFFER, fbo_);
    gl_->Viewport(0, 0, width_, height_);
    gl_->ClearColor(r, g, b, a);
    gl_->Clear(GL_COLOR_BUFFER_BIT);
}

void OffscreenTarget::read(std::vector<std::uint8_t>& rgba) {
    const std::size_t row = std::size_t(width_) * 4;
    rgba.resize(row * std::size_t(height_));
    gl_->BindFramebuffer(GL_FRAMEBUFFER, fbo_);
    gl_->PixelStorei(GL_PACK_ALIGNMENT, 1);
    gl_->ReadPixels(0, 0, width_, height_, GL_RGBA, GL_UNSIGNED_BYTE, rgba.data());
    gl_->BindFramebuffer(GL_FRAMEBUFFER, 0);
    // GL's rows run bottom to top.
    std::vector<std::uint8_t> swap(row);
    for (int y = 0; y < height_ / 2; ++y) {
        std::uint8_t* a = rgba.data() + std::size_t(y) * row;
        std::uint8_t* b = rgba.data() + std::size_t(height_ - 1 - y) * row;
        std::memcpy(swap.data(), a, row);
        std::memcpy(a, b, row);
        std::memcpy(b, swap.data(), row);
    }
}

} // namespace flowscope
