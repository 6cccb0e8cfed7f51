#include "render/picture/ConePicture.h"

#include "engine/gaussian/Cone.h"
#include "render/picture/Colormap.h"
#include "render/picture/StatusOverlay.h"

#include <QCoreApplication>
#include <QFontMetricsF>
#include <QGuiApplication>
#include <QLinearGradient>
#include <QPainter>
#include <QPainterPath>
#include <QPen>
#include <QVector4D>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace flowscope {

// --- Geometry and label helpers ---

namespace {

using Vector3 = Eigen::Vector3d;

constexpr double kPi = std::numbers::pi;
constexpr double kSurfaceOverData = 1.08; // the cone surface ends a little above the highest curve
constexpr double kAxisOverCone = 1.15;    // the trace scale stands a little outside the rim
constexpr double kAxisTop = 1.06;         // the z axis (Sigma ~ I) ends a little above the rim
constexpr double kDiscExtent = 1.22;      // half the square the disc view frames (room for the labels)
constexpr int kCircleSegments = 192;

const QColor kSurfaceColor(158, 184, 219);
const QColor kConeLineColor(196, 208, 230);
const QColor kReferenceColor(255, 99, 146);
const QColor kAccent(0x3d, 0x8b, 0xd9);

ConeVertex vertex(const Vector3& p, const QColor& c, double alpha, const Vector3& n = Vector3::Zero()) {
    return {float(p.x()), float(p.y()),    float(p.z()),      float(n.x()),     float(n.y()),
            float(n.z()), float(c.redF()), float(c.greenF()), float(c.blueF()), float(alpha)};
}

void addSegment(std::vector<ConeVertex>& out, const Vector3& a, const Vector3& b, const QColor& c,
                double alpha, const Vector3& na = Vector3::Zero(), const Vector3& nb = Vector3::Zero()) {
    out.push_back(vertex(a, c, alpha, na));
    out.push_back(vertex(b, c, alpha, nb));
}

// Outward unit normal of the cone z = sqrt(x^2 + y^2) along the generatrix at polar angle phi.
Vector3 coneNormal(double phi) {
    return Vector3(std::cos(phi), std::sin(phi), -1.0) / std::sqrt(2.0);
}

// The circle of radius r at height z (a horizontal cone section when r = z); normals when `onCone`.
void addCircle(std::vector<ConeVertex>& out, double r, double z, const QColor& c, double alpha, bool onCone) {
    for (int k = 0; k < kCircleSegments; ++k) {
        const double p0 = 2.0 * kPi * k / kCircleSegments, p1 = 2.0 * kPi * (k + 1) / kCircleSegments;
        addSegment(out, {r * std::cos(p0), r * std::sin(p0), z}, {r * std::cos(p1), r * std::sin(p1), z}, c,
                   alpha, onCone ? coneNormal(p0) : Vector3::Zero(),
                   onCone ? coneNormal(p1) : Vector3::Zero());
    }
}

// Drops points closer than `tol` to the last kept one (converging tails are long and still); keeps the ends.
std::vector<Vector3> decimate(const std::vector<Vector3>& in, double tol) {
    std::vector<Vector3> out;
    for (std::size_t k = 0; k < in.size(); ++k) {
        const bool last = k + 1 == in.size();
        if (out.empty() || (in[k] - out.back()).norm() > tol || (last && in[k] != out.back()))
            out.push_back(in[k]);
    }
    return out;
}

QString number(double v) {
    if (std::abs(v) < 1e-12) return QStringLiteral("0");
    const bool plain = std::abs(v) >= 1e3 && std::abs(v) < 1e6; // "1000", not "1e+03"
    return QString::number(v, plain ? 'f' : 'g', plain ? 0 : 3).replace(QLatin1Char('-'), QChar(0x2212));
}

// Where drawLabel puts `text`: centred on `anchor` moved `gap` pixels along `direction` (and half its size
// further, so that it sits beside the anchor rather than on it), kept inside `area`.
QRectF labelBox(const QFontMetricsF& fm, const QRectF& area, QPointF anchor, QPointF direction, double gap,
                const QString& text) {
    const QSizeF size(fm.horizontalAdvance(text), fm.height());
    const double len = std::hypot(direction.x(), direction.y());
    const QPointF d = len > 1e-9 ? direction / len : QPointF(0.0, -1.0);
    const QPointF centre =
        anchor + d * gap + QPointF(d.x() * size.width() * 0.5, d.y() * size.height() * 0.5);
    QRectF box(centre - QPointF(size.width() / 2, size.height() / 2), size);
    // Keep the label inside the widget (a narrow view must not clip "(a - b)/tr").
    const QRectF inside = area.adjusted(2, 2, -2, -2);
    box.moveLeft(
        std::clamp(box.left(), inside.left(), std::max(inside.left(), inside.right() - box.width())));
    box.moveTop(std::clamp(box.top(), inside.top(), std::max(inside.top(), inside.bottom() - box.height())));
    return box;
}

// `text` in `box`; a `halo` of the background colour keeps it readable over lines.
void drawLabelIn(QPainter& p, const QRectF& box, const QString& text, const QColor& halo = QColor()) {
    if (halo.isValid()) p.fillRect(box.adjusted(-2, 0, 2, 0), halo);
    p.drawText(box, Qt::AlignCenter, text);
}

// Draws `text` at labelBox(...) in the painter's window.
void drawLabel(QPainter& p, QPointF anchor, QPointF direction, double gap, const QString& text,
               const QColor& halo = QColor()) {
    drawLabelIn(p, labelBox(QFontMetricsF(p.font()), QRectF(p.window()), anchor, direction, gap, text), text,
                halo);
}

// Whether the segment `l` passes through `r`.
bool crosses(const QRectF& r, const QLineF& l) {
    if (r.contains(l.p1()) || r.contains(l.p2())) return true;
    const QLineF edges[] = {{r.topLeft(), r.topRight()},
                            {r.topRight(), r.bottomRight()},
                            {r.bottomRight(), r.bottomLeft()},
                            {r.bottomLeft(), r.topLeft()}};
    for (const QLineF& e : edges)
        if (l.intersects(e, nullptr) == QLineF::BoundedIntersection) return true;
    return false;
}

QString tr(const char* text) {
    return QCoreApplication::translate("ConeView", text);
}

QFont overlayFont(const QFont& base, double pointSize) {
    QFont f = base;
    f.setPointSizeF(pointSize);
    return f;
}

} // namespace

