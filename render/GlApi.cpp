#include "render/GlApi.h"

#include <GL/glcorearb.h>

namespace flowscope {

namespace {

// Function pointer types differ per entry point; reinterpret_cast between function pointer types is exact.
template <class F> void get(const GlApi::Loader& load, F& f, const char* name, std::string& missing) {
    f = reinterpret_cast<F>(load(name));
    if (!f && missing.empty()) missing = name;
}

} // namespace

bool GlApi::load(const Loader& p, std::string* whyNot) {
    std::string missing;
    get(p, GetString, "glGetString", missing);
    get(p, GetIntegerv, "glGetIntegerv", missing);
    get(p, GetError, "glGetError", missing);
    get(p, Enable, "glEnable", missing);
    get(p, Disable, "glDisable", missing);
    get(p, BlendFuncSeparate, "glBlendFuncSeparate", missing);
    get(p, LineWidth, "glLineWidth", missing);
    get(p, Viewport, "glViewport", missing);
    get(p, ClearColor, "glClearColor", missing);
    get(p, Clear, "glClear", missing);
    get(p, PixelStorei, "glPixelStorei", missing);
    get(p, ReadPixels, "glReadPixels", missing);
    get(p, Flush, "glFlush", missing);
    get(p, Finish, "glFinish", missing);
    get(p, CreateShader, "glCreateShader", missing);
    get(p, ShaderSource, "glShaderSource", missing);
    get(p, CompileShader, "glCompileShader", missing);
    get(p, GetShaderiv, "glGetShaderiv", missing);
    get(p, GetShaderInfoLog, "glGetShaderInfoLog", missing);
    get(p, DeleteShader, "glDeleteShader", missing);
    get(p, CreateProgram, "glCreateProgram", missing);
    get(p, AttachShader, "glAttachShader", missing);
    get(p, LinkProgram, "glLinkProgram", missing);
    get(p, GetProgramiv, "glGetProgramiv", missing);
    get(p, GetProgramInfoLog, "glGetProgramInfoLog", missing);
    get(p, DeleteProgram, "glDeleteProgram", missing);
    get(p, UseProgram, "glUseProgram", missing);
    get(p, GetUniformLocation, "glGetUniformLocation", missing);
    get(p, Uniform1i, "glUniform1i", missing);
    get(p, Uniform1f, "glUniform1f", missing);
    get(p, Uniform2f, "glUniform2f", missing);
    get(p, Uniform3f, "glUniform3f", missing);
    get(p, Uniform4f, "glUniform4f", missing);
    get(p, UniformMatrix4fv, "glUniformMatrix4fv", missing);
    get(p, GenBuffers, "glGenBuffers", missing);
    get(p, DeleteBuffers, "glDeleteBuffers", missing);
    get(p, BindBuffer, "glBindBuffer", missing);
    get(p, BufferData, "glBufferData", missing);
    get(p, GenVertexArrays, "glGenVertexArrays", missing);
    get(p, DeleteVertexArrays, "glDeleteVertexArrays", missing);
    get(p, BindVertexArray, "glBindVertexArray", missing);
    get(p, EnableVertexAttribArray, "glEnableVertexAttribArray", missing);
    get(p, DisableVertexAttribArray, "glDisableVertexAttribArray", missing);
    get(p, VertexAttribPointer, "glVertexAttribPointer", missing);
    get(p, VertexAttrib1f, "glVertexAttrib1f", missing);
    get(p, DrawArrays, "glDrawArrays", missing);
    get(p, GenFramebuffers, "glGenFramebuffers", missing);
    get(p, DeleteFramebuffers, "glDeleteFramebuffers", missing);
    get(p, BindFramebuffer, "glBindFramebuffer", missing);
    get(p, CheckFramebufferStatus, "glCheckFramebufferStatus", missing);
    get(p, GenRenderbuffers, "glGenRenderbuffers", missing);
    get(p, DeleteRenderbuffers, "glDeleteRenderbuffers", missing);
    get(p, BindRenderbuffer, "glBindRenderbuffer", missing);
    get(p, RenderbufferStorage, "glRenderbufferStorage", missing);
    get(p, FramebufferRenderbuffer, "glFramebufferRenderbuffer", missing);
    get(p, FenceSync, "glFenceSync", missing);
    get(p, DeleteSync, "glDeleteSync", missing);
    get(p, WaitSync, "glWaitSync", missing);
    if (!missing.empty()) {
        if (whyNot) *whyNot = "the OpenGL context has no " + missing + " (OpenGL 3.3 core is needed)";
        DrawArrays = nullptr; // loaded() stays false
        return false;
    }
    Int major = 0, minor = 0;
    GetIntegerv(GL_MAJOR_VERSION, &major);
    GetIntegerv(GL_MINOR_VERSION, &minor);
    if (major < 3 || (major == 3 && minor < 3)) {
        if (whyNot) {
            const unsigned char* v = GetString(GL_VERSION);
            *whyNot = std::string("OpenGL 3.3 core is needed; the context is OpenGL ") +
                      (v ? reinterpret_cast<const char*>(v) : "?");
        }
        DrawArrays = nullptr;
        return false;
    }
    return true;
}

} // namespace flowscope
