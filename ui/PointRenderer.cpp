#include "ui/PointRenderer.h"

#include "engine/dynamics/DeviceStepper.h"
#include "ui/OpenGLSetup.h"

#include <cstddef>
#include <cstdint>
#include <mutex>

namespace flowscope {

namespace {

const char* kVertexShader = R"(#version 330 core
layout(location = 0) in vec3 aPosition;
layout(location = 1) in vec4 aColor;
uniform mat4 uViewProjection; // includes the upload origin
uniform float uPointSize;     // device pixels
out vec4 vColor;
void main() {
    gl_Position = uViewProjection * vec4(aPosition, 1.0);
    gl_PointSize = uPointSize;
    vColor = aColor;
}
)";

// The same, with the position read from a device copy of the tokens: coordinate c of token i is attribute c
// (a float at 4 (c n + i) bytes) and the projection to the view's axes happens here.
const char* kDeviceVertexShader = R"(#version 330 core
layout(location = 0) in float aX0;
layout(location = 1) in float aX1;
layout(location = 2) in float aX2;
layout(location = 3) in float aX3;
layout(location = 4) in vec4 aColor;
uniform mat4 uProject;        // token coordinates -> view axes
uniform vec3 uOrigin;         // subtracted after projecting, as the CPU path does on upload
uniform mat4 uViewProjection; // includes the origin
uniform float uPointSize;
out vec4 vColor;
void main() {
    vec3 p = (uProject * vec4(aX0, aX1, aX2, aX3)).xyz - uOrigin;
    gl_Position = uViewProjection * vec4(p, 1.0);
    gl_PointSize = uPointSize;
    vColor = aColor;
}
)";

// Points are discs with a one-device-pixel soft edge (hard-edged sprites shimmer as points move by sub-pixel
// amounts); lines are drawn as they come.
const char* kFragmentShader = R"(#version 330 core
in vec4 vColor;
uniform float uPointSize;
uniform bool uPoints;
out vec4 fragColor;
void main() {
    float alpha = vColor.a;
    if (uPoints) {
        float r = length(gl_PointCoord * 2.0 - 1.0); // 0 at the centre, 1 at the rim
        float edge = 2.0 / max(uPointSize, 1.0);     // one device pixel in sprite units
        alpha *= 1.0 - smoothstep(1.0 - edge, 1.0 + edge * 0.5, r);
    }
    if (alpha <= 0.0) discard;
    fragColor = vec4(vColor.rgb, alpha);
}
)";

} // namespace

bool PointRenderer::initialize() {
    initializeOpenGLFunctions();
    if (!program_.addShaderFromSourceCode(QOpenGLShader::Vertex, kVertexShader) ||
        !program_.addShaderFromSourceCode(QOpenGLShader::Fragment, kFragmentShader) || !program_.link()) {
        log_ = program_.log();
        return false;
    }
    if (!deviceProgram_.addShaderFromSourceCode(QOpenGLShader::Vertex, kDeviceVertexShader) ||
        !deviceProgram_.addShaderFromSourceCode(QOpenGLShader::Fragment, kFragmentShader) ||
        !deviceProgram_.link()) {
        log_ = deviceProgram_.log();
        return false;
    }
    deviceVao_.create();
    for (Buffer& b : buffers_) {
        b.vao.create();
        b.vbo.create();
        b.vbo.setUsagePattern(QOpenGLBuffer::StreamDraw); // rewritten with every new snapshot
        b.vao.bind();
        b.vbo.bind();
        glEnableVertexAttribArray(0);
        glVertexAttribPointer(0, 3, GL_FLOAT, GL_FALSE, sizeof(PointVertex),
                              reinterpret_cast<const void*>(offsetof(PointVertex, x)));
        glEnableVertexAttribArray(1);
        glVertexAttribPointer(1, 4, GL_FLOAT, GL_FALSE, sizeof(PointVertex),
                              reinterpret_cast<const void*>(offsetof(PointVertex, r)));
        b.vao.release();
        b.vbo.release();
    }
    // The device program's colours: always the Points buffer (one vertex per token); positions are bound per
    // draw, as the device copy's buffer changes.
    deviceVao_.bind();
    buffers_[Points].vbo.bind();
    glEnableVertexAttribArray(4);
    glVertexAttribPointer(4, 4, GL_FLOAT, GL_FALSE, sizeof(PointVertex),
                          reinterpret_cast<const void*>(offsetof(PointVertex, r)));
    deviceVao_.release();
    buffers_[Points].vbo.release();
    ready_ = true;
    return true;
}