ConePicture::ConePicture() : font_(QGuiApplication::font()) {}

// --- What is shown: scene, data, mode, time, style ---

std::optional<std::string> ConePicture::setScene(const Scene& scene) {
    hints_ = coneHints(scene.viewJson);
    mode_ = hints_.plot;
    resetCamera();
    data_.reset();
    colors_.clear();
    geometryDirty_ = dotsDirty_ = true;
    const auto why = coneUnsupported(scene);
    message_ = why ? QString::fromStdString(*why) : QString();
    solving_ = false;
    return why;
}

void ConePicture::setData(std::shared_ptr<const ConeData> data) {
    solving_ = false;
    data_ = std::move(data);
    message_ = QString::fromStdString(data_->message);
    const std::vector<double> values = data_->colorValues(hints_.colorBy);
    colorMin_ = std::numeric_limits<double>::infinity(), colorMax_ = -colorMin_;
    for (double v : values)
        if (std::isfinite(v)) colorMin_ = std::min(colorMin_, v), colorMax_ = std::max(colorMax_, v);
    if (colorMin_ > colorMax_) colorMin_ = colorMax_ = 0.0;
    colors_.clear();
    for (double v : values)
        colors_.push_back(viridis(colorMax_ > colorMin_ ? (v - colorMin_) / (colorMax_ - colorMin_) : 0.5));
    capIndex_.clear();
    for (const ConeTrajectory& t : data_->trajectories) {
        const auto above = std::find_if(t.points.begin(), t.points.end(),
                                        [&](const Vector3& p) { return p.z() > data_->heightCap; });
        capIndex_.push_back(std::size_t(above - t.points.begin()));
    }
    geometryDirty_ = dotsDirty_ = true;
}

void ConePicture::setMode(ConeMode mode) {
    if (mode == mode_) return;
    mode_ = mode;
    zoom_ = 1.0;
    geometryDirty_ = dotsDirty_ = true;
}

void ConePicture::setParticleEvent(const std::optional<RunEvent>& event) {
    banner_ = event ? eventBannerText(*event, QStringLiteral("Particles: ")) : QString();
}

void ConePicture::setTime(std::optional<double> t) {
    time_ = t;
    dotsDirty_ = true;
    if (curvesToTime_) geometryDirty_ = true;
}

void ConePicture::setCurvesToTime(bool on) {
    curvesToTime_ = on;
    geometryDirty_ = true;
}

void ConePicture::setCurrentCovariance(std::optional<Mat> cov) {
    if (cov && (cov->rows() != 2 || cov->cols() != 2)) cov.reset();
    current_ = std::move(cov);
    dotsDirty_ = true;
}

void ConePicture::setStyle(const PlotStyle& style) {
    style_ = style;
    geometryDirty_ = true; // the axis lines have the label colour
}

// --- Camera ---

void ConePicture::setSize(QSizeF size) {
    size_ = QSizeF(std::max(size.width(), 1.0), std::max(size.height(), 1.0));
}

void ConePicture::resetCamera() {
    elev_ = hints_.elev;
    azim_ = hints_.azim;
    zoom_ = 1.0;
}

void ConePicture::orbit(double dAzimuth, double dElevation) {
    azim_ += dAzimuth;
    elev_ = std::clamp(elev_ + dElevation, -89.5, 89.5);
}

void ConePicture::zoomBy(double factor) {
    zoom_ = std::clamp(zoom_ * factor, 0.25, 16.0);
}

// --- Drawing ---

void ConePicture::prepare() {
    painted_ = camera();
    prepared_ = true;
    if (geometryDirty_) uploadGeometry();
    if (dotsDirty_) uploadDots();
}

void ConePicture::drawGl(double dpr) {
    if (!gl_ || !message_.isEmpty()) return;
    ConeRenderer::Frame frame;
    frame.mvp = Eigen::Map<const Eigen::Matrix4f>(painted_.mvp.constData()); // both column-major
    frame.towardsEye =
        Eigen::Vector3f(painted_.towardsEye.x(), painted_.towardsEye.y(), painted_.towardsEye.z());
    frame.width = int(std::lround(size_.width() * dpr));
    frame.height = int(std::lround(size_.height() * dpr));
    frame.dpr = float(dpr);
    renderer_.draw(frame);
}

