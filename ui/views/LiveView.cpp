#include "ui/views/LiveView.h"

#include <QFontMetricsF>
#include <QHelpEvent>
#include <QToolTip>

namespace flowscope {

LiveView::LiveView(QWidget* parent) : QWidget(parent) {
    setAttribute(Qt::WA_OpaquePaintEvent);
    timer_.setInterval(kRefreshMs);
    connect(&timer_, &QTimer::timeout, this, &LiveView::refresh);
    timer_.start();
}

void LiveView::setPlotStyle(const PlotStyle& style) {
    style_ = style;
    plotStyleChanged();
    update();
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
