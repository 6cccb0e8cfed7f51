// Flowscope UI: draws round, anti-aliased points (GL point sprites) from one vertex buffer.
//
// OpenGL 3.3 core. Every call needs the owning widget's context current; destroy() must run before that
// context goes away. Positions are stored relative to an origin chosen at upload time (in double) because
// clustering dynamics produce clouds far from zero with a spread of 1e-7: float32 coordinates would
// quantize them.
#pragma once

#include <QOpenGLBuffer>
#include <QOpenGLExtraFunctions>
#include <QOpenGLShaderProgram>
#include <QOpenGLVertexArrayObject>
#include <QPointF>
#include <QString>

#include <vector>

namespace flowscope {

struct PointVertex {
    float x, y;    // relative to the upload origin
    float r, g, b; // linear 0..1
};

class PointRenderer : protected QOpenGLExtraFunctions {
  public:
    // Compiles the program and creates the buffers. Returns false (see log()) when the context cannot.
    bool initialize();
    void destroy();
    QString log() const { return log_; }

    void upload(const std::vector<PointVertex>& vertices, QPointF origin);
    // Draws the uploaded points into the current viewport: the world point `center` lands in the middle and
    // one world unit spans `ndcPerUnit` normalized device units per axis. `pointSize` is in device pixels.
    void draw(QPointF center, QPointF ndcPerUnit, float pointSize);

  private:
    QOpenGLShaderProgram program_;
    QOpenGLBuffer vbo_{QOpenGLBuffer::VertexBuffer};
    QOpenGLVertexArrayObject vao_;
    QPointF origin_;
    int count_ = 0;
    bool ready_ = false;
    QString log_;
};

} // namespace flowscope