void ConePicture::paintOver(QPainter& painter) const {
    painter.setRenderHint(QPainter::Antialiasing);
    painter.setRenderHint(QPainter::TextAntialiasing);
    painter.setFont(overlayFont(font_, 9.5));
    const QRectF area(QPointF(0, 0), size_);
    bannerRect_ = QRectF();
    if (!message_.isEmpty()) {
        painter.setFont(overlayFont(font_, 11.0));
        painter.setPen(style_.label.lighter(130));
        painter.drawText(area.adjusted(30, 30, -30, -30), Qt::AlignCenter | Qt::TextWordWrap, message_);
        return;
    }
    if (mode_ == ConeMode::Cone)
        drawConeLabels(painter);
    else
        drawDiscLabels(painter);
    if (mode_ == ConeMode::Disc) drawDiscMarks(painter);
    drawLegend(painter);
    drawColorBar(painter);
    bannerRect_ = drawBannerText(painter, area, QRectF(), banner_, true);
}

void ConePicture::render(QImage& image, const OffscreenLayer& glLayer) {
    const double dpr = image.devicePixelRatio();
    setSize(QSizeF(image.width(), image.height()) / dpr);
    prepare();
    image.fill(style_.background);
    glLayer([&] { drawGl(dpr); });
    QPainter painter(&image);
    paintOver(painter);
}

// --- Projection and the curves drawn ---

double ConePicture::coneHeight() const {
    const double cap = data_ && !data_->trajectories.empty() ? data_->heightCap : 1.0;
    return kSurfaceOverData * cap;
}

ConePicture::Camera ConePicture::camera() const {
    const double w = size_.width(), h = size_.height();
    Camera cam;
    QMatrix4x4 projection, view;
    if (mode_ == ConeMode::Disc) {
        // Square: one world unit is the same number of pixels along both axes.
        const double margin = 30.0;
        const double s = 2.0 * kDiscExtent / std::max(std::min(w, h) - 2.0 * margin, 50.0) / zoom_;
        projection.ortho(float(-w / 2 * s), float(w / 2 * s), float(-h / 2 * s), float(h / 2 * s), -1.0f,
                         1.0f);
        cam.mvp = projection;
        cam.towardsEye = QVector3D(0, 0, 1);
        return cam;
    }
    // Orthographic view from elevation/azimuth (matplotlib's convention), z up.
    const double el = std::clamp(elev_, -89.5, 89.5) * kPi / 180.0, az = azim_ * kPi / 180.0;
    const QVector3D eye(float(std::cos(el) * std::cos(az)), float(std::cos(el) * std::sin(az)),
                        float(std::sin(el)));
    const double H = coneHeight(), distance = 20.0 * H;
    view.lookAt(eye * float(distance), QVector3D(0, 0, 0), QVector3D(0, 0, 1));
    // Frame the rim's neighbourhood, the apex, the axis top and the trace scale at the left (scaleBase()):
    // a set that looks the same from every azimuth, so orbiting does not change the zoom.
    // The scale and its mirror image on the right, so that the cone stays centred.
    const Vector3 up(0, 0, H), left = scaleBase();
    std::vector<Vector3> frame = {Vector3::Zero(), Vector3(0, 0, kAxisTop * H), left, left + up, -left,
                                  up - left};
    for (int k = 0; k < 64; ++k) {
        const double phi = 2.0 * kPi * k / 64;
        frame.push_back(Vector3(H * std::cos(phi), H * std::sin(phi), H));
    }
    double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
    for (const Vector3& p : frame) {
        const QVector3D q = view.map(QVector3D(float(p.x()), float(p.y()), float(p.z())));
        x0 = std::min(x0, double(q.x())), x1 = std::max(x1, double(q.x()));
        y0 = std::min(y0, double(q.y())), y1 = std::max(y1, double(q.y()));
    }
    const double mx = 64.0, my = 34.0; // room for the tick labels and the axis names
    const double s =
        std::max((x1 - x0) / std::max(w - 2 * mx, 50.0), (y1 - y0) / std::max(h - 2 * my, 50.0)) /
        zoom_; // world units per pixel
    const double cx = (x0 + x1) / 2, cy = (y0 + y1) / 2;
    projection.ortho(float(cx - w / 2 * s), float(cx + w / 2 * s), float(cy - h / 2 * s),
                     float(cy + h / 2 * s), float(0.5 * distance), float(1.5 * distance));
    cam.mvp = projection * view;
    cam.towardsEye = eye;
    return cam;
}

QPointF ConePicture::project(const Eigen::Vector3d& conePoint) const {
    const Camera cam = prepared_ ? painted_ : camera();
    const double z = mode_ == ConeMode::Disc ? 0.0 : conePoint.z();
    const QVector4D clip = cam.mvp * QVector4D(float(conePoint.x()), float(conePoint.y()), float(z), 1.0f);
    const double nx = clip.x() / clip.w(), ny = clip.y() / clip.w();
    return {(nx + 1.0) / 2.0 * size_.width(), (1.0 - ny) / 2.0 * size_.height()};
}

std::optional<Eigen::Vector3d> ConePicture::placed(const Eigen::Vector3d& p) const {
    if (!p.allFinite()) return std::nullopt;
    if (mode_ == ConeMode::Cone) {
        if (p.z() > coneHeight()) return std::nullopt;
        return p;
    }
    if (p.z() <= 0.0) return std::nullopt;
    return Vector3(p.x() / p.z(), p.y() / p.z(), 0.0);
}

