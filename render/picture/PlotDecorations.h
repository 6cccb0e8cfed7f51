// Flowscope picture: what a plot draws around its data: background grid, the two axes and tick labels.
#pragma once

#include "render/picture/ViewTransform.h"

#include <QColor>
#include <QFontMetricsF>
#include <QRectF>
#include <QSizeF>
#include <QString>

#include <vector>

class QPainter;

namespace flowscope {

struct PlotStyle {
    QColor background{0x16, 0x18, 0x1d};
    QColor grid{0x26, 0x2a, 0x32};
    QColor axis{0x4c, 0x53, 0x60};
    QColor label{0x8c, 0x93, 0xa3};
};

// Grid lines at a "nice" spacing, the lines x = 0 and y = 0 when visible, and tick labels along the bottom
// and left edges (inside the plot, so nothing is clipped by the widget border). Labels that would fall
// inside one of `keepClear` (overlays drawn later, the axes' names) are left out rather than shown
// half-covered.
void drawGrid(QPainter& painter, const ViewTransform& view, const PlotStyle& style,
              const std::vector<QRectF>& keepClear = {});

// The tick labels drawGrid draws with font metrics `fm` (logical pixels): each one's text and box.
struct TickLabel {
    QString text;
    QRectF box;
    bool yAxis = false; // on the left edge (else on the bottom edge)
};
std::vector<TickLabel> gridTickLabels(const ViewTransform& view, const QFontMetricsF& fm,
                                      const std::vector<QRectF>& keepClear = {});
// Where the axes' names go: the horizontal axis's at the right end of the x labels' band, the vertical
// axis's at the top of the y labels' band, below `top` (logical pixels).
QRectF xAxisNameBox(const ViewTransform& view, const QFontMetricsF& fm, const QString& name);
QRectF yAxisNameBox(const QFontMetricsF& fm, const QString& name, double top);
// How far the tick labels reach in from the left edge and up from the bottom edge (0 without labels): an
// overlay placed inside that corner covers none of them.
QSizeF gridLabelBands(const ViewTransform& view, const QFontMetricsF& fm);

// A tick value as text: as many decimals as the spacing needs, no "-0", scientific when very large/small.
QString formatTick(double value, double step);

// A "nice" step (1, 2 or 5 times a power of ten) giving about `count` intervals over `range`.
double niceStep(double range, int count);
// The multiples of niceStep(hi - lo, count) in [lo, hi] (lo < hi), and that step in *step.
std::vector<double> niceTicks(double lo, double hi, int count, double* step);

} // namespace flowscope
