#include "ui/PointRenderer.h"

#include <cstddef>

#ifndef GL_PROGRAM_POINT_SIZE
#define GL_PROGRAM_POINT_SIZE                                                                                \
    0x8642 // desktop GL 3.2; absent from the GLES headers QOpenGLExtraFunctions uses
#endif

namespace flowscope {

namespace {

const char* kVertexShader = R"(#version 330 core
layout(location = 0) in vec2 aPosition;
layout(location = 1) in vec3 aColor;
uniform vec2 uCenter;     // the world point at the viewport centre, relative to the upload origin
uniform vec2 uNdcPerUnit; // world units -> normalized device coordinates, per axis
uniform float uPointSize; // device pixels
out vec3 vColor;
void main() {
    gl_Position = vec4((aPosition - uCenter) * uNdcPerUnit, 0.0, 1.0);
    gl_PointSize = uPointSize;
    vColor = aColor;
}
)";

// A disc with a one-device-pixel soft edge: hard-edged sprites shimmer as points move by sub-pixel amounts.
const char* kFragmentShader = R"(#version 330 core
in vec3 vColor;
uniform float uPointSize;
out vec4 fragColor;
void main() {
    float r = length(gl_PointCoord * 2.0 - 1.0); // 0 at the centre, 1 at the rim
    float edge = 2.0 / max(uPointSize, 1.0);     // one device pixel in sprite units
    float alpha = 1.0 - smoothstep(1.0 - edge, 1.0 + edge * 0.5, r);
    if (alpha <= 0.0) discard;
    fragColor = vec4(vColor, alpha);
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
    vao_.create();
    vbo_.create();
    vbo_.setUsagePattern(QOpenGLBuffer::StreamDraw); // rewritten with every new snapshot

    vao_.bind();
    vbo_.bind();
    glEnableVertexAttribArray(0);
    glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, sizeof(PointVertex),
                          reinterpret_cast<const void*>(offsetof(PointVertex, x)));
    glEnableVertexAttribArray(1);
    glVertexAttribPointer(1, 3, GL_FLOAT, GL_FALSE, sizeof(PointVertex),
                          reinterpret_cast<const void*>(offsetof(PointVertex, r)));
    vao_.release();
    vbo_.release();
    ready_ = true;
    return true;
}

void PointRenderer::destroy() {
    vao_.destroy();
    vbo_.destroy();
    program_.removeAllShaders();
    ready_ = false;
    count_ = 0;
}

void PointRenderer::upload(const std::vector<PointVertex>& vertices, QPointF origin) {
    if (!ready_) return;
    vbo_.bind();
    vbo_.allocate(vertices.data(), int(vertices.size() * sizeof(PointVertex)));
    vbo_.release();
    count_ = int(vertices.size());
    origin_ = origin;
}

void PointRenderer::draw(QPointF center, QPointF ndcPerUnit, float pointSize) {
    if (!ready_ || count_ == 0) return;
    glEnable(GL_PROGRAM_POINT_SIZE);
    glDisable(GL_DEPTH_TEST);
    glEnable(GL_BLEND);
    // Keep destination alpha at 1 so grabbed framebuffers stay opaque where points are anti-aliased.
    glBlendFuncSeparate(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA, GL_ONE, GL_ONE_MINUS_SRC_ALPHA);

    const QPointF c = center - origin_; // in double, before narrowing to float
    program_.bind();
    program_.setUniformValue("uCenter", float(c.x()), float(c.y()));
    program_.setUniformValue("uNdcPerUnit", float(ndcPerUnit.x()), float(ndcPerUnit.y()));
    program_.setUniformValue("uPointSize", pointSize);
    vao_.bind();
    glDrawArrays(GL_POINTS, 0, count_);
    vao_.release();
    program_.release();
}

} // namespace flowscope
