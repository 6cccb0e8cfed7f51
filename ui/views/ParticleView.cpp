#include "ui/views/ParticleView.h"

#include "engine/gaussian/MatrixRoots.h"
#include "ui/shell/OpenGLSetup.h"
#include "ui/views/Hud.h"
#include "ui/views/ImGuiLayer.h"
#include "ui/views/StatusOverlay.h"
#include "ui/widgets/Colormap.h"

#include <Eigen/Eigenvalues>
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
#include <cstring>
#include <limits>
#include <vector>

namespace flowscope {

namespace {

constexpr int kRefreshMs = 15;
// Mesa's software rasterizers composite the whole window on the CPU for every frame (measured with perf on
// llvmpipe: ~70 % of all CPU time at 60 Hz, with the UI thread waiting on it), so there the view polls for
// new snapshots at 30 Hz and leaves the cores to the simulation.
constexpr int kSoftwareRefreshMs = 33;
constexpr double kFrameMargin = 0.08;
constexpr double kPickRadius = 10.0; // logical pixels
constexpr int kTrailFrames = 24;
constexpr Eigen::Index kMaxTrailTokens = 20000;

bool finiteRow(const Tokens& P, Eigen::Index i) {
    return P.row(i).allFinite();
}

// Bounding box of the finite rows of P (N x k); false when there are none.
bool finiteBox(const Tokens& P, Eigen::Vector3d& lo, Eigen::Vector3d& hi) {
    lo.setConstant(std::numeric_limits<double>::infinity());
    hi = -lo;
    bool any = false;
    for (Eigen::Index i = 0; i < P.rows(); ++i) {
        if (!finiteRow(P, i)) continue;
        for (Eigen::Index c = 0; c < P.cols(); ++c) {
            lo(c) = std::min(lo(c), P(i, c));
            hi(c) = std::max(hi(c), P(i, c));
        }
        any = true;
    }
    for (Eigen::Index c = P.cols(); c < 3; ++c) lo(c) = hi(c) = 0.0;
    return any;
}

// Greedy leader clustering labels (the rule of countClusters): token i joins the first leader within tol.
std::vector<int> clusterLabels(const Tokens& X, double tol) {
    std::vector<Eigen::Index> leaders;
    std::vector<int> label(std::size_t(X.rows()), 0);
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
        int found = -1;
        for (std::size_t l = 0; l < leaders.size() && found < 0; ++l)
            if ((X.row(i) - X.row(leaders[l])).norm() <= tol) found = int(l);
        if (found < 0 && leaders.size() < 4096) {
            found = int(leaders.size());
            leaders.push_back(i);
        }
        label[std::size_t(i)] = std::max(found, 0);
    }
    return label;
}

// A qualitative palette for cluster labels (Tableau 10), repeated.
QColor categorical(int k) {
    static const QColor colors[] = {{78, 121, 167}, {242, 142, 43}, {225, 87, 89},   {118, 183, 178},
                                    {89, 161, 79},  {237, 201, 72}, {176, 122, 161}, {255, 157, 167},
                                    {156, 117, 95}, {186, 176, 172}};
    return colors[k % 10];
}

bool sameValues(const Tokens& a, const Tokens& b) {
    return a.rows() == b.rows() && a.cols() == b.cols() &&
           std::memcmp(a.data(), b.data(), std::size_t(a.size()) * sizeof(double)) == 0;
}

Eigen::Matrix4f toEigen(const QMatrix4x4& m) {
    return Eigen::Map<const Eigen::Matrix4f>(m.constData()); // both column-major
}

PointVertex vertex(const Eigen::Vector3d& p, const QColor& c, double alpha = 1.0) {
    return {float(p.x()),      float(p.y()),     float(p.z()), float(c.redF()),
            float(c.greenF()), float(c.blueF()), float(alpha)};
}

} // namespace

