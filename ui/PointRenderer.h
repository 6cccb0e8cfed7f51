// Flowscope UI: draws round, anti-aliased points (GL point sprites) and coloured line segments, each from
// one vertex buffer, through one view-projection matrix (2-D orthographic or the 3-D orbit camera).
//
// OpenGL 3.3 core. Every call needs the owning widget's context current; destroy() must run before that
// context goes away. Positions are stored relative to an origin chosen at upload time (in double) because
// clustering dynamics produce clouds far from zero with a spread of 1e-7: float32 coordinates would
// quantize them; the caller folds the origin into the matrix in double.
#pragma once

#include <QMatrix4x4>
#include <QOpenGLBuffer>
#include <QOpenGLExtraFunctions>
#include <QOpenGLShaderProgram>
#include <QOpenGLVertexArrayObject>
#include <QString>
#include <QVector3D>

#include <vector>

namespace flowscope {

struct DeviceTokens;

struct PointVertex {
    float x, y, z;    // relative to the upload origin
    float r, g, b, a; // straight (not premultiplied) alpha
};

class PointRenderer : protected QOpenGLExtraFunctions {
  public:
    enum Layer { Points, Lines, LinesOver, LayerCount }; // Lines go under the points, LinesOver on top

    // Compiles the program and creates the buffers. Returns false (see log()) when the context cannot.
    bool initialize();
    void destroy();
    QString log() const { return log_; }

    // Points: one vertex each. Lines: two vertices per segment.
    void upload(Layer layer, const std::vector<PointVertex>& vertices);
    int count(Layer layer) const { return buffers_[layer].count; }
    // Draws the points as discs of `pointSize` device pixels.
    void drawPoints(const QMatrix4x4& viewProjection, float pointSize);
    void drawLines(Layer layer, const QMatrix4x4& viewProjection, float lineWidth = 1.0f);
    // Draws the points at the positions of a device copy of the tokens (Snapshot::device, written by the GPU
    // stepper in a context of the same share group), projected in the vertex shader:
    //     p = project * (x_0, .., x_{d-1}, 0..) - origin,   d <= 4,
    // with the colours of the last upload(Points), which must hold one vertex per token. Waits on the copy's
    // fence on the GPU (glWaitSync) and leaves a fence of its own for the producer. Returns false, drawing
    // nothing, when the copy is gone (backend closed) or does not match the uploaded points.
    bool drawDevicePoints(const DeviceTokens& tokens, const QMatrix4x4& project, const QVector3D& origin,
                          const QMatrix4x4& viewProjection, float pointSize);

  private:
    struct Buffer {
        QOpenGLBuffer vbo{QOpenGLBuffer::VertexBuffer};
        QOpenGLVertexArrayObject vao;
        int count = 0;
    };
    void prepare(QOpenGLShaderProgram& program, const QMatrix4x4& viewProjection, float pointSize,
                 bool points);

    QOpenGLShaderProgram program_;
    QOpenGLShaderProgram deviceProgram_; // positions from a device buffer (structure of arrays)
    QOpenGLVertexArrayObject deviceVao_;
    Buffer buffers_[LayerCount];
    bool ready_ = false;
    QString log_;
};

} // namespace flowscope
