#include "engine/gpu/gl/GlFunctions.h"

namespace flowscope {

namespace {

// Function pointer types differ per entry point; reinterpret_cast between function pointer types is exact.
template <class F> bool get(const GlProcLoader& load, F& f, const char* name, std::string* missing) {
    f = reinterpret_cast<F>(load(name));
    if (!f && missing->empty()) *missing = name;
    return f != nullptr;
}

std::string text(const GlFunctions& gl, gl::Enum e) {
    const unsigned char* s = gl.GetString(e);
    return s ? reinterpret_cast<const char*>(s) : "?";
}

} // namespace

bool GlFunctions::load(const GlProcLoader& p, std::string* whyNot) {
    std::string missing;
    get(p, GetString, "glGetString", &missing);
    get(p, GetIntegerv, "glGetIntegerv", &missing);
    get(p, GetIntegeri_v, "glGetIntegeri_v", &missing);
    get(p, GetError, "glGetError", &missing);
    get(p, CreateShader, "glCreateShader", &missing);
    get(p, ShaderSource, "glShaderSource", &missing);
    get(p, CompileShader, "glCompileShader", &missing);
    get(p, GetShaderiv, "glGetShaderiv", &missing);
    get(p, GetShaderInfoLog, "glGetShaderInfoLog", &missing);
    get(p, DeleteShader, "glDeleteShader", &missing);
    get(p, CreateProgram, "glCreateProgram", &missing);
    get(p, AttachShader, "glAttachShader", &missing);
    get(p, LinkProgram, "glLinkProgram", &missing);
    get(p, GetProgramiv, "glGetProgramiv", &missing);
    get(p, GetProgramInfoLog, "glGetProgramInfoLog", &missing);
    get(p, DeleteProgram, "glDeleteProgram", &missing);
    get(p, UseProgram, "glUseProgram", &missing);
    get(p, GenBuffers, "glGenBuffers", &missing);
    get(p, DeleteBuffers, "glDeleteBuffers", &missing);
    get(p, BindBuffer, "glBindBuffer", &missing);
    get(p, BufferData, "glBufferData", &missing);
    get(p, BufferSubData, "glBufferSubData", &missing);
    get(p, GetBufferSubData, "glGetBufferSubData", &missing);
    get(p, BindBufferBase, "glBindBufferBase", &missing);
    get(p, DispatchCompute, "glDispatchCompute", &missing);
    get(p, MemoryBarrier, "glMemoryBarrier", &missing);
    get(p, Finish, "glFinish", &missing);
    get(p, Flush, "glFlush", &missing);
    get(p, CopyBufferSubData, "glCopyBufferSubData", &missing);
    get(p, FenceSync, "glFenceSync", &missing);
    get(p, DeleteSync, "glDeleteSync", &missing);
    get(p, WaitSync, "glWaitSync", &missing);
    if (!missing.empty()) {
        if (whyNot) *whyNot = "the OpenGL context has no " + missing + " (OpenGL 4.3 compute is needed)";
        return false;
    }
    gl::Int major = 0, minor = 0;
    GetIntegerv(gl::MAJOR_VERSION, &major);
    GetIntegerv(gl::MINOR_VERSION, &minor);
    if (major < 4 || (major == 4 && minor < 3)) {
        if (whyNot) *whyNot = "compute shaders need OpenGL 4.3; the context is " + describe();
        return false;
    }
    return true;
}

std::string GlFunctions::describe() const {
    if (!GetString) return "OpenGL (not loaded)";
    return "OpenGL " + text(*this, gl::VERSION) + " on " + text(*this, gl::RENDERER) + " (" +
           text(*this, gl::VENDOR) + ")";
}

} // namespace flowscope
