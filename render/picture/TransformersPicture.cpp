#include "render/picture/TransformersPicture.h"

#include "render/picture/ViewTransform.h"

#include <QCoreApplication>
#include <QFontMetricsF>
#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace flowscope {

namespace {

// Curves: the configured λ_OT in orange, λ_OT = 0 (comparison) in blue, in every plot.
const QColor kRegularizedCurve(0xff, 0x8c, 0x1a);
const QColor kFreeCurve(0x4f, 0xa3, 0xff);
const QColor kBoundColor(0xe0, 0x5a, 0x5a);

QColor curveColor(const TransformerTrainerState& t) {
    return t.lambdaOt > 0 ? kRegularizedCurve : kFreeCurve;
}

bool darkStyle(const PlotStyle& style) {
    return style.background.lightness() < 128;
}

// Task A's six tokens each get their own hue; task B's 64 points share one (the paths are the picture).
QColor tokenColor(int token, int tokens, const PlotStyle& style) {
    if (tokens > 12) return darkStyle(style) ? QColor(0x7c, 0xb8, 0xf2) : QColor(0x2c, 0x62, 0xa8);
    return QColor::fromHsvF(float(std::fmod(0.58 + 0.61803 * token, 1.0)), 0.62f,
                            darkStyle(style) ? 0.98f : 0.78f);
}

bool finiteRow(const Mat& m, Eigen::Index r) {
    return std::isfinite(m(r, 0)) && std::isfinite(m(r, 1));
}

std::vector<CurveSeries> seriesOf(TransformersPicture::Plot plot, const TransformerSnapshot& s) {
    using Plot = TransformersPicture::Plot;
    using Style = CurveSeries::Style;
    std::vector<CurveSeries> out;
    for (const TransformerTrainerState& t : s.trainers) {
        CurveSeries line{curveColor(t), {}, Style::Line};
        CurveSeries dots{curveColor(t), {}, Style::Dots};
        for (const ot::OtRecord& r : t.history) {
            const double x = double(r.iteration);
            if (plot == Plot::Objective) line.points.emplace_back(x, r.terms.loss);
            if (plot == Plot::Transport) line.points.emplace_back(x, r.terms.transport);
            if (plot == Plot::Target && s.task == ot::Task::B) line.points.emplace_back(x, r.terms.accuracy);
        }
        for (const ot::OtEvaluation& e : t.evaluations) {
            const double x = double(e.iteration);
            if (plot == Plot::Straightness) dots.points.emplace_back(x, e.straightness);
            if (plot == Plot::Target)
                dots.points.emplace_back(x, s.task == ot::Task::A ? e.closedFormError : e.terms.accuracy);
            if (plot == Plot::Lipschitz) dots.points.emplace_back(x, e.lipschitzRatio);
        }
        if (!line.points.empty()) out.push_back(std::move(line));
        if (!dots.points.empty()) out.push_back(std::move(dots));
        // Theorem 2's bound, where λ_OT is above the threshold (else it is +∞ and not drawn).
        if (plot == Plot::Lipschitz && !t.evaluations.empty() &&
            std::isfinite(t.evaluations.back().lipschitzBound)) {
            const double bound = t.evaluations.back().lipschitzBound;
            out.push_back(
                {kBoundColor, {{0.0, bound}, {double(std::max(1L, s.iteration())), bound}}, Style::Dashed});
        }
    }
    return out;
}

QString tr(const char* text) {
    return QCoreApplication::translate("TransformerView", text);
}

} // namespace

QString TransformersPicture::plotTitle(Plot plot, ot::Task task) {
    switch (plot) {
    case Plot::Objective:
        return tr("objective: loss + λ_OT · transport");
    case Plot::Transport:
        return tr("transport cost");
    case Plot::Straightness:
        return tr("straightness (held-out •)");
    case Plot::Target:
        return task == ot::Task::A ? tr("to the closed form (held-out •)")
                                   : tr("accuracy (batch; held-out •)");
    case Plot::Lipschitz:
        return tr("Lipschitz ratio (• measured, - - Thm 2 bound)");
    }
    return {};
}

QRectF TransformersPicture::pictureSquare(int trainer) const {
    const QRectF area = pictureRect(trainer);
    return area.isNull() ? QRectF() : squareIn(area);
}

