#include "engine/gpu/gl/GlCompute.h"

#include <algorithm>
#include <cstdio>

namespace flowscope {

void glCheck(const GlFunctions& gl, const char* what) {
    const gl::Enum e = gl.GetError();
    if (e == gl::NO_ERROR) return;
    char code[16];
    std::snprintf(code, sizeof code, "0x%04X", e);
    throw GlError(std::string(what) + ": OpenGL error " + code);
}

std::string glslSource(int version, const GlDefines& defines, std::string_view body) {
    std::string s = "#version " + std::to_string(version) + "\n";
    for (const auto& [name, value] : defines) s += "#define " + name + " " + value + "\n";
    // Compile logs count lines from here on as lines of the body file.
    s += "#line 1\n";
    s += body;
    return s;
}

namespace {

// The info log of a shader or program object, read with its query (GetShaderiv, GetProgramiv) and getter
// (GetShaderInfoLog, GetProgramInfoLog).
template <class Query, class Getter> std::string infoLog(gl::Uint object, Query query, Getter getter) {
    gl::Int length = 0;
    query(object, gl::INFO_LOG_LENGTH, &length);
    std::string log(std::size_t(std::max(length, 1)), '\0');
    getter(object, gl::Sizei(log.size()), nullptr, log.data());
    return log.c_str();
}

std::string shaderLog(const GlFunctions& gl, gl::Uint shader) {
    return infoLog(shader, gl.GetShaderiv, gl.GetShaderInfoLog);
}

std::string programLog(const GlFunctions& gl, gl::Uint program) {
    return infoLog(program, gl.GetProgramiv, gl.GetProgramInfoLog);
}

} // namespace

GlComputeProgram::GlComputeProgram(const GlFunctions& gl, const std::string& source) : gl_(&gl) {
    const gl::Uint shader = gl.CreateShader(gl::COMPUTE_SHADER);
    if (!shader) throw GlError("glCreateShader(GL_COMPUTE_SHADER) failed");
    const char* text = source.c_str();
    gl.ShaderSource(shader, 1, &text, nullptr);
    gl.CompileShader(shader);
    gl::Int ok = 0;
    gl.GetShaderiv(shader, gl::COMPILE_STATUS, &ok);
    if (!ok) {
        const std::string log = shaderLog(gl, shader);
        gl.DeleteShader(shader);
        throw GlError("compute shader failed to compile:\n" + log);
    }
    id_ = gl.CreateProgram();
    gl.AttachShader(id_, shader);
    gl.LinkProgram(id_);
    gl.DeleteShader(shader); // flagged; freed with the program
    gl.GetProgramiv(id_, gl::LINK_STATUS, &ok);
    if (!ok) {
        const std::string log = programLog(gl, id_);
        gl.DeleteProgram(std::exchange(id_, 0));
        throw GlError("compute program failed to link:\n" + log);
    }
    glCheck(gl, "building a compute program");
}

GlComputeProgram::~GlComputeProgram() {
    if (id_) gl_->DeleteProgram(id_);
}

void GlComputeProgram::dispatch(gl::Uint groups) const {
    gl_->UseProgram(id_);
    gl_->DispatchCompute(groups, 1, 1);
}

GlBuffer::~GlBuffer() {
    if (id_) gl_->DeleteBuffers(1, &id_);
}

void GlBuffer::reserve(std::size_t bytes) {
    if (!id_) gl_->GenBuffers(1, &id_);
    if (bytes <= capacity_ && capacity_ > 0) return;
    const std::size_t size = std::max<std::size_t>(bytes, 16);
    gl_->BindBuffer(gl::SHADER_STORAGE_BUFFER, id_);
    gl_->BufferData(gl::SHADER_STORAGE_BUFFER, gl::Sizeiptr(size), nullptr, gl::DYNAMIC_COPY);
    glCheck(*gl_, "allocating a shader storage buffer");
    capacity_ = size;
}

void GlBuffer::upload(const void* data, std::size_t bytes) {
    reserve(bytes);
    if (!bytes) return;
    gl_->BindBuffer(gl::SHADER_STORAGE_BUFFER, id_);
    gl_->BufferSubData(gl::SHADER_STORAGE_BUFFER, 0, gl::Sizeiptr(bytes), data);
}

void GlBuffer::download(void* data, std::size_t bytes) const {
    if (!bytes) return;
    // Shader writes must be visible to the buffer read below.
    gl_->MemoryBarrier(gl::BUFFER_UPDATE_BARRIER_BIT);
    gl_->BindBuffer(gl::SHADER_STORAGE_BUFFER, id_);
    gl_->GetBufferSubData(gl::SHADER_STORAGE_BUFFER, 0, gl::Sizeiptr(bytes), data);
    glCheck(*gl_, "reading a shader storage buffer");
}

void GlBuffer::bind(gl::Uint index) const {
    gl_->BindBufferBase(gl::SHADER_STORAGE_BUFFER, index, id_);
}

} // namespace flowscope
