// Flowscope GPU: the one OpenGL function table, loaded from any current context, for the compute backend and
// for the renderers (render/GlApi.h).
//
// No loader library (glad, GLEW): a few dozen functions are fetched by name through a callback
// (eglGetProcAddress for a headless context, QOpenGLContext::getProcAddress in the GUI). Loading is kept
// apart from creating a context so the same table serves both. The types and the enum values the compute
// backend uses are declared here from the Khronos registry (glcorearb.h), so no GL header is needed either;
// the renderers take theirs from <GL/glcorearb.h> (Qt's GL headers and Khronos' do not mix in one file, so
// this header includes neither). Plain C++: its own small library (flowscope_gl_functions), built in every
// configuration, including those without the GPU backends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#if defined(_WIN32)
#define FLOWSCOPE_GLAPI __stdcall
#else
#define FLOWSCOPE_GLAPI
#endif

namespace flowscope {

namespace gl {
using Enum = unsigned int;
using Uint = unsigned int;
using Int = int;
using Sizei = int;
using Bitfield = unsigned int;
using Boolean = unsigned char;
using Float = float;
using Sizeiptr = std::ptrdiff_t;
using Intptr = std::ptrdiff_t;

constexpr Enum NO_ERROR = 0;
constexpr Enum VENDOR = 0x1F00;
constexpr Enum RENDERER = 0x1F01;
constexpr Enum VERSION = 0x1F02;
constexpr Enum MAJOR_VERSION = 0x821B;
constexpr Enum MINOR_VERSION = 0x821C;
constexpr Enum COMPUTE_SHADER = 0x91B9;
constexpr Enum COMPILE_STATUS = 0x8B81;
constexpr Enum LINK_STATUS = 0x8B82;
constexpr Enum INFO_LOG_LENGTH = 0x8B84;
constexpr Enum SHADER_STORAGE_BUFFER = 0x90D2;
constexpr Enum DYNAMIC_COPY = 0x88EA;
constexpr Enum MAX_COMPUTE_SHARED_MEMORY_SIZE = 0x8262;
constexpr Enum MAX_COMPUTE_WORK_GROUP_INVOCATIONS = 0x90EB;
constexpr Enum MAX_COMPUTE_WORK_GROUP_COUNT = 0x91BE;
constexpr Enum MAX_COMPUTE_WORK_GROUP_SIZE = 0x91BF;
constexpr Bitfield SHADER_STORAGE_BARRIER_BIT = 0x2000;
constexpr Bitfield BUFFER_UPDATE_BARRIER_BIT = 0x0200;
constexpr Enum COPY_READ_BUFFER = 0x8F36;
constexpr Enum COPY_WRITE_BUFFER = 0x8F37;
constexpr Enum SYNC_GPU_COMMANDS_COMPLETE = 0x9117;
using Sync = void*; // GLsync
constexpr std::uint64_t TIMEOUT_IGNORED = ~std::uint64_t(0);
constexpr Bitfield SYNC_FLUSH_COMMANDS_BIT = 0x00000001;
} // namespace gl

// Resolves a GL function by name in the current context; null when it has none.
using GlProc = void (*)();
using GlProcLoader = std::function<GlProc(const char* name)>;

struct GlFunctions {
    // The table's types under its own name, for code that spells them GlApi::Uint and so on.
    using Enum = gl::Enum;
    using Uint = gl::Uint;
    using Int = gl::Int;
    using Sizei = gl::Sizei;
    using Bitfield = gl::Bitfield;
    using Boolean = gl::Boolean;
    using Float = gl::Float;
    using Sizeiptr = gl::Sizeiptr;
    using Intptr = gl::Intptr;
    using Sync = gl::Sync;
    using Proc = GlProc;
    using Loader = GlProcLoader;

    // What the caller will do with the context, and so which version it must offer: drawing needs OpenGL 3.3
    // core (the renderers' GLSL 3.30), compute needs 4.3 (compute shaders, glDispatchCompute).
    enum class Use { Drawing, Compute };

    // Loads every entry point below from the context current on this thread and checks the version `use`
    // needs; the two compute-only functions may stay null when `use` is Drawing. On failure returns false,
    // leaves loaded() false and says why in *whyNot.
    bool load(const GlProcLoader& getProcAddress, Use use, std::string* whyNot);
    bool loaded() const { return loaded_; }
    // "OpenGL <version> on <renderer> (<vendor>)" of the current context.
    std::string describe() const;

