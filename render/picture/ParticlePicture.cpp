#include "render/picture/ParticlePicture.h"

#include "engine/dynamics/CausalParking.h"
#include "engine/dynamics/DeviceStepper.h"
#include "engine/dynamics/HardmaxCells.h"
#include "engine/dynamics/Observables.h"
#include "engine/gaussian/MatrixRoots.h"
#include "render/picture/StatusOverlay.h"

#include <Eigen/Eigenvalues>
#include <QCoreApplication>
#include <QFontMetricsF>
#include <QPainter>
#include <QPolygonF>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace flowscope {

// --- Helpers ---

namespace {

constexpr double kFrameMargin = 0.08;

bool sameValues(const Tokens& a, const Tokens& b) {
    return a.rows() == b.rows() && a.cols() == b.cols() &&
           std::memcmp(a.data(), b.data(), std::size_t(a.size()) * sizeof(double)) == 0;
}

Eigen::Matrix4f toEigen(const QMatrix4x4& m) {
    return Eigen::Map<const Eigen::Matrix4f>(m.constData()); // both column-major
}

} // namespace

// --- What is shown ---

// The theory layers' data from the scene: the hardmax cells' score matrix Q^T K where the scene has the
// cells, and the parking leaders of its initial tokens where it is the parking picture's (else none).
void ParticlePicture::updateTheoryLayers() {
    hardmax_.active = scene_ && hasHardmaxCells(scene_->attention, scene_->d);
    if (hardmax_.active)
        hardmax_.M = scene_->attention.heads.front().Q.transpose() * scene_->attention.heads.front().K;
    parking_.leaders.resize(0, 2);
    if (!scene_ || scene_->d != 2 || !hasParkingPicture(scene_->attention, scene_->d)) return;
    Tokens X;
    try {
        X = initialTokens(*scene_);
    } catch (const std::exception&) {
        return; // a scene whose tokens cannot be drawn shows none
    }
    parking_.delta = parkingSpacing(scene_->attention.beta);
    const std::vector<int> leaders = parkingLeaders(X, parking_.delta);
    parking_.leaders.resize(Eigen::Index(leaders.size()), 2);
    for (std::size_t k = 0; k < leaders.size(); ++k)
        parking_.leaders.row(Eigen::Index(k)) = X.row(leaders[k]).normalized();
}

void ParticlePicture::setScene(const Scene& scene) {
    scene_ = scene;
    updateTheoryLayers();
    overlay_.setScene(scene);
    gaussian_.overlay = &overlay_;
    tokens_.clusterTol = scene.output.clusterTol;
    sphere_.enabled = scene.attention.sphere;
    ProjectionSpec p;
    p.dims = scene.d >= 3 ? 3 : 2;
    p.pca = scene.d > 3;
    projection_ = p;
    attention_ = {};
    previous_.reset();
    updateBasis(nullptr);
    framePending_ = pointsDirty_ = linesDirty_ = true;
}

void ParticlePicture::setAttention(const AttentionSpec& spec) {
    if (!scene_) return;
    scene_->attention = spec;
    sphere_.enabled = spec.sphere;
    updateTheoryLayers(); // beta sets the spacing; the type, masking and matrices which layers apply
    overlay_.setAttention(spec, shown_ ? shown_->t : 0.0,
                          shown_ ? tokenGaussian(shown_->tokens) : std::nullopt);
    linesDirty_ = true;
}

void ParticlePicture::setIntegrator(const IntegratorSpec& spec) {
    if (!scene_) return;
    scene_->integrator = spec;
    overlay_.setIntegrator(spec, shown_ ? shown_->t : 0.0);
    linesDirty_ = true;
}

bool ParticlePicture::show(std::shared_ptr<const Snapshot> s) {
    if (s == shown_) return false;
    const bool newRun = s && (!shown_ || s->generation != shown_->generation);
    if (newRun) framePending_ = true;
    const bool sameTokens = !newRun && s && shown_ && s->device && sameValues(s->tokens, shown_->tokens);
    if (!sameTokens) previous_ = newRun ? nullptr : shown_;
    shown_ = std::move(s);
    if (shown_ && frame_.basis.rows() != shown_->tokens.cols()) updateBasis(&shown_->tokens);
    if (shown_ && attention_.token >= shown_->tokens.rows()) attention_ = {};
    if (!sameTokens) pointsDirty_ = true;
    linesDirty_ = true;
    return true;
}

