#include "render/picture/PlotDecorations.h"

#include <QFontMetricsF>
#include <QPainter>

#include <algorithm>
#include <cmath>

namespace flowscope {

namespace {
constexpr double kMinLineSpacing = 80.0; // logical pixels between grid lines
constexpr int kMaxLines = 200;           // guards against a degenerate transform
constexpr double kLabelPad = 5.0;

// Pixel-centre snapping keeps 1-pixel lines crisp without anti-aliasing (at any devicePixelRatio).
double crisp(double v, double dpr) {
    return (std::floor(v * dpr) + 0.5) / dpr;
}
} // namespace

QString formatTick(double value, double step) {
    if (std::abs(value) < step * 1e-6)
        return QStringLiteral("0"); // k * step can leave 1e-17 where 0 is meant
    const double magnitude = std::max(std::abs(value), step);
    if (step < 1e-4 || magnitude >= 1e6) return QString::number(value, 'g', 6);
    const int decimals = std::max(0, int(std::ceil(-std::log10(step) - 1e-9)));
    return QString::number(value, 'f', decimals);
}

double niceStep(double range, int count) {
    const double raw = range / std::max(count, 1);
    const double p = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0})
        if (m * p >= raw) return m * p;
    return 10.0 * p;
}

std::vector<double> niceTicks(double lo, double hi, int count, double* step) {
    const double s = niceStep(hi - lo, count);
    if (step) *step = s;
    std::vector<double> out;
    if (!(s > 0) || !std::isfinite(s)) return out;
    for (double k = std::ceil(lo / s - 1e-9); k * s <= hi + 1e-9 * s; k += 1.0) out.push_back(k * s);
    return out;
}

std::vector<TickLabel> gridTickLabels(const ViewTransform& view, const QFontMetricsF& fm,
                                      const std::vector<QRectF>& keepClear) {
    const auto clear = [&keepClear](const QRectF& box) {
        return std::none_of(keepClear.begin(), keepClear.end(),
                            [&box](const QRectF& r) { return r.intersects(box); });
    };
    std::vector<TickLabel> labels;
    const QRectF world = view.visibleWorld();
    const QSizeF size = view.viewportSize();
    const double step = niceGridStep(view.pixelsPerUnit(), kMinLineSpacing);
    if (!std::isfinite(step) || step <= 0.0) return labels;
    const long x0 = long(std::ceil(world.left() / step)), x1 = long(std::floor(world.right() / step));
    const long y0 = long(std::ceil(world.top() / step)), y1 = long(std::floor(world.bottom() / step));
    if (x1 - x0 > kMaxLines || y1 - y0 > kMaxLines) return labels;

    const double textH = fm.height();
    // x labels sit on the bottom edge; y labels on the left edge, above the x labels' band.
    for (long k = x0; k <= x1; ++k) {
        const QString text = formatTick(double(k) * step, step);
        const double w = fm.horizontalAdvance(text);
        const double x = view.worldToPixel({double(k) * step, 0.0}).x() + kLabelPad;
        const double baseline = size.height() - kLabelPad - fm.descent();
        if (x + w > size.width() - kLabelPad) continue;
        const QRectF box(x, baseline - fm.ascent(), w, textH);
        if (clear(box)) labels.push_back({text, box, false});
    }
    for (long k = y0; k <= y1; ++k) {
        const double y = view.worldToPixel({0.0, double(k) * step}).y() - kLabelPad;
        if (y > size.height() - textH - 2.0 * kLabelPad || y - textH < 0.0) continue;
        const QString text = formatTick(double(k) * step, step);
        const QRectF box(kLabelPad, y - textH, fm.horizontalAdvance(text), textH);
        if (clear(box)) labels.push_back({text, box, true});
    }
    return labels;
}

QRectF xAxisNameBox(const ViewTransform& view, const QFontMetricsF& fm, const QString& name) {
    const QSizeF size = view.viewportSize();
    const double w = fm.horizontalAdvance(name), baseline = size.height() - kLabelPad - fm.descent();
    return QRectF(size.width() - kLabelPad - w, baseline - fm.ascent(), w, fm.height());
}

QRectF yAxisNameBox(const QFontMetricsF& fm, const QString& name, double top) {
    return QRectF(kLabelPad, top + kLabelPad, fm.horizontalAdvance(name), fm.height());
}

QSizeF gridLabelBands(const ViewTransform& view, const QFontMetricsF& fm) {
    const double height = view.viewportSize().height();
    double left = 0.0, bottom = 0.0;
    for (const TickLabel& l : gridTickLabels(view, fm)) {
        if (l.yAxis)
            left = std::max(left, l.box.right() + kLabelPad);
        else
            bottom = std::max(bottom, height - l.box.top() + kLabelPad);
    }
    return {left, bottom};
}

void drawGrid(QPainter& p, const ViewTransform& view, const PlotStyle& style,
              const std::vector<QRectF>& keepClear) {
    const QRectF world = view.visibleWorld();
    const QSizeF size = view.viewportSize();
    const double step = niceGridStep(view.pixelsPerUnit(), kMinLineSpacing);
    const double dpr = p.device() ? p.device()->devicePixelRatioF() : 1.0;
    if (!std::isfinite(step) || step <= 0.0) return;

    const long x0 = long(std::ceil(world.left() / step)), x1 = long(std::floor(world.right() / step));
    const long y0 = long(std::ceil(world.top() / step)), y1 = long(std::floor(world.bottom() / step));
    if (x1 - x0 > kMaxLines || y1 - y0 > kMaxLines) return;

    p.save();
    p.setRenderHint(QPainter::Antialiasing, false);
    QPen pen(style.grid, 0.0); // cosmetic: one device pixel at any scale
    for (long k = x0; k <= x1; ++k) {
        const double x = crisp(view.worldToPixel({double(k) * step, 0.0}).x(), dpr);
        pen.setColor(k == 0 ? style.axis : style.grid);
        p.setPen(pen);
        p.drawLine(QPointF(x, 0.0), QPointF(x, size.height()));
    }
    for (long k = y0; k <= y1; ++k) {
        const double y = crisp(view.worldToPixel({0.0, double(k) * step}).y(), dpr);
        pen.setColor(k == 0 ? style.axis : style.grid);
        p.setPen(pen);
        p.drawLine(QPointF(0.0, y), QPointF(size.width(), y));
    }

    p.setPen(style.label);
    const QFontMetricsF fm(p.font());
    for (const TickLabel& l : gridTickLabels(view, fm, keepClear))
        p.drawText(QPointF(l.box.left(), l.box.top() + fm.ascent()), l.text);
    p.restore();
}

} // namespace flowscope
