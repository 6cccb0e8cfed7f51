#include "render/PointRenderer.h"

#include "engine/dynamics/DeviceStepper.h"

#include <GL/glcorearb.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

namespace flowscope {

namespace {

// What both vertex shaders end with: the clip position, and the depth cue (far vertices fade towards the
// background and far points shrink; uFade.y = 0: no cue).
const char* kDepthCue = R"(#version 330 core
uniform float uPointSize; // device pixels
uniform vec3 uFade;       // depth cue: clip w of full colour, w span to the most faded, fade at most
uniform vec3 uFadeTo;     // the background the far side fades towards
out vec4 vColor;
void placeWithDepthCue(vec4 clip, vec4 color) {
    gl_Position = clip;
    float far = uFade.y > 0.0 ? uFade.z * clamp((clip.w - uFade.x) / uFade.y, 0.0, 1.0) : 0.0;
    gl_PointSize = uPointSize * (1.0 - 0.5 * far);
    vColor = vec4(mix(color.rgb, uFadeTo, far), color.a);
}
)";

const std::string kTokenVertexShader = std::string(kDepthCue) + R"(
layout(location = 0) in vec3 aPosition;
layout(location = 1) in vec4 aColor;
uniform mat4 uViewProjection; // includes the upload origin
void main() {
    placeWithDepthCue(uViewProjection * vec4(aPosition, 1.0), aColor);
}
)";

// The same, with the position read from a device copy of the tokens: coordinate c of token i is attribute c
// (a float at 4 (c n + i) bytes) and the projection to the view's axes happens here.
const std::string kDeviceVertexShader = std::string(kDepthCue) + R"(
layout(location = 0) in float aX0;
layout(location = 1) in float aX1;
layout(location = 2) in float aX2;
layout(location = 3) in float aX3;
layout(location = 4) in vec4 aColor;
uniform mat4 uProject;        // token coordinates -> view axes
uniform vec3 uOrigin;         // subtracted after projecting, as the CPU path does on upload
uniform mat4 uViewProjection; // includes the origin
void main() {
    vec3 p = (uProject * vec4(aX0, aX1, aX2, aX3)).xyz - uOrigin;
    placeWithDepthCue(uViewProjection * vec4(p, 1.0), aColor);
}
)";

// Points are discs with a one-device-pixel soft edge (hard-edged sprites shimmer as points move by sub-pixel
// amounts); lines are drawn as they come.
const char* kTokenFragmentShader = R"(#version 330 core
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

bool PointRenderer::initialize(const GlApi& gl) {
    destroy();
    gl_ = &gl;
    if (!program_.build(gl, kTokenVertexShader.c_str(), nullptr, kTokenFragmentShader, &log_) ||
        !deviceProgram_.build(gl, kDeviceVertexShader.c_str(), nullptr, kTokenFragmentShader, &log_))
        return false;
    gl.GenVertexArrays(1, &deviceVao_);
    for (Buffer& b : buffers_) {
        gl.GenVertexArrays(1, &b.vao);
        gl.GenBuffers(1, &b.vbo);
        gl.BindVertexArray(b.vao);
        gl.BindBuffer(GL_ARRAY_BUFFER, b.vbo);
        gl.EnableVertexAttribArray(0);
        gl.VertexAttribPointer(0, 3, GL_FLOAT, GL_FALSE, sizeof(PointVertex),
                               bufferOffset(offsetof(PointVertex, x)));
        gl.EnableVertexAttribArray(1);
        gl.VertexAttribPointer(1, 4, GL_FLOAT, GL_FALSE, sizeof(PointVertex),
                               bufferOffset(offsetof(PointVertex, r)));
        gl.BindVertexArray(0);
        gl.BindBuffer(GL_ARRAY_BUFFER, 0);
    }
    // The device program's colours: always the Points buffer (one vertex per token); positions are bound per
    // draw, as the device copy's buffer changes.
    gl.BindVertexArray(deviceVao_);
    gl.BindBuffer(GL_ARRAY_BUFFER, buffers_[Points].vbo);
    gl.EnableVertexAttribArray(4);
    gl.VertexAttribPointer(4, 4, GL_FLOAT, GL_FALSE, sizeof(PointVertex),
                           bufferOffset(offsetof(PointVertex, r)));
    gl.BindVertexArray(0);
    gl.BindBuffer(GL_ARRAY_BUFFER, 0);
    ready_ = true;
    return true;
}

void PointRenderer::destroy() {
    if (gl_) {
        for (Buffer& b : buffers_) {
            if (b.vao) gl_->DeleteVertexArrays(1, &b.vao);
            if (b.vbo) gl_->DeleteBuffers(1, &b.vbo);
            b = Buffer{};
        }
        if (deviceVao_) gl_->DeleteVertexArrays(1, &deviceVao_);
        deviceVao_ = 0;
    }
    program_.destroy();
    deviceProgram_.destroy();
    ready_ = false;
}