std::vector<Eigen::Vector3d> ConePicture::curveUntil(std::size_t i, double until, bool* cut) const {
    const ConeTrajectory& t = data_->trajectories[i];
    const double cap = data_->heightCap;
    std::vector<Vector3> line;
    bool capped = false;
    std::optional<Vector3> previous; // the last cone point taken (Cone mode)
    const auto add = [&](const Vector3& p) {
        if (mode_ == ConeMode::Cone) {
            if (p.z() > cap) { // leaves through the top: end at the crossing
                if (previous)
                    line.push_back(*previous +
                                   (cap - previous->z()) / (p.z() - previous->z()) * (p - *previous));
                capped = true;
                return false;
            }
            line.push_back(p);
            previous = p;
        } else if (const auto s = placed(p)) {
            line.push_back(*s);
        }
        return true;
    };
    // The records up to `until`, then the state at `until` between two of them.
    const std::size_t n = std::min(t.points.size(), t.times.size());
    const std::size_t end =
        std::min(n, std::size_t(std::upper_bound(t.times.begin(), t.times.end(), until) - t.times.begin()));
    bool going = true;
    for (std::size_t k = 0; k < end && going; ++k) going = add(t.points[k]);
    if (going && end < n && (end == 0 || t.times[end - 1] < until)) add(t.at(until));
    if (cut) *cut = capped;
    return line;
}

std::vector<Eigen::Vector3d> ConePicture::drawnCurve(std::size_t i) const {
    if (!data_ || i >= data_->trajectories.size()) return {};
    return curveUntil(i, curvesToTime_ && time_ ? *time_ : std::numeric_limits<double>::infinity());
}

std::optional<Eigen::Vector3d> ConePicture::dotPosition(std::size_t i) const {
    if (!data_ || !time_ || i >= data_->trajectories.size()) return std::nullopt;
    const ConeTrajectory& t = data_->trajectories[i];
    if (t.points.empty()) return std::nullopt;
    const Vector3 p = t.at(*time_);
    // Where the curve is at t (curveUntil's last point, without walking it): a curve that has left through
    // the top keeps its dot at the crossing.
    const std::size_t k = i < capIndex_.size() ? capIndex_[i] : t.points.size();
    if (mode_ == ConeMode::Cone && k < t.points.size() && k < t.times.size() &&
        (t.times[k] <= *time_ || p.z() > data_->heightCap)) {
        if (k == 0) return std::nullopt;
        const Vector3 &q = t.points[k - 1], &r = t.points[k];
        return Vector3(q + (data_->heightCap - q.z()) / (r.z() - q.z()) * (r - q));
    }
    return placed(p);
}

// --- GL geometry ---