void ParticlePicture::setStyle(const PlotStyle& style) {
    style_ = style;
    // The Gaussian in the colour of text: white on dark, ink on light.
    gaussian_.color = style.background.lightness() > 128 ? QColor(40, 44, 52) : QColor(235, 235, 240);
    linesDirty_ = true;
}

void ParticlePicture::setProjection(const ProjectionSpec& p) {
    projection_ = p;
    const int d = shown_ ? int(shown_->tokens.cols()) : scene_ ? scene_->d : 2;
    if (d < 3) projection_.dims = 2;
    updateBasis(shown_ ? &shown_->tokens : nullptr);
    framePending_ = pointsDirty_ = linesDirty_ = true;
}

void ParticlePicture::setColorBy(ColorBy c) {
    tokens_.colorBy = c;
    pointsDirty_ = true;
}

void ParticlePicture::setLayer(Layer layer, bool on) {
    layerSwitch(*this, layer) = on;
    linesDirty_ = true;
}

bool ParticlePicture::layer(Layer layer) const {
    return layerSwitch(*this, layer);
}

void ParticlePicture::setPicked(int token, Vec weights) {
    attention_.token = token;
    attention_.weights = std::move(weights);
    linesDirty_ = true;
}

void ParticlePicture::updateBasis(const Tokens* from) {
    const int d = from ? int(from->cols()) : scene_ ? scene_->d : 2;
    if (d <= 0) return;
    const int k = std::min(projection_.dims, d);
    Mat& basis = frame_.basis;
    basis = Mat::Zero(d, std::max(k, 2)); // d = 1: the second plotted coordinate stays 0
    if (projection_.pca && d > k) {
        // Principal directions of the current cloud (or of the initial covariance before any tokens).
        Mat cov = Mat::Identity(d, d);
        if (from && from->rows() > 1 && from->allFinite())
            cov = tokenCovariance(*from);
        else if (scene_ && scene_->initial.kind == InitKind::Gaussian && scene_->initial.cov.rows() == d)
            cov = scene_->initial.cov;
        Eigen::SelfAdjointEigenSolver<Mat> eig(symmetricPart(cov));
        for (int c = 0; c < k; ++c) basis.col(c) = eig.eigenvectors().col(d - 1 - c);
    } else {
        for (int c = 0; c < k; ++c) basis(std::clamp(projection_.axes[std::size_t(c)], 0, d - 1), c) = 1.0;
    }
}

void ParticlePicture::rebuildFrame() {
    framed_ = shown_;
    frame_.snapshot = shown_.get();
    frame_.previous = previous_.get();
    frame_.is3D = is3D();
    const Tokens& X = shown_->tokens;
    frame_.projected = X.cols() == frame_.basis.rows() ? Tokens(X * frame_.basis)
                                                       : Tokens(Tokens::Zero(X.rows(), frame_.basis.cols()));
    frame_.boxValid = finiteBox(frame_.projected, frame_.boxLo, frame_.boxHi);
    frame_.origin =
        frame_.boxValid ? Eigen::Vector3d(0.5 * (frame_.boxLo + frame_.boxHi)) : Eigen::Vector3d::Zero();
    if (!frame_.is3D) frame_.origin.z() = 0.0;
}

// --- Cameras and projection ---

Tokens ParticlePicture::shownCoordinates() const {
    if (!shown_) return {};
    if (framed_ == shown_) return frame_.projected;
    const Tokens& X = shown_->tokens;
    return X.cols() == frame_.basis.rows() ? Tokens(X * frame_.basis)
                                           : Tokens(Tokens::Zero(X.rows(), frame_.basis.cols()));
}

void ParticlePicture::setSize(QSizeF size) {
    size_ = QSizeF(std::max(size.width(), 1.0), std::max(size.height(), 1.0));
    view_.setViewportSize(size_);
    camera_.setViewportSize(size_);
}

std::optional<QPointF> ParticlePicture::shownToPixel(const Vec& p) const {
    if (is3D()) {
        QPointF pixel;
        if (p.size() < 3 || !camera_.worldToPixel(Eigen::Vector3d(p(0), p(1), p(2)), &pixel))
            return std::nullopt;
        return pixel;
    }
    if (p.size() < 2) return std::nullopt;
    return view_.worldToPixel(QPointF(p(0), p(1)));
}

