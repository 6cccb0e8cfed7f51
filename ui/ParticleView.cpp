#include "ui/ParticleView.h"

#include "ui/Colormap.h"
#include "ui/OpenGLSetup.h"
#include "ui/StatusOverlay.h"

#include <QMouseEvent>
#include <QOpenGLContext>
#include <QOpenGLFunctions>
#include <QPainter>
#include <QSurfaceFormat>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace flowscope {

namespace {

constexpr int kRefreshMs = 100;
constexpr double kFrameMargin = 0.08;

// The two plotted coordinates of token i (d = 1 is drawn on the x axis).
QPointF plotted(const Tokens& X, Eigen::Index i) {
    return {X(i, 0), X.cols() >= 2 ? X(i, 1) : 0.0};
}

bool finite(QPointF p) {
    return std::isfinite(p.x()) && std::isfinite(p.y());
}

// Bounding box of the finite tokens; a null rect when there are none.
QRectF finiteBounds(const Tokens& X) {
    double x0 = std::numeric_limits<double>::infinity(), y0 = x0, x1 = -x0, y1 = -x0;
    if (X.cols() == 0) return {};
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
        const QPointF p = plotted(X, i);
        if (!finite(p)) continue;
        x0 = std::min(x0, p.x()), x1 = std::max(x1, p.x());
        y0 = std::min(y0, p.y()), y1 = std::max(y1, p.y());
    }
    if (x0 > x1) return {};
    return QRectF(QPointF(x0, y0), QPointF(x1, y1));
}

} // namespace

ParticleView::ParticleView(QWidget* parent) : QOpenGLWidget(parent) {
    QSurfaceFormat format = QSurfaceFormat::defaultFormat();
    format.setVersion(kGLMajor, kGLMinor);
    format.setProfile(QSurfaceFormat::CoreProfile);
    setFormat(format);
    setFocusPolicy(Qt::StrongFocus);
    setMouseTracking(false);
    setCursor(Qt::OpenHandCursor);
    setMinimumSize(200, 150);

    timer_.setInterval(kRefreshMs);
    connect(&timer_, &QTimer::timeout, this, &ParticleView::refresh);
    timer_.start();
}

ParticleView::~ParticleView() {
    releaseGL();
}

void ParticleView::setSource(SnapshotSource source) {
    source_ = std::move(source);
    refresh();
}

void ParticleView::refresh() {
    if (!source_) return;
    auto s = source_();
    if (s == shown_) return;
    // A new scene (or the first data) is framed automatically; later snapshots keep the user's camera.
    if (s && (!shown_ || s->generation != shown_->generation)) framePending_ = true;
    shown_ = std::move(s);
    uploadPending_ = true;
    update();
    emit snapshotChanged();
}

double ParticleView::pointSize() const {
    // Small clouds get big points, large clouds small ones, so neither looks sparse nor saturates.
    const double n = shown_ ? double(std::max<Eigen::Index>(shown_->tokens.rows(), 1)) : 1.0;
    return std::clamp(2.5 + 64.0 / std::sqrt(n), 3.0, 10.0);
}

void ParticleView::frameAll() {
    framePending_ = true;
    update();
}

void ParticleView::applyPendingFrame() {
    if (!framePending_ || !shown_) return;
    framePending_ = false;
    view_.frame(finiteBounds(shown_->tokens), kFrameMargin);
}

void ParticleView::initializeGL() {
    // The context can be replaced (the widget moves to another window): release with the old one.
    connect(context(), &QOpenGLContext::aboutToBeDestroyed, this, &ParticleView::releaseGL,
            Qt::UniqueConnection);
    const QSurfaceFormat f = context()->format();
    if (f.version() < qMakePair(3, 3) || !renderer_.initialize()) {
        glError_ = QStringLiteral("OpenGL 3.3 core is not available (got %1.%2). %3")
                       .arg(f.majorVersion())
                       .arg(f.minorVersion())
                       .arg(renderer_.log());
        return;
    }
    glReady_ = true;
    uploadPending_ = true;
}

void ParticleView::releaseGL() {
    if (!glReady_) return;
    makeCurrent();
    renderer_.destroy();
    doneCurrent();
    glReady_ = false;
}