void ConePicture::uploadGeometry() {
    geometryDirty_ = false;
    dotsDirty_ = true;
    if (!gl_) return;
    using B = ConeRenderer::Batch;
    std::vector<ConeVertex> guides, surface, coneLines, referenceMesh, referenceLines, curves, endpoints,
        referencePoints;
    const QColor axis = style_.label;

    if (mode_ == ConeMode::Cone) {
        const double H = coneHeight();
        // The cone's axis: the isotropic matrices. (The x and y axes are shown by the orientation gizmo:
        // drawn through the apex they would cut across the figure.)
        addSegment(guides, {0, 0, 0}, {0, 0, kAxisTop * H}, axis, 0.6);
        // The surface, as rings of quads (the facing test is per vertex, so it needs some resolution).
        const int rings = 6, sectors = 96;
        for (int i = 0; i < rings; ++i) {
            const double z0 = H * i / rings, z1 = H * (i + 1) / rings;
            for (int k = 0; k < sectors; ++k) {
                const double p0 = 2.0 * kPi * k / sectors, p1 = 2.0 * kPi * (k + 1) / sectors;
                const Vector3 a(z0 * std::cos(p0), z0 * std::sin(p0), z0),
                    b(z0 * std::cos(p1), z0 * std::sin(p1), z0);
                const Vector3 c(z1 * std::cos(p0), z1 * std::sin(p0), z1),
                    d(z1 * std::cos(p1), z1 * std::sin(p1), z1);
                for (const auto& [p, phi] : {std::pair{a, p0}, {b, p1}, {d, p1}, {a, p0}, {d, p1}, {c, p0}})
                    surface.push_back(vertex(p, kSurfaceColor, 0.05, coneNormal(phi)));
            }
        }
        // Rank-one boundary: twelve generatrices (directions th = k pi / 12), the rim, and the trace-1
        // section where the presets' initial grids live.
        for (int k = 0; k < 12; ++k) {
            const double phi = 2.0 * kPi * k / 12;
            addSegment(coneLines, {0, 0, 0}, H * coneRay(phi / 2), kConeLineColor, 0.28, coneNormal(phi),
                       coneNormal(phi));
        }
        addCircle(coneLines, H, H, kConeLineColor, 0.7, true);
        if (1.0 < 0.85 * H && 1.0 > 0.1 * H) addCircle(coneLines, 1.0, 1.0, kConeLineColor, 0.3, true);
        for (const Vector3& r : hints_.referenceRays)
            addSegment(referenceLines, {0, 0, 0}, r * (H / r.z()), kReferenceColor, 0.95);
        // A reference plane n . p = 0 through the apex meets the solid cone in a wedge: the apex and the
        // chord n1 x + n2 y = -n3 H of the rim disc.
        if (const auto& n = hints_.referencePlaneNormal) {
            const double m2 = n->x() * n->x() + n->y() * n->y();
            const double dist = m2 > 0 ? std::abs(n->z()) * H / std::sqrt(m2) : H + 1;
            if (dist < H) {
                const Vector3 foot(-n->z() * H * n->x() / m2, -n->z() * H * n->y() / m2, H);
                const Vector3 along =
                    Vector3(-n->y(), n->x(), 0).normalized() * std::sqrt(H * H - dist * dist);
                const Vector3 e0 = foot + along, e1 = foot - along;
                for (const Vector3& p : {Vector3(0, 0, 0), e0, e1})
                    referenceMesh.push_back(vertex(p, kReferenceColor, 0.13));
                addSegment(referenceLines, {0, 0, 0}, e0, kReferenceColor, 0.8);
                addSegment(referenceLines, {0, 0, 0}, e1, kReferenceColor, 0.8);
                addSegment(referenceLines, e0, e1, kReferenceColor, 0.5);
            }
        }
    } else {
        // The unit disc (filled faintly), its boundary circle = the rank-one matrices, and the axes.
        for (int k = 0; k < kCircleSegments; ++k) {
            const double p0 = 2.0 * kPi * k / kCircleSegments, p1 = 2.0 * kPi * (k + 1) / kCircleSegments;
            for (const Vector3& p : {Vector3(0, 0, 0), Vector3(std::cos(p0), std::sin(p0), 0),
                                     Vector3(std::cos(p1), std::sin(p1), 0)})
                surface.push_back(vertex(p, kSurfaceColor, 0.08, Vector3::UnitZ())); // facing: one pass
        }
        addSegment(guides, {-1.12, 0, 0}, {1.12, 0, 0}, axis, 0.45);
        addSegment(guides, {0, -1.12, 0}, {0, 1.12, 0}, axis, 0.45);
        addCircle(guides, 1.0, 0.0, kConeLineColor, 0.8, false);
        for (const Vector3& r : hints_.referenceRays)
            referencePoints.push_back(vertex({r.x() / r.z(), r.y() / r.z(), 0}, kReferenceColor, 1.0));
        // A reference plane n . p = 0 meets the trace-1 slice in the chord n1 x + n2 y + n3 = 0.
        if (const auto& n = hints_.referencePlaneNormal) {
            const double m2 = n->x() * n->x() + n->y() * n->y();
            const double dist = m2 > 0 ? std::abs(n->z()) / std::sqrt(m2) : 2.0;
            if (dist < 1.0) {
                const Vector3 foot(-n->z() * n->x() / m2, -n->z() * n->y() / m2, 0);
                const Vector3 along = Vector3(-n->y(), n->x(), 0).normalized() * std::sqrt(1.0 - dist * dist);
                addSegment(referenceLines, foot + along, foot - along, kReferenceColor, 0.9);
            }
        }
    }

    // The trajectories.
    if (data_) {
        const double tol = 1.5e-3 * (mode_ == ConeMode::Cone ? coneHeight() : 1.0);
        const double until = curvesToTime_ && time_ ? *time_ : std::numeric_limits<double>::infinity();
        for (std::size_t i = 0; i < data_->trajectories.size(); ++i) {
            const ConeTrajectory& t = data_->trajectories[i];
            const QColor color = i < colors_.size() ? colors_[i] : viridis(0.5);
            bool cut = false;
            const std::vector<Vector3> line = decimate(curveUntil(i, until, &cut), tol);
            for (std::size_t k = 1; k < line.size(); ++k)
                addSegment(curves, line[k - 1], line[k], color, 0.85);
            // The end point, once the curve has reached it (a curve cut at the top has none).
            const bool reached = !t.times.empty() && until >= t.times.back();
            if (!cut && reached && !t.points.empty())
                if (const auto end = placed(t.points.back())) endpoints.push_back(vertex(*end, color, 1.0));
        }
    }

    renderer_.upload(B::Guides, guides);
    renderer_.upload(B::Surface, surface);
    renderer_.upload(B::ConeLines, coneLines);
    renderer_.upload(B::ReferenceMesh, referenceMesh);
    renderer_.upload(B::ReferenceLines, referenceLines);
    renderer_.upload(B::Curves, curves);
    renderer_.upload(B::Endpoints, endpoints);
    renderer_.upload(B::ReferencePoints, referencePoints);
}

void ConePicture::uploadDots() {
    dotsDirty_ = false;
    if (!gl_) return;
    std::vector<ConeVertex> dots, current;
    if (data_ && time_) {
        for (std::size_t i = 0; i < data_->trajectories.size(); ++i)
            if (const auto p = dotPosition(i))
                dots.push_back(vertex(*p, i < colors_.size() ? colors_[i] : viridis(0.5), 1.0));
    }
    if (current_)
        if (const auto p = placed(toCone(*current_))) current.push_back(vertex(*p, Qt::white, 1.0));
    renderer_.upload(ConeRenderer::Batch::Dots, dots);
    renderer_.upload(ConeRenderer::Batch::Current, current);
}

// --- Overlays: labels, disc marks, legend, colour bar ---

QLineF ConePicture::traceScale() const {
    const Vector3 base = scaleBase();
    return {project(base), project(base + Vector3(0, 0, coneHeight()))};
}

Eigen::Vector3d ConePicture::scaleBase() const {
    // The floor point kAxisOverCone * H to the left of the apex as seen from azimuth azim: the screen's
    // right is (-sin azim, cos azim, 0) in the floor.
    const double az = azim_ * kPi / 180.0;
    return kAxisOverCone * coneHeight() * Vector3(std::sin(az), -std::cos(az), 0.0);
}

