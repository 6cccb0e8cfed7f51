// Flowscope render: the OpenGL part of the covariance-cone view (and of its trace-1 disc mode): translucent
// surfaces, anti-aliased wide lines and round points in 3-D, in a fixed back-to-front order instead of a
// depth buffer.
//
// The PSD cone is convex and every covariance lies inside it (or on it), so drawing its back-facing half,
// then everything inside, then its front-facing half composites translucency correctly without sorting.
// A surface or cone line vertex carries the cone's outward normal; a fragment belongs to the back half when
// normal . (towards the eye) <= 0. Vertices with a zero normal are "inside" and drawn in every pass they
// are given to. Lines are expanded to screen-space quads by a geometry shader (core profiles have no wide
// lines) with a one-pixel soft edge; widths and point sizes are device pixels.
//
// OpenGL 3.3 core through a GlApi table (no Qt): the app's view and headless exports draw with it. Every call
// needs the initializing context current; destroy() must run before that context goes away.
#pragma once

#include "render/GlApi.h"
#include "render/GlProgram.h"

#include <Eigen/Core>

#include <array>
#include <string>
#include <vector>

namespace flowscope {

struct ConeVertex {
    float x, y, z;    // world (cone coordinates, or the trace-1 slice at z = 0)
    float nx, ny, nz; // outward cone normal; zero for geometry inside the cone
    float r, g, b, a; // straight (not premultiplied) alpha
};

class ConeRenderer {
  public:
    // What is drawn, in drawing order (see draw()).
    enum class Batch {
        Guides,          // lines behind everything: axes, crosshair
        Surface,         // triangles with normals: the cone (or the filled disc)
        ConeLines,       // lines with normals: generatrices, rims (or the disc's boundary circle)
        ReferenceMesh,   // triangles inside: a reference plane's wedge
        ReferenceLines,  // lines inside, drawn wide: reference rays
        Curves,          // lines: the covariance trajectories
        Endpoints,       // points: each trajectory's last state
        Dots,            // points: each trajectory's state at the current time
        ReferencePoints, // points drawn as rings: reference rays in the disc
        Current,         // points: the particle simulation's covariance
        Count
    };

    // The camera and the framebuffer of one frame.
    struct Frame {
        Eigen::Matrix4f mvp = Eigen::Matrix4f::Identity(); // column-major, as GL takes it
        Eigen::Vector3f towardsEye =
            Eigen::Vector3f::UnitZ(); // unit vector from the scene to the orthographic eye
        int width = 1, height = 1;    // the framebuffer, device pixels
        float dpr = 1.0f;             // device pixels per logical pixel, for widths and sizes
    };

    // Compiles the programs and creates the buffers in the current context, whose entry points `gl` holds
    // (it must outlive the renderer). Returns false (see log()) when the context cannot.
    bool initialize(const GlApi& gl);
    void destroy();
    const std::string& log() const { return log_; }
    bool ready() const { return ready_; }

    void upload(Batch batch, const std::vector<ConeVertex>& vertices);
    void draw(const Frame& frame);

  private:
    struct Buffer {
        GlApi::Uint vao = 0, vbo = 0;
        int count = 0;
    };
    enum Side { Both = 0, BackOnly = 1, FrontOnly = 2 };

    void drawLines(const Frame& f, Batch b, float widthPx, Side side, float alphaScale);
    void drawMesh(const Frame& f, Batch b, Side side);
    void drawPoints(const Frame& f, Batch b, float sizePx, float outlinePx, const Eigen::Vector4f& outline,
                    bool ring);
    Buffer& buffer(Batch b) { return buffers_[std::size_t(b)]; }

    const GlApi* gl_ = nullptr;
    GlProgram lineProgram_, meshProgram_, pointProgram_;
    std::array<Buffer, std::size_t(Batch::Count)> buffers_{};
    bool ready_ = false;
    std::string log_;
};

} // namespace flowscope