    // Compute-only (OpenGL 4.2 and 4.3): null after a load for drawing from an older context.
    void(FLOWSCOPE_GLAPI* DispatchCompute)(gl::Uint, gl::Uint, gl::Uint) = nullptr;
    void(FLOWSCOPE_GLAPI* MemoryBarrier)(gl::Bitfield) = nullptr;

    // State, queries, clearing, reading.

    const unsigned char*(FLOWSCOPE_GLAPI* GetString)(gl::Enum) = nullptr;
    void(FLOWSCOPE_GLAPI* GetIntegerv)(gl::Enum, gl::Int*) = nullptr;
    void(FLOWSCOPE_GLAPI* GetIntegeri_v)(gl::Enum, gl::Uint, gl::Int*) = nullptr;
    gl::Enum(FLOWSCOPE_GLAPI* GetError)() = nullptr;
    void(FLOWSCOPE_GLAPI* Enable)(gl::Enum) = nullptr;
    void(FLOWSCOPE_GLAPI* Disable)(gl::Enum) = nullptr;
    void(FLOWSCOPE_GLAPI* BlendFuncSeparate)(gl::Enum, gl::Enum, gl::Enum, gl::Enum) = nullptr;
    void(FLOWSCOPE_GLAPI* LineWidth)(gl::Float) = nullptr;
    void(FLOWSCOPE_GLAPI* Viewport)(gl::Int, gl::Int, gl::Sizei, gl::Sizei) = nullptr;
    void(FLOWSCOPE_GLAPI* ClearColor)(gl::Float, gl::Float, gl::Float, gl::Float) = nullptr;
    void(FLOWSCOPE_GLAPI* Clear)(gl::Bitfield) = nullptr;
    void(FLOWSCOPE_GLAPI* PixelStorei)(gl::Enum, gl::Int) = nullptr;
    void(FLOWSCOPE_GLAPI* ReadPixels)(gl::Int, gl::Int, gl::Sizei, gl::Sizei, gl::Enum, gl::Enum,
                                      void*) = nullptr;
    void(FLOWSCOPE_GLAPI* Flush)() = nullptr;
    void(FLOWSCOPE_GLAPI* Finish)() = nullptr;

    // Shaders and programs.
    gl::Uint(FLOWSCOPE_GLAPI* CreateShader)(gl::Enum) = nullptr;
    void(FLOWSCOPE_GLAPI* ShaderSource)(gl::Uint, gl::Sizei, const char* const*, const gl::Int*) = nullptr;
    void(FLOWSCOPE_GLAPI* CompileShader)(gl::Uint) = nullptr;
    void(FLOWSCOPE_GLAPI* GetShaderiv)(gl::Uint, gl::Enum, gl::Int*) = nullptr;
    void(FLOWSCOPE_GLAPI* GetShaderInfoLog)(gl::Uint, gl::Sizei, gl::Sizei*, char*) = nullptr;
    void(FLOWSCOPE_GLAPI* DeleteShader)(gl::Uint) = nullptr;
    gl::Uint(FLOWSCOPE_GLAPI* CreateProgram)() = nullptr;
    void(FLOWSCOPE_GLAPI* AttachShader)(gl::Uint, gl::Uint) = nullptr;
    void(FLOWSCOPE_GLAPI* LinkProgram)(gl::Uint) = nullptr;
    void(FLOWSCOPE_GLAPI* GetProgramiv)(gl::Uint, gl::Enum, gl::Int*) = nullptr;
    void(FLOWSCOPE_GLAPI* GetProgramInfoLog)(gl::Uint, gl::Sizei, gl::Sizei*, char*) = nullptr;
    void(FLOWSCOPE_GLAPI* DeleteProgram)(gl::Uint) = nullptr;
    void(FLOWSCOPE_GLAPI* UseProgram)(gl::Uint) = nullptr;

    // Buffers.
    void(FLOWSCOPE_GLAPI* GenBuffers)(gl::Sizei, gl::Uint*) = nullptr;
    void(FLOWSCOPE_GLAPI* DeleteBuffers)(gl::Sizei, const gl::Uint*) = nullptr;
    void(FLOWSCOPE_GLAPI* BindBuffer)(gl::Enum, gl::Uint) = nullptr;
    void(FLOWSCOPE_GLAPI* BufferData)(gl::Enum, gl::Sizeiptr, const void*, gl::Enum) = nullptr;
    void(FLOWSCOPE_GLAPI* BufferSubData)(gl::Enum, gl::Intptr, gl::Sizeiptr, const void*) = nullptr;
    void(FLOWSCOPE_GLAPI* GetBufferSubData)(gl::Enum, gl::Intptr, gl::Sizeiptr, void*) = nullptr;
    void(FLOWSCOPE_GLAPI* BindBufferBase)(gl::Enum, gl::Uint, gl::Uint) = nullptr;
    void(FLOWSCOPE_GLAPI* CopyBufferSubData)(gl::Enum, gl::Enum, gl::Intptr, gl::Intptr,
                                             gl::Sizeiptr) = nullptr;

