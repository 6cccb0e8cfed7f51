#include "ui/views/ConeView.h"

#include <QMetaObject>
#include <QOpenGLFunctions>
#include <QPainter>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <utility>

namespace flowscope {

// The worker's way back: it posts the result to `view` while holding the lock, and the destructor clears
// `view` under the same lock, so a result is only ever posted to a live view (Qt drops events still queued
// for a view that is then destroyed).
struct ConeView::Mailbox {
    std::mutex mutex;
    ConeView* view = nullptr;
};

ConeView::ConeView(QWidget* parent) : PictureGlView(parent), mailbox_(std::make_shared<Mailbox>()) {
    mailbox_->view = this;
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
    queued_ = nullptr;
    const bool unsupported = picture_.setScene(scene).has_value();
    picture_.setSolving(!unsupported);
    update();
    if (unsupported) return;
    // One solve at a time per view: while one runs, only the newest scene waits (edits can arrive faster
    // than solves finish, and every stale solve would delay the one that matters).
    Solve solve = [scene] { return computeConeData(scene); };
    if (workerBusy_)
        queued_ = std::move(solve);
    else
        startSolve(std::move(solve));
}

void ConeView::startSolve(Solve solve) {
    workerBusy_ = true;
    runDetached([solve = std::move(solve), box = mailbox_, generation = generation_] {
        auto result = std::make_shared<const ConeData>(solve());
        const std::lock_guard lock(box->mutex);
        if (ConeView* view = box->view)
            QMetaObject::invokeMethod(
                view, [view, generation, result] { view->deliver(generation, result); },
                Qt::QueuedConnection);
    });
}

void ConeView::deliver(std::uint64_t generation, std::shared_ptr<const ConeData> data) {
    workerBusy_ = false;
    if (queued_) startSolve(std::exchange(queued_, nullptr));
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

void ConeView::setParticleEvent(const std::optional<RunEvent>& event) {
    const QString before = picture_.banner();
    picture_.setParticleEvent(event);
    if (picture_.banner() != before) update();
}

void ConeView::resetCamera() {
    picture_.resetCamera();
    update();
}

bool ConeView::initializePicture(const GlApi& gl, std::string* whyNot) {
    return picture_.initialize(gl, whyNot);
}

void ConeView::releasePicture() {
    picture_.release();
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
    if (!paintGlError(painter)) picture_.paintOver(painter);
}

bool ConeView::canDrag() const {
    return picture_.mode() == ConeMode::Cone; // the disc is seen from above only
}

void ConeView::dragged(QPointF delta) {
    // Half a degree per pixel: dragging right turns the cone to the right, dragging down looks from above.
    picture_.orbit(-0.5 * delta.x(), 0.5 * delta.y());
}

void ConeView::zoomed(double factor, QPointF) {
    picture_.zoomBy(factor);
}

} // namespace flowscope
