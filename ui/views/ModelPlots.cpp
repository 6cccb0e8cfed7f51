#include "ui/views/ModelPlots.h"

#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <cmath>

namespace flowscope {

namespace {

// A round number at or above v (1, 2, 2.5, 5 times a power of ten).
double niceCeil(double v) {
    if (!(v > 0) || !std::isfinite(v)) return 1.0;
    const double p = std::pow(10.0, std::floor(std::log10(v)));
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
        if (m * p >= v * (1 - 1e-12)) return m * p;
    return 10 * p;
}

QString tick(double v) {
    return QString::number(v, 'g', 3);
}

// A painter over a plot widget, its background filled, with the palette's ink and grid colours.
struct PlotPainter {
    explicit PlotPainter(QWidget* w)
        : p(w), pal(w->palette()), ink(pal.color(QPalette::Text)), grid(pal.color(QPalette::Mid)),
          fm(w->font()) {
        p.setRenderHint(QPainter::Antialiasing);
        p.fillRect(w->rect(), pal.color(QPalette::Base));
    }
    QPainter p;
    const QPalette& pal;
    QColor ink, grid;
    QFontMetrics fm;
};

} // namespace

GramHistogramView::GramHistogramView(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("gramHistograms"));
    setToolTip(tr("The density of <x_i, x_j> over the pairs i < j of the l2-normalised tokens, at each "
                  "chosen layer, all on one density scale: mass near 1 means the tokens have clustered"));
}

void GramHistogramView::setHistograms(const models::GramHistograms& g) {
    g_ = g;
    double peak = 0;
    for (const auto& d : g_.density)
        for (double v : d) peak = std::max(peak, v);
    scale_ = niceCeil(peak);
    update();
}

void GramHistogramView::clear() {
    g_ = {};
    scale_ = 1.0;
    update();
}

void GramHistogramView::paintEvent(QPaintEvent*) {
    PlotPainter canvas(this);
    auto& [p, pal, ink, grid, fm] = canvas;
    const int panels = int(g_.layers.size());
    if (panels == 0) {
        p.setPen(pal.color(QPalette::PlaceholderText));
        p.drawText(
            rect(), Qt::AlignCenter | Qt::TextWordWrap,
            tr("Open a checkpoint folder and Run: the histograms of the tokens' cosines appear here."));
        return;
    }
    const int lineH = fm.height();
    const int left = fm.horizontalAdvance(QStringLiteral("00.00")) + 10, gap = 24, right = 10;
    const double header = lineH + 6, under = 3.2 * lineH + 8; // the title line; ticks and two captions
    // The panels per row that give the largest panels (width, and height weighted as a histogram wants),
    // none narrower than 100 pixels where one per row allows it.
    auto panelSize = [&](int perRow) {
        const int rows = (panels + perRow - 1) / perRow;
        return QSizeF(double(width() - left - right - (perRow - 1) * gap) / perRow,
                      std::max(20.0, (height() - header - 4) / rows - under));
    };
    int perRow = 1;
    for (int k = 2; k <= panels; ++k) {
        const QSizeF a = panelSize(k), b = panelSize(perRow);
        if (a.width() >= 100 && std::min(a.width(), 1.6 * a.height()) > std::min(b.width(), 1.6 * b.height()))
            perRow = k;
    }
    const int rows = (panels + perRow - 1) / perRow;
    const double panelW = panelSize(perRow).width(), panelH = panelSize(perRow).height();
    const double rowH = (height() - header - 4) / rows;
    p.setPen(ink);
    p.drawText(QRectF(left, 2, width() - left - right, lineH), Qt::AlignLeft | Qt::AlignTop,
               fm.elidedText(tr("Density of <x_i, x_j> over the %1 pairs i < j of the normalised tokens, one "
                                "scale for every layer")
                                 .arg(g_.pairs),
                             Qt::ElideRight, width() - left - right));
    const QColor bar = pal.color(QPalette::Highlight);
    for (int k = 0; k < panels; ++k) {
        const int row = k / perRow, col = k % perRow;
        const double x0 = left + col * (panelW + gap), top = header + row * rowH + 6, y1 = top + panelH;
        const std::vector<double>& d = g_.density[std::size_t(k)];
        const double w = panelW / double(d.size());
        for (std::size_t b = 0; b < d.size(); ++b) {
            const double h = panelH * d[b] / scale_;
            if (h > 0) p.fillRect(QRectF(x0 + w * double(b), y1 - h, std::max(w - 0.6, 0.6), h), bar);
        }
        p.setPen(QPen(grid, 0.8, Qt::DashLine));
        p.drawLine(QPointF(x0 + panelW / 2, top), QPointF(x0 + panelW / 2, y1));
        p.setPen(ink);
        p.drawLine(QPointF(x0, y1), QPointF(x0 + panelW, y1));
        p.drawLine(QPointF(x0, top), QPointF(x0, y1));
        const QRectF ticks(x0, y1 + 1, panelW, lineH);
        p.drawText(ticks, Qt::AlignLeft | Qt::AlignTop, QStringLiteral("-1"));
        p.drawText(ticks, Qt::AlignHCenter | Qt::AlignTop, QStringLiteral("0"));
        p.drawText(ticks, Qt::AlignRight | Qt::AlignTop, QStringLiteral("1"));
        const int layer = g_.layers[std::size_t(k)];
        const QString lines[2] = {
            tr("layer %1").arg(layer),
            tr("mean cos %1 · %2 clusters")
                .arg(g_.meanCosine[std::size_t(layer)], 0, 'f', 3)
                .arg(std::size_t(layer) < g_.clusters.size() ? g_.clusters[std::size_t(layer)] : 0)};
        for (int l = 0; l < 2; ++l)
            p.drawText(QRectF(x0, y1 + (1 + l) * lineH + 2, panelW, lineH), Qt::AlignHCenter | Qt::AlignTop,
                       fm.elidedText(lines[l], Qt::ElideRight, int(panelW)));
        if (col == 0) {
            p.drawText(QRectF(0, top - lineH / 2.0, left - 4, lineH), Qt::AlignRight | Qt::AlignVCenter,
                       tick(scale_));
            p.drawText(QRectF(0, y1 - lineH / 2.0, left - 4, lineH), Qt::AlignRight | Qt::AlignVCenter,
                       QStringLiteral("0"));
        }
    }
}

