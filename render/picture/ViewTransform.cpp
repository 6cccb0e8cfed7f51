#include "render/picture/ViewTransform.h"

#include <algorithm>
#include <cmath>

namespace flowscope {

namespace {
// Zoom limits keep the mapping invertible and the float32 vertex pipeline meaningful.
constexpr double kMinScale = 1e-12;
constexpr double kMaxScale = 1e12;
} // namespace

QPointF ViewTransform::worldToPixel(QPointF w) const {
    return {viewport_.width() / 2.0 + (w.x() - center_.x()) * scale_,
            viewport_.height() / 2.0 - (w.y() - center_.y()) * scale_};
}

QPointF ViewTransform::pixelToWorld(QPointF p) const {
    return {center_.x() + (p.x() - viewport_.width() / 2.0) / scale_,
            center_.y() - (p.y() - viewport_.height() / 2.0) / scale_};
}

QRectF ViewTransform::visibleWorld() const {
    const QPointF topLeft = pixelToWorld({0.0, 0.0});
    const QPointF bottomRight = pixelToWorld({viewport_.width(), viewport_.height()});
    return QRectF(topLeft, bottomRight).normalized();
}

void ViewTransform::frame(const QRectF& bounds, double margin) {
    double w = bounds.width(), h = bounds.height();
    if (!(w > 0.0) && !(h > 0.0)) w = h = 1.0;
    const double usable = std::max(1.0 - 2.0 * margin, 0.05);
    const double sx = w > 0.0 ? viewport_.width() * usable / w : INFINITY;
    const double sy = h > 0.0 ? viewport_.height() * usable / h : INFINITY;
    center_ = bounds.center();
    scale_ = std::clamp(std::min(sx, sy), kMinScale, kMaxScale);
}

void ViewTransform::setCenterAndScale(QPointF center, double pixelsPerUnit) {
    center_ = center;
    scale_ = std::clamp(pixelsPerUnit, kMinScale, kMaxScale);
}

void ViewTransform::pan(QPointF d) {
    center_ += QPointF(-d.x() / scale_, d.y() / scale_);
}

void ViewTransform::zoomAt(QPointF pixel, double factor) {
    const QPointF anchor = pixelToWorld(pixel);
    scale_ = std::clamp(scale_ * factor, kMinScale, kMaxScale);
    // Solve worldToPixel(anchor) == pixel for the centre.
    center_ = {anchor.x() - (pixel.x() - viewport_.width() / 2.0) / scale_,
               anchor.y() + (pixel.y() - viewport_.height() / 2.0) / scale_};
}

double niceGridStep(double pixelsPerUnit, double minPixels) {
    const double raw = minPixels / pixelsPerUnit; // the smallest acceptable step in world units
    const double decade = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * decade >= raw) return m * decade;
    return 10.0 * decade;
}

} // namespace flowscope
