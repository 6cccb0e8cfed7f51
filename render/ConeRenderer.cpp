#include "render/ConeRenderer.h"

#include <GL/glcorearb.h>

#include <cstddef>

namespace flowscope {

namespace {

// Shared by the line, mesh and point programs: position, facing (normal . towards-eye; 0 for inside
// geometry), and the sprite size, which only points use.
const char* kVertexShader = R"(#version 330 core
layout(location = 0) in vec3 aPosition;
layout(location = 1) in vec3 aNormal;
layout(location = 2) in vec4 aColor;
uniform mat4 uMvp;
uniform vec3 uTowardsEye;
uniform float uPointSize;
out vec4 vColor;
out float vFacing;
out float vNormalLength;
void main() {
    gl_Position = uMvp * vec4(aPosition, 1.0);
    gl_PointSize = uPointSize;
    vColor = aColor;
    vNormalLength = length(aNormal);
    vFacing = vNormalLength > 0.0 ? dot(aNormal, uTowardsEye) / vNormalLength : 0.0;
}
)";

// One line segment -> a screen-space quad of width uWidth plus a one-pixel fringe on each side.
const char* kLineGeometryShader = R"(#version 330 core
layout(lines) in;
layout(triangle_strip, max_vertices = 4) out;
in vec4 vColor[];
in float vFacing[];
in float vNormalLength[];
uniform vec2 uViewport; // device pixels
uniform float uWidth;   // device pixels
out vec4 gColor;
out float gFacing;
out float gNormalLength;
out float gDistance; // signed distance from the centre line, device pixels
void emitCorner(int i, vec2 offset, float distance) {
    vec4 p = gl_in[i].gl_Position;
    gl_Position = vec4(p.xy + offset * p.w, p.zw);
    gColor = vColor[i];
    gFacing = vFacing[i];
    gNormalLength = vNormalLength[i];
    gDistance = distance;
    EmitVertex();
}
void main() {
    vec4 c0 = gl_in[0].gl_Position, c1 = gl_in[1].gl_Position;
    vec2 halfViewport = 0.5 * uViewport;
    vec2 s0 = c0.xy / c0.w * halfViewport, s1 = c1.xy / c1.w * halfViewport;
    vec2 d = s1 - s0;
    float len = length(d);
    vec2 dir = len > 1e-6 ? d / len : vec2(1.0, 0.0);
    float h = 0.5 * uWidth + 1.0;
    vec2 offset = vec2(-dir.y, dir.x) * h / halfViewport; // in NDC
    emitCorner(0, offset, h);
    emitCorner(0, -offset, -h);
    emitCorner(1, offset, h);
    emitCorner(1, -offset, -h);
    EndPrimitive();
}
)";

const char* kLineFragmentShader = R"(#version 330 core
in vec4 gColor;
in float gFacing;
in float gNormalLength;
in float gDistance;
uniform float uWidth;
uniform int uSide; // 0 both, 1 back only, 2 front only (for geometry with normals)
uniform float uAlphaScale;
out vec4 fragColor;
void main() {
    if (gNormalLength > 0.0 && ((uSide == 1 && gFacing > 0.0) || (uSide == 2 && gFacing <= 0.0))) discard;
    float coverage = clamp(0.5 * uWidth + 0.5 - abs(gDistance), 0.0, 1.0);
    if (coverage <= 0.0) discard;
    fragColor = vec4(gColor.rgb, gColor.a * coverage * uAlphaScale);
}
)";

// Surfaces: more opaque where the surface is seen edge-on, so the silhouette reads as a shape (a thin glass
// look) while the middle stays see-through.
const char* kMeshFragmentShader = R"(#version 330 core
in vec4 vColor;
in float vFacing;
in float vNormalLength;
uniform int uSide;
out vec4 fragColor;
void main() {
    float alpha = vColor.a;
    if (vNormalLength > 0.0) {
        if ((uSide == 1 && vFacing > 0.0) || (uSide == 2 && vFacing <= 0.0)) discard;
        float grazing = 1.0 - abs(vFacing);
        alpha *= 0.6 + 2.4 * grazing * grazing * grazing;
    }
    fragColor = vec4(vColor.rgb, clamp(alpha, 0.0, 1.0));
}
)";

