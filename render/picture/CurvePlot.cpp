#include "render/picture/CurvePlot.h"

#include <QCoreApplication>
#include <QFont>
#include <QFontMetricsF>
#include <QPainter>
#include <QPalette>
#include <QPolygonF>

#include <algorithm>
#include <cmath>
#include <limits>

namespace flowscope {

namespace {

constexpr double kGap = 10.0;
constexpr double kMinPlotHeight = 120.0;

// Keeps at most the two extreme points per pixel column: a run of any length draws in the same time.
QPolygonF envelope(const QPolygonF& pixels) {
    QPolygonF out;
    for (qsizetype i = 0; i < pixels.size();) {
        const double column = std::floor(pixels[i].x());
        qsizetype j = i;
        QPointF lo = pixels[i], hi = pixels[i];
        for (; j < pixels.size() && std::floor(pixels[j].x()) == column; ++j) {
            if (pixels[j].y() < lo.y()) lo = pixels[j];
            if (pixels[j].y() > hi.y()) hi = pixels[j];
        }
        out << lo;
        if (hi != lo) out << hi;
        i = j;
    }
    return out;
}

// The value range of a plot. The first 5 % of a long line are left out: the initial loss is often far
// above the rest and would flatten everything that follows (it is still drawn, clipped at the top).
std::pair<double, double> valueRange(const std::vector<CurveSeries>& series, bool trimStart) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const CurveSeries& s : series) {
        const bool line = trimStart && s.style == CurveSeries::Style::Line;
        const std::size_t skip = line && s.points.size() >= 40 ? s.points.size() / 20 : 0;
        for (std::size_t k = skip; k < s.points.size(); ++k) {
            const double v = s.points[k].y();
            if (!std::isfinite(v)) continue;
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    }
    if (!(lo <= hi)) return {0.0, 1.0};
    const double pad = hi > lo ? 0.06 * (hi - lo) : std::max(0.05 * std::abs(hi), 1e-3);
    return {lo - pad, hi + pad};
}

// The pixels of a series' points, one polyline per run of finite values.
template <class ToPixel> std::vector<QPolygonF> finiteRuns(const CurveSeries& s, ToPixel toPixel) {
    std::vector<QPolygonF> runs(1);
    for (const QPointF& v : s.points) {
        if (std::isfinite(v.y()))
            runs.back() << toPixel(v);
        else if (!runs.back().isEmpty())
            runs.emplace_back();
    }
    return runs;
}

template <class ToPixel> void paintSeries(QPainter& p, const CurveSeries& s, ToPixel toPixel) {
    for (const QPolygonF& pixels : finiteRuns(s, toPixel)) {
        switch (s.style) {
        case CurveSeries::Style::Dots:
            p.setPen(QPen(s.color, 1.0, Qt::DotLine));
            p.drawPolyline(pixels);
            p.setPen(QPen(s.color, 5.0, Qt::SolidLine, Qt::RoundCap));
            p.drawPoints(pixels);
            break;
        case CurveSeries::Style::Points:
            p.setPen(QPen(s.color, 4.0, Qt::SolidLine, Qt::RoundCap));
            p.drawPoints(pixels);
            break;
        case CurveSeries::Style::Dashed:
            p.setPen(QPen(s.color, 1.2, Qt::DashLine));
            p.drawPolyline(pixels);
            break;
        case CurveSeries::Style::Line:
            p.setPen(QPen(s.color, 1.5));
            p.drawPolyline(envelope(pixels));
            break;
        case CurveSeries::Style::Marked:
            p.setPen(QPen(s.color, 2.0));
            p.drawPolyline(pixels);
            p.setPen(QPen(s.color, 5.0, Qt::SolidLine, Qt::RoundCap));
            p.drawPoints(pixels);
            break;
        }
    }
}

} // namespace

QColor rwpoCurveColor(bool rwpo) {
    return rwpo ? QColor(0xff, 0x8c, 0x1a) : QColor(0x4f, 0xa3, 0xff);
}

