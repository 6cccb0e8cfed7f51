// Flowscope GPU: the OpenGL entry points the compute backend calls, loaded from any current context.
//
// No loader library (glad, GLEW): the backend needs a few dozen functions, fetched by name through a callback
// (eglGetProcAddress for the headless context, QOpenGLContext::getProcAddress in the GUI). Loading is kept
// apart from creating a context so the same table serves both. The types and enum values are declared here
// from the Khronos registry (glcorearb.h), so no GL header is needed either.
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
} // namespace gl

// Resolves a GL function by name in the current context; null when it has none.
using GlProc = void (*)();
using GlProcLoader = std::function<GlProc(const char* name)>;

struct GlFunctions {
    // Loads every entry point below from the context current on this thread and checks that it offers
    // OpenGL >= 4.3 (compute shaders). On failure returns false and says why in *whyNot.
    bool load(const GlProcLoader& getProcAddress, std::string* whyNot);
    // "OpenGL <version> on <renderer> (<vendor>)" of the current context.
    std::string describe() const;

    const unsigned char*(FLOWSCOPE_GLAPI* GetString)(gl::Enum) = nullptr;
    void(FLOWSCOPE_GLAPI* GetIntegerv)(gl::Enum, gl::Int*) = nullptr;
    void(FLOWSCOPE_GLAPI* GetIntegeri_v)(gl::Enum, gl::Uint, gl::Int*) = nullptr;
    gl::Enum(FLOWSCOPE_GLAPI* GetError)() = nullptr;
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
    void(FLOWSCOPE_GLAPI* GenBuffers)(gl::Sizei, gl::Uint*) = nullptr;
    void(FLOWSCOPE_GLAPI* DeleteBuffers)(gl::Sizei, const gl::Uint*) = nullptr;
    void(FLOWSCOPE_GLAPI* BindBuffer)(gl::Enum, gl::Uint) = nullptr;
    void(FLOWSCOPE_GLAPI* BufferData)(gl::Enum, gl::Sizeiptr, const void*, gl::Enum) = nullptr;
    void(FLOWSCOPE_GLAPI* BufferSubData)(gl::Enum, gl::Intptr, gl::Sizeiptr, const void*) = nullptr;
    void(FLOWSCOPE_GLAPI* GetBufferSubData)(gl::Enum, gl::Intptr, gl::Sizeiptr, void*) = nullptr;
    void(FLOWSCOPE_GLAPI* BindBufferBase)(gl::Enum, gl::Uint, gl::Uint) = nullptr;
    void(FLOWSCOPE_GLAPI* DispatchCompute)(gl::Uint, gl::Uint, gl::Uint) = nullptr;
    void(FLOWSCOPE_GLAPI* MemoryBarrier)(gl::Bitfield) = nullptr;
    void(FLOWSCOPE_GLAPI* Finish)() = nullptr;
    void(FLOWSCOPE_GLAPI* Flush)() = nullptr;
    void(FLOWSCOPE_GLAPI* CopyBufferSubData)(gl::Enum, gl::Enum, gl::Intptr, gl::Intptr,
                                             gl::Sizeiptr) = nullptr;
    gl::Sync(FLOWSCOPE_GLAPI* FenceSync)(gl::Enum, gl::Bitfield) = nullptr;
    void(FLOWSCOPE_GLAPI* DeleteSync)(gl::Sync) = nullptr;
    void(FLOWSCOPE_GLAPI* WaitSync)(gl::Sync, gl::Bitfield, std::uint64_t) = nullptr;
};

} // namespace flowscope