void ConePicture::drawConeLabels(QPainter& p) const {
    const double H = coneHeight();
    const QColor halo(style_.background.red(), style_.background.green(), style_.background.blue(), 210);
    p.setPen(style_.label);
    drawLabel(p, project({0, 0, kAxisTop * H}), QPointF(0, -1), 3.0, QStringLiteral("\u03a3 \u221d I"), halo);

    // The trace scale: a vertical line at the left of the cone (whatever the azimuth) with nice ticks.
    const Vector3 base = scaleBase();
    const QLineF scale = traceScale();
    const QPointF top = scale.p2();
    p.setPen(QPen(style_.label, 1.0));
    p.drawLine(scale);
    const double step = niceStep(H, 4);
    const QFontMetricsF fm(p.font());
    for (int k = 0; k * step <= H * (1 + 1e-9); ++k) {
        const double z = k * step;
        const QPointF at = project(base + Vector3(0, 0, z));
        p.drawLine(at, at - QPointF(5, 0));
        const QString text = formatTick(z, step);
        const double tw = fm.horizontalAdvance(text);
        p.drawText(QRectF(at.x() - 9 - tw, at.y() - fm.height() / 2, tw, fm.height()),
                   Qt::AlignRight | Qt::AlignVCenter, text);
    }
    p.setPen(style_.label.lighter(125));
    drawLabel(p, top, QPointF(0, -1), 4.0, QStringLiteral("tr \u03a3"));

    // Orientation gizmo (top right): the unit axes x = a - b, y = 2c, z = tr as the camera sees them,
    // back to front.
    const QPointF origin(size_.width() - 95.0, 60.0);
    const double length = 38.0;
    const QPointF o = project(Vector3::Zero());
    // Pixels per world unit: the trace scale's foot lies along the screen's horizontal.
    const QPointF side = project(scaleBase()) - o;
    const double unit = std::hypot(side.x(), side.y()) / scaleBase().norm();
    struct Axis {
        Vector3 u;
        QString name;
    };
    std::vector<Axis> axes = {{Vector3::UnitX(), QStringLiteral("a \u2212 b")},
                              {Vector3::UnitY(), QStringLiteral("2c")},
                              {Vector3::UnitZ(), QStringLiteral("tr")}};
    const QVector3D& e = painted_.towardsEye;
    const Vector3 towards(e.x(), e.y(), e.z());
    std::sort(axes.begin(), axes.end(),
              [&](const Axis& a, const Axis& b) { return a.u.dot(towards) < b.u.dot(towards); });
    // The lines, back to front, then the labels over them. A label goes beyond its axis's tip; where that
    // would put it on another axis or label (an axis seen end-on has its tip at the origin, and "2c" sat on
    // the tr axis), it turns around the tip, by up to half a turn either way, to the first free place.
    gizmo_.clear();
    for (const Axis& a : axes) {
        const QPointF d = (project(a.u * H) - o) / (unit * H); // screen image of the unit vector
        gizmo_.push_back({a.name, QLineF(origin, origin + d * length), QRectF()});
        const QColor c = a.u.dot(towards) >= 0 ? style_.label.lighter(130) : style_.label.darker(115);
        p.setPen(QPen(c, 1.6, Qt::SolidLine, Qt::RoundCap));
        p.drawLine(gizmo_.back().axis);
    }
    const QRectF area(QPointF(0, 0), size_);
    for (std::size_t i = 0; i < axes.size(); ++i) {
        GizmoPart& part = gizmo_[i];
        const QPointF tip = part.axis.p2(), d = tip - origin;
        const double heading = d.manhattanLength() > 2.0 ? std::atan2(d.y(), d.x()) : -kPi / 4;
        const auto free = [&](const QRectF& box) { // a few pixels to spare around it, beyond the halo
            const QRectF clear = box.adjusted(-4, -2, 4, 2);
            for (std::size_t j = 0; j < gizmo_.size(); ++j) {
                if (crosses(j == i ? box : clear, gizmo_[j].axis))
                    return false; // its own axis ends beside it
                if (j != i && clear.intersects(gizmo_[j].label)) return false;
            }
            return true;
        };
        // k = 0, 1, 2, ...: turned by 0, +22.5°, -22.5°, +45°, ...; `gap` pixels beyond the tip.
        const auto candidate = [&](int k, double gap) {
            const double turn = (k % 2 ? 1 : -1) * ((k + 1) / 2) * kPi / 8;
            return labelBox(fm, area, tip, QPointF(std::cos(heading + turn), std::sin(heading + turn)), gap,
                            part.name);
        };
        part.label = QRectF();
        for (double gap : {3.0, 8.0})
            for (int k = 0; k <= 16 && part.label.isEmpty(); ++k)
                if (const QRectF box = candidate(k, gap); free(box)) part.label = box;
        if (part.label.isEmpty()) part.label = candidate(0, 3.0); // nowhere free: beyond the tip
        p.setPen(axes[i].u.dot(towards) >= 0 ? style_.label.lighter(130) : style_.label.darker(115));
        drawLabelIn(p, part.label, part.name, halo);
    }
    p.setPen(Qt::NoPen);
    p.setBrush(style_.label);
    p.drawEllipse(origin, 2.0, 2.0);
}