LayerCurveView::LayerCurveView(QWidget* parent) : QWidget(parent) {}

void LayerCurveView::setCurves(std::vector<Curve> curves) {
    curves_ = std::move(curves);
    update();
}

void LayerCurveView::setCursor(int layer) {
    cursor_ = layer;
    update();
}

std::vector<double> LayerCurveView::values(const QString& name) const {
    for (const Curve& c : curves_)
        if (c.name == name) return c.values;
    return {};
}

void LayerCurveView::paintEvent(QPaintEvent*) {
    PlotPainter canvas(this);
    auto& [p, pal, ink, grid, fm] = canvas;
    std::size_t layers = 0;
    bool hasRight = false;
    double lo[2] = {HUGE_VAL, HUGE_VAL}, hi[2] = {-HUGE_VAL, -HUGE_VAL};
    for (const Curve& c : curves_) {
        layers = std::max(layers, c.values.size());
        hasRight |= c.rightAxis;
        for (double v : c.values)
            if (std::isfinite(v)) {
                lo[c.rightAxis] = std::min(lo[c.rightAxis], v);
                hi[c.rightAxis] = std::max(hi[c.rightAxis], v);
            }
    }
    if (layers == 0) return;
    for (int a = 0; a < 2; ++a) {
        if (!(lo[a] <= hi[a])) lo[a] = 0, hi[a] = 1;
        if (lo[a] > 0 && lo[a] < 0.5 * hi[a]) lo[a] = 0; // a count or a distance from 0
        if (hi[a] - lo[a] < 1e-12) hi[a] = lo[a] + (lo[a] == 0 ? 1 : std::abs(lo[a]) * 0.1);
    }
    const int lineH = fm.height();
    int axisW = fm.horizontalAdvance(QStringLiteral("-0.000")) + 8;
    for (int a = 0; a < 2; ++a)
        for (double v : {lo[a], hi[a]}) axisW = std::max(axisW, fm.horizontalAdvance(tick(v)) + 8);
    const QRectF plot(axisW, lineH + 6, width() - axisW - (hasRight ? axisW : 10),
                      height() - 3.0 * lineH - 12);
    if (plot.width() < 10 || plot.height() < 10) return;
    const double last = std::max<double>(1, double(layers - 1));
    auto px = [&](double k) { return plot.left() + plot.width() * k / last; };
    auto py = [&](double v, int a) { return plot.bottom() - plot.height() * (v - lo[a]) / (hi[a] - lo[a]); };
    p.setPen(ink);
    p.drawRect(plot);
    p.drawText(QRectF(plot.left(), plot.bottom() + lineH, plot.width(), lineH),
               Qt::AlignHCenter | Qt::AlignTop, tr("layer"));
    // Integer layer ticks, every `step` layers so that the labels do not touch.
    const int labelW = fm.horizontalAdvance(QString::number(int(last))) + 12;
    int step = 1;
    while (step < last && plot.width() * step / last < labelW) step *= 2;
    for (int k = 0; k <= int(last); k += step)
        p.drawText(QRectF(px(k) - 30, plot.bottom() + 2, 60, lineH), Qt::AlignHCenter | Qt::AlignTop,
                   QString::number(k));
    for (int a = 0; a < (hasRight ? 2 : 1); ++a)
        for (double v : {lo[a], hi[a]}) {
            const QRectF box = a == 0 ? QRectF(0, py(v, a) - lineH / 2.0, axisW - 4, lineH)
                                      : QRectF(plot.right() + 4, py(v, a) - lineH / 2.0, axisW - 4, lineH);
            p.drawText(box, (a == 0 ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter, tick(v));
        }
    if (cursor_ >= 0 && std::size_t(cursor_) < layers) {
        p.setPen(QPen(grid, 1, Qt::DashLine));
        p.drawLine(QPointF(px(cursor_), plot.top()), QPointF(px(cursor_), plot.bottom()));
    }
    double legendX = plot.left();
    for (const Curve& c : curves_) {
        QPainterPath path;
        bool pen = false;
        for (std::size_t k = 0; k < c.values.size(); ++k) {
            const double v = c.values[k];
            if (!std::isfinite(v)) {
                pen = false;
                continue;
            }
            const QPointF at(px(double(k)), py(v, c.rightAxis));
            if (pen)
                path.lineTo(at);
            else
                path.moveTo(at);
            pen = true;
        }
        p.setPen(QPen(c.color, 2));
        p.drawPath(path);
        for (std::size_t k = 0; k < c.values.size(); ++k)
            if (std::isfinite(c.values[k]))
                p.drawEllipse(QPointF(px(double(k)), py(c.values[k], c.rightAxis)), 2, 2);
        const QString label =
            c.name + (hasRight ? (c.rightAxis ? tr(" (right)") : tr(" (left)")) : QString());
        p.fillRect(QRectF(legendX, 4 + lineH / 2.0 - 1, 14, 3), c.color);
        p.setPen(ink);
        p.drawText(QPointF(legendX + 18, 2 + fm.ascent()), label);
        legendX += 30 + fm.horizontalAdvance(label);
    }
}

} // namespace flowscope
