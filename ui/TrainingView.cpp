#include "ui/TrainingView.h"

#include "ui/Tooltips.h"
#include "ui/ViewTransform.h"

#include <QHelpEvent>
#include <QImage>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <limits>

namespace flowscope {

namespace {

constexpr double kMargin = 8.0;
constexpr double kGap = 10.0;
constexpr double kMinPlotHeight = 120.0;
const QColor kDataColor(0xa8, 0xad, 0xb8, 140);
const QColor kSampleColor(0xff, 0x8c, 0x1a, 190);
// Curves: one colour per trainer kind, so side by side reads the same in every plot.
const QColor kRwpoCurve(0xff, 0x8c, 0x1a);
const QColor kPlainCurve(0x4f, 0xa3, 0xff);

QColor curveColor(const TrainerState& t) {
    return t.rwpo ? kRwpoCurve : kPlainCurve;
}

bool darkStyle(const PlotStyle& style) {
    return style.background.lightness() < 128;
}

QColor mix(const QColor& a, const QColor& b, double t) {
    t = std::clamp(t, 0.0, 1.0);
    return QColor::fromRgbF(float(a.redF() + t * (b.redF() - a.redF())),
                            float(a.greenF() + t * (b.greenF() - a.greenF())),
                            float(a.blueF() + t * (b.blueF() - a.blueF())));
}

// The heat map's colour for t in [0, 1]: from the plot background through a blue, so that the grey data and
// the orange samples stay readable on top of it.
QColor heatColor(double t, const PlotStyle& style) {
    const bool dark = darkStyle(style);
    const QColor mid = dark ? QColor(0x1d, 0x4f, 0x8a) : QColor(0xa9, 0xc9, 0xee);
    const QColor top = dark ? QColor(0x7c, 0xb8, 0xf2) : QColor(0x2c, 0x62, 0xa8);
    return t < 0.5 ? mix(style.background, mid, 2.0 * t) : mix(mid, top, 2.0 * t - 1.0);
}

// The density as an image, one pixel per cell (row 0 at the top: the largest y). The square root spreads
// the low densities, where the tails a flow gets wrong live.
QImage densityImage(const TrainingPicture& picture, const PlotStyle& style) {
    const int n = picture.gridSize();
    double top = 0.0;
    for (Eigen::Index k = 0; k < picture.density.size(); ++k)
        if (std::isfinite(picture.density(k))) top = std::max(top, picture.density(k));
    QImage image(n, n, QImage::Format_RGB32);
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
            const double v = picture.density(i, j);
            const double t = top > 0.0 && std::isfinite(v) ? std::sqrt(std::max(v, 0.0) / top) : 0.0;
            image.setPixel(i, n - 1 - j, heatColor(t, style).rgb());
        }
    return image;
}

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

// One curve of a plot: (iteration, value) points, drawn as a line or as dots joined by a thin line.
struct Series {
    QColor color;
    std::vector<QPointF> points;
    bool dots = false;
};

std::vector<Series> seriesOf(TrainingView::Plot plot, const TrainingSnapshot& s) {
    using Plot = TrainingView::Plot;
    std::vector<Series> out;
    for (const TrainerState& t : s.trainers) {
        if ((plot == Plot::Lambda || plot == Plot::Beta) && !t.rwpo) continue; // no prior, no kernel
        Series line{curveColor(t), {}, false};
        Series dots{curveColor(t), {}, true};
        for (const flows::TrainRecord& r : t.history) {
            const double x = double(r.iteration);
            switch (plot) {
            case Plot::Loss:
                line.points.emplace_back(x, r.terms.loss);
                break;
            case Plot::Nll:
                line.points.emplace_back(x, r.terms.nll);
                break;
            case Plot::Lambda:
                line.points.emplace_back(x, r.lambda);
                break;
            case Plot::Beta:
                line.points.emplace_back(x, r.beta);
                break;
            case Plot::Mmd2:
                break;
            }
        }
        for (const flows::Evaluation& e : t.evaluations) {
            if (plot == Plot::Nll) dots.points.emplace_back(double(e.iteration), e.nll);
            if (plot == Plot::Mmd2) dots.points.emplace_back(double(e.iteration), e.mmd2);
        }
        if (!line.points.empty()) out.push_back(std::move(line));
        if (!dots.points.empty()) out.push_back(std::move(dots));
    }
    return out;
}

// The value range of a plot. The first 5 % of a long line are left out: the initial loss is often far
// above the rest and would flatten everything that follows (it is still drawn, clipped at the top).
std::pair<double, double> valueRange(const std::vector<Series>& series) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const Series& s : series) {
        const std::size_t skip = !s.dots && s.points.size() >= 40 ? s.points.size() / 20 : 0;
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

const char* plotKey(TrainingView::Plot plot) {
    switch (plot) {
    case TrainingView::Plot::Loss:
        return "training.loss";
    case TrainingView::Plot::Nll:
        return "training.nll";
    case TrainingView::Plot::Lambda:
        return "training.lambda";
    case TrainingView::Plot::Beta:
        return "training.beta";
    case TrainingView::Plot::Mmd2:
        return "training.mmd2";
    }
    return "";
}

} // namespace