// A disc of the vertex colour inside an outline ring (or only the ring), with a one-pixel soft rim.
const char* kPointFragmentShader = R"(#version 330 core
in vec4 vColor;
uniform float uPointSize;    // device pixels
uniform float uOutlineWidth; // device pixels
uniform vec4 uOutline;
uniform int uRing; // only the ring, in the vertex colour
out vec4 fragColor;
void main() {
    float radius = 0.5 * uPointSize;
    float d = length(gl_PointCoord * 2.0 - 1.0) * radius; // device pixels from the centre
    float outer = 1.0 - smoothstep(radius - 1.0, radius, d);
    if (outer <= 0.0) discard;
    float inRing = smoothstep(radius - uOutlineWidth - 0.5, radius - uOutlineWidth + 0.5, d);
    vec4 outline = uRing != 0 ? vColor : uOutline;
    vec4 fill = uRing != 0 ? vec4(vColor.rgb, 0.0) : vColor;
    vec4 c = mix(fill, outline, uOutlineWidth > 0.0 ? inRing : 0.0);
    fragColor = vec4(c.rgb, c.a * outer);
    if (fragColor.a <= 0.0) discard;
}
)";

} // namespace

bool ConeRenderer::initialize(const GlApi& gl) {
    destroy();
    gl_ = &gl;
    if (!lineProgram_.build(gl, kVertexShader, kLineGeometryShader, kLineFragmentShader, &log_) ||
        !meshProgram_.build(gl, kVertexShader, nullptr, kMeshFragmentShader, &log_) ||
        !pointProgram_.build(gl, kVertexShader, nullptr, kPointFragmentShader, &log_))
        return false;
    for (Buffer& b : buffers_) {
        gl.GenVertexArrays(1, &b.vao);
        gl.GenBuffers(1, &b.vbo);
        gl.BindVertexArray(b.vao);
        gl.BindBuffer(GL_ARRAY_BUFFER, b.vbo);
        const auto stride = GLsizei(sizeof(ConeVertex));
        gl.EnableVertexAttribArray(0);
        gl.VertexAttribPointer(0, 3, GL_FLOAT, GL_FALSE, stride, bufferOffset(offsetof(ConeVertex, x)));
        gl.EnableVertexAttribArray(1);
        gl.VertexAttribPointer(1, 3, GL_FLOAT, GL_FALSE, stride, bufferOffset(offsetof(ConeVertex, nx)));
        gl.EnableVertexAttribArray(2);
        gl.VertexAttribPointer(2, 4, GL_FLOAT, GL_FALSE, stride, bufferOffset(offsetof(ConeVertex, r)));
        gl.BindVertexArray(0);
        gl.BindBuffer(GL_ARRAY_BUFFER, 0);
    }
    ready_ = true;
    return true;
}

void ConeRenderer::destroy() {
    if (gl_)
        for (Buffer& b : buffers_) {
            if (b.vao) gl_->DeleteVertexArrays(1, &b.vao);
            if (b.vbo) gl_->DeleteBuffers(1, &b.vbo);
            b = Buffer{};
        }
    lineProgram_.destroy();
    meshProgram_.destroy();
    pointProgram_.destroy();
    ready_ = false;
}

void ConeRenderer::upload(Batch batch, const std::vector<ConeVertex>& vertices) {
    if (!ready_) return;
    Buffer& b = buffer(batch);
    gl_->BindBuffer(GL_ARRAY_BUFFER, b.vbo);
    gl_->BufferData(GL_ARRAY_BUFFER, GLsizeiptr(vertices.size() * sizeof(ConeVertex)), vertices.data(),
                    GL_DYNAMIC_DRAW);
    gl_->BindBuffer(GL_ARRAY_BUFFER, 0);
    b.count = int(vertices.size());
}