void paintCurvePlot(QPainter& p, const QRectF& area, const CurvePlot& plot, const PlotStyle& style,
                    const QPalette& palette, const QFont& font) {
    const QFontMetricsF fm(font);
    const std::pair<double, double> range = valueRange(plot.series, plot.trimStart);
    const double lo = range.first,
                 hi = range.second; // (a lambda below captures them: not a structured binding)
    const double xMax = std::max(1.0, plot.xMax);
    const std::pair<double, double> rightRange = valueRange(plot.right, plot.trimStart);

    // Title band on top, tick labels left and below. Half a line between the title and the frame: a value
    // label on the frame's top edge reaches that far up, and would otherwise sit on the title.
    const QString axis =
        plot.xLabel.isEmpty() ? QCoreApplication::translate("CurvePlot", "iteration") : plot.xLabel;
    const double yLabels =
        std::max(fm.horizontalAdvance(QStringLiteral("-0.0000")), fm.horizontalAdvance(axis)) + 14;
    const double top = 1.5 * fm.height() + 2;
    const double rightLabels = plot.right.empty() ? 0.0 : fm.horizontalAdvance(QStringLiteral("-0.0000")) + 8;
    const QRectF inner(area.left() + yLabels, area.top() + top, area.width() - yLabels - rightLabels,
                       area.height() - top - fm.height() - 4);
    p.setFont(font);
    p.setPen(palette.color(QPalette::WindowText));
    p.drawText(QPointF(area.left(), area.top() + fm.ascent()),
               fm.elidedText(plot.title, Qt::ElideRight, area.width()));
    p.fillRect(inner, style.background);
    if (inner.height() < 8 || inner.width() < 8) return;

    auto toPixel = [&](QPointF v) {
        return QPointF(inner.left() + v.x() / xMax * inner.width(),
                       inner.bottom() - (v.y() - lo) / (hi - lo) * inner.height());
    };
    auto toRightPixel = [&](QPointF v) {
        return QPointF(toPixel(v).x(), inner.bottom() - (v.y() - rightRange.first) /
                                                            (rightRange.second - rightRange.first) *
                                                            inner.height());
    };
    bool empty = true;
    for (const CurveSeries& s : plot.series) empty = empty && s.points.empty();
    for (const CurveSeries& s : plot.right) empty = empty && s.points.empty();
    // Horizontal grid with value labels (none without values: the empty text stands alone in the frame);
    // iteration ticks below.
    const double yStep = niceGridStep(inner.height() / (hi - lo), fm.height() * 1.5);
    for (double v = std::ceil(lo / yStep) * yStep; !empty && v <= hi; v += yStep) {
        const double y = toPixel({0.0, v}).y();
        p.setPen(QPen(style.grid, 1.0));
        p.drawLine(QPointF(inner.left(), y), QPointF(inner.right(), y));
        // A label reaching below the frame would sit on the "iteration" label.
        if (y + fm.height() / 2 > inner.bottom() + 2) continue;
        p.setPen(style.label);
        p.drawText(QRectF(area.left(), y - fm.height() / 2, yLabels - 4, fm.height()),
                   Qt::AlignRight | Qt::AlignVCenter, formatTick(v, yStep));
    }
    if (!plot.right.empty() && !empty) {
        const auto [rlo, rhi] = rightRange;
        const double step = niceGridStep(inner.height() / (rhi - rlo), fm.height() * 1.5);
        p.setPen(style.label);
        for (double v = std::ceil(rlo / step) * step; v <= rhi; v += step) {
            const double y = toRightPixel({0.0, v}).y();
            if (y + fm.height() / 2 > inner.bottom() + 2) continue;
            p.drawText(QRectF(inner.right() + 4, y - fm.height() / 2, rightLabels - 4, fm.height()),
                       Qt::AlignLeft | Qt::AlignVCenter, formatTick(v, step));
        }
    }
    const double xStep =
        std::max(plot.xStepMin,
                 niceGridStep(inner.width() / xMax, fm.horizontalAdvance(QStringLiteral("00000")) * 1.6));
    p.setPen(style.label);
    for (double v = 0.0; v <= xMax; v += xStep) {
        const double x = toPixel({v, lo}).x();
        const QString text = formatTick(v, xStep);
        const double w = fm.horizontalAdvance(text);
        p.drawText(QPointF(std::min(x - w / 2, inner.right() - w), inner.bottom() + fm.ascent() + 2), text);
    }
    p.save();
    p.setClipRect(inner);
    if (empty) {
        p.setPen(style.label);
        p.drawText(inner, Qt::AlignCenter | Qt::TextWordWrap, plot.emptyText);
    }
    if (std::isfinite(plot.cursor)) {
        const double x = toPixel({plot.cursor, lo}).x();
        p.setPen(QPen(style.axis, 1.0, Qt::DashLine));
        p.drawLine(QPointF(x, inner.top()), QPointF(x, inner.bottom()));
    }
    for (const CurveSeries& s : plot.series) paintSeries(p, s, toPixel);
    for (const CurveSeries& s : plot.right) paintSeries(p, s, toRightPixel);
    p.restore();
    p.setPen(QPen(style.axis, 1.0));
    p.drawRect(inner);
    p.setPen(style.label);
    p.drawText(QPointF(inner.left() - fm.horizontalAdvance(axis) - 12, inner.bottom() + fm.ascent() + 2),
               axis);
}