// The bounding box of every picture's states and closed-form points, so that both pictures of a comparison
// use the same scale.
QRectF TransformersPicture::frame() const {
    double x0 = std::numeric_limits<double>::infinity(), y0 = x0, x1 = -x0, y1 = -x0;
    auto add = [&](const Mat& m) {
        for (Eigen::Index r = 0; r < m.rows(); ++r)
            if (m.cols() >= 2 && finiteRow(m, r)) {
                x0 = std::min(x0, m(r, 0));
                x1 = std::max(x1, m(r, 0));
                y0 = std::min(y0, m(r, 1));
                y1 = std::max(y1, m(r, 1));
            }
    };
    if (shown_)
        for (const TransformerTrainerState& t : shown_->trainers)
            if (t.picture) {
                for (const Mat& s : t.picture->states) add(s);
                add(t.picture->closedForm);
            }
    if (!(x0 <= x1)) return QRectF(-2, -2, 4, 4);
    return QRectF(x0, y0, x1 - x0, y1 - y0);
}

QPointF TransformersPicture::pictureToPixel(int trainer, double x, double y) const {
    const QRectF square = pictureSquare(trainer);
    ViewTransform view;
    view.setViewportSize(square.size());
    view.frame(frame_, 0.08);
    return square.topLeft() + view.worldToPixel({x, y});
}

QString TransformersPicture::placeholder() const {
    return tr("Choose a task, λ_OT and the model in the Transformer panel, then press Start.");
}

QColor TransformersPicture::trainerColor(std::size_t trainer) const {
    return curveColor(shown_->trainers[trainer]);
}