TrainingView::TrainingView(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("trainingView"));
    setAttribute(Qt::WA_OpaquePaintEvent);
    timer_.setInterval(kRefreshMs);
    connect(&timer_, &QTimer::timeout, this, &TrainingView::refresh);
    timer_.start();
}

void TrainingView::setSource(SnapshotSource source) {
    source_ = std::move(source);
    refresh();
}

void TrainingView::refresh() {
    auto s = source_ ? source_() : nullptr;
    if (s == shown_) return;
    shown_ = std::move(s);
    update();
    emit snapshotChanged();
}

void TrainingView::setPlotStyle(const PlotStyle& style) {
    style_ = style;
    update();
}

QString TrainingView::plotTitle(Plot plot) {
    switch (plot) {
    case Plot::Loss:
        return tr("loss (16)");
    case Plot::Nll:
        return tr("NLL (batch; held-out •)");
    case Plot::Lambda:
        return tr("λ (L1 prior weight)");
    case Plot::Beta:
        return tr("β (inverse temperature)");
    case Plot::Mmd2:
        return tr("held-out MMD²");
    }
    return {};
}

// Two arrangements: the grid, unless the column gives the scatter plots a clearly larger side (a wide view):
//  * column: the scatter plots on the left, the curve plots stacked in a column on the right;
//  * grid: the scatter plots on top, the curve plots in a grid below (a narrow view, or two flows).
TrainingView::Layout TrainingView::layout() const {
    Layout l;
    const QRectF all = QRectF(rect()).adjusted(kMargin, kMargin, -kMargin, -kMargin);
    const int n = shown_ ? std::max<int>(1, int(shown_->trainers.size())) : 1;
    const double bands = 2.0 * (fontMetrics().height() + 6.0); // title above and legend below a scatter
    const double legend = shown_ && shown_->sideBySide ? fontMetrics().height() + 4.0 : 0.0;

    const double columnWidth = std::clamp(all.width() * 0.3, 220.0, 380.0);
    const double columnSide =
        std::min((all.width() - columnWidth - kGap - (n - 1) * kGap) / n, all.height() - bands);
    const double gridHeight = std::max(2.0 * kMinPlotHeight + kGap + legend, 0.38 * all.height());
    const double gridSide =
        std::min((all.width() - (n - 1) * kGap) / n, all.height() - gridHeight - kGap - bands);

    QRectF plots, scatters;
    int columns = 1;
    if (gridSide >= 0.9 * columnSide) {
        scatters = QRectF(all.left(), all.top(), all.width(), gridSide + bands);
        plots = QRectF(all.left(), scatters.bottom() + kGap, all.width(),
                       all.bottom() - scatters.bottom() - kGap);
        columns = all.width() >= kPlotCount * 200.0 ? kPlotCount : 3;
    } else {
        plots = QRectF(all.right() - columnWidth, all.top(), columnWidth, all.height());
        scatters = QRectF(all.left(), all.top(), plots.left() - kGap - all.left(), all.height());
    }
    const int rows = (kPlotCount + columns - 1) / columns;
    const double w = (plots.width() - (columns - 1) * kGap) / columns;
    const double h = (plots.height() - legend - (rows - 1) * kGap) / rows;
    for (int k = 0; k < kPlotCount; ++k)
        l.plots[std::size_t(k)] = QRectF(plots.left() + (k % columns) * (w + kGap),
                                         plots.top() + legend + (k / columns) * (h + kGap), w, h);
    const double width = (scatters.width() - (n - 1) * kGap) / n;
    for (int k = 0; k < n; ++k)
        l.scatters.emplace_back(scatters.left() + k * (width + kGap), scatters.top(), width,
                                scatters.height());
    return l;
}

