#include "ui/views/PictureGlView.h"

#include "ui/shell/OpenGLSetup.h"

#include <QMouseEvent>
#include <QOpenGLContext>
#include <QPainter>
#include <QSurfaceFormat>
#include <QWheelEvent>

#include <cmath>

namespace flowscope {

PictureGlView::PictureGlView(QWidget* parent) : QOpenGLWidget(parent) {
    QSurfaceFormat format = QSurfaceFormat::defaultFormat();
    format.setVersion(kGLMajor, kGLMinor);
    format.setProfile(QSurfaceFormat::CoreProfile);
    setFormat(format);
    setFocusPolicy(Qt::StrongFocus);
    setCursor(Qt::OpenHandCursor);
}

void PictureGlView::initializeGL() {
    // The context can be replaced (the widget moves to another window): release with the old one.
    connect(context(), &QOpenGLContext::aboutToBeDestroyed, this, &PictureGlView::releaseGL,
            Qt::UniqueConnection);
    const QSurfaceFormat f = context()->format();
    std::string why;
    QOpenGLContext* ctx = context();
    const bool loaded =
        f.version() >= qMakePair(3, 3) &&
        widgetGl_.load([ctx](const char* name) { return GlApi::Proc(ctx->getProcAddress(name)); }, &why);
    if (!loaded || !initializePicture(widgetGl_, &why)) {
        glError_ = QStringLiteral("OpenGL 3.3 core is not available (got %1.%2). %3")
                       .arg(f.majorVersion())
                       .arg(f.minorVersion())
                       .arg(QString::fromStdString(why));
        return;
    }
    glReady_ = true;
    glInitialized();
}

void PictureGlView::releaseGL() {
    if (!glReady_) return;
    makeCurrent();
    releasePicture();
    doneCurrent();
    glReady_ = false;
}

bool PictureGlView::paintGlError(QPainter& painter) const {
    if (glError_.isEmpty()) return false;
    painter.setPen(QColor(255, 120, 120));
    painter.drawText(rect().adjusted(20, 20, -20, -20), Qt::AlignCenter | Qt::TextWordWrap, glError_);
    return true;
}

void PictureGlView::mousePressEvent(QMouseEvent* e) {
    if (e->button() != Qt::LeftButton || !canDrag()) return QOpenGLWidget::mousePressEvent(e);
    dragging_ = true;
    lastMouse_ = e->position().toPoint();
    setCursor(Qt::ClosedHandCursor);
}

void PictureGlView::mouseMoveEvent(QMouseEvent* e) {
    if (!dragging_) return QOpenGLWidget::mouseMoveEvent(e);
    const QPoint pos = e->position().toPoint();
    dragged(QPointF(pos - lastMouse_));
    lastMouse_ = pos;
    update();
}

void PictureGlView::mouseReleaseEvent(QMouseEvent* e) {
    if (e->button() != Qt::LeftButton) return QOpenGLWidget::mouseReleaseEvent(e);
    dragging_ = false;
    setCursor(Qt::OpenHandCursor);
}

void PictureGlView::mouseDoubleClickEvent(QMouseEvent* e) {
    if (e->button() == Qt::LeftButton) resetView();
}

void PictureGlView::wheelEvent(QWheelEvent* e) {
    // One notch (120 units) zooms by 2^(1/4): four notches double the scale.
    const double notches = e->angleDelta().y() / 120.0;
    if (notches == 0.0) return;
    zoomed(std::pow(2.0, notches / 4.0), e->position());
    update();
    e->accept();
}

} // namespace flowscope