ParticleView::ParticleView(QWidget* parent) : QOpenGLWidget(parent) {
    QSurfaceFormat format = QSurfaceFormat::defaultFormat();
    format.setVersion(kGLMajor, kGLMinor);
    format.setProfile(QSurfaceFormat::CoreProfile);
    setFormat(format);
    setFocusPolicy(Qt::StrongFocus);
    setMouseTracking(true); // hover picking
    setCursor(Qt::OpenHandCursor);
    setMinimumSize(200, 150);
    basis_ = Mat::Identity(2, 2);
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
    scene_ = scene;
    overlay_.setScene(scene);
    try {
        pickField_ = makeCpuField(scene.attention, scene.d, Precision::Float64);
    } catch (const std::exception&) {
        pickField_.reset();
    }
    quickBeta_ = scene.attention.beta;
    quickVScale_ = 1.0;
    ProjectionSpec p;
    p.dims = scene.d >= 3 ? 3 : 2;
    p.pca = scene.d > 3;
    projection_ = p;
    picked_ = -1;
    pickedWeights_.resize(0);
    previous_.reset();
    userCamera_ = false;
    updateBasis(nullptr);
    framePending_ = true;
    pointsDirty_ = linesDirty_ = true;
    update();
}

void ParticleView::setAttention(const AttentionSpec& spec) {
    if (!scene_) return;
    scene_->attention = spec;
    overlay_.setAttention(spec, shown_ ? shown_->t : 0.0);
    if (pickField_) pickField_->setAttention(spec);
    quickBeta_ = spec.beta;
    updatePickWeights();
    linesDirty_ = true;
    update();
}

void ParticleView::setIntegrator(const IntegratorSpec& spec) {
    if (!scene_) return;
    scene_->integrator = spec;
    overlay_.setIntegrator(spec, shown_ ? shown_->t : 0.0);
    linesDirty_ = true;
    update();
}

void ParticleView::setPreview(std::shared_ptr<const Snapshot> preview) {
    preview_ = std::move(preview);
    refresh();
}

void ParticleView::refresh() {
    if (!source_ && !preview_) return;
    auto s = preview_ ? preview_ : source_();
    if (s == shown_) return;
    // A new scene (or the first data) is framed automatically; later snapshots keep the user's camera.
    const bool newRun = s && (!shown_ || s->generation != shown_->generation);
    if (newRun) framePending_ = true;
    // GPU-resident runs publish new device positions with the tokens of the last download, which change
    // ~15 times a second: the CPU vertices (colours, picking) are rebuilt only when those change.
    const bool sameTokens = !newRun && s && shown_ && s->device && sameValues(s->tokens, shown_->tokens);
    if (!sameTokens) previous_ = newRun ? nullptr : shown_;
    shown_ = std::move(s);
    if (shown_ && basis_.rows() != shown_->tokens.cols()) updateBasis(&shown_->tokens);
    if (picked_ >= 0 && shown_ && picked_ >= shown_->tokens.rows()) picked_ = -1;
    updatePickWeights();
    if (!sameTokens) pointsDirty_ = true;
    linesDirty_ = true;
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
    colorBy_ = c;
    pointsDirty_ = true;
    update();
}

void ParticleView::setShowOverlay(bool on) {
    showOverlay_ = on;
    linesDirty_ = true;
    update();
}

void ParticleView::setShowTrails(bool on) {
    showTrails_ = on;
    linesDirty_ = true;
    update();
}

void ParticleView::setProjection(const ProjectionSpec& p) {
    projection_ = p;
    const int d = shown_ ? int(shown_->tokens.cols()) : scene_ ? scene_->d : 2;
    if (d < 3) projection_.dims = 2;
    updateBasis(shown_ ? &shown_->tokens : nullptr);
    framePending_ = pointsDirty_ = linesDirty_ = true;
    update();
}

void ParticleView::updateBasis(const Tokens* from) {
    const int d = from ? int(from->cols()) : scene_ ? scene_->d : 2;
    const int k = std::min(projection_.dims, std::max(d, 1));
    if (d <= 0) return;
    basis_ = Mat::Zero(d, std::max(k, 2));
    if (projection_.pca && d > k) {
        // Principal directions of the current cloud (or of the initial covariance before any tokens).
        Mat cov = Mat::Identity(d, d);
        if (from && from->rows() > 1 && from->allFinite())
            cov = tokenCovariance(*from);
        else if (scene_ && scene_->initial.kind == InitKind::Gaussian && scene_->initial.cov.rows() == d)
            cov = scene_->initial.cov;
        Eigen::SelfAdjointEigenSolver<Mat> eig(symmetricPart(cov));
        for (int c = 0; c < k; ++c) basis_.col(c) = eig.eigenvectors().col(d - 1 - c);
    } else {
        for (int c = 0; c < k; ++c) basis_(std::clamp(projection_.axes[std::size_t(c)], 0, d - 1), c) = 1.0;
    }
    // d = 1: the second plotted coordinate stays 0.
}

