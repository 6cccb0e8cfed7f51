// Flowscope picture: small QPainter line plots of training curves against the iteration, and the layout that
// puts one or two pictures next to a group of such plots. The Flows and the Transformers views both draw
// with them, so their curves read the same way.
#pragma once

#include "render/picture/PlotDecorations.h"

#include <QColor>
#include <QPointF>
#include <QRectF>
#include <QString>

#include <limits>
#include <vector>

class QFont;
class QPainter;
class QPalette;

namespace flowscope {

// One curve: (iteration, value) points drawn as a line, as dots joined by a dotted line (held-out
// evaluations), dashed (a reference level such as a theoretical bound), as points alone (data), or as a line
// with a dot at every point (few points: a value per layer). A point whose value is not finite is a gap.
struct CurveSeries {
    enum class Style { Line, Dots, Dashed, Points, Marked };
    QColor color;
    std::vector<QPointF> points;
    Style style = Style::Line;
};

struct CurvePlot {
    QString title;
    std::vector<CurveSeries> series;
    double xMax = 1;       // the iteration at the right edge
    QString emptyText;     // shown when no series has a point
    QString xLabel;        // the horizontal axis's name; empty: "iteration"
    bool trimStart = true; // leave a long line's first 5 % out of the value range (a training curve's)
    // Series on a second value axis, labelled right of the frame (a count beside a mean): empty, none.
    std::vector<CurveSeries> right;
    double cursor = std::numeric_limits<double>::quiet_NaN(); // a dashed vertical line at this x (NaN: none)
    double xStepMin = 0;                                      // the finest x tick spacing (1: whole numbers)
};

// The plot in `area`: the title on top, value ticks on the left (and the right axis's on the right),
// iteration ticks below. A long line's first 5 % are left out of the value range unless trimStart is off (the
// initial loss is often far above the rest); the points are still drawn, clipped.
void paintCurvePlot(QPainter& p, const QRectF& area, const CurvePlot& plot, const PlotStyle& style,
                    const QPalette& palette, const QFont& font);

// The colour of a training run's curves with and without the RWPO layer (Flows, Inverse): the same in every
// plot, so side by side reads the same everywhere.
QColor rwpoCurveColor(bool rwpo);

// "label" entries with a short line in their colour, left to right from `at` (a text baseline).
struct LegendEntry {
    QColor color;
    QString label;
};
void paintCurveLegend(QPainter& p, QPointF at, const std::vector<LegendEntry>& entries,
                      const QPalette& palette, const QFont& font);

// Pictures (square plots with a title band above and a legend band below, `bands` high in all) and `plots`
// curve plots in `all`. Two arrangements, whichever gives the pictures the larger side (the grid on ties):
//  * column: the pictures side by side on the left, the curve plots stacked in a column on the right;
//  * grid: the pictures on top, the curve plots in a grid below.
// `legend` is the height kept above the curve plots for their legend (0: none).
struct PicturePlotLayout {
    std::vector<QRectF> pictures;
    std::vector<QRectF> plots;
};
PicturePlotLayout picturePlotLayout(const QRectF& all, int pictures, int plots, double bands, double legend);

} // namespace flowscope
