// Flowscope render: the OpenGL entry points the renderers call, as a table loaded from any current context.
//
// The renderers draw the same pictures in the app's views (a QOpenGLWidget's context: functions from
// QOpenGLContext::getProcAddress) and in headless exports (an EGL surfaceless context: eglGetProcAddress), so
// they depend on neither Qt nor EGL: only on this table. No GL header is included here (Qt's and Khronos'
// headers do not mix in one translation unit); the types are those of glcorearb.h, spelled out, and the
// .cpp files take the enum values from <GL/glcorearb.h>.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#ifndef FLOWSCOPE_GLAPI
#if defined(_WIN32)
#define FLOWSCOPE_GLAPI __stdcall
#else
#define FLOWSCOPE_GLAPI
#endif
#endif

namespace flowscope {

struct GlApi {
    using Enum = unsigned int;
    using Uint = unsigned int;
    using Int = int;
    using Sizei = int;
    using Bitfield = unsigned int;
    using Boolean = unsigned char;
    using Float = float;
    using Sizeiptr = std::ptrdiff_t;
    using Intptr = std::ptrdiff_t;
    using Sync = void*; // GLsync
    using Proc = void (*)();
    // Resolves a GL function by name in the current context; null when it has none.
    using Loader = std::function<Proc(const char* name)>;

    // Loads every entry point below from the context current on this thread and checks that it offers
    // OpenGL 3.3 (the renderers' GLSL 3.30 core). On failure returns false and says why in *whyNot.
    bool load(const Loader& getProcAddress, std::string* whyNot);
    bool loaded() const { return DrawArrays != nullptr; }

    // State, clearing, reading.
    const unsigned char*(FLOWSCOPE_GLAPI* GetString)(Enum) = nullptr;
    void(FLOWSCOPE_GLAPI* GetIntegerv)(Enum, Int*) = nullptr;
    Enum(FLOWSCOPE_GLAPI* GetError)() = nullptr;
    void(FLOWSCOPE_GLAPI* Enable)(Enum) = nullptr;
    void(FLOWSCOPE_GLAPI* Disable)(Enum) = nullptr;
    void(FLOWSCOPE_GLAPI* BlendFuncSeparate)(Enum, Enum, Enum, Enum) = nullptr;
    void(FLOWSCOPE_GLAPI* LineWidth)(Float) = nullptr;
    void(FLOWSCOPE_GLAPI* Viewport)(Int, Int, Sizei, Sizei) = nullptr;
    void(FLOWSCOPE_GLAPI* ClearColor)(Float, Float, Float, Float) = nullptr;
    void(FLOWSCOPE_GLAPI* Clear)(Bitfield) = nullptr;
    void(FLOWSCOPE_GLAPI* PixelStorei)(Enum, Int) = nullptr;
    void(FLOWSCOPE_GLAPI* ReadPixels)(Int, Int, Sizei, Sizei, Enum, Enum, void*) = nullptr;
    void(FLOWSCOPE_GLAPI* Flush)() = nullptr;
    void(FLOWSCOPE_GLAPI* Finish)() = nullptr;

