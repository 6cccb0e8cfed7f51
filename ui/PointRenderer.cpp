#include "ui/PointRenderer.h"

#include "ui/OpenGLSetup.h"

#include <cstddef>

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
    ready_ = true;
    return true;
}

void PointRenderer::destroy() {
    for (Buffer& b : buffers_) {
        b.vao.destroy();
        b.vbo.destroy();
        b.count = 0;
    }
    program_.removeAllShaders();
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

void PointRenderer::prepare(const QMatrix4x4& viewProjection, float pointSize, bool points) {
    glEnable(GL_PROGRAM_POINT_SIZE);
    glDisable(GL_DEPTH_TEST);
    glEnable(GL_BLEND);
    // Keep destination alpha at 1 so grabbed framebuffers stay opaque where points are anti-aliased.
    glBlendFuncSeparate(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA, GL_ONE, GL_ONE_MINUS_SRC_ALPHA);
    program_.bind();
    program_.setUniformValue("uViewProjection", viewProjection);
    program_.setUniformValue("uPointSize", pointSize);
    program_.setUniformValue("uPoints", points);
}

void PointRenderer::drawPoints(const QMatrix4x4& viewProjection, float pointSize) {
    Buffer& b = buffers_[Points];
    if (!ready_ || b.count == 0) return;
    prepare(viewProjection, pointSize, true);
    b.vao.bind();
    glDrawArrays(GL_POINTS, 0, b.count);
    b.vao.release();
    program_.release();
}

void PointRenderer::drawLines(Layer layer, const QMatrix4x4& viewProjection, float lineWidth) {
    Buffer& b = buffers_[layer];
    if (!ready_ || b.count < 2) return;
    prepare(viewProjection, 1.0f, false);
    glLineWidth(lineWidth); // core profiles may clamp wide lines to 1; the overlay stays readable at 1
    b.vao.bind();
    glDrawArrays(GL_LINES, 0, b.count);
    b.vao.release();
    program_.release();
}

} // namespace flowscope