void paintCurveLegend(QPainter& p, QPointF at, const std::vector<LegendEntry>& entries,
                      const QPalette& palette, const QFont& font) {
    const QFontMetricsF fm(font);
    double x = at.x();
    const double y = at.y();
    for (const LegendEntry& e : entries) {
        p.setPen(QPen(e.color, 2.0));
        p.drawLine(QPointF(x, y - fm.ascent() / 3), QPointF(x + 16, y - fm.ascent() / 3));
        p.setPen(palette.color(QPalette::WindowText));
        p.drawText(QPointF(x + 20, y), e.label);
        x += 20 + fm.horizontalAdvance(e.label) + 16;
    }
}

PicturePlotLayout picturePlotLayout(const QRectF& all, int pictures, int plots, double bands, double legend) {
    PicturePlotLayout l;
    const int n = std::max(1, pictures);
    const double columnWidth = std::clamp(all.width() * 0.3, 220.0, 380.0);
    const double columnSide =
        std::min((all.width() - columnWidth - kGap - (n - 1) * kGap) / n, all.height() - bands);
    const double gridHeight = std::max(2.0 * kMinPlotHeight + kGap + legend, 0.38 * all.height());
    const double gridSide =
        std::min((all.width() - (n - 1) * kGap) / n, all.height() - gridHeight - kGap - bands);

    QRectF plotArea, pictureArea;
    int columns = 1;
    if (gridSide >= 0.9 * columnSide) {
        pictureArea = QRectF(all.left(), all.top(), all.width(), gridSide + bands);
        plotArea = QRectF(all.left(), pictureArea.bottom() + kGap, all.width(),
                          all.bottom() - pictureArea.bottom() - kGap);
        // One row when wide enough, else rows of at most 3 (2 + 2 rather than 3 + 1).
        columns = all.width() >= plots * 200.0 ? plots : std::min((plots + 1) / 2, 3);
    } else {
        plotArea = QRectF(all.right() - columnWidth, all.top(), columnWidth, all.height());
        pictureArea = QRectF(all.left(), all.top(), plotArea.left() - kGap - all.left(), all.height());
    }
    columns = std::max(1, columns);
    const int rows = (plots + columns - 1) / columns;
    const double w = (plotArea.width() - (columns - 1) * kGap) / columns;
    const double h = (plotArea.height() - legend - (rows - 1) * kGap) / std::max(1, rows);
    for (int k = 0; k < plots; ++k)
        l.plots.emplace_back(plotArea.left() + (k % columns) * (w + kGap),
                             plotArea.top() + legend + (k / columns) * (h + kGap), w, h);
    const double width = (pictureArea.width() - (n - 1) * kGap) / n;
    for (int k = 0; k < n; ++k)
        l.pictures.emplace_back(pictureArea.left() + k * (width + kGap), pictureArea.top(), width,
                                pictureArea.height());
    return l;
}

} // namespace flowscope