    // Shaders and programs.
    Uint(FLOWSCOPE_GLAPI* CreateShader)(Enum) = nullptr;
    void(FLOWSCOPE_GLAPI* ShaderSource)(Uint, Sizei, const char* const*, const Int*) = nullptr;
    void(FLOWSCOPE_GLAPI* CompileShader)(Uint) = nullptr;
    void(FLOWSCOPE_GLAPI* GetShaderiv)(Uint, Enum, Int*) = nullptr;
    void(FLOWSCOPE_GLAPI* GetShaderInfoLog)(Uint, Sizei, Sizei*, char*) = nullptr;
    void(FLOWSCOPE_GLAPI* DeleteShader)(Uint) = nullptr;
    Uint(FLOWSCOPE_GLAPI* CreateProgram)() = nullptr;
    void(FLOWSCOPE_GLAPI* AttachShader)(Uint, Uint) = nullptr;
    void(FLOWSCOPE_GLAPI* LinkProgram)(Uint) = nullptr;
    void(FLOWSCOPE_GLAPI* GetProgramiv)(Uint, Enum, Int*) = nullptr;
    void(FLOWSCOPE_GLAPI* GetProgramInfoLog)(Uint, Sizei, Sizei*, char*) = nullptr;
    void(FLOWSCOPE_GLAPI* DeleteProgram)(Uint) = nullptr;
    void(FLOWSCOPE_GLAPI* UseProgram)(Uint) = nullptr;
    Int(FLOWSCOPE_GLAPI* GetUniformLocation)(Uint, const char*) = nullptr;
    void(FLOWSCOPE_GLAPI* Uniform1i)(Int, Int) = nullptr;
    void(FLOWSCOPE_GLAPI* Uniform1f)(Int, Float) = nullptr;
    void(FLOWSCOPE_GLAPI* Uniform2f)(Int, Float, Float) = nullptr;
    void(FLOWSCOPE_GLAPI* Uniform3f)(Int, Float, Float, Float) = nullptr;
    void(FLOWSCOPE_GLAPI* Uniform4f)(Int, Float, Float, Float, Float) = nullptr;
    void(FLOWSCOPE_GLAPI* UniformMatrix4fv)(Int, Sizei, Boolean, const Float*) = nullptr;

    // Buffers and vertex arrays.
    void(FLOWSCOPE_GLAPI* GenBuffers)(Sizei, Uint*) = nullptr;
    void(FLOWSCOPE_GLAPI* DeleteBuffers)(Sizei, const Uint*) = nullptr;
    void(FLOWSCOPE_GLAPI* BindBuffer)(Enum, Uint) = nullptr;
    void(FLOWSCOPE_GLAPI* BufferData)(Enum, Sizeiptr, const void*, Enum) = nullptr;
    void(FLOWSCOPE_GLAPI* GenVertexArrays)(Sizei, Uint*) = nullptr;
    void(FLOWSCOPE_GLAPI* DeleteVertexArrays)(Sizei, const Uint*) = nullptr;
    void(FLOWSCOPE_GLAPI* BindVertexArray)(Uint) = nullptr;
    void(FLOWSCOPE_GLAPI* EnableVertexAttribArray)(Uint) = nullptr;
    void(FLOWSCOPE_GLAPI* DisableVertexAttribArray)(Uint) = nullptr;
    void(FLOWSCOPE_GLAPI* VertexAttribPointer)(Uint, Int, Enum, Boolean, Sizei, const void*) = nullptr;
    void(FLOWSCOPE_GLAPI* VertexAttrib1f)(Uint, Float) = nullptr;
    void(FLOWSCOPE_GLAPI* DrawArrays)(Enum, Int, Sizei) = nullptr;

    // Framebuffers (offscreen targets).
    void(FLOWSCOPE_GLAPI* GenFramebuffers)(Sizei, Uint*) = nullptr;
    void(FLOWSCOPE_GLAPI* DeleteFramebuffers)(Sizei, const Uint*) = nullptr;
    void(FLOWSCOPE_GLAPI* BindFramebuffer)(Enum, Uint) = nullptr;
    Enum(FLOWSCOPE_GLAPI* CheckFramebufferStatus)(Enum) = nullptr;
    void(FLOWSCOPE_GLAPI* GenRenderbuffers)(Sizei, Uint*) = nullptr;
    void(FLOWSCOPE_GLAPI* DeleteRenderbuffers)(Sizei, const Uint*) = nullptr;
    void(FLOWSCOPE_GLAPI* BindRenderbuffer)(Enum, Uint) = nullptr;
    void(FLOWSCOPE_GLAPI* RenderbufferStorage)(Enum, Enum, Sizei, Sizei) = nullptr;
    void(FLOWSCOPE_GLAPI* FramebufferRenderbuffer)(Enum, Enum, Enum, Uint) = nullptr;

    // Synchronization with a producer in another context of the share group (device copies of tokens).
    Sync(FLOWSCOPE_GLAPI* FenceSync)(Enum, Bitfield) = nullptr;
    void(FLOWSCOPE_GLAPI* DeleteSync)(Sync) = nullptr;
    void(FLOWSCOPE_GLAPI* WaitSync)(Sync, Bitfield, std::uint64_t) = nullptr;
};

} // namespace flowscope
