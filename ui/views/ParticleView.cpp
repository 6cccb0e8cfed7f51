#include "ui/views/ParticleView.h"

#include "render/picture/Hud.h"
#include "ui/export/ExportService.h"
#include "ui/shell/OpenGLSetup.h"
#include "ui/views/ImGuiLayer.h"

#include <QFontMetricsF>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QOpenGLContext>
#include <QOpenGLFunctions>
#include <QPainter>
#include <QSurfaceFormat>
#include <QWheelEvent>
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace flowscope {

namespace {

constexpr int kRefreshMs = 15;
// Mesa's software rasterizers composite the whole window on the CPU for every frame (measured with perf on
// llvmpipe: ~70 % of all CPU time at 60 Hz, with the UI thread waiting on it), so there the view polls for
// new snapshots at 30 Hz and leaves the cores to the simulation.
constexpr int kSoftwareRefreshMs = 33;
constexpr double kPickRadius = 10.0; // logical pixels

} // namespace

ParticleView::ParticleView(QWidget* parent) : PictureGlView(parent) {
    setMouseTracking(true); // hover picking
    setMinimumSize(200, 150);
    imgui_ = std::make_unique<ImGuiLayer>(this);

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

void ParticleView::setScene(const Scene& scene) {
    picture_.setScene(scene);
    try {
        pickField_ = makeCpuField(scene.attention, scene.d, Precision::Float64);
    } catch (const std::exception&) {
        pickField_.reset();
    }
    quickBeta_ = scene.attention.beta;
    quickVScale_ = 1.0;
    pickedWeights_.resize(0);
    userCamera_ = false;
    update();
}

void ParticleView::setAttention(const AttentionSpec& spec) {
    if (!picture_.scene()) return;
    // The hover's field follows the run's: another type is another field (the hover said "no attention
    // distribution" of a softmax run whose field had been made for sigmoid).
    try {
        retargetField(pickField_, picture_.scene()->attention, spec, picture_.scene()->d, Precision::Float64,
                      makeCpuField);
    } catch (const std::exception&) {
        pickField_.reset();
    }
    picture_.setAttention(spec);
    quickBeta_ = spec.beta;
    updatePickWeights();
    update();
}

void ParticleView::setIntegrator(const IntegratorSpec& spec) {
    picture_.setIntegrator(spec);
    update();
}

void ParticleView::setPreview(std::shared_ptr<const Snapshot> preview) {
    preview_ = std::move(preview);
    refresh();
}

void ParticleView::refresh() {
    if (!source_ && !preview_) return;
    if (!picture_.show(preview_ ? preview_ : source_())) return;
    updatePickWeights();
    update();
    emit snapshotChanged();
}

void ParticleView::setRate(double stepsPerSecond, bool maxSpeed) {
    quickRate_ = stepsPerSecond;
    quickMaxSpeed_ = maxSpeed;
}

void ParticleView::setHudVisible(bool on) {
    hudVisible_ = on;
    update();
}

void ParticleView::setColorBy(ColorBy c) {
    picture_.setColorBy(c);
    update();
}

void ParticleView::setLayer(Layer layer, bool on) {
    picture_.setLayer(layer, on);
    update();
}

void ParticleView::setProjection(const ProjectionSpec& p) {
    picture_.setProjection(p);
    update();
}

std::optional<QPointF> ParticleView::worldToPixel(const Vec& x) const {
    return picture_.worldToPixel(x);
}

void ParticleView::frameAll() {
    picture_.frameAll();
    update();
}

void ParticleView::setFollow(bool on) {
    if (on == follow_) return;
    follow_ = on;
    picture_.resetFollow();    // from where the camera is now
    followClock_.invalidate(); // the first step after a pause in following is a short one
    update();
    emit followChanged(on);
}

bool ParticleView::initializePicture(const GlApi& gl, std::string* whyNot) {
    return picture_.initialize(gl, whyNot);
}

void ParticleView::glInitialized() {
    imgui_->initialize(); // without it the view still draws, only the heads-up display is missing
    const auto* name = reinterpret_cast<const char*>(context()->functions()->glGetString(GL_RENDERER));
    const QByteArray renderer = name ? QByteArray(name) : QByteArray();
    softwareRenderer_ = renderer.contains("llvmpipe") || renderer.contains("softpipe");
    timer_.setInterval(softwareRenderer_ ? kSoftwareRefreshMs : kRefreshMs);
}

void ParticleView::releasePicture() {
    picture_.release();
    imgui_->destroy();
}

void ParticleView::resizeGL(int w, int h) {
    // Keep the centre and the scale: resizing reveals more or less of the plane, it does not zoom. Until the
    // user moves the camera, a new size frames the cloud again (the first frames often come at a
    // provisional size while the window lays itself out).
    picture_.setSize(QSizeF(w, h));
    if (!userCamera_) picture_.frameAll();
}

void ParticleView::updatePickWeights() {
    pickedWeights_.resize(0);
    const auto& shown = picture_.shown();
    const int picked = picture_.picked();
    if (picked >= 0 && shown && pickField_ && picked < shown->tokens.rows() && shown->tokens.allFinite()) {
        const Tokens& X = shown->tokens;
        if (picture_.scene() && picture_.scene()->attention.type == AttentionType::Sinkhorn) {
            Tokens dX; // the plan's potentials come from a velocity evaluation
            pickField_->velocity(shown->t, X, dX);
        }
        pickedWeights_ = pickField_->attentionWeights(shown->t, X, picked);
    }
    picture_.setPicked(picked, pickedWeights_);
}

void ParticleView::pick(int token) {
    if (token == picture_.picked()) return;
    picture_.setPicked(token, {});
    updatePickWeights();
    update();
    emit pickedChanged(token);
}

void ParticleView::paintGL() {
    const double dpr = devicePixelRatioF();
    QElapsedTimer paintClock;
    paintClock.start();
    picture_.setSize(QSizeF(width(), height()));
    picture_.prepare();
    if (follow_ && !drawing_) {
        // A step as long as the time since the last one (a 60 Hz one at first and after a long pause), and
        // another paint while the camera still moves.
        const double seconds =
            followClock_.isValid() ? std::min(followClock_.restart() * 1e-3, 0.1) : 1.0 / 60;
        if (!followClock_.isValid()) followClock_.start();
        if (picture_.follow(seconds)) update();
    }

    auto* gl = context()->functions();
    const QColor& background = picture_.style().background;
    gl->glClearColor(background.redF(), background.greenF(), background.blueF(), 1.0f);
    gl->glClear(GL_COLOR_BUFFER_BIT);

    QPainter painter(this);
    // The heads-up display shows the run's status; the plain status box stands in when ImGui is missing.
    const bool hud = hudVisible_ && glReady() && imgui_->initialized();
    const QRectF statusBox = picture_.paintUnder(painter, hud);
    if (glReady()) {
        painter.beginNativePainting();
        // GPU-resident runs: the points straight from the device buffers when they are this context's.
        drewFromDevice_ = picture_.drawGl(dpr, preview_ ? nullptr : context()->shareGroup());
        painter.endNativePainting();
    }
    picture_.paintOver(painter, hud, statusBox);
    if (drawing_) drawDrawnPoints(painter);
    paintGlError(painter);
    painter.end();

    // An empty ImGui frame when the HUD is hidden, so that no stale window keeps taking the mouse.
    if (glReady() && imgui_->initialized()) drawHud();

    // Frame time: this paint's CPU cost, smoothed (exponential, about a second at 60 Hz).
    const double ms = double(paintClock.nsecsElapsed()) * 1e-6;
    frameMs_ = frameMs_ == 0.0 ? ms : 0.95 * frameMs_ + 0.05 * ms;
}

HudStats ParticleView::hudStats() const {
    HudStats stats = picture_.hudStats(frameMs_);
    if (runState_) stats.playing = *runState_;
    return stats;
}

void ParticleView::setRunState(std::optional<bool> playing) {
    if (playing == runState_) return;
    runState_ = playing;
    update();
}

void ParticleView::drawHud() {
    imgui_->newFrame();
    // An export (ExportService's exportWidgetPng) is the picture and its HUD, without the controls over it.
    const bool exporting = property(kExportingProperty).toBool();
    if (picture_.shown() && hudVisible_) {
        flowscope::drawHud(hudStats());
        if (exporting) return imgui_->render();

        QuickParams q;
        q.beta = float(quickBeta_);
        q.vScale = float(quickVScale_);
        q.stepsPerSecond = float(quickRate_);
        q.maxSpeed = quickMaxSpeed_;
        // Inside the tick labels' bands, so that it covers none of them.
        const QSizeF bands = picture_.tickLabelBands(font());
        if (drawQuickSliders(q, &quickLayout_,
                             HudRect{float(bands.width()), 0.0f, 0.0f, float(bands.height())})) {
            if (double(q.beta) != quickBeta_) {
                quickBeta_ = q.beta;
                emit quickBetaChanged(quickBeta_);
            }
            if (double(q.vScale) != quickVScale_) {
                quickVScale_ = q.vScale;
                emit quickValueScaleChanged(quickVScale_);
            }
            if (double(q.stepsPerSecond) != quickRate_ || q.maxSpeed != quickMaxSpeed_) {
                quickRate_ = q.stepsPerSecond;
                quickMaxSpeed_ = q.maxSpeed;
                emit quickRateChanged(quickRate_, quickMaxSpeed_);
            }
        }
        if (picture_.picked() >= 0) {
            std::vector<std::pair<int, double>> top;
            for (Eigen::Index j = 0; j < pickedWeights_.size(); ++j)
                top.emplace_back(int(j), pickedWeights_(j));
            const std::size_t k = std::min<std::size_t>(5, top.size());
            std::partial_sort(top.begin(), top.begin() + std::ptrdiff_t(k), top.end(),
                              [](const auto& a, const auto& b) { return a.second > b.second; });
            top.resize(k);
            drawPickTooltip(picture_.picked(), top,
                            pickedWeights_.size()
                                ? std::string()
                                : std::string("no attention distribution for this variant"));
        }
    }
    imgui_->render();
}

// ---- drawing initial tokens
// ------------------------------------------------------------------------------------

void ParticleView::setDrawing(bool on) {
    if (on == drawing_) return;
    drawing_ = on;
    stroking_ = false;
    if (on) {
        drawn_.resize(0, projectionBasis().rows());
        if (is3D()) setProjection({2, projection().pca, projection().axes});
        pick(-1);
    }
    setCursor(on ? Qt::CrossCursor : Qt::OpenHandCursor);
    update();
    emit drawingChanged(on);
}

void ParticleView::keyPressEvent(QKeyEvent* e) {
    if (drawing_ && e->key() == Qt::Key_Escape) return setDrawing(false);
    PictureGlView::keyPressEvent(e);
}

void ParticleView::clearDrawnPoints() {
    drawn_.resize(0, projectionBasis().rows());
    update();
}

void ParticleView::addDrawnPoint(QPointF pixel) {
    const QPointF uv = picture_.view().pixelToWorld(pixel);
    const Vec x = projectionBasis().leftCols(2) * Eigen::Vector2d(uv.x(), uv.y());
    if (drawn_.cols() != x.size()) drawn_.resize(0, x.size());
    drawn_.conservativeResize(drawn_.rows() + 1, Eigen::NoChange);
    drawn_.row(drawn_.rows() - 1) = x.transpose();
    lastDrawn_ = pixel;
    update();
}

// The drawn points as dots over everything, with a hint saying what to do.
void ParticleView::drawDrawnPoints(QPainter& painter) {
    painter.setRenderHint(QPainter::Antialiasing);
    const QColor ink(255, 170, 60);
    painter.setPen(Qt::NoPen);
    painter.setBrush(ink);
    for (Eigen::Index i = 0; i < drawn_.rows(); ++i)
        if (const auto p = worldToPixel(drawn_.row(i).transpose())) painter.drawEllipse(*p, 2.5, 2.5);
    const QString hint =
        tr("Drawing initial tokens: drag to add points (%1 so far). Apply in the Scene panel "
           "restarts from them; Esc stops.")
            .arg(drawn_.rows());
    const QRectF room(16, 0, std::max(width() - 32, 60), height());
    QRectF text = QFontMetricsF(painter.font()).boundingRect(room, Qt::AlignHCenter | Qt::TextWordWrap, hint);
    text.moveBottom(height() - 36); // above the grid's axis labels
    painter.setBrush(QColor(0, 0, 0, 170));
    painter.drawRoundedRect(text.adjusted(-8, -4, 8, 4), 6, 6);
    painter.setPen(ink);
    painter.drawText(text, Qt::AlignHCenter | Qt::TextWordWrap, hint);
}

void ParticleView::mousePressEvent(QMouseEvent* e) {
    if (e->button() == Qt::LeftButton && drawing_ && !(imgui_ && imgui_->isOverWindow(e->position()))) {
        stroking_ = true;
        addDrawnPoint(e->position());
        return;
    }
    PictureGlView::mousePressEvent(e);
}

void ParticleView::mouseMoveEvent(QMouseEvent* e) {
    if (drawing_) {
        // Points spaced evenly along the stroke: fast drags are filled in, slow ones thinned.
        if (!stroking_) return;
        const QPointF to = e->position();
        const QPointF delta = to - lastDrawn_;
        const double length = std::hypot(delta.x(), delta.y());
        const int count = int(length / kDrawSpacing);
        const QPointF from = lastDrawn_;
        for (int k = 1; k <= count; ++k) addDrawnPoint(from + delta * (k * kDrawSpacing / length));
        return;
    }
    if (dragging_) return PictureGlView::mouseMoveEvent(e);
    // Hover: pick the nearest token within kPickRadius logical pixels.
    int best = -1;
    if (picture_.shown() && !(imgui_ && imgui_->isOverWindow(e->position()))) {
        double bestDist = kPickRadius * kPickRadius;
        const Tokens P = picture_.shownCoordinates();
        for (Eigen::Index i = 0; i < P.rows(); ++i) {
            const auto p = picture_.shownToPixel(P.row(i).transpose());
            if (!p) continue;
            const QPointF d = *p - e->position();
            const double dist = d.x() * d.x() + d.y() * d.y();
            if (dist < bestDist) bestDist = dist, best = int(i);
        }
    }
    pick(best);
}

void ParticleView::mouseReleaseEvent(QMouseEvent* e) {
    if (e->button() == Qt::LeftButton && stroking_) {
        stroking_ = false;
        emit pointsDrawn(drawn_);
        return;
    }
    PictureGlView::mouseReleaseEvent(e);
}

void ParticleView::leaveEvent(QEvent* e) {
    pick(-1);
    PictureGlView::leaveEvent(e);
}

// Moving the camera by hand ends following (which would undo it); orbiting in 3-D does not fight it.
void ParticleView::dragged(QPointF delta) {
    userCamera_ = true;
    if (is3D()) {
        picture_.camera().orbit(delta);
    } else {
        picture_.view().pan(delta);
        setFollow(false);
    }
}

void ParticleView::zoomed(double factor, QPointF at) {
    userCamera_ = true;
    setFollow(false);
    if (is3D())
        picture_.camera().zoom(factor);
    else
        picture_.view().zoomAt(at, factor);
}

void ParticleView::resetView() {
    if (!drawing_) frameAll();
}

} // namespace flowscope
