#include "render/GlProgram.h"

#include <GL/glcorearb.h>

#include <algorithm>
#include <tuple>
#include <vector>

namespace flowscope {

namespace {

// The info log of a shader (GetShaderiv, GetShaderInfoLog) or a program (GetProgramiv, GetProgramInfoLog).
template <class Getiv, class GetLog> std::string infoLog(GLuint object, Getiv getiv, GetLog getLog) {
    GLint length = 0;
    getiv(object, GL_INFO_LOG_LENGTH, &length);
    std::vector<char> text(std::size_t(std::max(length, 1)), '\0');
    getLog(object, GLsizei(text.size()), nullptr, text.data());
    return text.data();
}

std::string shaderLog(const GlApi& gl, GLuint shader) {
    return infoLog(shader, gl.GetShaderiv, gl.GetShaderInfoLog);
}

std::string programLog(const GlApi& gl, GLuint program) {
    return infoLog(program, gl.GetProgramiv, gl.GetProgramInfoLog);
}

} // namespace

bool GlProgram::build(const GlApi& gl, const char* vertex, const char* geometry, const char* fragment,
                      std::string* log) {
    destroy();
    gl_ = &gl;
    const GLuint program = gl.CreateProgram();
    std::vector<GLuint> shaders;
    bool ok = true;
    for (const auto& [kind, source, name] : {std::tuple{GLenum(GL_VERTEX_SHADER), vertex, "vertex"},
                                             std::tuple{GLenum(GL_GEOMETRY_SHADER), geometry, "geometry"},
                                             std::tuple{GLenum(GL_FRAGMENT_SHADER), fragment, "fragment"}}) {
        if (!source || !ok) continue;
        const GLuint s = gl.CreateShader(kind);
        gl.ShaderSource(s, 1, &source, nullptr);
        gl.CompileShader(s);
        GLint status = 0;
        gl.GetShaderiv(s, GL_COMPILE_STATUS, &status);
        if (!status) {
            if (log) *log = std::string(name) + " shader: " + shaderLog(gl, s);
            ok = false;
        }
        gl.AttachShader(program, s);
        shaders.push_back(s);
    }
    if (ok) {
        gl.LinkProgram(program);
        GLint status = 0;
        gl.GetProgramiv(program, GL_LINK_STATUS, &status);
        if (!status) {
            if (log) *log = "link: " + programLog(gl, program);
            ok = false;
        }
    }
    for (GLuint s : shaders) gl.DeleteShader(s); // flagged; freed with the program
    if (!ok) {
        gl.DeleteProgram(program);
        return false;
    }
    id_ = program;
    return true;
}

void GlProgram::destroy() {
    if (gl_ && id_) gl_->DeleteProgram(id_);
    id_ = 0;
}

void GlProgram::bind() const {
    gl_->UseProgram(id_);
}

void GlProgram::release() const {
    gl_->UseProgram(0);
}

void GlProgram::set(const char* name, int v) const {
    gl_->Uniform1i(gl_->GetUniformLocation(id_, name), v);
}

void GlProgram::set(const char* name, float v) const {
    gl_->Uniform1f(gl_->GetUniformLocation(id_, name), v);
}

void GlProgram::set(const char* name, const Eigen::Vector2f& v) const {
    gl_->Uniform2f(gl_->GetUniformLocation(id_, name), v.x(), v.y());
}

void GlProgram::set(const char* name, const Eigen::Vector3f& v) const {
    gl_->Uniform3f(gl_->GetUniformLocation(id_, name), v.x(), v.y(), v.z());
}

void GlProgram::set(const char* name, const Eigen::Vector4f& v) const {
    gl_->Uniform4f(gl_->GetUniformLocation(id_, name), v.x(), v.y(), v.z(), v.w());
}

void GlProgram::set(const char* name, const Eigen::Matrix4f& m) const {
    gl_->UniformMatrix4fv(gl_->GetUniformLocation(id_, name), 1, GL_FALSE, m.data());
}

} // namespace flowscope