QRectF TrainingView::scatterRect(int trainer) const {
    const Layout l = layout();
    return trainer >= 0 && trainer < int(l.scatters.size()) ? l.scatters[std::size_t(trainer)] : QRectF();
}

QRectF TrainingView::plotRect(Plot plot) const {
    return layout().plots[std::size_t(plot)];
}

void TrainingView::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().color(QPalette::Window));
    p.setRenderHint(QPainter::Antialiasing, true);
    const Layout l = layout();
    if (!shown_ || shown_->trainers.empty()) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap,
                   tr("Choose a dataset and the flow's settings in the Training panel, then press Start."));
        return;
    }
    for (std::size_t k = 0; k < shown_->trainers.size(); ++k)
        paintScatter(p, l.scatters[k], shown_->trainers[k]);
    if (shown_->sideBySide) { // the curves' legend, above the plots
        const QFontMetricsF fm(font());
        double x = l.plots[0].left();
        const double y = l.plots[0].top() - 4.0 - fm.descent();
        for (const TrainerState& t : shown_->trainers) {
            p.setPen(QPen(curveColor(t), 2.0));
            p.drawLine(QPointF(x, y - fm.ascent() / 3), QPointF(x + 16, y - fm.ascent() / 3));
            p.setPen(palette().color(QPalette::WindowText));
            const QString label = QString::fromStdString(t.label);
            p.drawText(QPointF(x + 20, y), label);
            x += 20 + fm.horizontalAdvance(label) + 16;
        }
    }
    for (int k = 0; k < kPlotCount; ++k) paintPlot(p, l.plots[std::size_t(k)], Plot(k));
}