std::optional<QPointF> ParticlePicture::worldToPixel(const Vec& x) const {
    if (x.size() != frame_.basis.rows()) return std::nullopt;
    return shownToPixel(frame_.basis.transpose() * x);
}

ParticlePicture::OffView ParticlePicture::offView() const {
    OffView off;
    if (!shown_) return off;
    const QRectF area(QPointF(0, 0), size_);
    if (framed_ == shown_) {
        // Every finite token lies in the box of the frame, so when the box's corners are all drawn inside the
        // (convex) picture, so are the tokens: the usual case costs eight projections, not N.
        if (!frame_.boxValid) return off; // all diverged
        if (boxInside(0.0, 0.0)) return off;
    }
    Tokens fresh;
    const Tokens& P = framed_ == shown_ ? frame_.projected : (fresh = shownCoordinates());
    QPointF sum(0, 0);
    long placed = 0; // off-view tokens with a pixel (in 3-D, those behind the camera have none)
    for (Eigen::Index i = 0; i < P.rows(); ++i) {
        if (!finiteRow(P, i)) continue; // diverged: the banner's business, not a place
        const auto p = shownToPixel(P.row(i).transpose());
        if (p && area.contains(*p)) continue;
        ++off.count;
        if (p) sum += *p, ++placed;
    }
    if (off.count == 0) return off;
    // From the centre towards the centroid, to where that ray leaves the picture.
    const QPointF centre = area.center(), d = placed ? sum / double(placed) - centre : QPointF(0, 0);
    const double sx = std::abs(d.x()) > 1e-9 ? 0.5 * area.width() / std::abs(d.x()) : HUGE_VAL;
    const double sy = std::abs(d.y()) > 1e-9 ? 0.5 * area.height() / std::abs(d.y()) : HUGE_VAL;
    const double s = std::min(sx, sy);
    off.toward = std::isfinite(s) ? centre + s * d : QPointF(centre.x(), area.bottom());
    return off;
}

bool ParticlePicture::boxInside(double insetX, double insetY) const {
    const QRectF area = QRectF(QPointF(0, 0), size_).adjusted(insetX, insetY, -insetX, -insetY);
    for (int c = 0; c < 8; ++c) {
        const Eigen::Vector3d corner((c & 1 ? frame_.boxHi : frame_.boxLo).x(),
                                     (c & 2 ? frame_.boxHi : frame_.boxLo).y(),
                                     (c & 4 ? frame_.boxHi : frame_.boxLo).z());
        const auto p = shownToPixel(corner);
        // A corner on the border counts as inside (contains() leaves out the right and bottom edges).
        if (!p || p->x() < area.left() - 1e-9 || p->x() > area.right() + 1e-9 || p->y() < area.top() - 1e-9 ||
            p->y() > area.bottom() + 1e-9)
            return false;
    }
    return true;
}

bool ParticlePicture::follow(double seconds) {
    if (!shown_ || framed_ != shown_ || !frame_.boxValid) return false;
    const double a = 1.0 - std::exp(-std::max(seconds, 0.0) / kFollowSeconds);
    const auto [lo, hi] = framingBox();
    const Eigen::Vector3d middle = 0.5 * (lo + hi);
    const Eigen::Vector3d carry = followed_ ? Eigen::Vector3d(middle - *followed_) : Eigen::Vector3d::Zero();
    followed_ = middle;
    if (is3D()) {
        OrbitCamera goal = camera_;
        goal.frame(lo, hi);
        camera_.target += carry;
        camera_.target += a * (goal.target - camera_.target);
        camera_.distance *= std::pow(goal.distance / camera_.distance, a);
        const bool settled = (camera_.target - goal.target).norm() < 1e-3 * goal.distance &&
                             std::abs(std::log(camera_.distance / goal.distance)) < 1e-3;
        if (settled || !boxInside(0.0, 0.0)) {
            camera_.target = goal.target;
            camera_.distance = goal.distance;
        }
        return !settled;
    }
    ViewTransform goal = view_;
    goal.frame(QRectF(QPointF(lo.x(), lo.y()), QPointF(hi.x(), hi.y())), kFrameMargin);
    double scale = view_.pixelsPerUnit() * std::pow(goal.pixelsPerUnit() / view_.pixelsPerUnit(), a);
    QPointF centre = view_.center() + QPointF(carry.x(), carry.y());
    centre += a * (goal.center() - centre);
    // The box inside the picture less kKeepMargin: first small enough, then the centre no further from the
    // box's middle than that leaves room for (on each axis, the interval of centres that keep both sides in).
    const double usable = 1.0 - 2.0 * kKeepMargin;
    const double w = hi.x() - lo.x(), h = hi.y() - lo.y();
    if (w > 0.0) scale = std::min(scale, size_.width() * usable / w);
    if (h > 0.0) scale = std::min(scale, size_.height() * usable / h);
    const double halfW = 0.5 * size_.width() * usable / scale, halfH = 0.5 * size_.height() * usable / scale;
    centre.setX(std::max(std::min(centre.x(), lo.x() + halfW), hi.x() - halfW));
    centre.setY(std::max(std::min(centre.y(), lo.y() + halfH), hi.y() - halfH));
    view_.setCenterAndScale(centre, scale);
    const QPointF miss = (view_.center() - goal.center()) * goal.pixelsPerUnit();
    const bool settled = std::abs(std::log(view_.pixelsPerUnit() / goal.pixelsPerUnit())) < 1e-3 &&
                         std::hypot(miss.x(), miss.y()) < 0.25;
    if (settled) view_ = goal;
    return !settled;
}

