#include "render/picture/FlowsPicture.h"

#include "render/picture/ViewTransform.h"

#include <QCoreApplication>
#include <QImage>
#include <QPainter>

#include <algorithm>
#include <cmath>
#include <limits>

namespace flowscope {

namespace {

const QColor kDataColor(0xa8, 0xad, 0xb8, 140);
const QColor kSampleColor(0xff, 0x8c, 0x1a, 190);
QColor curveColor(const FlowTrainerState& t) {
    return rwpoCurveColor(t.rwpo);
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
QImage densityImage(const FlowPicture& picture, const PlotStyle& style) {
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

std::vector<CurveSeries> seriesOf(FlowsPicture::Plot plot, const FlowSnapshot& s) {
    using Plot = FlowsPicture::Plot;
    std::vector<CurveSeries> out;
    for (const FlowTrainerState& t : s.trainers) {
        if ((plot == Plot::Lambda || plot == Plot::Beta) && !t.rwpo) continue; // no prior, no kernel
        CurveSeries line{curveColor(t), {}, CurveSeries::Style::Line};
        CurveSeries dots{curveColor(t), {}, CurveSeries::Style::Dots};
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

QString tr(const char* text) {
    return QCoreApplication::translate("FlowView", text);
}

} // namespace

QString FlowsPicture::plotTitle(Plot plot) {
    switch (plot) {
    case Plot::Loss:
        return tr("loss: NLL + transport + HJB");
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

namespace {

// The first trainer with the RWPO layer (the only one that has a λ), or null.
const FlowTrainerState* rwpoTrainer(const FlowSnapshot& s) {
    for (const FlowTrainerState& t : s.trainers)
        if (t.rwpo) return &t;
    return nullptr;
}

// Whether λ changes in this run: some trainer with the RWPO layer trains it.
bool lambdaTrained(const FlowSnapshot& s) {
    for (const FlowTrainerState& t : s.trainers)
        if (t.rwpo && (!t.config || t.config->flow.trainLambda)) return true;
    return false;
}

} // namespace

std::vector<int> FlowsPicture::shownPlots() const {
    std::vector<int> plots = TrainingRunPicture::shownPlots();
    if (shown_ && !shown_->trainers.empty() && !lambdaTrained(*shown_)) std::erase(plots, int(Plot::Lambda));
    return plots;
}

QString FlowsPicture::plotNote() const {
    if (!shown_ || shown_->trainers.empty() || lambdaTrained(*shown_)) return {};
    const FlowTrainerState* t = rwpoTrainer(*shown_);
    // What matters first, for a narrow column that elides the rest.
    if (!t) return tr("λ: not used without the RWPO layer (L1 prior weight)");
    const double lambda = !t->history.empty() ? t->history.back().lambda : t->config->flow.lambda0;
    return tr("λ = %1, fixed (not trained; the L1 prior weight)").arg(lambda, 0, 'g', 3);
}

const char* FlowsPicture::pictureKey(std::size_t k) const {
    const bool histogram = shown_ && k < shown_->trainers.size() && shown_->trainers[k].picture &&
                           shown_->trainers[k].picture->densityFromSamples;
    return histogram ? "training.picture_histogram" : "training.picture_density";
}

QString FlowsPicture::placeholder() const {
    return tr("Choose a dataset and the flow's settings in the Training panel, then press Start.");
}

QColor FlowsPicture::trainerColor(std::size_t trainer) const {
    return curveColor(shown_->trainers[trainer]);
}

void FlowsPicture::paintPicture(QPainter& p, const QRectF& area, std::size_t k) const {
    const FlowTrainerState& trainer = shown_->trainers[k];
    const QFontMetricsF fm(font_);
    const double line = fm.height();
    const QRectF square = squareIn(area);
    const FlowPicture* picture = trainer.picture.get();
    QString title = QString::fromStdString(trainer.label);
    if (!trainer.rwpo) title += tr(" (OT-Flow)");
    title += tr(" · iteration %1").arg(trainer.iteration);
    // A picture drawn at an earlier iteration says which; a draft (fewer samples, a coarser grid) says so.
    if (picture && picture->iteration != trainer.iteration)
        title += picture->draft ? tr(" (draft of %1)").arg(picture->iteration)
                                : tr(" (picture: %1)").arg(picture->iteration);
    else if (picture && picture->draft)
        title += tr(" (draft)");
    beginPicture(p, area, square, title);
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
    const bool hasSamples = picture && picture->samples.cols() >= 2;
    if (hasSamples) {
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
            QString note = tr("%1 of %2 samples outside the view").arg(outside).arg(picture->samples.rows());
            if (fm.horizontalAdvance(note) + 16 > square.width()) // a narrow window: the short form
                note = tr("%1/%2 outside").arg(outside).arg(picture->samples.rows());
            const QRectF box(6, 6, fm.horizontalAdvance(note) + 10, line + 4);
            p.fillRect(box, QColor(style_.background.red(), style_.background.green(),
                                   style_.background.blue(), 200));
            p.setPen(kSampleColor);
            p.drawText(box, Qt::AlignCenter, note);
        }
    }
    endPicture(p, square, hasSamples ? QString() : tr("drawing the first picture..."));

    const bool histogram = picture && picture->densityFromSamples;
    paintMarks(
        p, square,
        {{kDataColor, tr("data")},
         {kSampleColor, tr("generated")},
         {heatColor(0.8, style_), histogram ? tr("histogram of samples") : tr("model density"), false}});
}

void FlowsPicture::paintPlotAt(QPainter& p, const QRectF& area, int index) const {
    const Plot plot = Plot(index);
    CurvePlot curves;
    curves.title = plotTitle(plot);
    curves.series = seriesOf(plot, *shown_);
    curves.xMax = double(shown_->iteration());
    // Empty for one of three reasons: no held-out evaluation yet, λ and β of trainers that have no RWPO
    // layer, or no iteration yet.
    bool anyRwpo = false;
    for (const FlowTrainerState& t : shown_->trainers) anyRwpo = anyRwpo || t.rwpo;
    if (plot == Plot::Mmd2)
        curves.emptyText = tr("held-out metrics: every 200 iterations, or Evaluate");
    else if ((plot == Plot::Lambda || plot == Plot::Beta) && !anyRwpo)
        curves.emptyText = tr("not used without the RWPO layer");
    else
        curves.emptyText = tr("no iteration yet: Start or Step");
    paintCurvePlot(p, area, curves, style_, palette_, font_);
}

} // namespace flowscope
