#include "ui/views/ConeView.h"

#include "ui/shell/OpenGLSetup.h"

#include <QMetaObject>
#include <QMouseEvent>
#include <QOpenGLContext>
#include <QOpenGLFunctions>
#include <QPainter>
#include <QSurfaceFormat>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>
#include <mutex>

namespace flowscope {

// The worker's way back: it posts the result to `view` while holding the lock, and the destructor clears
// `view` under the same lock, so a result is only ever posted to a live view (Qt drops events still queued
// for a view that is then destroyed).
struct ConeView::Mailbox {
    std::mutex mutex;
    ConeView* view = nullptr;
};

ConeView::ConeView(QWidget* parent) : QOpenGLWidget(parent), mailbox_(std::make_shared<Mailbox>()) {
    mailbox_->view = this;
    QSurfaceFormat format = QSurfaceFormat::defaultFormat();
    format.setVersion(kGLMajor, kGLMinor);
    format.setProfile(QSurfaceFormat::CoreProfile);
    setFormat(format);
    setFocusPolicy(Qt::StrongFocus);
    setCursor(Qt::OpenHandCursor);
    setMinimumSize(240, 200);
}

ConeView::~ConeView() {
    {
        const std::lock_guard lock(mailbox_->mutex);
        mailbox_->view = nullptr; // a solve still running keeps its result to itself
    }
    releaseGL();
}

void ConeView::setScene(const Scene& scene) {
    ++generation_;
    queued_.reset();
    const bool unsupported = picture_.setScene(scene).has_value();
    picture_.setSolving(!unsupported);
    update();
    if (unsupported) return;
    // One solve at a time per view: while one runs, only the newest scene waits (edits can arrive faster
    // than solves finish, and every stale solve would delay the one that matters).
    if (workerBusy_)
        queued_ = scene;
    else
        startSolve(scene);
}

void ConeView::startSolve(const Scene& scene) {
    workerBusy_ = true;
    runDetached([scene, box = mailbox_, generation = generation_] {
        auto result = std::make_shared<const ConeData>(computeConeData(scene));
        const std::lock_guard lock(box->mutex);
        if (ConeView* view = box->view)
            QMetaObject::invokeMethod(
                view, [view, generation, result] { view->deliver(generation, result); },
                Qt::QueuedConnection);
    });
}

void ConeView::deliver(std::uint64_t generation, std::shared_ptr<const ConeData> data) {
    workerBusy_ = false;
    if (queued_) {
        const Scene next = std::move(*queued_);
        queued_.reset();
        startSolve(next);
    }
    if (generation != generation_) return; // superseded by a newer scene
    picture_.setData(std::move(data));
    update();
    emit solved();
}

void ConeView::setMode(ConeMode mode) {
    picture_.setMode(mode);
    update();
}

void ConeView::setTime(double t) {
    picture_.setTime(t);
    update();
}

void ConeView::setCurrentCovariance(std::optional<Mat> cov) {
    picture_.setCurrentCovariance(std::move(cov));
    update();
}

void ConeView::resetCamera() {
    picture_.resetCamera();
    update();
}

void ConeView::initializeGL() {
    connect(context(), &QOpenGLContext::aboutToBeDestroyed, this, &ConeView::releaseGL, Qt::UniqueConnection);
    const QSurfaceFormat f = context()->format();
    std::string why;
    QOpenGLContext* ctx = context();
    const bool loaded =
        f.version() >= qMakePair(3, 3) &&
        widgetGl_.load([ctx](const char* name) { return GlApi::Proc(ctx->getProcAddress(name)); }, &why);
    if (!loaded || !picture_.initialize(widgetGl_, &why)) {
        glError_ = QStringLiteral("OpenGL 3.3 core is not available (got %1.%2). %3")
                       .arg(f.majorVersion())
                       .arg(f.minorVersion())
                       .arg(QString::fromStdString(why));
        return;
    }
    glReady_ = true;
}

void ConeView::releaseGL() {
    if (!glReady_) return;
    makeCurrent();
    picture_.release();
    doneCurrent();
    glReady_ = false;
}

void ConeView::resizeGL(int w, int h) {
    picture_.setSize(QSizeF(w, h));
}

void ConeView::paintGL() {
    picture_.setSize(QSizeF(width(), height()));
    picture_.setFont(font());
    picture_.prepare();
    auto* gl = context()->functions();
    const QColor& background = PlotStyle().background;
    gl->glClearColor(background.redF(), background.greenF(), background.blueF(), 1.0f);
    gl->glClear(GL_COLOR_BUFFER_BIT);
    picture_.drawGl(devicePixelRatioF());
    QPainter painter(this);
    if (!glError_.isEmpty()) {
        painter.setPen(QColor(255, 120, 120));
        painter.drawText(rect().adjusted(20, 20, -20, -20), Qt::AlignCenter | Qt::TextWordWrap, glError_);
        return;
    }
    picture_.paintOver(painter);
}

void ConeView::mousePressEvent(QMouseEvent* e) {
    if (e->button() != Qt::LeftButton || picture_.mode() != ConeMode::Cone)
        return QOpenGLWidget::mousePressEvent(e);
    dragging_ = true;
    lastMouse_ = e->position().toPoint();
    setCursor(Qt::ClosedHandCursor);
}

void ConeView::mouseMoveEvent(QMouseEvent* e) {
    if (!dragging_) return QOpenGLWidget::mouseMoveEvent(e);
    const QPoint pos = e->position().toPoint(), delta = pos - lastMouse_;
    lastMouse_ = pos;
    // Half a degree per pixel: dragging right turns the cone to the right, dragging down looks from above.
    picture_.orbit(-0.5 * delta.x(), 0.5 * delta.y());
    update();
}

void ConeView::mouseReleaseEvent(QMouseEvent* e) {
    if (e->button() != Qt::LeftButton) return QOpenGLWidget::mouseReleaseEvent(e);
    dragging_ = false;
    setCursor(Qt::OpenHandCursor);
}

void ConeView::mouseDoubleClickEvent(QMouseEvent* e) {
    if (e->button() == Qt::LeftButton) resetCamera();
}

void ConeView::wheelEvent(QWheelEvent* e) {
    // One notch (120 units) zooms by 2^(1/4): four notches double the scale.
    const double notches = e->angleDelta().y() / 120.0;
    if (notches == 0.0) return;
    picture_.zoomBy(std::pow(2.0, notches / 4.0));
    update();
    e->accept();
}

} // namespace flowscope
