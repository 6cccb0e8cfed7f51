#include "ui/views/ModelPlots.h"

#include "render/picture/CurvePlot.h"

#include <QPainter>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

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

void GramHistogramView::setHistograms(const models::GramHistograms& g, std::vector<Compared> compared,
                                      const QString& label) {
    g_ = g;
    compared_ = std::move(compared);
    label_ = label;
    updateAxis();
}

void GramHistogramView::setLogScale(bool on) {
    axis_.log = on;
    updateAxis();
}

// One axis for every panel and input: linear to the largest density rounded up, or its decades.
void GramHistogramView::updateAxis() {
    std::vector<const models::GramHistograms*> all{&g_};
    for (const Compared& c : compared_) all.push_back(&c.g);
    const auto [smallest, largest] = models::densityRange(all);
    scale_ = niceCeil(largest);
    axis_ =
        axis_.log ? models::DensityAxis::logarithmic(smallest, largest) : models::DensityAxis::linear(scale_);
    update();
}

std::vector<double> GramHistogramView::barHeights(std::size_t panel, int compared) const {
    const models::GramHistograms& g = compared < 0 ? g_ : compared_.at(std::size_t(compared)).g;
    std::vector<double> out;
    for (const double d : g.density.at(panel)) out.push_back(axis_.fraction(d));
    return out;
}

QColor GramHistogramView::comparedColour(std::size_t k) {
    // Not the highlight (the first input's bars) nor the cluster curve's orange.
    static const QColor colours[] = {
        {44, 150, 80}, {170, 60, 160}, {20, 150, 165}, {150, 110, 40}, {120, 120, 120}};
    return colours[k % std::size(colours)];
}