    // Uniforms (the renderers' programs).
    gl::Int(FLOWSCOPE_GLAPI* GetUniformLocation)(gl::Uint, const char*) = nullptr;
    void(FLOWSCOPE_GLAPI* Uniform1i)(gl::Int, gl::Int) = nullptr;
    void(FLOWSCOPE_GLAPI* Uniform1f)(gl::Int, gl::Float) = nullptr;
    void(FLOWSCOPE_GLAPI* Uniform2f)(gl::Int, gl::Float, gl::Float) = nullptr;
    void(FLOWSCOPE_GLAPI* Uniform3f)(gl::Int, gl::Float, gl::Float, gl::Float) = nullptr;
    void(FLOWSCOPE_GLAPI* Uniform4f)(gl::Int, gl::Float, gl::Float, gl::Float, gl::Float) = nullptr;
    void(FLOWSCOPE_GLAPI* UniformMatrix4fv)(gl::Int, gl::Sizei, gl::Boolean, const gl::Float*) = nullptr;

    // Vertex arrays and drawing.
    void(FLOWSCOPE_GLAPI* GenVertexArrays)(gl::Sizei, gl::Uint*) = nullptr;
    void(FLOWSCOPE_GLAPI* DeleteVertexArrays)(gl::Sizei, const gl::Uint*) = nullptr;
    void(FLOWSCOPE_GLAPI* BindVertexArray)(gl::Uint) = nullptr;
    void(FLOWSCOPE_GLAPI* EnableVertexAttribArray)(gl::Uint) = nullptr;
    void(FLOWSCOPE_GLAPI* DisableVertexAttribArray)(gl::Uint) = nullptr;
    void(FLOWSCOPE_GLAPI* VertexAttribPointer)(gl::Uint, gl::Int, gl::Enum, gl::Boolean, gl::Sizei,
                                               const void*) = nullptr;
    void(FLOWSCOPE_GLAPI* VertexAttrib1f)(gl::Uint, gl::Float) = nullptr;
    void(FLOWSCOPE_GLAPI* DrawArrays)(gl::Enum, gl::Int, gl::Sizei) = nullptr;

    // Framebuffers (offscreen targets).
    void(FLOWSCOPE_GLAPI* GenFramebuffers)(gl::Sizei, gl::Uint*) = nullptr;
    void(FLOWSCOPE_GLAPI* DeleteFramebuffers)(gl::Sizei, const gl::Uint*) = nullptr;
    void(FLOWSCOPE_GLAPI* BindFramebuffer)(gl::Enum, gl::Uint) = nullptr;
    gl::Enum(FLOWSCOPE_GLAPI* CheckFramebufferStatus)(gl::Enum) = nullptr;
    void(FLOWSCOPE_GLAPI* GenRenderbuffers)(gl::Sizei, gl::Uint*) = nullptr;
    void(FLOWSCOPE_GLAPI* DeleteRenderbuffers)(gl::Sizei, const gl::Uint*) = nullptr;
    void(FLOWSCOPE_GLAPI* BindRenderbuffer)(gl::Enum, gl::Uint) = nullptr;
    void(FLOWSCOPE_GLAPI* RenderbufferStorage)(gl::Enum, gl::Enum, gl::Sizei, gl::Sizei) = nullptr;
    void(FLOWSCOPE_GLAPI* FramebufferRenderbuffer)(gl::Enum, gl::Enum, gl::Enum, gl::Uint) = nullptr;

    // Synchronization between contexts of a share group (device copies of the tokens).
    gl::Sync(FLOWSCOPE_GLAPI* FenceSync)(gl::Enum, gl::Bitfield) = nullptr;
    void(FLOWSCOPE_GLAPI* DeleteSync)(gl::Sync) = nullptr;
    void(FLOWSCOPE_GLAPI* WaitSync)(gl::Sync, gl::Bitfield, std::uint64_t) = nullptr;
    gl::Enum(FLOWSCOPE_GLAPI* ClientWaitSync)(gl::Sync, gl::Bitfield, std::uint64_t) = nullptr;

  private:
    bool loaded_ = false;
};

} // namespace flowscope
