// Flowscope picture: the 2-D camera of a plot view, mapping world coordinates to widget pixels and back.
//
// World coordinates are the two plotted token coordinates (y up); pixels are logical widget pixels (y down),
// which Qt scales to device pixels by devicePixelRatio. Kept free of GL and widgets so tests can compute
// where a world point must appear on screen.
#pragma once

#include <QPointF>
#include <QRectF>
#include <QSizeF>

namespace flowscope {

class ViewTransform {
  public:
    void setViewportSize(QSizeF size) { viewport_ = size; }
    QSizeF viewportSize() const { return viewport_; }
    QPointF center() const { return center_; }
    double pixelsPerUnit() const { return scale_; }

    QPointF worldToPixel(QPointF world) const;
    QPointF pixelToWorld(QPointF pixel) const;
    QRectF visibleWorld() const; // the world rectangle the viewport shows (normalized: top < bottom)

    // Centres `bounds` and scales it to fill the viewport less `margin` (a fraction of each side). A
    // degenerate box (one point, a line) is framed as if it had extent 1 in the missing directions.
    void frame(const QRectF& bounds, double margin = 0.08);
    // Puts the view's centre at `center` with `pixelsPerUnit` (clamped as zoomAt clamps it).
    void setCenterAndScale(QPointF center, double pixelsPerUnit);
    void pan(QPointF pixelDelta);              // moves the content by the given pixels
    void zoomAt(QPointF pixel, double factor); // keeps the world point under `pixel` in place

  private:
    QSizeF viewport_{1.0, 1.0};
    QPointF center_{0.0, 0.0};
    double scale_ = 100.0; // logical pixels per world unit
};

// A "nice" grid spacing (1, 2 or 5 times a power of ten) in world units whose lines lie at least
// `minPixels` apart at `pixelsPerUnit`.
double niceGridStep(double pixelsPerUnit, double minPixels);

} // namespace flowscope