// --- HUD statistics ---

double ParticlePicture::pointSize() const {
    return pointDiameter(shown_ ? long(shown_->tokens.rows()) : 1);
}

HudStats ParticlePicture::hudStats(double frameMs) const {
    HudStats stats;
    if (!shown_) return stats;
    stats.t = shown_->t;
    stats.step = shown_->step;
    stats.totalSteps = shown_->totalSteps;
    stats.n = long(shown_->tokens.rows());
    stats.d = int(shown_->tokens.cols());
    stats.backend = shown_->backend;
    stats.stepsPerSecond = shown_->stepsPerSecond;
    stats.frameMs = frameMs;
    stats.playing = shown_->playing;
    stats.subStepsPerStep = shown_->subStepsPerStep;
    stats.rejectedSubSteps = shown_->rejectedSubSteps;
    return stats;
}

// --- Drawing ---

void ParticlePicture::prepare() {
    view_.setViewportSize(size_);
    camera_.setViewportSize(size_);
    if (!shown_ || shown_->tokens.cols() == 0) {
        if (framed_ || pointsDirty_ || linesDirty_) { // the last shown tokens go; nothing to redo after that
            framed_.reset();
            frame_.snapshot = nullptr;
            if (gl_) {
                renderer_.upload(PointRenderer::Points, {});
                renderer_.upload(PointRenderer::Lines, {});
                renderer_.upload(PointRenderer::LinesOver, {});
            }
            pointsDirty_ = linesDirty_ = false;
        }
        return;
    }
    if (pointsDirty_ || !framed_) {
        rebuildFrame();
        VertexBuffer points;
        tokens_.append(frame_, points);
        if (gl_) renderer_.upload(PointRenderer::Points, points);
        pointsDirty_ = false;
        linesDirty_ = true;
    }
    if (linesDirty_) {
        framed_ = shown_; // a republished device snapshot: the same tokens at a later time
        frame_.snapshot = shown_.get();
        VertexBuffer under, over;
        sphere_.append(frame_, under);
        trails_.append(frame_, under);
        gaussian_.append(frame_, over);
        parking_.append(frame_, over);
        hardmax_.append(frame_, under);
        attention_.append(frame_, over);
        axes_.enabled = is3D();
        axes_.append(frame_, over);
        if (gl_) {
            renderer_.upload(PointRenderer::Lines, under);
            renderer_.upload(PointRenderer::LinesOver, over);
        }
        linesDirty_ = false;
    }
    // A pending frame fits the camera to the finite tokens' box (the vertices do not depend on the camera).
    if (framePending_ && frame_.boxValid) {
        if (is3D())
            camera_.frame(framingBox().first, framingBox().second);
        else
            view_.frame(QRectF(QPointF(frame_.boxLo.x(), frame_.boxLo.y()),
                               QPointF(frame_.boxHi.x(), frame_.boxHi.y())),
                        kFrameMargin);
    }
    if (framePending_) followed_.reset(); // framed afresh (a new run, another projection)
    framePending_ = false;
}