void PointRenderer::destroy() {
    for (Buffer& b : buffers_) {
        b.vao.destroy();
        b.vbo.destroy();
        b.count = 0;
    }
    deviceVao_.destroy();
    program_.removeAllShaders();
    deviceProgram_.removeAllShaders();
    ready_ = false;
}

void PointRenderer::upload(Layer layer, const std::vector<PointVertex>& vertices) {
    if (!ready_) return;
    Buffer& b = buffers_[layer];
    b.vbo.bind();
    b.vbo.allocate(vertices.data(), int(vertices.size() * sizeof(PointVertex)));
    b.vbo.release();
    b.count = int(vertices.size());
}

void PointRenderer::prepare(QOpenGLShaderProgram& program, const QMatrix4x4& viewProjection, float pointSize,
                            bool points) {
    glEnable(GL_PROGRAM_POINT_SIZE);
    glDisable(GL_DEPTH_TEST);
    glEnable(GL_BLEND);
    // Keep destination alpha at 1 so grabbed framebuffers stay opaque where points are anti-aliased.
    glBlendFuncSeparate(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA, GL_ONE, GL_ONE_MINUS_SRC_ALPHA);
    program.bind();
    program.setUniformValue("uViewProjection", viewProjection);
    program.setUniformValue("uPointSize", pointSize);
    program.setUniformValue("uPoints", points);
}

void PointRenderer::drawPoints(const QMatrix4x4& viewProjection, float pointSize) {
    Buffer& b = buffers_[Points];
    if (!ready_ || b.count == 0) return;
    prepare(program_, viewProjection, pointSize, true);
    b.vao.bind();
    glDrawArrays(GL_POINTS, 0, b.count);
    b.vao.release();
    program_.release();
}

void PointRenderer::drawLines(Layer layer, const QMatrix4x4& viewProjection, float lineWidth) {
    Buffer& b = buffers_[layer];
    if (!ready_ || b.count < 2) return;
    prepare(program_, viewProjection, 1.0f, false);
    glLineWidth(lineWidth); // core profiles may clamp wide lines to 1; the overlay stays readable at 1
    b.vao.bind();
    glDrawArrays(GL_LINES, 0, b.count);
    b.vao.release();
    program_.release();
}

} // namespace flowscope

namespace flowscope {

bool PointRenderer::drawDevicePoints(const DeviceTokens& tokens, const QMatrix4x4& project,
                                     const QVector3D& origin, const QMatrix4x4& viewProjection,
                                     float pointSize) {
    Buffer& colors = buffers_[Points];
    if (!ready_ || tokens.n <= 0 || tokens.d < 1 || tokens.d > 4 || colors.count != tokens.n) return false;
    {
        // Attach the buffer while the producer cannot delete it; from then on the vertex array keeps it
        // alive.
        std::lock_guard lock(*tokens.mutex);
        if (!*tokens.valid) return false;
        glWaitSync(static_cast<GLsync>(tokens.fence), 0, GL_TIMEOUT_IGNORED); // the copy is complete
        deviceVao_.bind();
        glBindBuffer(GL_ARRAY_BUFFER, tokens.buffer);
        for (int c = 0; c < 4; ++c) {
            if (c < tokens.d) {
                const std::uintptr_t offset = std::uintptr_t(c) * std::uintptr_t(tokens.n) * sizeof(float);
                glEnableVertexAttribArray(GLuint(c));
                glVertexAttribPointer(GLuint(c), 1, GL_FLOAT, GL_FALSE, 0,
                                      reinterpret_cast<const void*>(offset));
            } else {
                glDisableVertexAttribArray(GLuint(c));
                glVertexAttrib1f(GLuint(c), 0.0f);
            }
        }
        glBindBuffer(GL_ARRAY_BUFFER, 0);
    }

    prepare(deviceProgram_, viewProjection, pointSize, true);
    deviceProgram_.setUniformValue("uProject", project);
    deviceProgram_.setUniformValue("uOrigin", origin);
    glDrawArrays(GL_POINTS, 0, tokens.n);
    deviceVao_.release();
    deviceProgram_.release();

    // The producer waits on this before it writes the next copy into the buffer.
    std::lock_guard lock(*tokens.mutex);
    if (tokens.readFence) glDeleteSync(static_cast<GLsync>(tokens.readFence));
    tokens.readFence = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
    glFlush();
    return true;
}

} // namespace flowscope