Tokens ParticleView::projected(const Tokens& X) const {
    if (X.cols() != basis_.rows()) return Tokens::Zero(X.rows(), basis_.cols());
    return X * basis_;
}

std::optional<QPointF> ParticleView::worldToPixel(const Vec& x) const {
    if (x.size() != basis_.rows()) return std::nullopt;
    return shownToPixel(basis_.transpose() * x);
}

std::optional<QPointF> ParticleView::shownToPixel(const Vec& p) const {
    if (is3D()) {
        QPointF pixel;
        if (!camera_.worldToPixel(Eigen::Vector3d(p(0), p(1), p(2)), &pixel)) return std::nullopt;
        return pixel;
    }
    return view_.worldToPixel(QPointF(p(0), p(1)));
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
    Eigen::Vector3d lo, hi;
    if (!finiteBox(projected(shown_->tokens), lo, hi)) return;
    if (is3D())
        camera_.frame(lo, hi);
    else
        view_.frame(QRectF(QPointF(lo.x(), lo.y()), QPointF(hi.x(), hi.y())), kFrameMargin);
}

void ParticleView::initializeGL() {
    // The context can be replaced (the widget moves to another window): release with the old one.
    connect(context(), &QOpenGLContext::aboutToBeDestroyed, this, &ParticleView::releaseGL,
            Qt::UniqueConnection);
    const QSurfaceFormat f = context()->format();
    std::string why;
    QOpenGLContext* ctx = context();
    const bool loaded =
        f.version() >= qMakePair(3, 3) &&
        widgetGl_.load([ctx](const char* name) { return GlApi::Proc(ctx->getProcAddress(name)); }, &why);
    if (!loaded || !renderer_.initialize(widgetGl_)) {
        glError_ = QStringLiteral("OpenGL 3.3 core is not available (got %1.%2). %3")
                       .arg(f.majorVersion())
                       .arg(f.minorVersion())
                       .arg(QString::fromStdString(loaded ? renderer_.log() : why));
        return;
    }
    gl_ = &widgetGl_;
    imgui_->initialize(); // without it the view still draws, only the heads-up display is missing
    const auto* name = reinterpret_cast<const char*>(context()->functions()->glGetString(GL_RENDERER));
    const QByteArray renderer = name ? QByteArray(name) : QByteArray();
    softwareRenderer_ = renderer.contains("llvmpipe") || renderer.contains("softpipe");
    timer_.setInterval(softwareRenderer_ ? kSoftwareRefreshMs : kRefreshMs);
    glReady_ = true;
    pointsDirty_ = linesDirty_ = true;
}

void ParticleView::releaseGL() {
    if (!glReady_ || offscreen_) return;
    makeCurrent();
    renderer_.destroy();
    imgui_->destroy();
    doneCurrent();
    glReady_ = false;
}

bool ParticleView::initializeOffscreen(const GlApi& gl, QString* whyNot) {
    if (glReady_) {
        if (whyNot) *whyNot = QStringLiteral("the view already draws in a context");
        return false;
    }
    if (!renderer_.initialize(gl)) {
        if (whyNot) *whyNot = QString::fromStdString(renderer_.log());
        renderer_.destroy();
        return false;
    }
    gl_ = &gl;
    glReady_ = offscreen_ = true;
    pointsDirty_ = linesDirty_ = true;
    return true;
}

void ParticleView::releaseOffscreen() {
    if (!offscreen_) return;
    renderer_.destroy();
    gl_ = nullptr;
    glReady_ = offscreen_ = false;
}

void ParticleView::resizeGL(int w, int h) {
    // Keep the centre and the scale: resizing reveals more or less of the plane, it does not zoom. Until the
    // user moves the camera, a new size frames the cloud again (the first frames often come at a
    // provisional size while the window lays itself out).
    view_.setViewportSize(QSizeF(w, h));
    camera_.setViewportSize(QSizeF(w, h));
    if (!userCamera_) framePending_ = true;
}

