// Flowscope render: one linked GLSL program, built from source through a GlApi, with uniforms set by name.
#pragma once

#include "render/GlApi.h"

#include <Eigen/Core>

#include <cstddef>
#include <string>

namespace flowscope {

// A byte offset into the bound vertex buffer, as glVertexAttribPointer takes it.
inline const void* bufferOffset(std::size_t bytes) {
    return reinterpret_cast<const void*>(bytes);
}

class GlProgram {
  public:
    // Compiles and links; false with the compiler's or linker's log in *log. `geometry` may be null.
    bool build(const GlApi& gl, const char* vertex, const char* geometry, const char* fragment,
               std::string* log);
    void destroy(); // with the building context current; safe when never built
    bool valid() const { return id_ != 0; }

    void bind() const;
    void release() const;
    // Uniforms of the bound program; names the program does not use are ignored, as in GLSL.
    void set(const char* name, int v) const;
    void set(const char* name, float v) const;
    void set(const char* name, const Eigen::Vector2f& v) const;
    void set(const char* name, const Eigen::Vector3f& v) const;
    void set(const char* name, const Eigen::Vector4f& v) const;
    void set(const char* name, const Eigen::Matrix4f& m) const; // column-major, as GL expects

  private:
    const GlApi* gl_ = nullptr;
    GlApi::Uint id_ = 0;
};

} // namespace flowscope