void ConeRenderer::drawLines(const Frame& f, Batch batch, float widthPx, Side side, float alphaScale) {
    Buffer& b = buffer(batch);
    if (b.count < 2) return;
    lineProgram_.bind();
    lineProgram_.set("uMvp", f.mvp);
    lineProgram_.set("uTowardsEye", f.towardsEye);
    lineProgram_.set("uViewport", Eigen::Vector2f(float(f.width), float(f.height)));
    lineProgram_.set("uWidth", widthPx);
    lineProgram_.set("uSide", int(side));
    lineProgram_.set("uAlphaScale", alphaScale);
    gl_->BindVertexArray(b.vao);
    gl_->DrawArrays(GL_LINES, 0, b.count);
    gl_->BindVertexArray(0);
    lineProgram_.release();
}

void ConeRenderer::drawMesh(const Frame& f, Batch batch, Side side) {
    Buffer& b = buffer(batch);
    if (b.count < 3) return;
    meshProgram_.bind();
    meshProgram_.set("uMvp", f.mvp);
    meshProgram_.set("uTowardsEye", f.towardsEye);
    meshProgram_.set("uSide", int(side));
    gl_->BindVertexArray(b.vao);
    gl_->DrawArrays(GL_TRIANGLES, 0, b.count);
    gl_->BindVertexArray(0);
    meshProgram_.release();
}

void ConeRenderer::drawPoints(const Frame& f, Batch batch, float sizePx, float outlinePx,
                              const Eigen::Vector4f& outline, bool ring) {
    Buffer& b = buffer(batch);
    if (b.count == 0) return;
    pointProgram_.bind();
    pointProgram_.set("uMvp", f.mvp);
    pointProgram_.set("uPointSize", sizePx);
    pointProgram_.set("uOutlineWidth", outlinePx);
    pointProgram_.set("uOutline", outline);
    pointProgram_.set("uRing", int(ring));
    gl_->BindVertexArray(b.vao);
    gl_->DrawArrays(GL_POINTS, 0, b.count);
    gl_->BindVertexArray(0);
    pointProgram_.release();
}

void ConeRenderer::draw(const Frame& f) {
    if (!ready_) return;
    gl_->Viewport(0, 0, f.width, f.height);
    gl_->Disable(GL_DEPTH_TEST);
    gl_->Disable(GL_CULL_FACE);
    gl_->Enable(GL_PROGRAM_POINT_SIZE);
    gl_->Enable(GL_BLEND);
    // Keep destination alpha at 1 so that grabbed framebuffers stay opaque (and, on a transparent target,
    // leave premultiplied colours that composite exactly over what lies beneath).
    gl_->BlendFuncSeparate(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA, GL_ONE, GL_ONE_MINUS_SRC_ALPHA);

    const float s = f.dpr;
    drawLines(f, Batch::Guides, 1.0f * s, Both, 1.0f);
    drawMesh(f, Batch::Surface, BackOnly);
    drawLines(f, Batch::ConeLines, 1.0f * s, BackOnly, 0.55f);
    drawMesh(f, Batch::ReferenceMesh, Both);
    drawLines(f, Batch::ReferenceLines, 2.2f * s, Both, 1.0f);
    drawLines(f, Batch::Curves, 1.3f * s, Both, 1.0f);
    drawMesh(f, Batch::Surface, FrontOnly);
    drawLines(f, Batch::ConeLines, 1.0f * s, FrontOnly, 1.0f);
    drawPoints(f, Batch::Endpoints, 4.5f * s, 0.0f, Eigen::Vector4f::Zero(), false);
    drawPoints(f, Batch::Dots, 8.0f * s, 1.2f * s, Eigen::Vector4f(1.0f, 1.0f, 1.0f, 0.95f), false);
    drawPoints(f, Batch::ReferencePoints, 13.0f * s, 2.0f * s, Eigen::Vector4f::Zero(),
               true); // hollow: dots show through
    drawPoints(f, Batch::Current, 14.0f * s, 3.0f * s, Eigen::Vector4f(0.24f, 0.55f, 0.85f, 1.0f), false);

    gl_->Disable(GL_BLEND);
}

} // namespace flowscope