void TransformersPicture::paintPicture(QPainter& p, const QRectF& area, std::size_t k) const {
    const TransformerTrainerState& trainer = shown_->trainers[k];
    const QFontMetricsF fm(font_);
    const QRectF square = squareIn(area);
    const TransformerPicture* picture = trainer.picture.get();
    QString title = QString::fromStdString(trainer.label) + tr(" · iteration %1").arg(trainer.iteration);
    if (picture && picture->iteration != trainer.iteration)
        title += tr(" (picture: %1)").arg(picture->iteration);
    if (picture && picture->label >= 0)
        title += tr(" · a %1").arg(QString::fromLatin1(ot::taskBClassName(picture->label)));
    if (trainer.stopped) title += tr(" · stopped");
    beginPicture(p, area, square, title);
    ViewTransform view;
    view.setViewportSize(square.size());
    view.frame(frame_, 0.08);
    drawGrid(p, view, style_);
    auto toPixel = [&view](const Mat& m, Eigen::Index r) { return view.worldToPixel({m(r, 0), m(r, 1)}); };
    const bool hasPaths = picture && !picture->states.empty() && picture->states.front().cols() >= 2;
    if (hasPaths) {
        const std::vector<Mat>& states = picture->states;
        const Eigen::Index tokens = states.front().rows();
        const bool many = tokens > 12;
        const Mat& start = states.front();
        const Mat& end = states.back();
        const Mat& star = picture->closedForm;
        for (Eigen::Index i = 0; i < tokens; ++i) {
            QColor color = tokenColor(int(i), int(tokens), style_);
            if (many) color.setAlpha(150);
            QPolygonF path;
            for (const Mat& x : states)
                if (finiteRow(x, i)) path << toPixel(x, i);
            p.setPen(QPen(color, many ? 1.0 : 1.8));
            p.drawPolyline(path);
            if (!many) { // a dot per step: the spacing shows the speed along the path
                p.setPen(QPen(color, 4.0, Qt::SolidLine, Qt::RoundCap));
                p.drawPoints(path);
            }
            p.setBrush(Qt::NoBrush);
            p.setPen(QPen(color, 1.5));
            const double r = many ? 2.5 : 4.5;
            if (finiteRow(start, i)) p.drawEllipse(toPixel(start, i), r, r);
            p.setBrush(color);
            if (finiteRow(end, i)) p.drawEllipse(toPixel(end, i), r, r);
            p.setBrush(Qt::NoBrush);
        }
        if (star.rows() == tokens && star.cols() >= 2) {
            // The optimal straight paths X_0 -> X*(T), dashed, over the learned ones: a learned path that
            // is straight lies under its optimal one and shows between the dashes.
            const QColor ink = darkStyle(style_) ? QColor(255, 255, 255) : QColor(0, 0, 0);
            p.setPen(QPen(QColor(ink.red(), ink.green(), ink.blue(), 190), 1.2, Qt::DashLine));
            for (Eigen::Index i = 0; i < tokens; ++i)
                if (finiteRow(start, i) && finiteRow(star, i))
                    p.drawLine(toPixel(start, i), toPixel(star, i));
            p.setPen(QPen(ink, 1.6));
            for (Eigen::Index i = 0; i < tokens; ++i) {
                if (!finiteRow(star, i)) continue;
                const QPointF c = toPixel(star, i);
                p.drawLine(c + QPointF(-5, -5), c + QPointF(5, 5));
                p.drawLine(c + QPointF(-5, 5), c + QPointF(5, -5));
            }
        }
    }
    endPicture(p, square, hasPaths ? QString() : tr("drawing the paths..."));

    // Legend: what each mark is, in the order of legendTexts().
    double x = square.left();
    const double y = square.bottom() + 4 + fm.ascent();
    const QColor ink = palette_.color(QPalette::WindowText);
    const std::function<void(QPointF)> marks[] = {[&](QPointF c) { // X0: a ring
                                                      p.setPen(QPen(ink, 1.5));
                                                      p.drawEllipse(c, 4, 4);
                                                  },
                                                  [&](QPointF c) { // X(T): a dot
                                                      p.setPen(Qt::NoPen);
                                                      p.setBrush(ink);
                                                      p.drawEllipse(c, 4, 4);
                                                  },
                                                  [&](QPointF c) { // X*(T): a cross
                                                      p.setPen(QPen(ink, 1.5));
                                                      p.drawLine(c + QPointF(-4, -4), c + QPointF(4, 4));
                                                      p.drawLine(c + QPointF(-4, 4), c + QPointF(4, -4));
                                                  },
                                                  [&](QPointF c) { // the optimal path: dashed
                                                      p.setPen(QPen(ink, 1.2, Qt::DashLine));
                                                      p.drawLine(c + QPointF(-6, 0), c + QPointF(6, 0));
                                                  }};
    const QStringList texts = legendTexts(picture && picture->closedForm.rows() > 0,
                                          hasPaths ? int(picture->states.size()) - 1 : 0, square.width(), fm);
    for (int k = 0; k < texts.size(); ++k) {
        marks[k](QPointF(x + 5, y - fm.ascent() / 2 + 1));
        p.setBrush(Qt::NoBrush);
        p.setPen(ink);
        p.drawText(QPointF(x + 14, y), texts[k]);
        x += kLegendMark + fm.horizontalAdvance(texts[k]) + kLegendGap;
    }
}

QStringList TransformersPicture::legendTexts(bool closedForm, int steps, double width,
                                             const QFontMetricsF& fm) {
    QStringList full{tr("X₀"), tr("X(T), M = %1").arg(steps)}, brief{tr("X₀"), tr("X(T)")};
    if (closedForm) {
        full << tr("X*(T) closed form") << tr("optimal path");
        brief << tr("X*(T)") << tr("optimal");
    }
    const auto widthOf = [&fm](const QStringList& texts, int count) {
        double w = 0.0;
        for (int k = 0; k < count; ++k)
            w += kLegendMark + fm.horizontalAdvance(texts[k]) + (k ? kLegendGap : 0.0);
        return w;
    };
    QStringList texts = widthOf(full, int(full.size())) <= width ? full : brief;
    while (!texts.isEmpty() && widthOf(texts, int(texts.size())) > width) texts.removeLast();
    return texts;
}

void TransformersPicture::paintPlotAt(QPainter& p, const QRectF& area, int index) const {
    const Plot plot = Plot(index);
    CurvePlot curves;
    curves.title = plotTitle(plot, shown_->task);
    curves.series = seriesOf(plot, *shown_);
    curves.xMax = double(shown_->iteration());
    curves.emptyText = tr("held-out metrics: every 250 iterations, or Evaluate");
    paintCurvePlot(p, area, curves, style_, palette_, font_);
}

} // namespace flowscope
