// Flowscope render: round, anti-aliased points (GL point sprites) and coloured line segments, each from one
// vertex buffer, through one view-projection matrix (2-D orthographic or the 3-D orbit camera). The particle
// view draws with it in the app and in headless exports.
//
// OpenGL 3.3 core through a GlApi table (no Qt). Every call needs the initializing context current; destroy()
// must run before that context goes away. Positions are stored relative to an origin chosen at upload time
// (in double) because clustering dynamics produce clouds far from zero with a spread of 1e-7: float32
// coordinates would quantize them; the caller folds the origin into the matrix in double.
#pragma once

#include "render/GlApi.h"
#include "render/GlProgram.h"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace flowscope {

struct DeviceTokens;

// The particle view's point diameter in logical pixels for `n` tokens: big for small clouds, small for large
// ones (3 px from about 6000 tokens on).
inline double pointDiameter(long n) {
    return std::clamp(2.5 + 64.0 / std::sqrt(double(std::max(n, 1L))), 3.0, 10.0);
}

struct PointVertex {
    float x, y, z;    // relative to the upload origin
    float r, g, b, a; // straight (not premultiplied) alpha
};

class PointRenderer {
  public:
    enum Layer { Points, Lines, LinesOver, LayerCount }; // Lines go under the points, LinesOver on top

    // Compiles the programs and creates the buffers in the current context, whose entry points `gl` holds
    // (it must outlive the renderer). Returns false (see log()) when the context cannot.
    bool initialize(const GlApi& gl);
    void destroy();
    const std::string& log() const { return log_; }

    // Points: one vertex each. Lines: two vertices per segment.
    void upload(Layer layer, const std::vector<PointVertex>& vertices);
    int count(Layer layer) const { return buffers_[layer].count; }
    // Draws the points as discs of `pointSize` device pixels. Matrices are column-major, as GL takes them.
    void drawPoints(const Eigen::Matrix4f& viewProjection, float pointSize);
    void drawLines(Layer layer, const Eigen::Matrix4f& viewProjection, float lineWidth = 1.0f);
    // Draws the points at the positions of a device copy of the tokens (Snapshot::device, written by the GPU
    // stepper in a context of the same share group), projected in the vertex shader:
    //     p = project * (x_0, .., x_{d-1}, 0..) - origin,   d <= 4,
    // with the colours of the last upload(Points), which must hold one vertex per token. Waits on the copy's
    // fence on the GPU (glWaitSync) and leaves a fence of its own for the producer. Returns false, drawing
    // nothing, when the copy is gone (backend closed) or does not match the uploaded points.
    bool drawDevicePoints(const DeviceTokens& tokens, const Eigen::Matrix4f& project,
                          const Eigen::Vector3f& origin, const Eigen::Matrix4f& viewProjection,
                          float pointSize);

    // A depth cue for what is drawn next (perspective views): a vertex at clip w = nearW keeps its colour,
    // one at nearW + span and beyond is mixed `strength` of the way towards `background`, and points shrink
    // by up to half of that. span = 0 (the default): none.
    struct DepthCue {
        float nearW = 0.0f, span = 0.0f, strength = 0.0f;
        Eigen::Vector3f background = Eigen::Vector3f::Zero();
    };
    void setDepthCue(const DepthCue& cue) { depthCue_ = cue; }

  private:
    struct Buffer {
        GlApi::Uint vbo = 0, vao = 0;
        int count = 0;
    };
    void prepare(const GlProgram& program, const Eigen::Matrix4f& viewProjection, float pointSize,
                 bool points);

    const GlApi* gl_ = nullptr;
    GlProgram program_;
    GlProgram deviceProgram_; // positions from a device buffer (structure of arrays)
    GlApi::Uint deviceVao_ = 0;
    Buffer buffers_[LayerCount];
    bool ready_ = false;
    std::string log_;
    DepthCue depthCue_;
};

} // namespace flowscope