void ParticleView::uploadPoints() {
    pointsDirty_ = false;
    if (!glReady_) return;
    std::vector<PointVertex> vertices;
    if (shown_ && shown_->tokens.cols() > 0) {
        const Tokens& X = shown_->tokens;
        shownProjected_ = projected(X); // reused by the lines, the 3-D labels and picking
        projectedOf_ = shown_;
        const Tokens& P = shownProjected_;
        boxValid_ = finiteBox(P, boxLo_, boxHi_);
        origin_ = boxValid_ ? Eigen::Vector3d(0.5 * (boxLo_ + boxHi_)) : Eigen::Vector3d::Zero();

        Vec speed;
        double speedScale = 0.0;
        if (colorBy_ == ColorBy::Speed && previous_ && previous_->tokens.rows() == X.rows() &&
            shown_->t > previous_->t) {
            speed = (X - previous_->tokens).rowwise().norm() / (shown_->t - previous_->t);
            std::vector<double> sorted(speed.data(), speed.data() + speed.size());
            std::erase_if(sorted, [](double v) { return !std::isfinite(v); });
            if (!sorted.empty()) {
                const std::size_t q = std::size_t(0.95 * double(sorted.size() - 1));
                std::nth_element(sorted.begin(), sorted.begin() + std::ptrdiff_t(q), sorted.end());
                speedScale = sorted[q];
            }
        }
        // Per-token entropies come with the recorded frames (every output.every steps).
        const Vec& entropy = shown_->observables.tokenEntropy;
        std::vector<int> labels;
        if (colorBy_ == ColorBy::Cluster)
            labels = clusterLabels(X, scene_ ? scene_->output.clusterTol : 1e-3);

        vertices.reserve(std::size_t(X.rows()));
        const double last = double(std::max<Eigen::Index>(X.rows() - 1, 1));
        for (Eigen::Index i = 0; i < X.rows(); ++i) {
            // A diverged token has no place on screen: transparent (the fragment shader discards it), kept so
            // that vertex i is token i, as drawing from a device copy needs.
            if (!finiteRow(P, i)) {
                vertices.push_back({0, 0, 0, 0, 0, 0, 0});
                continue;
            }
            QColor c;
            switch (colorBy_) {
            case ColorBy::Index:
                c = viridis(double(i) / last);
                break;
            case ColorBy::Speed:
                c = viridis(speedScale > 0 ? speed(i) / speedScale : 0.0);
                break;
            case ColorBy::Cluster:
                c = categorical(labels[std::size_t(i)]);
                break;
            case ColorBy::Entropy: // H_i / log N: 0 = attends to one token, 1 = uniform attention
                c = entropy.size() == X.rows()
                        ? viridis(entropy(i) / std::log(double(std::max<Eigen::Index>(X.rows(), 2))))
                        : QColor(128, 128, 128);
                break;
            }
            Eigen::Vector3d p = Eigen::Vector3d::Zero();
            for (Eigen::Index k = 0; k < std::min<Eigen::Index>(P.cols(), 3); ++k) p(k) = P(i, k);
            if (!is3D()) p.z() = 0.0;
            vertices.push_back(vertex(p - origin_, c));
        }
    }
    renderer_.upload(PointRenderer::Points, vertices);
}

