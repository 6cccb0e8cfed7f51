// Flowscope picture: what a plot draws around its data: background grid, the two axes and tick labels.
#pragma once

#include "render/picture/ViewTransform.h"

#include <QColor>
#include <QString>

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
// inside `keepClear` (an overlay drawn later) are left out rather than shown half-covered.
void drawGrid(QPainter& painter, const ViewTransform& view, const PlotStyle& style,
              const QRectF& keepClear = {});

// A tick value as text: as many decimals as the spacing needs, no "-0", scientific when very large/small.
QString formatTick(double value, double step);

} // namespace flowscope