void TrainingView::paintScatter(QPainter& p, const QRectF& area, const TrainerState& trainer) const {
    const QFontMetricsF fm(font());
    const double line = fm.height();
    // Title above, legend below, the square plot between them.
    const QRectF titleBox(area.left(), area.top(), area.width(), line + 4);
    const double side = std::max(0.0, std::min(area.width(), area.height() - 2 * (line + 6)));
    const QRectF square(area.left() + (area.width() - side) / 2, titleBox.bottom() + 2, side, side);
    const TrainingPicture* picture = trainer.picture.get();

    p.setPen(palette().color(QPalette::WindowText));
    QString title = QString::fromStdString(trainer.label);
    if (!trainer.rwpo) title += tr(" (OT-Flow)");
    title += tr(" · iteration %1").arg(trainer.iteration);
    if (picture && picture->iteration != trainer.iteration)
        title += tr(" (picture: %1)").arg(picture->iteration);
    p.drawText(QRectF(square.left(), titleBox.top(), square.width(), titleBox.height()),
               Qt::AlignLeft | Qt::AlignVCenter, fm.elidedText(title, Qt::ElideRight, square.width()));

    p.save();
    p.translate(square.topLeft());
    p.setClipRect(QRectF(QPointF(0, 0), square.size()));
    p.fillRect(QRectF(QPointF(0, 0), square.size()), style_.background);
    const double extent = picture ? picture->gridExtent : 4.0;
    ViewTransform view;
    view.setViewportSize(square.size());
    view.frame(QRectF(-extent, -extent, 2 * extent, 2 * extent), 0.0);
    auto toPixel = [&view](double x, double y) { return view.worldToPixel({x, y}); };
    if (picture && picture->gridSize() > 0) {
        p.setRenderHint(QPainter::SmoothPixmapTransform, true);
        p.drawImage(QRectF(toPixel(-extent, extent), toPixel(extent, -extent)),
                    densityImage(*picture, style_));
    }
    drawGrid(p, view, style_);
    if (picture && picture->samples.cols() >= 2) {
        auto scatter = [&](const Mat& rows, const QColor& color) {
            QPolygonF points;
            points.reserve(int(rows.rows()));
            for (Eigen::Index r = 0; r < rows.rows(); ++r)
                if (std::isfinite(rows(r, 0)) && std::isfinite(rows(r, 1)))
                    points << toPixel(rows(r, 0), rows(r, 1));
            p.setPen(QPen(color, 3.0, Qt::SolidLine, Qt::RoundCap));
            p.drawPoints(points);
        };
        scatter(picture->data, kDataColor);
        // A few trajectories x^0 .. x^M, from the base draw to the sample, under the samples.
        const QColor ink = darkStyle(style_) ? QColor(255, 255, 255, 110) : QColor(0, 0, 0, 110);
        p.setPen(QPen(ink, 1.0));
        const Eigen::Index shownPaths =
            picture->trajectories.empty()
                ? 0
                : std::min<Eigen::Index>(kShownTrajectories, picture->trajectories[0].rows());
        for (Eigen::Index i = 0; i < shownPaths; ++i) {
            QPolygonF path;
            for (const Mat& layer : picture->trajectories)
                if (std::isfinite(layer(i, 0)) && std::isfinite(layer(i, 1)))
                    path << toPixel(layer(i, 0), layer(i, 1));
            p.drawPolyline(path);
        }
        scatter(picture->samples, kSampleColor);
        // Early in training (and with the RWPO layer especially) samples can land far outside the data's
        // square: say how many rather than leave the reader looking for them.
        long outside = 0;
        for (Eigen::Index r = 0; r < picture->samples.rows(); ++r)
            outside +=
                !(std::abs(picture->samples(r, 0)) <= extent && std::abs(picture->samples(r, 1)) <= extent);
        if (outside > 0) {
            const QString note =
                tr("%1 of %2 samples outside the view").arg(outside).arg(picture->samples.rows());
            const QRectF box(6, 6, fm.horizontalAdvance(note) + 10, line + 4);
            p.fillRect(box, QColor(style_.background.red(), style_.background.green(),
                                   style_.background.blue(), 200));
            p.setPen(kSampleColor);
            p.drawText(box, Qt::AlignCenter, note);
        }
    } else {
        p.setPen(style_.label);
        p.drawText(QRectF(QPointF(0, 0), square.size()), Qt::AlignCenter, tr("generating samples..."));
    }
    p.restore();
    p.setPen(QPen(style_.axis, 1.0));
    p.setBrush(Qt::NoBrush);
    p.drawRect(square);

    // Legend: what each mark is.
    double x = square.left();
    const double y = square.bottom() + 4 + fm.ascent();
    auto entry = [&](const QColor& color, const QString& text, bool dot) {
        p.setPen(Qt::NoPen);
        p.setBrush(QColor(color.red(), color.green(), color.blue()));
        const QRectF mark(x, y - fm.ascent() / 2 - 4, 8, 8);
        if (dot)
            p.drawEllipse(mark);
        else
            p.drawRect(mark);
        p.setBrush(Qt::NoBrush);
        p.setPen(palette().color(QPalette::WindowText));
        p.drawText(QPointF(x + 12, y), text);
        x += 12 + fm.horizontalAdvance(text) + 14;
    };
    entry(kDataColor, tr("data"), true);
    entry(kSampleColor, tr("generated"), true);
    const bool histogram = picture && picture->densityFromSamples;
    entry(heatColor(0.8, style_), histogram ? tr("histogram of samples") : tr("model density"), false);
}