void ParticleView::uploadLines() {
    linesDirty_ = false;
    if (!glReady_) return;
    std::vector<PointVertex> lines; // under the points: trails
    std::vector<PointVertex> over;  // over them: the Gaussian, the picked token's attention, 3-D axes
    auto to3 = [this](const Vec& p) {
        Eigen::Vector3d v = Eigen::Vector3d::Zero();
        for (Eigen::Index k = 0; k < std::min<Eigen::Index>(p.size(), is3D() ? 3 : 2); ++k) v(k) = p(k);
        return Eigen::Vector3d(v - origin_);
    };
    auto segment = [&](const Eigen::Vector3d& a, const Eigen::Vector3d& b, const QColor& c, double alpha) {
        over.push_back(vertex(a, c, alpha));
        over.push_back(vertex(b, c, alpha));
    };

    // Trails: the last recorded frames, fading with age.
    if (showTrails_ && shown_ && shown_->history && shown_->tokens.rows() <= kMaxTrailTokens) {
        const std::size_t size = shown_->history->size();
        const std::size_t from = size > kTrailFrames ? size - kTrailFrames : 0;
        std::vector<RecordedFrame> frames = shown_->history->since(from);
        std::erase_if(frames, [&](const RecordedFrame& f) {
            return !f.tokens || f.tokens->rows() != shown_->tokens.rows() || f.t > shown_->t;
        });
        const double last = double(std::max<Eigen::Index>(shown_->tokens.rows() - 1, 1));
        for (std::size_t k = 1; k < frames.size(); ++k) {
            const Tokens A = projected(*frames[k - 1].tokens), B = projected(*frames[k].tokens);
            const double alpha = 0.6 * double(k) / double(frames.size());
            for (Eigen::Index i = 0; i < A.rows(); ++i)
                if (finiteRow(A, i) && finiteRow(B, i)) {
                    const QColor c = viridis(double(i) / last);
                    lines.push_back(vertex(to3(A.row(i).transpose()), c, alpha));
                    lines.push_back(vertex(to3(B.row(i).transpose()), c, alpha));
                }
        }
    }

    // The Gaussian of the moment ODE: 1 and 2 sigma, in the colour of text (white on dark, ink on light).
    const QColor overlayColor =
        style_.background.lightness() > 128 ? QColor(40, 44, 52) : QColor(235, 235, 240);
    if (showOverlay_ && shown_ && overlay_.available() && basis_.rows() == overlay_.at(0)->mean.size()) {
        const GaussianState g = *overlay_.at(shown_->t);
        const Vec m = basis_.transpose() * g.mean;
        const Mat S = basis_.transpose() * g.cov * basis_;
        if (m.allFinite() && S.allFinite()) {
            // 2-D: the ellipse of S; 3-D: the ellipses of S in its three principal planes.
            std::vector<std::pair<int, int>> planes{{0, 1}};
            Mat R = Mat::Identity(S.rows(), S.cols());
            Vec lambda = S.diagonal();
            if (is3D()) {
                Eigen::SelfAdjointEigenSolver<Mat> eig(symmetricPart(S));
                R = eig.eigenvectors();
                lambda = eig.eigenvalues().cwiseMax(0.0);
                planes = {{0, 1}, {1, 2}, {0, 2}};
            }
            for (const auto& [a, b] : planes) {
                for (double k : {1.0, 2.0}) {
                    const int segments = 96;
                    Vec prev;
                    for (int s = 0; s <= segments; ++s) {
                        const double th = 2.0 * M_PI * s / segments;
                        Vec p = m;
                        if (is3D()) {
                            p += k * (std::sqrt(lambda(a)) * std::cos(th) * R.col(a) +
                                      std::sqrt(lambda(b)) * std::sin(th) * R.col(b));
                        } else {
                            const Mat root = psdSqrt(symmetricPart(S.topLeftCorner(2, 2)));
                            p.head(2) += k * root * Eigen::Vector2d(std::cos(th), std::sin(th));
                        }
                        if (s > 0) segment(to3(prev), to3(p), overlayColor, k == 1.0 ? 1.0 : 0.8);
                        prev = p;
                    }
                }
            }
        }
    }

    // The picked token's attention: a line to every token, opacity = P_ij / max_j P_ij.
    if (picked_ >= 0 && shown_ && pickedWeights_.size() == shownProjected_.rows()) {
        const Tokens& P = shownProjected_;
        const double top = pickedWeights_.maxCoeff();
        const QColor c(255, 214, 102);
        for (Eigen::Index j = 0; top > 0 && j < P.rows(); ++j) {
            const double w = pickedWeights_(j) / top;
            if (w < 0.02 || j == picked_ || !finiteRow(P, j)) continue;
            segment(to3(P.row(picked_).transpose()), to3(P.row(j).transpose()), c, 0.9 * w);
        }
    }

    // 3-D: the three coordinate directions from the cloud's corner, for orientation.
    if (is3D() && shown_ && boxValid_) {
        const QColor axis[3] = {{230, 90, 90}, {90, 200, 110}, {100, 140, 240}};
        for (int k = 0; k < 3; ++k)
            segment(boxLo_ - origin_, boxLo_ - origin_ + axisLength() * Eigen::Vector3d::Unit(k), axis[k],
                    0.9);
    }
    renderer_.upload(PointRenderer::Lines, lines);
    renderer_.upload(PointRenderer::LinesOver, over);
}