void GramHistogramView::clear() {
    g_ = {};
    compared_.clear();
    updateAxis();
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
    // The title line (and the legend line with further inputs); ticks and two captions under each panel.
    const double header = (compared_.empty() ? 1 : 2) * lineH + 6, under = 3.2 * lineH + 8;
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
    p.drawText(
        QRectF(left, 2, width() - left - right, lineH), Qt::AlignLeft | Qt::AlignTop,
        fm.elidedText((axis_.log ? tr("Density (log scale) of <x_i, x_j> over the %1 pairs i < j of "
                                      "the normalised tokens, one scale for every layer")
                                 : tr("Density of <x_i, x_j> over the %1 pairs i < j of the normalised "
                                      "tokens, one scale for every layer"))
                          .arg(g_.pairs),
                      Qt::ElideRight, width() - left - right));
    const QColor bar = pal.color(QPalette::Highlight);
    if (!compared_.empty()) {
        // The legend: a swatch and the label of every input, each given an equal share of the line.
        const double share = double(width() - left - right) / double(compared_.size() + 1);
        for (std::size_t k = 0; k <= compared_.size(); ++k) {
            const double x = left + share * double(k), y = 2 + lineH;
            const QColor colour = k == 0 ? bar : comparedColour(k - 1);
            p.fillRect(QRectF(x, y + lineH / 2.0 - 2, 14, 4), colour);
            const QString label = k == 0 ? tr("1: %1").arg(label_.isEmpty() ? tr("the input") : label_)
                                         : tr("%1: %2").arg(k + 1).arg(compared_[k - 1].label);
            p.setPen(ink);
            p.drawText(QRectF(x + 18, y, share - 24, lineH), Qt::AlignLeft | Qt::AlignTop,
                       fm.elidedText(label, Qt::ElideRight, int(share - 24)));
        }
    }
    for (int k = 0; k < panels; ++k) {
        const int row = k / perRow, col = k % perRow;
        const double x0 = left + col * (panelW + gap), top = header + row * rowH + 6, y1 = top + panelH;
        // The log axis's decades between its floor and its top, under the bars.
        p.setPen(QPen(grid, 0.8, Qt::DotLine));
        for (double v = axis_.bottom * 10; axis_.log && v < axis_.top * 0.999; v *= 10)
            p.drawLine(QPointF(x0, y1 - panelH * axis_.fraction(v)),
                       QPointF(x0 + panelW, y1 - panelH * axis_.fraction(v)));
        const std::vector<double> heights = barHeights(std::size_t(k));
        const double w = panelW / double(heights.size());
        for (std::size_t b = 0; b < heights.size(); ++b) {
            const double h = panelH * heights[b];
            if (h > 0) p.fillRect(QRectF(x0 + w * double(b), y1 - h, std::max(w - 0.6, 0.6), h), bar);
        }
        for (std::size_t c = 0; c < compared_.size(); ++c) {
            // The further input's density as a step outline, on the same scale.
            const std::vector<double> dc = barHeights(std::size_t(k), int(c));
            const double wc = panelW / double(dc.size());
            QPolygonF outline;
            outline << QPointF(x0, y1);
            for (std::size_t b = 0; b < dc.size(); ++b) {
                const double y = y1 - panelH * dc[b];
                outline << QPointF(x0 + wc * double(b), y) << QPointF(x0 + wc * double(b + 1), y);
            }
            outline << QPointF(x0 + panelW, y1);
            p.setPen(QPen(comparedColour(c), 1.6));
            p.drawPolyline(outline);
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
                       tick(axis_.top));
            p.drawText(QRectF(0, y1 - lineH / 2.0, left - 4, lineH), Qt::AlignRight | Qt::AlignVCenter,
                       axis_.log ? tick(axis_.bottom) : QStringLiteral("0"));
            // The decades between, where they are far enough apart to be read.
            const double decade = panelH / std::log10(axis_.top / axis_.bottom);
            for (double v = axis_.bottom * 10; axis_.log && decade >= 1.5 * lineH && v < axis_.top * 0.999;
                 v *= 10)
                p.drawText(QRectF(0, y1 - panelH * axis_.fraction(v) - lineH / 2.0, left - 4, lineH),
                           Qt::AlignRight | Qt::AlignVCenter, tick(v));
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

// render/picture/CurvePlot's plot, as the Flows and Transformers pictures draw theirs, in the widget's
// palette: the legend in the title's line, the layers along the horizontal axis.
void LayerCurveView::paintEvent(QPaintEvent*) {
    PlotPainter canvas(this);
    auto& [p, pal, ink, grid, fm] = canvas;
    CurvePlot plot;
    plot.xLabel = tr("layer");
    plot.trimStart = false;
    plot.xStepMin = 1;
    plot.cursor = cursor_ >= 0 ? double(cursor_) : std::numeric_limits<double>::quiet_NaN();
    std::vector<LegendEntry> legend;
    bool hasRight = false;
    std::size_t layers = 0;
    for (const Curve& c : curves_) {
        CurveSeries s{c.color, {}, CurveSeries::Style::Marked};
        for (std::size_t k = 0; k < c.values.size(); ++k) s.points.emplace_back(double(k), c.values[k]);
        (c.rightAxis ? plot.right : plot.series).push_back(std::move(s));
        hasRight |= c.rightAxis;
        layers = std::max(layers, c.values.size());
    }
    if (layers == 0) return;
    plot.xMax = double(layers - 1);
    for (const Curve& c : curves_)
        legend.push_back(
            {c.color, c.name + (hasRight ? (c.rightAxis ? tr(" (right)") : tr(" (left)")) : QString())});
    const PlotStyle style{pal.color(QPalette::Base), pal.color(QPalette::Midlight), grid, ink}; // grid: Mid
    const QRectF area = QRectF(rect()).adjusted(4, 2, -4, -2);
    paintCurvePlot(p, area, plot, style, pal, font());
    paintCurveLegend(p, QPointF(area.left(), area.top() + fm.ascent()), legend, pal, font());
}

} // namespace flowscope
