// Flowscope GPU: the small OpenGL compute toolkit the kernels are built from.
//
// A compute program made from one GLSL body plus a generated header (version line and #defines), and shader
// storage buffers that upload and download plain arrays. Errors throw GlError carrying the driver's info log,
// because a kernel that fails to compile on some driver must say why, not crash later. Objects hold the
// function table by pointer; create, use and destroy them while their context is current on the thread.
#pragma once

#include "engine/gpu/gl/GlFunctions.h"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace flowscope {

struct GlError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Throws GlError naming `what` when the context reports an error.
void glCheck(const GlFunctions& gl, const char* what);

// "#version <version>\n" and one "#define NAME VALUE\n" per entry, then `body` (a shader without #version),
// so one source serves OpenGL (430) and Vulkan (450).
using GlDefines = std::vector<std::pair<std::string, std::string>>;
std::string glslSource(int version, const GlDefines& defines, std::string_view body);

class GlComputeProgram {
  public:
    // Compiles and links a compute shader; throws GlError with the compile or link log.
    GlComputeProgram(const GlFunctions& gl, const std::string& source);
    ~GlComputeProgram();
    GlComputeProgram(GlComputeProgram&& o) noexcept : gl_(o.gl_), id_(std::exchange(o.id_, 0)) {}
    GlComputeProgram& operator=(GlComputeProgram&&) = delete;

    gl::Uint id() const { return id_; }
    // Binds the program and dispatches `groups` workgroups along x.
    void dispatch(gl::Uint groups) const;

  private:
    const GlFunctions* gl_;
    gl::Uint id_ = 0;
};

// A shader storage buffer; grows on demand and never shrinks.
class GlBuffer {
  public:
    explicit GlBuffer(const GlFunctions& gl) : gl_(&gl) {}
    ~GlBuffer();
    GlBuffer(const GlBuffer&) = delete;
    GlBuffer& operator=(const GlBuffer&) = delete;

    // Makes room for at least `bytes` (the contents are undefined after growing).
    void reserve(std::size_t bytes);
    // Copies `bytes` from host memory to the start of the buffer, growing it when needed.
    void upload(const void* data, std::size_t bytes);
    // Copies the first `bytes` of the buffer to host memory (waits for the GPU).
    void download(void* data, std::size_t bytes) const;
    // Binds the buffer to `layout(std430, binding = index)`.
    void bind(gl::Uint index) const;
    gl::Uint id() const { return id_; } // the GL buffer name (stable: growing keeps the name)
    std::size_t capacity() const { return capacity_; }

  private:
    const GlFunctions* gl_;
    gl::Uint id_ = 0;
    std::size_t capacity_ = 0;
};

} // namespace flowscope