double ParticleView::axisLength() const {
    return std::max((boxHi_ - boxLo_).maxCoeff(), 1e-12) * 0.25;
}

bool ParticleView::drawDevicePoints(const Eigen::Matrix4f& viewProjection, float pointSize) {
    drewFromDevice_ = false;
    if (!shown_ || !shown_->device || preview_ || offscreen_) return false;
    const DeviceTokens& dev = *shown_->device;
    if (!dev.shareGroup || dev.shareGroup != context()->shareGroup()) return false; // not our buffer names
    if (dev.d != basis_.rows() || dev.d > kDeviceDrawMaxDim) return false;
    // The view axes as rows of a 4 x 4 over the token's coordinates (the same basis the CPU path uses).
    Eigen::Matrix4f project = Eigen::Matrix4f::Zero();
    for (int k = 0; k < std::min<int>(int(basis_.cols()), 3); ++k) // a 2-D view has 2 columns: z = 0
        for (int c = 0; c < dev.d; ++c) project(k, c) = float(basis_(c, k));
    drewFromDevice_ =
        renderer_.drawDevicePoints(dev, project, origin_.cast<float>(), viewProjection, pointSize);
    return drewFromDevice_;
}

QMatrix4x4 ParticleView::viewProjection() const {
    if (is3D()) return camera_.viewProjection(origin_);
    // 2-D: x_ndc = (x + origin - centre) * 2 s / width, likewise y; the shift is formed in double.
    const double s = view_.pixelsPerUnit();
    const double sx = 2.0 * s / std::max(width(), 1), sy = 2.0 * s / std::max(height(), 1);
    QMatrix4x4 m;
    m.setToIdentity();
    m(0, 0) = float(sx);
    m(1, 1) = float(sy);
    m(0, 3) = float((origin_.x() - view_.center().x()) * sx);
    m(1, 3) = float((origin_.y() - view_.center().y()) * sy);
    return m;
}

void ParticleView::updatePickWeights() {
    pickedWeights_.resize(0);
    if (picked_ < 0 || !shown_ || !pickField_ || picked_ >= shown_->tokens.rows()) return;
    const Tokens& X = shown_->tokens;
    if (!X.allFinite()) return;
    if (scene_ && scene_->attention.type == AttentionType::Sinkhorn) {
        Tokens dX; // the plan's potentials come from a velocity evaluation
        pickField_->velocity(shown_->t, X, dX);
    }
    pickedWeights_ = pickField_->attentionWeights(shown_->t, X, picked_);
}

void ParticleView::pick(int token) {
    if (token == picked_) return;
    picked_ = token;
    updatePickWeights();
    linesDirty_ = true;
    update();
}

void ParticleView::prepareFrame() {
    view_.setViewportSize(QSizeF(width(), height()));
    camera_.setViewportSize(QSizeF(width(), height()));
    applyPendingFrame();
    if (pointsDirty_) uploadPoints();
    if (linesDirty_) uploadLines();
}

QRectF ParticleView::paintUnder(QPainter& painter, bool hud) {
    const QRectF statusBox = shown_ && !hud ? statusRect(painter, rect(), *shown_) : QRectF();
    if (!is3D()) drawGrid(painter, view_, style_, statusBox);
    return statusBox;
}

void ParticleView::drawScene(double dpr) {
    if (!glReady_) return;
    gl_->Viewport(0, 0, int(std::lround(width() * dpr)), int(std::lround(height() * dpr)));
    const Eigen::Matrix4f vp = toEigen(viewProjection());
    renderer_.drawLines(PointRenderer::Lines, vp, float(dpr));
    if (!drawDevicePoints(vp, float(pointSize() * dpr))) renderer_.drawPoints(vp, float(pointSize() * dpr));
    renderer_.drawLines(PointRenderer::LinesOver, vp, float(dpr));
}