QMatrix4x4 ParticlePicture::viewProjection() const {
    if (is3D()) return camera_.viewProjection(frame_.origin);
    // The plane: x_ndc = (x + origin - centre) * 2 s / width, likewise y; the shift is formed in double.
    const double s = view_.pixelsPerUnit();
    const double sx = 2.0 * s / size_.width(), sy = 2.0 * s / size_.height();
    QMatrix4x4 m;
    m.setToIdentity();
    m(0, 0) = float(sx);
    m(1, 1) = float(sy);
    m(0, 3) = float((frame_.origin.x() - view_.center().x()) * sx);
    m(1, 3) = float((frame_.origin.y() - view_.center().y()) * sy);
    return m;
}

std::pair<Eigen::Vector3d, Eigen::Vector3d> ParticlePicture::framingBox() const {
    if (!showsSphere()) return {frame_.boxLo, frame_.boxHi};
    const Eigen::Vector3d one = Eigen::Vector3d::Ones(); // the unit sphere's box about the shown origin
    return {frame_.boxLo.cwiseMin(-one), frame_.boxHi.cwiseMax(one)};
}

std::pair<double, double> ParticlePicture::depthCueRange() const {
    if (!showsSphere()) return {0.0, 0.0};
    const double centre = camera_.depth(Eigen::Vector3d::Zero()); // the unit sphere about the shown origin
    return {centre - 1.0, centre + 1.0};
}

std::pair<QString, QString> ParticlePicture::axisNames() const {
    if (projection_.pca) return {QStringLiteral("PC1"), QStringLiteral("PC2")};
    return {QStringLiteral("x%1").arg(projection_.axes[0]), QStringLiteral("x%1").arg(projection_.axes[1])};
}

QSizeF ParticlePicture::tickLabelBands(const QFont& font) const {
    return is3D() ? QSizeF(0, 0) : gridLabelBands(view_, QFontMetricsF(font));
}

QRectF ParticlePicture::paintUnder(QPainter& painter, bool hud) const {
    const QRectF area(QPointF(0, 0), size_);
    const QRectF statusBox = shown_ && !hud ? statusRect(painter, area, *shown_) : QRectF();
    if (is3D()) return statusBox;
    // The axes' names at the ends of the tick labels' bands (3-D names its axes at their tips).
    const QFontMetricsF fm(painter.font());
    const auto [xName, yName] = axisNames();
    const QRectF xBox = xAxisNameBox(view_, fm, xName);
    const QRectF yBox = yAxisNameBox(fm, yName, statusBox.isEmpty() ? 0.0 : statusBox.bottom());
    drawGrid(painter, view_, style_, {statusBox, xBox.adjusted(-8, 0, 0, 0), yBox.adjusted(0, 0, 0, 8)});
    painter.save();
    painter.setPen(style_.label.lighter(130));
    painter.drawText(xBox, Qt::AlignCenter, xName);
    painter.drawText(yBox, Qt::AlignCenter, yName);
    painter.restore();
    return statusBox;
}

bool ParticlePicture::drawGl(double dpr, const void* shareGroup) {
    if (!gl_) return false;
    gl_->Viewport(0, 0, int(std::lround(size_.width() * dpr)), int(std::lround(size_.height() * dpr)));
    const Eigen::Matrix4f vp = toEigen(viewProjection());
    const float pointPixels = float(pointSize() * dpr);
    PointRenderer::DepthCue cue;
    if (const auto [nearW, farW] = depthCueRange(); farW > nearW) {
        cue.nearW = float(nearW);
        cue.span = float(farW - nearW);
        cue.strength = 0.7f;
        cue.background = Eigen::Vector3f(float(style_.background.redF()), float(style_.background.greenF()),
                                         float(style_.background.blueF()));
    }
    renderer_.setDepthCue(cue);
    renderer_.drawLines(PointRenderer::Lines, vp, float(dpr));
    bool fromDevice = false;
    if (shareGroup && shown_ && shown_->device) {
        const DeviceTokens& dev = *shown_->device;
        const Mat& basis = frame_.basis;
        if (dev.shareGroup == shareGroup && dev.d == basis.rows() && dev.d <= kDeviceDrawMaxDim) {
            // The shown axes as rows of a 4 x 4 over the token's coordinates (the basis the CPU path uses).
            Eigen::Matrix4f project = Eigen::Matrix4f::Zero();
            for (int k = 0; k < std::min<int>(int(basis.cols()), 3); ++k) // the plane: 2 columns, z = 0
                for (int c = 0; c < dev.d; ++c) project(k, c) = float(basis(c, k));
            fromDevice =
                renderer_.drawDevicePoints(dev, project, frame_.origin.cast<float>(), vp, pointPixels);
        }
    }
    if (!fromDevice) renderer_.drawPoints(vp, pointPixels);
    renderer_.drawLines(PointRenderer::LinesOver, vp, float(dpr));
    return fromDevice;
}