void ConePicture::drawDiscLabels(QPainter& p) const {
    const QColor halo(style_.background.red(), style_.background.green(), style_.background.blue(), 210);
    const QPointF centre = project({0, 0, 0});
    p.setPen(style_.label);
    const QFontMetricsF fm(p.font());
    for (double v : {-1.0, -0.5, 0.5, 1.0}) {
        const QPointF ax = project({v, 0, 0}), ay = project({0, v, 0});
        p.drawLine(ax, ax + QPointF(0, 4));
        p.drawLine(ay, ay - QPointF(4, 0));
        if (std::abs(v) < 1.0) continue; // inside the disc a label would sit on the curves
        // Just outside the circle: below the horizontal axis, left of the vertical one.
        const QString text = number(v);
        drawLabel(p, ax + QPointF(v > 0 ? 16 : -16, 0), QPointF(0, 1), 3.0, text, halo);
        drawLabel(p, ay + QPointF(0, v > 0 ? -14 : 14), QPointF(-1, 0), 4.0, text, halo);
    }
    p.setPen(style_.label.lighter(125));
    drawLabel(p, project({1.12, 0, 0}), QPointF(1, 0), 5.0, QStringLiteral("(a \u2212 b)/tr"));
    drawLabel(p, project({0, 1.12, 0}), QPointF(0, -1), 4.0, QStringLiteral("2c/tr"));
    const double a = 0.75 * kPi;
    const QPointF on = project({std::cos(a), std::sin(a), 0});
    drawLabel(p, on, on - centre, 6.0, QStringLiteral("rank 1"));
}

std::vector<ConePicture::DiscMark> ConePicture::discMarks() const {
    std::vector<DiscMark> marks;
    if (!data_) return marks;
    for (const bool blowUp : {false, true}) {
        std::vector<DiscMark> groups;
        int ofKind = 0;
        for (const ConeTrajectory& t : data_->trajectories) {
            const bool ended = blowUp ? t.event == MomentEvent::BlowUp : t.event == MomentEvent::Converged;
            if (!ended || t.points.empty() || !(t.points.back().z() > 0)) continue;
            ++ofKind;
            const Eigen::Vector2d p = t.points.back().head<2>() / t.points.back().z();
            auto g = std::find_if(groups.begin(), groups.end(),
                                  [&](const DiscMark& m) { return (m.point - p).norm() < 0.05; });
            if (g == groups.end()) {
                groups.push_back({p, 1, blowUp});
            } else {
                g->point += (p - g->point) / double(++g->runs); // the group's mean end
            }
        }
        std::stable_sort(groups.begin(), groups.end(),
                         [](const DiscMark& a, const DiscMark& b) { return a.runs > b.runs; });
        int kept = 0;
        for (DiscMark& g : groups)
            if (kept < 3 && 4 * g.runs >= ofKind) {
                g.ofKind = ofKind;
                marks.push_back(g);
                ++kept;
            }
    }
    return marks;
}

void ConePicture::drawDiscMarks(QPainter& p) const {
    const QColor halo(style_.background.red(), style_.background.green(), style_.background.blue(), 210);
    const QPointF centre = project({0, 0, 0});
    for (const DiscMark& m : discMarks()) {
        const QPointF at = project({m.point.x(), m.point.y(), 0});
        const QColor color = m.blowUp ? QColor(235, 80, 70) : QColor(255, 255, 255);
        p.setPen(QPen(color, 2.0));
        p.setBrush(Qt::NoBrush);
        p.drawEllipse(at, 8.0, 8.0);
        p.setPen(color);
        // Outward from the centre (a limit at the centre: above it).
        const QPointF out = QLineF(centre, at).length() > 1.0 ? at - centre : QPointF(0, -1);
        // "all 57 blow-ups" or "300 of 700 limits": the count of the kind the summary gives.
        const QString kind = m.blowUp ? tr("blow-ups") : tr("limits");
        drawLabel(p, at, out, 12.0,
                  m.runs == m.ofKind ? tr("all %1 %2").arg(m.ofKind).arg(kind)
                                     : tr("%1 of %2 %3").arg(m.runs).arg(m.ofKind).arg(kind),
                  halo);
    }
}