void ParticleView::paintOver(QPainter& painter, bool hud, const QRectF& statusBox) {
    const QRectF area = rect();
    if (is3D()) drawAxisLabels3D(painter);
    if (drawing_) drawDrawnPoints(painter);

    if (!glError_.isEmpty()) {
        painter.setPen(QColor(255, 120, 120));
        painter.drawText(area.adjusted(20, 20, -20, -20), Qt::AlignCenter | Qt::TextWordWrap, glError_);
    }
    if (shown_) {
        if (!hud) drawStatus(painter, area, *shown_);
        drawBanner(painter, area, statusBox, *shown_);
    } else {
        painter.setPen(style_.label);
        painter.drawText(area, Qt::AlignCenter, tr("No scene"));
    }
}

void ParticleView::paintGL() {
    const double dpr = devicePixelRatioF();
    QElapsedTimer paintClock;
    paintClock.start();
    prepareFrame();

    auto* gl = context()->functions();
    gl->glClearColor(style_.background.redF(), style_.background.greenF(), style_.background.blueF(), 1.0f);
    gl->glClear(GL_COLOR_BUFFER_BIT);

    QPainter painter(this);
    // The heads-up display shows the run's status; the plain status box stands in when ImGui is missing.
    const bool hud = hudVisible_ && glReady_ && imgui_->initialized();
    const QRectF statusBox = paintUnder(painter, hud);
    if (glReady_) {
        painter.beginNativePainting();
        drawScene(dpr);
        painter.endNativePainting();
    }
    paintOver(painter, hud, statusBox);
    painter.end();

    // An empty ImGui frame when the HUD is hidden, so that no stale window keeps taking the mouse.
    if (glReady_ && imgui_->initialized()) drawHud();

    // Frame time: this paint's CPU cost, smoothed (exponential, about a second at 60 Hz).
    const double ms = double(paintClock.nsecsElapsed()) * 1e-6;
    frameMs_ = frameMs_ == 0.0 ? ms : 0.95 * frameMs_ + 0.05 * ms;
}

void ParticleView::renderOffscreen(QImage& image, bool hud, const OffscreenLayer& glLayer) {
    const double dpr = image.devicePixelRatio();
    prepareFrame();
    image.fill(style_.background);
    QRectF statusBox;
    {
        QPainter painter(&image);
        statusBox = paintUnder(painter, hud);
    }
    glLayer([&] { drawScene(dpr); });
    QPainter painter(&image);
    paintOver(painter, hud, statusBox);
}

void ParticleView::drawAxisLabels3D(QPainter& painter) {
    if (!shown_ || !boxValid_) return;
    const Eigen::Vector3d& lo = boxLo_;
    const double len = axisLength();
    painter.setPen(style_.label);
    for (int k = 0; k < 3; ++k) {
        QPointF p;
        if (!camera_.worldToPixel(lo + 1.15 * len * Eigen::Vector3d::Unit(k), &p)) continue;
        const QString name = projection_.pca ? QStringLiteral("PC%1").arg(k + 1)
                                             : QStringLiteral("x%1").arg(projection_.axes[std::size_t(k)]);
        painter.drawText(QRectF(p.x() - 30, p.y() - 10, 60, 20), Qt::AlignCenter, name);
    }
}

HudStats ParticleView::hudStats() const {
    HudStats stats;
    if (!shown_) return stats;
    stats.t = shown_->t;
    stats.step = shown_->step;
    stats.totalSteps = shown_->totalSteps;
    stats.n = long(shown_->tokens.rows());
    stats.d = int(shown_->tokens.cols());
    stats.backend = shown_->backend;
    stats.stepsPerSecond = shown_->stepsPerSecond;
    stats.frameMs = frameMs_;
    stats.playing = shown_->playing;
    return stats;
}