void ParticlePicture::paintAxisNames(QPainter& painter) const {
    if (!shown_ || !frame_.boxValid) return;
    const double len = AxesLayer::length(frame_);
    painter.setPen(style_.label);
    for (int k = 0; k < 3; ++k) {
        QPointF p;
        if (!camera_.worldToPixel(frame_.boxLo + 1.15 * len * Eigen::Vector3d::Unit(k), &p)) continue;
        const QString name = projection_.pca ? QStringLiteral("PC%1").arg(k + 1)
                                             : QStringLiteral("x%1").arg(projection_.axes[std::size_t(k)]);
        painter.drawText(QRectF(p.x() - 30, p.y() - 10, 60, 20), Qt::AlignCenter, name);
    }
}

// How many tokens the camera leaves out, and an arrow on the border towards them (double click frames all).
void ParticlePicture::paintOffView(QPainter& painter) const {
    const OffView off = offView();
    if (off.count == 0) return;
    const QRectF area(QPointF(0, 0), size_);
    const QColor ink(255, 170, 60);
    painter.save();
    painter.setRenderHint(QPainter::Antialiasing);
    // The arrow: a triangle 8 px inside the border, pointing out towards the tokens.
    const QPointF centre = area.center(), d = off.toward - centre;
    const double length = std::max(std::hypot(d.x(), d.y()), 1e-9);
    const QPointF u = d / length, n(-u.y(), u.x());
    const QPointF tip = off.toward - 6.0 * u, base = tip - 14.0 * u;
    painter.setPen(Qt::NoPen);
    painter.setBrush(ink);
    painter.drawPolygon(QPolygonF({tip, base + 7.0 * n, base - 7.0 * n}));
    // Two short lines, so that the note fits beside the quick controls in a narrow view.
    const QString note =
        QCoreApplication::translate("ParticleView",
                                    "%1 of %2 tokens off view\ndouble-click: frame · Shift+F: follow")
            .arg(off.count)
            .arg(shown_->tokens.rows());
    const QFontMetricsF fm(painter.font());
    QRectF box = fm.boundingRect(QRectF(0, 0, 1e4, 1e4), Qt::AlignRight, note).adjusted(-6, -3, 6, 3);
    // Bottom right, above the tick labels: the app's quick controls take the bottom left, its HUD the top
    // right.
    box.moveBottomRight(QPointF(area.right() - 12, area.bottom() - 36));
    painter.setBrush(
        QColor(style_.background.red(), style_.background.green(), style_.background.blue(), 210));
    painter.drawRoundedRect(box, 4, 4);
    painter.setPen(ink);
    painter.drawText(box, Qt::AlignCenter, note);
    painter.restore();
}

void ParticlePicture::paintOver(QPainter& painter, bool hud, const QRectF& statusBox) const {
    const QRectF area(QPointF(0, 0), size_);
    if (is3D()) paintAxisNames(painter);
    paintOffView(painter);
    if (shown_) {
        if (!hud && statusBox_) drawStatus(painter, area, *shown_);
        drawBanner(painter, area, statusBox, *shown_);
    } else {
        painter.setPen(style_.label);
        painter.drawText(area, Qt::AlignCenter, QCoreApplication::translate("ParticleView", "No scene"));
    }
}

void ParticlePicture::render(QImage& image, bool hud, const OffscreenLayer& glLayer) {
    setSize(QSizeF(image.width(), image.height()) / image.devicePixelRatio());
    prepare();
    image.fill(style_.background);
    QRectF statusBox;
    {
        QPainter painter(&image);
        statusBox = paintUnder(painter, hud);
    }
    glLayer([&] { drawGl(image.devicePixelRatio()); });
    QPainter painter(&image);
    paintOver(painter, hud, statusBox);
}

} // namespace flowscope