void ParticleView::resizeGL(int w, int h) {
    // Keep the centre and the scale: resizing reveals more or less of the plane, it does not zoom.
    view_.setViewportSize(QSizeF(w, h));
}

void ParticleView::uploadPoints() {
    uploadPending_ = false;
    if (!glReady_) return;
    std::vector<PointVertex> vertices;
    QPointF origin;
    if (shown_) {
        const Tokens& X = shown_->tokens;
        const QRectF bounds = finiteBounds(X);
        origin = bounds.isNull() ? QPointF() : bounds.center();
        vertices.reserve(std::size_t(X.rows()));
        const double last = double(std::max<Eigen::Index>(X.rows() - 1, 1));
        for (Eigen::Index i = 0; X.cols() > 0 && i < X.rows(); ++i) {
            const QPointF p = plotted(X, i);
            if (!finite(p)) continue; // a diverged token has no place on screen
            const QColor c = viridis(double(i) / last);
            vertices.push_back(
                {float(p.x() - origin.x()), float(p.y() - origin.y()), c.redF(), c.greenF(), c.blueF()});
        }
    }
    renderer_.upload(vertices, origin);
}

void ParticleView::paintGL() {
    const double dpr = devicePixelRatioF();
    view_.setViewportSize(QSizeF(width(), height()));
    applyPendingFrame();
    if (uploadPending_) uploadPoints();

    auto* gl = context()->functions();
    gl->glClearColor(style_.background.redF(), style_.background.greenF(), style_.background.blueF(), 1.0f);
    gl->glClear(GL_COLOR_BUFFER_BIT);

    QPainter painter(this);
    const QRectF area = rect();
    const QRectF statusBox = shown_ ? statusRect(painter, area, *shown_) : QRectF();
    drawGrid(painter, view_, style_, statusBox);

    if (glReady_) {
        painter.beginNativePainting();
        gl->glViewport(0, 0, int(std::lround(width() * dpr)), int(std::lround(height() * dpr)));
        const double s = view_.pixelsPerUnit();
        renderer_.draw(view_.center(), QPointF(2.0 * s / width(), 2.0 * s / height()),
                       float(pointSize() * dpr));
        painter.endNativePainting();
    }

    if (!glError_.isEmpty()) {
        painter.setPen(QColor(255, 120, 120));
        painter.drawText(area.adjusted(20, 20, -20, -20), Qt::AlignCenter | Qt::TextWordWrap, glError_);
    }
    if (shown_) {
        drawStatus(painter, area, *shown_);
        drawBanner(painter, area, statusBox, *shown_);
    } else {
        painter.setPen(style_.label);
        painter.drawText(area, Qt::AlignCenter, tr("No scene"));
    }
}

void ParticleView::mousePressEvent(QMouseEvent* e) {
    if (e->button() != Qt::LeftButton) return QOpenGLWidget::mousePressEvent(e);
    dragging_ = true;
    lastMouse_ = e->position().toPoint();
    setCursor(Qt::ClosedHandCursor);
}

void ParticleView::mouseMoveEvent(QMouseEvent* e) {
    if (!dragging_) return QOpenGLWidget::mouseMoveEvent(e);
    const QPoint pos = e->position().toPoint();
    view_.pan(QPointF(pos - lastMouse_));
    lastMouse_ = pos;
    update();
}

void ParticleView::mouseReleaseEvent(QMouseEvent* e) {
    if (e->button() != Qt::LeftButton) return QOpenGLWidget::mouseReleaseEvent(e);
    dragging_ = false;
    setCursor(Qt::OpenHandCursor);
}

void ParticleView::mouseDoubleClickEvent(QMouseEvent* e) {
    if (e->button() == Qt::LeftButton) frameAll();
}

void ParticleView::wheelEvent(QWheelEvent* e) {
    // One notch (120 units) zooms by 2^(1/4): four notches double the scale.
    const double notches = e->angleDelta().y() / 120.0;
    if (notches == 0.0) return;
    view_.zoomAt(e->position(), std::pow(2.0, notches / 4.0));
    update();
    e->accept();
}

} // namespace flowscope