void ParticleView::drawHud() {
    imgui_->newFrame();
    if (shown_ && hudVisible_) {
        flowscope::drawHud(hudStats());

        QuickParams q;
        q.beta = float(quickBeta_);
        q.vScale = float(quickVScale_);
        q.stepsPerSecond = float(quickRate_);
        q.maxSpeed = quickMaxSpeed_;
        if (drawQuickSliders(q, &quickLayout_)) {
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
        if (picked_ >= 0) {
            std::vector<std::pair<int, double>> top;
            for (Eigen::Index j = 0; j < pickedWeights_.size(); ++j)
                top.emplace_back(int(j), pickedWeights_(j));
            const std::size_t k = std::min<std::size_t>(5, top.size());
            std::partial_sort(top.begin(), top.begin() + std::ptrdiff_t(k), top.end(),
                              [](const auto& a, const auto& b) { return a.second > b.second; });
            top.resize(k);
            drawPickTooltip(picked_, top,
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
        drawn_.resize(0, basis_.rows());
        if (is3D()) setProjection({2, projection_.pca, projection_.axes});
        pick(-1);
    }
    setCursor(on ? Qt::CrossCursor : Qt::OpenHandCursor);
    update();
    emit drawingChanged(on);
}

void ParticleView::keyPressEvent(QKeyEvent* e) {
    if (drawing_ && e->key() == Qt::Key_Escape) return setDrawing(false);
    QOpenGLWidget::keyPressEvent(e);
}

void ParticleView::clearDrawnPoints() {
    drawn_.resize(0, basis_.rows());
    update();
}

void ParticleView::addDrawnPoint(QPointF pixel) {
    const QPointF uv = view_.pixelToWorld(pixel);
    const Vec x = basis_.leftCols(2) * Eigen::Vector2d(uv.x(), uv.y());
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
    if (e->button() != Qt::LeftButton) return QOpenGLWidget::mousePressEvent(e);
    if (drawing_ && !(imgui_ && imgui_->isOverWindow(e->position()))) {
        stroking_ = true;
        addDrawnPoint(e->position());
        return;
    }
    dragging_ = true;
    lastMouse_ = e->position().toPoint();
    setCursor(Qt::ClosedHandCursor);
}

void ParticleView::mouseMoveEvent(QMouseEvent* e) {
    const QPoint pos = e->position().toPoint();
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
    if (dragging_) {
        userCamera_ = true;
        if (is3D())
            camera_.orbit(QPointF(pos - lastMouse_));
        else
            view_.pan(QPointF(pos - lastMouse_));
        lastMouse_ = pos;
        update();
        return;
    }
    // Hover: pick the nearest token within kPickRadius logical pixels.
    int best = -1;
    if (shown_ && !(imgui_ && imgui_->isOverWindow(e->position()))) {
        double bestDist = kPickRadius * kPickRadius;
        // The coordinates of the last upload when they belong to the shown snapshot (the usual case).
        Tokens fresh;
        const Tokens& P = projectedOf_ == shown_ ? shownProjected_ : (fresh = projected(shown_->tokens));
        for (Eigen::Index i = 0; i < P.rows(); ++i) {
            const auto p = shownToPixel(P.row(i).transpose());
            if (!p) continue;
            const QPointF d = *p - e->position();
            const double dist = d.x() * d.x() + d.y() * d.y();
            if (dist < bestDist) bestDist = dist, best = int(i);
        }
    }
    pick(best);
}

void ParticleView::mouseReleaseEvent(QMouseEvent* e) {
    if (e->button() != Qt::LeftButton) return QOpenGLWidget::mouseReleaseEvent(e);
    if (stroking_) {
        stroking_ = false;
        emit pointsDrawn(drawn_);
        return;
    }
    dragging_ = false;
    setCursor(Qt::OpenHandCursor);
}

void ParticleView::mouseDoubleClickEvent(QMouseEvent* e) {
    if (e->button() == Qt::LeftButton && !drawing_) frameAll();
}

void ParticleView::leaveEvent(QEvent* e) {
    pick(-1);
    QOpenGLWidget::leaveEvent(e);
}

void ParticleView::wheelEvent(QWheelEvent* e) {
    // One notch (120 units) zooms by 2^(1/4): four notches double the scale.
    const double notches = e->angleDelta().y() / 120.0;
    if (notches == 0.0) return;
    userCamera_ = true;
    if (is3D())
        camera_.zoom(std::pow(2.0, notches / 4.0));
    else
        view_.zoomAt(e->position(), std::pow(2.0, notches / 4.0));
    update();
    e->accept();
}

} // namespace flowscope