void ConePicture::drawLegend(QPainter& p) const {
    enum class Swatch { None, Line, Dot, Ring };
    struct Entry {
        Swatch swatch;
        QColor color;
        QString text;
    };
    std::vector<Entry> entries;
    const QColor text = style_.label.lighter(135);
    if (solving_) {
        entries.push_back({Swatch::None, {}, tr("Solving the moment equations\u2026")});
    } else if (data_) {
        const ConeData& d = *data_;
        const std::size_t n = d.trajectories.size();
        QString counts = (n == 1 ? tr("1 trajectory") : tr("%1 trajectories").arg(n)) +
                         tr(": %1 converged, %2 blew up").arg(d.converged).arg(d.blowUp);
        if (d.other > 0)
            counts += tr(", %1 other (%2)").arg(d.other).arg(QString::fromStdString(d.otherKinds));
        entries.push_back({Swatch::None, {}, counts});
        if (mode_ == ConeMode::Cone && d.clipped > 0)
            entries.push_back({Swatch::None,
                               {},
                               tr("cut at tr \u03a3 = %1: %2 curves leave the top")
                                   .arg(number(d.heightCap))
                                   .arg(d.clipped)});
        if (time_) entries.push_back({Swatch::Dot, viridis(0.6), tr("state at t = %1").arg(number(*time_))});
    }
    if (!hints_.referenceRays.empty())
        entries.push_back(
            {mode_ == ConeMode::Cone ? Swatch::Line : Swatch::Ring, kReferenceColor, tr("reference rays")});
    if (hints_.referencePlaneNormal)
        entries.push_back({Swatch::Line, kReferenceColor, tr("reference plane")});
    if (current_) entries.push_back({Swatch::Dot, Qt::white, tr("particles' covariance")});
    // What the axes are, in two short lines rather than one long one (which ran under the colour bar).
    if (mode_ == ConeMode::Cone) {
        entries.push_back({Swatch::None, {}, tr("\u03a3 = [[a, c], [c, b]] \u2192 (a \u2212 b, 2c, a + b)")});
        entries.push_back({Swatch::None, {}, tr("boundary: rank 1")});
    } else {
        entries.push_back({Swatch::None, {}, tr("\u03a3 / tr \u03a3")});
        entries.push_back({Swatch::None, {}, tr("circle: rank 1, centre: \u03a3 \u221d I")});
    }

    legendLines_.clear();
    for (const Entry& e : entries) legendLines_ << e.text;
    const QFontMetricsF fm(p.font());
    const double pad = 8.0, swatchW = 18.0, lineH = fm.height() + 2.0;
    double textW = 0.0;
    for (const Entry& e : entries)
        textW = std::max(textW, fm.horizontalAdvance(e.text) + (e.swatch == Swatch::None ? 0.0 : swatchW));
    QRectF box(10.0, size_.height() - 10.0 - 2 * pad - lineH * double(entries.size()), textW + 2 * pad,
               lineH * double(entries.size()) + 2 * pad);
    if (mode_ == ConeMode::Cone) {
        // The legend sits right of the trace scale where it would cover the scale's foot and its 0 label
        // (on wide frames the scale reaches down to the legend's rows).
        const QPointF foot = traceScale().p1();
        if (box.top() < foot.y() + fm.height() && box.left() < foot.x() + 4.0) box.moveLeft(foot.x() + 12.0);
    }
    legendRect_ = box;
    p.setPen(Qt::NoPen);
    p.setBrush(QColor(style_.background.red(), style_.background.green(), style_.background.blue(), 200));
    p.drawRoundedRect(box, 4, 4);
    double y = box.top() + pad;
    for (const Entry& e : entries) {
        double x = box.left() + pad;
        const QPointF mid(x + 7.0, y + lineH / 2);
        switch (e.swatch) {
        case Swatch::Line:
            p.setPen(QPen(e.color, 2.2));
            p.drawLine(mid - QPointF(6, 0), mid + QPointF(6, 0));
            break;
        case Swatch::Dot:
            p.setPen(QPen(e.color == Qt::white ? kAccent : QColor(Qt::white), 1.5));
            p.setBrush(e.color);
            p.drawEllipse(mid, 4.5, 4.5);
            break;
        case Swatch::Ring:
            p.setPen(QPen(e.color, 2.0));
            p.setBrush(Qt::NoBrush);
            p.drawEllipse(mid, 5.0, 5.0);
            break;
        case Swatch::None:
            break;
        }
        if (e.swatch != Swatch::None) x += swatchW;
        p.setPen(text);
        p.drawText(QRectF(x, y, textW + pad, lineH), Qt::AlignLeft | Qt::AlignVCenter, e.text);
        y += lineH;
    }
}

void ConePicture::drawColorBar(QPainter& p) const {
    colorBarRect_ = QRectF();
    // One colour (a single trajectory, or all of one value): a bar from v to v says nothing.
    if (!data_ || data_->trajectories.size() < 2 || !(colorMax_ > colorMin_)) return;
    const QFontMetricsF fm(p.font());
    const QString title =
        hints_.colorBy == ConeColorBy::FinalTrace ? tr("colour: final tr \u03a3") : tr("colour: initial 2c");
    const double barH = 10.0, pad = 8.0;
    // Bottom right, 150 px wide, narrower where the legend leaves less room beside it (down to its title's
    // width); with less room than that, above the legend.
    const double boxH = 2 * fm.height() + barH + 4 + 2 * pad, right = size_.width() - 10.0;
    const double beside = right - (legendRect_.right() + 6.0) - 2 * pad;
    const double least = std::max(90.0, fm.horizontalAdvance(title));
    const bool stacked = beside < least;
    const double barW = stacked ? 150.0 : std::min(150.0, beside);
    QRectF box(right - barW - 2 * pad, size_.height() - 10.0 - boxH, barW + 2 * pad, boxH);
    if (stacked && box.intersects(legendRect_)) box.moveBottom(legendRect_.top() - 6.0);
    colorBarRect_ = box;
    p.setPen(Qt::NoPen);
    p.setBrush(QColor(style_.background.red(), style_.background.green(), style_.background.blue(), 200));
    p.drawRoundedRect(box, 4, 4);
    const QRectF bar(box.left() + pad, box.top() + pad + fm.height() + 2, barW, barH);
    QLinearGradient g(bar.topLeft(), bar.topRight());
    for (int k = 0; k <= 10; ++k) g.setColorAt(k / 10.0, viridis(k / 10.0));
    p.setBrush(g);
    p.drawRect(bar);
    p.setPen(style_.label.lighter(135));
    p.drawText(QRectF(bar.left(), box.top() + pad, barW, fm.height()), Qt::AlignLeft | Qt::AlignVCenter,
               title);
    const QRectF under(bar.left(), bar.bottom() + 2, barW, fm.height());
    p.drawText(under, Qt::AlignLeft | Qt::AlignVCenter, number(colorMin_));
    p.drawText(under, Qt::AlignRight | Qt::AlignVCenter, number(colorMax_));
}

} // namespace flowscope
