#include "engine/gpu/gl/GlFunctions.h"

namespace flowscope {

namespace {

// Function pointer types differ per entry point; reinterpret_cast between function pointer types is exact.
// Remembers the first function the context lacks in *missing.
template <class F> void get(const GlProcLoader& load, F& f, const char* name, std::string* missing) {
    f = reinterpret_cast<F>(load(name));
    if (!f && missing->empty()) *missing = name;
}

std::string text(const GlFunctions& gl, gl::Enum e) {
    const unsigned char* s = gl.GetString(e);
    return s ? reinterpret_cast<const char*>(s) : "?";
}

} // namespace

bool GlFunctions::load(const GlProcLoader& p, Use use, std::string* whyNot) {
    loaded_ = false;
    const bool compute = use == Use::Compute;
    std::string missing;        // the first function either use needs
    std::string computeMissing; // the first one only compute needs
    get(p, DispatchCompute, "glDispatchCompute", &computeMissing);
    get(p, MemoryBarrier, "glMemoryBarrier", &computeMissing);

    get(p, GetString, "glGetString", &missing);
    get(p, GetIntegerv, "glGetIntegerv", &missing);
    get(p, GetIntegeri_v, "glGetIntegeri_v", &missing);
    get(p, GetError, "glGetError", &missing);
    get(p, Enable, "glEnable", &missing);
    get(p, Disable, "glDisable", &missing);
    get(p, BlendFuncSeparate, "glBlendFuncSeparate", &missing);
    get(p, LineWidth, "glLineWidth", &missing);
    get(p, Viewport, "glViewport", &missing);
    get(p, ClearColor, "glClearColor", &missing);
    get(p, Clear, "glClear", &missing);
    get(p, PixelStorei, "glPixelStorei", &missing);
    get(p, ReadPixels, "glReadPixels", &missing);
    get(p, Flush, "glFlush", &missing);
    get(p, Finish, "glFinish", &missing);

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
    get(p, CopyBufferSubData, "glCopyBufferSubData", &missing);

    get(p, GetUniformLocation, "glGetUniformLocation", &missing);
    get(p, Uniform1i, "glUniform1i", &missing);
    get(p, Uniform1f, "glUniform1f", &missing);
    get(p, Uniform2f, "glUniform2f", &missing);
    get(p, Uniform3f, "glUniform3f", &missing);
    get(p, Uniform4f, "glUniform4f", &missing);
    get(p, UniformMatrix4fv, "glUniformMatrix4fv", &missing);

    get(p, GenVertexArrays, "glGenVertexArrays", &missing);
    get(p, DeleteVertexArrays, "glDeleteVertexArrays", &missing);
    get(p, BindVertexArray, "glBindVertexArray", &missing);
    get(p, EnableVertexAttribArray, "glEnableVertexAttribArray", &missing);
    get(p, DisableVertexAttribArray, "glDisableVertexAttribArray", &missing);
    get(p, VertexAttribPointer, "glVertexAttribPointer", &missing);
    get(p, VertexAttrib1f, "glVertexAttrib1f", &missing);
    get(p, DrawArrays, "glDrawArrays", &missing);

    get(p, GenFramebuffers, "glGenFramebuffers", &missing);
    get(p, DeleteFramebuffers, "glDeleteFramebuffers", &missing);
    get(p, BindFramebuffer, "glBindFramebuffer", &missing);
    get(p, CheckFramebufferStatus, "glCheckFramebufferStatus", &missing);
    get(p, GenRenderbuffers, "glGenRenderbuffers", &missing);
    get(p, DeleteRenderbuffers, "glDeleteRenderbuffers", &missing);
    get(p, BindRenderbuffer, "glBindRenderbuffer", &missing);
    get(p, RenderbufferStorage, "glRenderbufferStorage", &missing);
    get(p, FramebufferRenderbuffer, "glFramebufferRenderbuffer", &missing);

    get(p, FenceSync, "glFenceSync", &missing);
    get(p, DeleteSync, "glDeleteSync", &missing);
    get(p, WaitSync, "glWaitSync", &missing);
    get(p, ClientWaitSync, "glClientWaitSync", &missing);

    if (compute && missing.empty()) missing = computeMissing;
    if (!missing.empty()) {
        if (whyNot)
            *whyNot = "the OpenGL context has no " + missing +
                      (compute ? " (OpenGL 4.3 compute is needed)" : " (OpenGL 3.3 core is needed)");
        return false;
    }
    gl::Int major = 0, minor = 0;
    GetIntegerv(gl::MAJOR_VERSION, &major);
    GetIntegerv(gl::MINOR_VERSION, &minor);
    const int needMajor = compute ? 4 : 3, needMinor = 3;
    if (major < needMajor || (major == needMajor && minor < needMinor)) {
        if (whyNot)
            *whyNot = compute
                          ? "compute shaders need OpenGL 4.3; the context is " + describe()
                          : "OpenGL 3.3 core is needed; the context is OpenGL " + text(*this, gl::VERSION);
        return false;
    }
    loaded_ = true;
    return true;
}

std::string GlFunctions::describe() const {
    if (!GetString) return "OpenGL (not loaded)";
    return "OpenGL " + text(*this, gl::VERSION) + " on " + text(*this, gl::RENDERER) + " (" +
           text(*this, gl::VENDOR) + ")";
}

} // namespace flowscope