void TrainingView::paintPlot(QPainter& p, const QRectF& area, Plot plot) const {
    const QFontMetricsF fm(font());
    const std::vector<Series> series = seriesOf(plot, *shown_);
    const auto [lo, hi] = valueRange(series);
    const double xMax = std::max<double>(1.0, double(shown_->iteration()));

    // Title band on top, tick labels left and below.
    const QString axis = tr("iteration");
    const double yLabels =
        std::max(fm.horizontalAdvance(QStringLiteral("-0.0000")), fm.horizontalAdvance(axis)) + 14;
    const QRectF inner(area.left() + yLabels, area.top() + fm.height() + 2, area.width() - yLabels,
                       area.height() - 2 * fm.height() - 4);
    p.setPen(palette().color(QPalette::WindowText));
    p.drawText(QPointF(area.left(), area.top() + fm.ascent()), plotTitle(plot));
    p.fillRect(inner, style_.background);
    if (inner.height() < 8 || inner.width() < 8) return;

    auto toPixel = [&](QPointF v) {
        return QPointF(inner.left() + v.x() / xMax * inner.width(),
                       inner.bottom() - (v.y() - lo) / (hi - lo) * inner.height());
    };
    // Horizontal grid with value labels; iteration ticks below.
    const double yStep = niceGridStep(inner.height() / (hi - lo), fm.height() * 1.5);
    p.setFont(font());
    for (double v = std::ceil(lo / yStep) * yStep; v <= hi; v += yStep) {
        const double y = toPixel({0.0, v}).y();
        p.setPen(QPen(style_.grid, 1.0));
        p.drawLine(QPointF(inner.left(), y), QPointF(inner.right(), y));
        p.setPen(style_.label);
        p.drawText(QRectF(area.left(), y - fm.height() / 2, yLabels - 4, fm.height()),
                   Qt::AlignRight | Qt::AlignVCenter, formatTick(v, yStep));
    }
    const double xStep =
        niceGridStep(inner.width() / xMax, fm.horizontalAdvance(QStringLiteral("00000")) * 1.6);
    p.setPen(style_.label);
    for (double v = 0.0; v <= xMax; v += xStep) {
        const double x = toPixel({v, lo}).x();
        const QString text = formatTick(v, xStep);
        const double w = fm.horizontalAdvance(text);
        p.drawText(QPointF(std::min(x - w / 2, inner.right() - w), inner.bottom() + fm.ascent() + 2), text);
    }
    p.save();
    p.setClipRect(inner);
    if (series.empty()) {
        p.setPen(style_.label);
        const QString why = plot == Plot::Mmd2 ? tr("held-out metrics: every 200 iterations, or Evaluate")
                                               : tr("not used without the RWPO layer");
        p.drawText(inner, Qt::AlignCenter | Qt::TextWordWrap, why);
    }
    for (const Series& s : series) {
        QPolygonF pixels;
        for (const QPointF& v : s.points)
            if (std::isfinite(v.y())) pixels << toPixel(v);
        if (s.dots) {
            p.setPen(QPen(s.color, 1.0, Qt::DotLine));
            p.drawPolyline(pixels);
            p.setPen(QPen(s.color, 5.0, Qt::SolidLine, Qt::RoundCap));
            p.drawPoints(pixels);
        } else {
            p.setPen(QPen(s.color, 1.5));
            p.drawPolyline(envelope(pixels));
        }
    }
    p.restore();
    p.setPen(QPen(style_.axis, 1.0));
    p.drawRect(inner);
    p.setPen(style_.label);
    p.drawText(QPointF(inner.left() - fm.horizontalAdvance(axis) - 12, inner.bottom() + fm.ascent() + 2),
               axis);
}

QString TrainingView::tooltipAt(QPointF pos) const {
    const Layout l = layout();
    for (int k = 0; k < kPlotCount; ++k)
        if (l.plots[std::size_t(k)].contains(pos)) return parameterTooltip(plotKey(Plot(k)));
    for (std::size_t k = 0; k < l.scatters.size(); ++k) {
        if (!l.scatters[k].contains(pos)) continue;
        const bool histogram = shown_ && k < shown_->trainers.size() && shown_->trainers[k].picture &&
                               shown_->trainers[k].picture->densityFromSamples;
        return parameterTooltip(histogram ? "training.picture_histogram" : "training.picture_density");
    }
    return {};
}

bool TrainingView::event(QEvent* e) {
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
