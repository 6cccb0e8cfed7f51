// Flowscope UI: the base of the OpenGL views that show a picture of render/picture (ParticleView, ConeView).
//
// It owns what every such widget does the same way: an OpenGL core-profile context of its own, the GL entry
// points loaded from it (GlApi) and handed to the picture (initializePicture), released with the picture when
// the context goes away (the widget moved to another window, or is destroyed: the derived destructor calls
// releaseGL()); the message drawn where OpenGL is missing; and the camera under the mouse: a left drag
// (dragged), the wheel (zoomed: four notches double the scale) and a double click (resetView).
#pragma once

#include "render/GlApi.h"

#include <QOpenGLWidget>
#include <QPoint>
#include <QString>

#include <string>

class QPainter;

namespace flowscope {

class PictureGlView : public QOpenGLWidget {
    Q_OBJECT
  public:
    // Empty when OpenGL was available; otherwise why nothing can be drawn.
    QString glError() const { return glError_; }

  protected:
    explicit PictureGlView(QWidget* parent);

    // The picture's GL objects in the widget's context (current); false with the reason.
    virtual bool initializePicture(const GlApi& gl, std::string* whyNot) = 0;
    // Its GL objects released (the context current).
    virtual void releasePicture() = 0;
    // After a successful initializePicture (the context current).
    virtual void glInitialized() {}
    // The camera: a left drag moved by `delta` logical pixels, the wheel zoomed by `factor` about `at`, a
    // double click restores the default view. canDrag() says whether a press starts a drag.
    virtual bool canDrag() const { return true; }
    virtual void dragged(QPointF delta) = 0;
    virtual void zoomed(double factor, QPointF at) = 0;
    virtual void resetView() = 0;

    void releaseGL();
    bool glReady() const { return glReady_; }
    // glError(), centred, when there is one; true if it was drawn.
    bool paintGlError(QPainter& painter) const;

    void initializeGL() override;
    void mousePressEvent(QMouseEvent* e) override;
    void mouseMoveEvent(QMouseEvent* e) override;
    void mouseReleaseEvent(QMouseEvent* e) override;
    void mouseDoubleClickEvent(QMouseEvent* e) override;
    void wheelEvent(QWheelEvent* e) override;

    GlApi widgetGl_;        // the widget's own context's entry points
    bool dragging_ = false; // a left drag moves the camera

  private:
    QString glError_;
    bool glReady_ = false;
    QPoint lastMouse_;
};

} // namespace flowscope
