#include "ui/views/LiveView.h"

#include <QFontMetricsF>
#include <QHelpEvent>
#include <QToolTip>

namespace flowscope {

namespace {
constexpr double kMargin = 8.0;
}

LiveView::LiveView(QWidget* parent) : QWidget(parent) {
    setAttribute(Qt::WA_OpaquePaintEvent);
    timer_.setInterval(kRefreshMs);
    connect(&timer_, &QTimer::timeout, this, &LiveView::refresh);
    timer_.start();
}

void LiveView::setPlotStyle(const PlotStyle& style) {
    style_ = style;
    update();
}

PicturePlotLayout LiveView::layoutFor(int pictures, int plots, bool curveLegend) const {
    const QRectF all = QRectF(rect()).adjusted(kMargin, kMargin, -kMargin, -kMargin);
    const double bands = 2.0 * (fontMetrics().height() + 6.0); // title above and legend below a picture
    const double legend = curveLegend ? fontMetrics().height() + 4.0 : 0.0;
    return picturePlotLayout(all, pictures, plots, bands, legend);
}

void LiveView::paintLegendAbove(QPainter& p, const QRectF& firstPlot,
                                const std::vector<LegendEntry>& entries) const {
    paintCurveLegend(p, QPointF(firstPlot.left(), firstPlot.top() - 4.0 - QFontMetricsF(font()).descent()),
                     entries, palette(), font());
}

bool LiveView::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(e);
        const QString text = tooltipAt(help->pos());
        if (text.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(help->globalPos(), text, this);
        return true;
    }
    return QWidget::event(e);
}

} // namespace flowscope