void PointRenderer::upload(Layer layer, const std::vector<PointVertex>& vertices) {
    if (!ready_) return;
    Buffer& b = buffers_[layer];
    gl_->BindBuffer(GL_ARRAY_BUFFER, b.vbo);
    // Rewritten with every new snapshot.
    gl_->BufferData(GL_ARRAY_BUFFER, GLsizeiptr(vertices.size() * sizeof(PointVertex)), vertices.data(),
                    GL_STREAM_DRAW);
    gl_->BindBuffer(GL_ARRAY_BUFFER, 0);
    b.count = int(vertices.size());
}

void PointRenderer::prepare(const GlProgram& program, const Eigen::Matrix4f& viewProjection, float pointSize,
                            bool points) {
    gl_->Enable(GL_PROGRAM_POINT_SIZE);
    gl_->Disable(GL_DEPTH_TEST);
    gl_->Enable(GL_BLEND);
    // Keep destination alpha at 1 so grabbed framebuffers stay opaque where points are anti-aliased (and, on
    // a transparent target, leave premultiplied colours that composite exactly over what lies beneath).
    gl_->BlendFuncSeparate(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA, GL_ONE, GL_ONE_MINUS_SRC_ALPHA);
    program.bind();
    program.set("uViewProjection", viewProjection);
    program.set("uPointSize", pointSize);
    program.set("uPoints", int(points));
    program.set("uFade", Eigen::Vector3f(depthCue_.nearW, depthCue_.span, depthCue_.strength));
    program.set("uFadeTo", depthCue_.background);
}

void PointRenderer::drawPoints(const Eigen::Matrix4f& viewProjection, float pointSize) {
    Buffer& b = buffers_[Points];
    if (!ready_ || b.count == 0) return;
    prepare(program_, viewProjection, pointSize, true);
    gl_->BindVertexArray(b.vao);
    gl_->DrawArrays(GL_POINTS, 0, b.count);
    gl_->BindVertexArray(0);
    program_.release();
}

void PointRenderer::drawLines(Layer layer, const Eigen::Matrix4f& viewProjection, float lineWidth) {
    Buffer& b = buffers_[layer];
    if (!ready_ || b.count < 2) return;
    prepare(program_, viewProjection, 1.0f, false);
    gl_->LineWidth(lineWidth); // core profiles may clamp wide lines to 1; the overlay stays readable at 1
    gl_->BindVertexArray(b.vao);
    gl_->DrawArrays(GL_LINES, 0, b.count);
    gl_->BindVertexArray(0);
    program_.release();
}

bool PointRenderer::drawDevicePoints(const DeviceTokens& tokens, const Eigen::Matrix4f& project,
                                     const Eigen::Vector3f& origin, const Eigen::Matrix4f& viewProjection,
                                     float pointSize) {
    Buffer& colors = buffers_[Points];
    if (!ready_ || tokens.n <= 0 || tokens.d < 1 || tokens.d > 4 || colors.count != tokens.n) return false;
    {
        // Attach the buffer while the producer cannot delete it; from then on the vertex array keeps it
        // alive.
        std::lock_guard lock(*tokens.mutex);
        if (!*tokens.valid) return false;
        gl_->WaitSync(static_cast<GlApi::Sync>(tokens.fence), 0, GL_TIMEOUT_IGNORED); // the copy is complete
        gl_->BindVertexArray(deviceVao_);
        gl_->BindBuffer(GL_ARRAY_BUFFER, tokens.buffer);
        for (int c = 0; c < 4; ++c) {
            if (c < tokens.d) {
                const std::size_t at = std::size_t(c) * std::size_t(tokens.n) * sizeof(float);
                gl_->EnableVertexAttribArray(GLuint(c));
                gl_->VertexAttribPointer(GLuint(c), 1, GL_FLOAT, GL_FALSE, 0, bufferOffset(at));
            } else {
                gl_->DisableVertexAttribArray(GLuint(c));
                gl_->VertexAttrib1f(GLuint(c), 0.0f);
            }
        }
        gl_->BindBuffer(GL_ARRAY_BUFFER, 0);
    }

    prepare(deviceProgram_, viewProjection, pointSize, true);
    deviceProgram_.set("uProject", project);
    deviceProgram_.set("uOrigin", origin);
    gl_->DrawArrays(GL_POINTS, 0, tokens.n);
    gl_->BindVertexArray(0);
    deviceProgram_.release();

    // The producer waits on this before it writes the next copy into the buffer. A producer that has gone
    // (valid cleared, its fences deleted) waits for nothing: no fence is left for it.
    std::lock_guard lock(*tokens.mutex);
    if (!*tokens.valid) return true;
    if (tokens.readFence) gl_->DeleteSync(static_cast<GlApi::Sync>(tokens.readFence));
    tokens.readFence = gl_->FenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
    gl_->Flush();
    return true;
}

} // namespace flowscope
