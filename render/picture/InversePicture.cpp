#include "render/picture/InversePicture.h"

#include "engine/gaussian/Energies.h"
#include "render/picture/Colormap.h"
#include "render/picture/ViewTransform.h"

#include <QCoreApplication>
#include <QImage>
#include <QPainter>
#include <QPolygonF>

#include <algorithm>
#include <cmath>
#include <vector>

namespace flowscope {

const QColor InversePicture::kTruthColor(0x3d, 0xd6, 0x8c);
const QColor InversePicture::kReferenceColor(0x9a, 0x9e, 0xa6);

// --- Axes, ticks and marks ---

namespace {

QString tr(const char* text) {
    return QCoreApplication::translate("InverseView", text);
}

QString number(double v) {
    return QString::number(v, 'g', 4);
}

// "10 ± 0.0035": the mean to four significant digits, the standard deviation to two (it is not known better,
// and the short form keeps the summary whole in a narrow picture).
QString meanPlusMinus(double mean, double sd) {
    return QStringLiteral("%1 ± %2").arg(number(mean), QString::number(sd, 'g', 2));
}

// `font` scaled by `scale` (point or pixel sized).
QFont scaled(QFont font, double scale) {
    if (font.pointSizeF() > 0)
        font.setPointSizeF(font.pointSizeF() * scale);
    else if (font.pixelSize() > 0)
        font.setPixelSize(std::max(1, int(std::lround(font.pixelSize() * scale))));
    return font;
}

QColor withAlpha(QColor c, int alpha) {
    c.setAlpha(alpha);
    return c;
}

// A value range mapped onto a pixel interval (`from` may be above `to`: a vertical axis grows upwards).
struct Axis {
    double lo = 0, hi = 1;
    double from = 0, to = 1;
    double map(double v) const { return from + (v - lo) / (hi - lo) * (to - from); }
    double pixelsPerUnit() const { return std::abs(to - from) / (hi - lo); }
};

// Where the values of one unknown lie: the central 99 % of its samples and the truth, padded.
std::pair<double, double> rangeOf(const Eigen::RowVectorXd& values, std::optional<double> truth) {
    std::vector<double> v;
    for (double x : values)
        if (std::isfinite(x)) v.push_back(x);
    double lo = truth ? *truth : 0.0, hi = lo;
    if (!v.empty()) {
        std::sort(v.begin(), v.end());
        lo = v[std::size_t(0.005 * double(v.size() - 1))];
        hi = v[std::size_t(0.995 * double(v.size() - 1))];
        if (truth) {
            lo = std::min(lo, *truth);
            hi = std::max(hi, *truth);
        }
    }
    const double pad = hi > lo ? 0.08 * (hi - lo) : std::max(1e-3 * std::abs(hi), 1e-6);
    return {lo - pad, hi + pad};
}

// Tick values of an axis at a nice spacing, at least `minPixels` apart.
std::vector<double> ticks(const Axis& a, double minPixels, double* step) {
    *step = niceGridStep(a.pixelsPerUnit(), minPixels);
    std::vector<double> out;
    for (double v = std::ceil(a.lo / *step) * *step; v <= a.hi + 1e-9 * *step; v += *step) out.push_back(v);
    return out;
}

// The value labels of a horizontal axis under `y` (within its ends), and of a vertical one left of `x`
// (right-aligned).
void xTickLabels(QPainter& p, const Axis& a, double y, const QFontMetricsF& fm, const QColor& color) {
    double step = 1;
    p.setPen(color);
    for (double v : ticks(a, fm.horizontalAdvance(QStringLiteral("-0.000")) * 1.3, &step)) {
        const QString text = formatTick(v, step);
        const double w = fm.horizontalAdvance(text);
        const double x = std::clamp(a.map(v) - w / 2, std::min(a.from, a.to), std::max(a.from, a.to) - w);
        p.drawText(QPointF(x, y + fm.ascent()), text);
    }
}

void yTickLabels(QPainter& p, const Axis& a, double x, const QFontMetricsF& fm, const QColor& color) {
    double step = 1;
    p.setPen(color);
    for (double v : ticks(a, fm.height() * 1.6, &step))
        p.drawText(QRectF(0, a.map(v) - fm.height() / 2, x - 4, fm.height()),
                   Qt::AlignRight | Qt::AlignVCenter, formatTick(v, step));
}

void gridLines(QPainter& p, const Axis& a, const QRectF& cell, bool vertical, const QFontMetricsF& fm,
               const QColor& color) {
    double step = 1;
    p.setPen(QPen(color, 1.0));
    const double minPixels =
        vertical ? fm.horizontalAdvance(QStringLiteral("-0.000")) * 1.3 : fm.height() * 1.6;
    for (double v : ticks(a, minPixels, &step)) {
        const double at = a.map(v);
        if (vertical)
            p.drawLine(QPointF(at, cell.top()), QPointF(at, cell.bottom()));
        else
            p.drawLine(QPointF(cell.left(), at), QPointF(cell.right(), at));
    }
}

// A '+' with a dark outline, readable on the samples and the background.
void truthCross(QPainter& p, QPointF at) {
    for (const auto& [color, width] :
         {std::pair{QColor(0, 0, 0, 200), 4.0}, {InversePicture::kTruthColor, 2.0}}) {
        p.setPen(QPen(color, width, Qt::SolidLine, Qt::FlatCap));
        p.drawLine(at + QPointF(-7, 0), at + QPointF(7, 0));
        p.drawLine(at + QPointF(0, -7), at + QPointF(0, 7));
    }
}

// A field (rows j = s2 upwards, columns i = s1) as an image in viridis over [lo, hi].
QImage fieldImage(const inverse::Matrix& field, double lo, double hi) {
    const int n = int(field.rows());
    QImage image(int(field.cols()), n, QImage::Format_RGB32);
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < int(field.cols()); ++i)
            image.setPixel(i, n - 1 - j, viridis(hi > lo ? (field(j, i) - lo) / (hi - lo) : 0.5).rgb());
    return image;
}

} // namespace

// --- Names, distances and the reference ---

QString InversePicture::plotTitle(Plot plot) {
    switch (plot) {
    case Plot::Loss:
        return tr("loss: reverse KL + transport");
    case Plot::Misfit:
        return tr("data misfit ½‖y − F(x)‖²/σ²");
    case Plot::Error:
        return tr("posterior mean: relative L1 error");
    case Plot::Fit:
        return tr("y (•) and F(posterior mean) (—)");
    case Plot::Distance:
        return tr("distance to the reference chain (Gaussian W₂)");
    }
    return {};
}

double InversePicture::distanceToReference(const PosteriorEvaluation& e, const ReferenceSamples& reference) {
    const inverse::PosteriorSummary& r = reference.summary;
    if (e.mean.size() == 0 || e.mean.size() != r.mean.size() || e.covariance.rows() != r.covariance.rows())
        return NAN;
    return buresWasserstein(e.mean, e.covariance, r.mean, r.covariance);
}

double InversePicture::samplingFloor(const ReferenceSamples& reference, int n) {
    const inverse::Matrix& all = reference.samples;
    const Eigen::Index kept = all.cols();
    if (n < 2 || kept < n || reference.summary.mean.size() != all.rows()) return NAN;
    inverse::Matrix some(all.rows(), n);
    for (int j = 0; j < n; ++j) some.col(j) = all.col(Eigen::Index(j) * kept / n);
    const inverse::Vector mean = some.rowwise().mean();
    const inverse::Matrix centred = some.colwise() - mean;
    const inverse::Matrix covariance = centred * centred.transpose() / double(n - 1);
    return buresWasserstein(mean, covariance, reference.summary.mean, reference.summary.covariance);
}

QStringList InversePicture::unknownNames(const PosteriorScene& scene) {
    if (scene.modelType == "lorenz63" && scene.d == 3)
        return {QStringLiteral("σ"), QStringLiteral("r"), QStringLiteral("β")};
    QStringList names;
    for (int i = 0; i < scene.d; ++i) names << QStringLiteral("x%1").arg(i + 1);
    return names;
}

const char* InversePicture::pictureKey(std::size_t) const {
    if (!shown_ || !shown_->scene || shown_->scene->d <= 3) return "inverse.samples";
    return shown_->scene->truthField.size() > 0 ? "inverse.field" : "inverse.unknowns";
}

QString InversePicture::plotNote() const {
    if (!shown_ || !shown_->scene) return {};
    const PosteriorScene& s = *shown_->scene;
    return tr("d = %1 unknowns, m = %2 observations, σ = %3 · %4")
        .arg(s.d)
        .arg(s.y.size())
        .arg(number(s.noise))
        .arg(QString::fromStdString(s.name));
}

const ReferenceSamples* InversePicture::shownReference() const {
    if (!reference_ || !shown_ || !shown_->scene) return nullptr;
    return reference_->samples.rows() == shown_->scene->d ? reference_.get() : nullptr;
}

QString InversePicture::placeholder() const {
    return tr("Choose a problem in the Inverse panel, then press Start.");
}

QColor InversePicture::trainerColor(std::size_t trainer) const {
    return rwpoCurveColor(shown_->trainers[trainer].rwpo);
}

// --- The pictures: corner plot, unknowns, fields ---

void InversePicture::paintPicture(QPainter& p, const QRectF& area, std::size_t k) const {
    const PosteriorState& t = shown_->trainers[k];
    summaries_.resize(shown_->trainers.size());
    summaries_[k].clear();
    const QFontMetricsF fm(font_);
    const QRectF square = squareIn(area);
    const PosteriorPicture* picture = t.picture.get();
    QString title =
        tr("%1 · iteration %2 of %3").arg(QString::fromStdString(t.label)).arg(t.iteration).arg(t.iterations);
    if (picture && picture->iteration != t.iteration) title += tr(" (picture: %1)").arg(picture->iteration);
    // Before training the flow is the identity in its frame: what is drawn is where training starts from, not
    // an answer (a Laplace frame's picture already looks like one).
    if (picture && picture->iteration == 0 && shown_->scene)
        title += shown_->scene->laplaceFrame ? tr(" · the Laplace approximation: training starts here")
                                             : tr(" · the prior: training starts here");
    beginPicture(p, area, square, title);
    const QRectF inside(QPointF(0, 0), square.size());
    const bool fields = picture && picture->fieldMean.size() > 0;
    if (picture && shown_->scene) {
        if (shown_->scene->d <= 3) {
            paintCorner(p, inside, t);
        } else if (fields) {
            const double split = std::round(inside.height() * 0.5);
            paintUnknowns(p, QRectF(0, 0, inside.width(), split), t);
            paintFields(p, QRectF(0, split, inside.width(), inside.height() - split), *picture);
        } else {
            paintUnknowns(p, inside, t);
        }
    }
    if (t.stopped) { // the run cannot go on: say so over the picture
        const QString note = tr("stopped: see the panel");
        const QRectF box(6, 6, fm.horizontalAdvance(note) + 10, fm.height() + 4);
        p.fillRect(box, withAlpha(style_.background, 220));
        p.setPen(QColor(0xff, 0x5c, 0x5c));
        p.drawText(box, Qt::AlignCenter, note);
    }
    endPicture(p, square, picture ? QString() : tr("drawing samples..."));

    // Legend: what each mark is (the band's colour as drawn over the background).
    const QColor color = trainerColor(k);
    std::vector<Mark> marks;
    if (shown_->scene && shown_->scene->d <= 3) {
        marks.push_back({color, tr("posterior samples")});
        if (const ReferenceSamples* r = shownReference())
            marks.push_back(
                {kReferenceColor, tr("Metropolis reference (acceptance %1)").arg(r->acceptance, 0, 'f', 2)});
    } else {
        marks.push_back({color, tr("mean"), false});
        const double a = 90.0 / 255.0;
        marks.push_back({QColor::fromRgbF(float(a * color.redF() + (1 - a) * style_.background.redF()),
                                          float(a * color.greenF() + (1 - a) * style_.background.greenF()),
                                          float(a * color.blueF() + (1 - a) * style_.background.blueF())),
                         tr("± 1 sd"), false});
    }
    if (shown_->scene && shown_->scene->truth) marks.push_back({kTruthColor, tr("truth")});
    paintMarks(p, square, marks);
}

void InversePicture::paintCorner(QPainter& p, const QRectF& area, const PosteriorState& t) const {
    const PosteriorPicture& picture = *t.picture;
    const PosteriorScene& scene = *shown_->scene;
    const int d = int(picture.samples.rows());
    const QFontMetricsF fm(font_);
    const QStringList names = unknownNames(scene);
    const double left = d > 1 ? fm.horizontalAdvance(QStringLiteral("-00.000")) + 8 : 8;
    const double bottom = fm.height() + 8;
    const double gap = 6;
    const double side = (std::min(area.width() - left, area.height() - bottom) - 8 - (d - 1) * gap) / d;
    if (side < 16) return;
    const std::size_t trainer = std::size_t(&t - shown_->trainers.data());
    const QColor color = trainerColor(trainer);

    const ReferenceSamples* reference = shownReference();
    std::vector<std::pair<double, double>> ranges;
    for (int i = 0; i < d; ++i) {
        const std::optional<double> truth =
            scene.truth ? std::optional<double>((*scene.truth)(i)) : std::nullopt;
        ranges.push_back(rangeOf(picture.samples.row(i), truth));
        if (reference) { // both clouds in view
            const auto [lo, hi] = rangeOf(reference->samples.row(i), truth);
            ranges.back() = {std::min(ranges.back().first, lo), std::max(ranges.back().second, hi)};
        }
    }
    auto cell = [&](int row, int col) {
        return QRectF(area.left() + left + col * (side + gap), area.top() + 8 + row * (side + gap), side,
                      side);
    };
    auto xAxis = [&](int i, const QRectF& c) {
        return Axis{ranges[i].first, ranges[i].second, c.left(), c.right()};
    };
    auto yAxis = [&](int i, const QRectF& c) {
        return Axis{ranges[i].first, ranges[i].second, c.bottom(), c.top()};
    };

    for (int row = 0; row < d; ++row)
        for (int col = 0; col <= row; ++col) {
            const QRectF c = cell(row, col);
            const Axis ax = xAxis(col, c);
            gridLines(p, ax, c, true, fm, style_.grid);
            if (row != col) gridLines(p, yAxis(row, c), c, false, fm, style_.grid);
            p.save();
            p.setClipRect(c);
            if (row == col) { // the marginal histogram
                constexpr int kBins = 30;
                const auto histogram = [&](const inverse::Matrix& samples) {
                    std::vector<double> counts(kBins, 0.0);
                    for (Eigen::Index s = 0; s < samples.cols(); ++s) {
                        const double b = std::floor((samples(col, s) - ax.lo) / (ax.hi - ax.lo) * kBins);
                        if (b >= 0 && b < kBins) counts[std::size_t(b)] += 1.0; // false for NaN
                    }
                    for (double& n : counts) n /= std::max<double>(1.0, double(samples.cols())); // a fraction
                    return counts;
                };
                const std::vector<double> counts = histogram(picture.samples);
                const std::vector<double> refCounts =
                    reference ? histogram(reference->samples) : std::vector<double>{};
                // One scale for both: the taller of the two reaches 90 % of the cell.
                double top = *std::max_element(counts.begin(), counts.end());
                if (reference) top = std::max(top, *std::max_element(refCounts.begin(), refCounts.end()));
                top = top > 0 ? top : 1.0;
                p.setPen(Qt::NoPen);
                p.setBrush(withAlpha(color, 170));
                const double w = c.width() / kBins;
                for (int b = 0; b < kBins; ++b) {
                    const double h = 0.9 * c.height() * counts[std::size_t(b)] / top;
                    p.drawRect(QRectF(c.left() + b * w, c.bottom() - h, w - 0.5, h));
                }
                if (reference) { // the reference's outline, a step line over the bars
                    QPolygonF outline;
                    for (int b = 0; b < kBins; ++b) {
                        const double y = c.bottom() - 0.9 * c.height() * refCounts[std::size_t(b)] / top;
                        outline << QPointF(c.left() + b * w, y) << QPointF(c.left() + (b + 1) * w, y);
                    }
                    p.setPen(QPen(kReferenceColor, 1.5));
                    p.setBrush(Qt::NoBrush);
                    p.drawPolyline(outline);
                }
                p.setBrush(Qt::NoBrush);
                if (scene.truth) {
                    const double x = ax.map((*scene.truth)(col));
                    p.setPen(QPen(kTruthColor, 2.0));
                    p.drawLine(QPointF(x, c.top()), QPointF(x, c.bottom()));
                }
                p.setPen(palette_.color(QPalette::WindowText));
                p.drawText(c.adjusted(4, 2, -4, -2), Qt::AlignLeft | Qt::AlignTop, names.value(col));
            } else { // the pair (col, row)
                const Axis ay = yAxis(row, c);
                // The pairs (col, row) of `samples` as points, drawn with `pen`.
                const auto scatter = [&](const inverse::Matrix& samples, const QPen& pen) {
                    QPolygonF points;
                    for (Eigen::Index s = 0; s < samples.cols(); ++s) {
                        const double u = samples(col, s), v = samples(row, s);
                        if (std::isfinite(u) && std::isfinite(v)) points << QPointF(ax.map(u), ay.map(v));
                    }
                    p.setPen(pen);
                    p.drawPoints(points);
                };
                if (reference) // under the flow's samples
                    scatter(reference->samples,
                            QPen(withAlpha(kReferenceColor, 110), 1.6, Qt::SolidLine, Qt::RoundCap));
                scatter(picture.samples, QPen(withAlpha(color, 140), 2.5, Qt::SolidLine, Qt::RoundCap));
                if (scene.truth)
                    truthCross(p, QPointF(ax.map((*scene.truth)(col)), ay.map((*scene.truth)(row))));
            }
            p.restore();
            p.setPen(QPen(style_.axis, 1.0));
            p.drawRect(c);
            if (row == d - 1) xTickLabels(p, ax, c.bottom() + 2, fm, style_.label);
            if (col == 0 && row > 0) yTickLabels(p, yAxis(row, c), c.left(), fm, style_.label);
        }

    // The summary in the empty upper right: each unknown's mean ± sd beside the truth, and the mean's error.
    // Whole lines: in a narrow picture (two side by side at 1024 px) the font shrinks, to 70 % at the least,
    // until the lines fit; the truth is left out of a line without room for it, the error where the
    // unknowns' lines alone need all the room.
    if (d >= 2) {
        const QRectF text(cell(0, 1).left() + 4, area.top() + 2, area.right() - 2 - (cell(0, 1).left() + 4),
                          cell(0, 1).bottom() + gap - 1 - (area.top() + 2));
        QStringList lines;
        for (int i = 0; i < d; ++i)
            lines << tr("%1 = %2").arg(names.value(i),
                                       meanPlusMinus(picture.summary.mean(i), picture.summary.sd(i)));
        // The mean's error, in its short form when it is one line too many at the full size; the font is
        // chosen for the unknowns and the error together where it can be, else for the unknowns alone.
        const double e = picture.summary.relativeL1Error;
        const QString error = std::isfinite(e) ? tr("rel. L1 error %1").arg(e, 0, 'e', 1) : QString();
        const auto fits = [&](const QFont& f, bool withError) {
            const QFontMetricsF m(f);
            double widest = withError ? m.horizontalAdvance(error) : 0.0;
            for (const QString& line : lines) widest = std::max(widest, m.horizontalAdvance(line));
            return widest <= text.width() && (d + int(withError)) * m.height() <= text.height();
        };
        QFont summaryFont = font_;
        bool withError = false;
        for (const bool tryError : {true, false}) {
            if (tryError && error.isEmpty()) continue;
            bool found = false;
            for (double scale = 1.0; scale > 0.69 && !found; scale -= 0.05) {
                summaryFont = scaled(font_, scale);
                found = fits(summaryFont, tryError);
            }
            withError = tryError && found;
            if (found) break;
        }
        const QFontMetricsF sfm(summaryFont);
        if (scene.truth)
            for (int i = 0; i < d; ++i) { // the truth where the line has room for it
                const QString truth = tr("  (truth %1)").arg(number((*scene.truth)(i)));
                if (sfm.horizontalAdvance(lines[i] + truth) <= text.width()) lines[i] += truth;
            }
        if (withError) {
            const QString longer = tr("rel. L1 error %1").arg(e, 0, 'e', 2);
            lines << (sfm.horizontalAdvance(longer) <= text.width() ? longer : error);
        }
        p.save();
        p.setFont(summaryFont);
        p.setPen(palette_.color(QPalette::WindowText));
        double y = text.top() + sfm.ascent();
        for (const QString& line : lines) {
            if (y + sfm.descent() > text.bottom() + 0.5) break;
            const QString shown = sfm.elidedText(line, Qt::ElideRight, text.width());
            p.drawText(QPointF(text.left(), y), shown);
            const QRectF box(text.left(), y - sfm.ascent(), sfm.horizontalAdvance(shown),
                             sfm.ascent() + sfm.descent());
            summaries_[trainer].push_back({shown, p.transform().mapRect(box)}); // in the picture's pixels
            y += sfm.height();
        }
        p.restore();
    }
}

void InversePicture::paintUnknowns(QPainter& p, const QRectF& area, const PosteriorState& t) const {
    const PosteriorPicture& picture = *t.picture;
    const PosteriorScene& scene = *shown_->scene;
    const inverse::Vector& mean = picture.summary.mean;
    const inverse::Vector& sd = picture.summary.sd;
    const int d = int(mean.size());
    const QFontMetricsF fm(font_);
    const QColor color = trainerColor(&t - shown_->trainers.data());

    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (int i = 0; i < d; ++i) {
        for (double v : {mean(i) - sd(i), mean(i) + sd(i), scene.truth ? (*scene.truth)(i) : mean(i)})
            if (std::isfinite(v)) {
                lo = std::min(lo, v);
                hi = std::max(hi, v);
            }
    }
    if (!(lo < hi)) {
        lo = -1;
        hi = 1;
    }
    const double pad = 0.06 * (hi - lo);
    const double left = fm.horizontalAdvance(QStringLiteral("-0.000")) + 10;
    const QString title = tr("unknowns: mean ± sd");
    const QRectF plot(area.left() + left, area.top() + fm.height() + 6, area.width() - left - 8,
                      area.height() - 2 * fm.height() - 14);
    p.setPen(palette_.color(QPalette::WindowText));
    p.drawText(QPointF(plot.left(), area.top() + fm.ascent() + 2),
               fm.elidedText(title, Qt::ElideRight, plot.width()));
    if (plot.height() < 16 || plot.width() < 16) return;
    const Axis ax{0.5, d + 0.5, plot.left(), plot.right()};
    const Axis ay{lo - pad, hi + pad, plot.bottom(), plot.top()};
    gridLines(p, ay, plot, false, fm, style_.grid);
    p.save();
    p.setClipRect(plot);
    QPolygonF band;
    for (int i = 0; i < d; ++i) band << QPointF(ax.map(i + 1), ay.map(mean(i) + sd(i)));
    for (int i = d - 1; i >= 0; --i) band << QPointF(ax.map(i + 1), ay.map(mean(i) - sd(i)));
    p.setPen(Qt::NoPen);
    p.setBrush(withAlpha(color, 90));
    p.drawPolygon(band);
    p.setBrush(Qt::NoBrush);
    QPolygonF line;
    for (int i = 0; i < d; ++i) line << QPointF(ax.map(i + 1), ay.map(mean(i)));
    p.setPen(QPen(color, 1.6));
    p.drawPolyline(line);
    if (scene.truth) {
        QPolygonF truth;
        for (int i = 0; i < d; ++i) truth << QPointF(ax.map(i + 1), ay.map((*scene.truth)(i)));
        p.setPen(QPen(kTruthColor, d > 64 ? 3.0 : 4.5, Qt::SolidLine, Qt::RoundCap));
        p.drawPoints(truth);
    }
    p.restore();
    p.setPen(QPen(style_.axis, 1.0));
    p.drawRect(plot);
    yTickLabels(p, ay, plot.left(), fm, style_.label);
    xTickLabels(p, ax, plot.bottom() + 2, fm, style_.label);
    p.setPen(style_.label);
    const QString name = tr("index");
    p.drawText(QPointF(plot.left() - fm.horizontalAdvance(name) - 6, plot.bottom() + 2 + fm.ascent()), name);
}

void InversePicture::paintFields(QPainter& p, const QRectF& area, const PosteriorPicture& picture) const {
    const PosteriorScene& scene = *shown_->scene;
    const QFontMetricsF fm(font_);
    // The truth and the mean share one colour scale (so that they compare); the sd has its own.
    double lo = picture.fieldMean.minCoeff(), hi = picture.fieldMean.maxCoeff();
    if (scene.truthField.size() > 0) {
        lo = std::min(lo, scene.truthField.minCoeff());
        hi = std::max(hi, scene.truthField.maxCoeff());
    }
    struct Panel {
        QString caption;
        const inverse::Matrix* field;
        double lo, hi;
    };
    std::vector<Panel> panels;
    if (scene.truthField.size() > 0) panels.push_back({tr("κ truth"), &scene.truthField, lo, hi});
    panels.push_back({tr("κ mean"), &picture.fieldMean, lo, hi});
    panels.push_back({tr("κ sd"), &picture.fieldSd, 0.0, picture.fieldSd.maxCoeff()});
    const double gap = 8;
    const int n = int(panels.size());
    const double side =
        std::min((area.width() - 16 - (n - 1) * gap) / n, area.height() - 3 * fm.height() - 12);
    if (side < 16) return;
    const double x0 = area.left() + (area.width() - n * side - (n - 1) * gap) / 2;
    auto range = [](const Panel& panel) {
        return tr("%1 – %2").arg(panel.lo, 0, 'g', 3).arg(panel.hi, 0, 'g', 3);
    };
    // Each image's colour range under it; where one does not fit, both scales in one line under them all.
    bool fits = true;
    for (const Panel& panel : panels) fits = fits && fm.horizontalAdvance(range(panel)) <= side;
    if (!fits) {
        const QString both = tr("κ %1 · sd %2").arg(range(panels[panels.size() - 2]), range(panels.back()));
        p.setPen(style_.label);
        p.drawText(QRectF(area.left(), area.top() + fm.height() + 8 + side + 2, area.width(), fm.height()),
                   Qt::AlignHCenter | Qt::AlignTop, fm.elidedText(both, Qt::ElideRight, area.width()));
    }
    for (int k = 0; k < n; ++k) {
        const Panel& panel = panels[std::size_t(k)];
        const QRectF r(x0 + k * (side + gap), area.top() + fm.height() + 8, side, side);
        p.setPen(palette_.color(QPalette::WindowText));
        p.drawText(QPointF(r.left(), r.top() - 4 - fm.descent()),
                   fm.elidedText(panel.caption, Qt::ElideRight, r.width()));
        p.drawImage(r, fieldImage(*panel.field, panel.lo, panel.hi));
        p.setPen(QPen(style_.axis, 1.0));
        p.drawRect(r);
        if (!fits) continue;
        p.setPen(style_.label);
        p.drawText(QRectF(r.left(), r.bottom() + 2, r.width(), fm.height()), Qt::AlignHCenter | Qt::AlignTop,
                   range(panel));
    }
}

// --- The curve plots ---

void InversePicture::paintPlotAt(QPainter& p, const QRectF& area, int index) const {
    const Plot plot = Plot(index);
    CurvePlot curves;
    curves.title = plotTitle(plot);
    curves.xMax = double(shown_->iteration());
    curves.emptyText = tr("no iteration yet: Start or Step");
    for (const PosteriorState& t : shown_->trainers) {
        const QColor color = rwpoCurveColor(t.rwpo);
        CurveSeries line{color, {}, CurveSeries::Style::Line};
        CurveSeries dots{color, {}, CurveSeries::Style::Dots};
        switch (plot) {
        case Plot::Loss:
        case Plot::Misfit:
            for (const inverse::PosteriorRecord& r : t.history)
                if (!r.rejected)
                    line.points.emplace_back(double(r.iteration),
                                             plot == Plot::Loss ? r.terms.loss : r.terms.misfit);
            break;
        case Plot::Error:
            for (const PosteriorEvaluation& e : t.evaluations)
                dots.points.emplace_back(double(e.iteration), e.relativeL1Error);
            break;
        case Plot::Distance:
            if (reference_)
                for (const PosteriorEvaluation& e : t.evaluations)
                    if (const double w = distanceToReference(e, *reference_); std::isfinite(w))
                        dots.points.emplace_back(double(e.iteration), w);
            break;
        case Plot::Fit:
            if (t.picture)
                for (Eigen::Index i = 0; i < t.picture->prediction.size(); ++i)
                    line.points.emplace_back(double(i + 1), t.picture->prediction(i));
            break;
        }
        if (!line.points.empty()) curves.series.push_back(std::move(line));
        if (!dots.points.empty()) curves.series.push_back(std::move(dots));
    }
    if (plot == Plot::Error) {
        curves.emptyText = shown_->scene && !shown_->scene->truth ? tr("no truth known: no error")
                                                                  : tr("every 25 iterations, or Evaluate");
    }
    if (plot == Plot::Distance && reference_ && !curves.series.empty()) {
        const int n = shown_->trainers[0].config ? shown_->trainers[0].config->evaluationSamples : 0;
        if (const double floor = samplingFloor(*reference_, n); std::isfinite(floor))
            curves.series.insert(curves.series.begin(),
                                 CurveSeries{kReferenceColor,
                                             {QPointF(0, floor), QPointF(std::max(1.0, curves.xMax), floor)},
                                             CurveSeries::Style::Dashed});
    }
    if (plot == Plot::Distance) {
        const bool corner = shown_->scene && shown_->scene->d <= 3;
        curves.emptyText = !corner       ? tr("no reference chain for more than 3 unknowns")
                           : !reference_ ? tr("the reference chain is running...")
                                         : tr("every 25 iterations, or Evaluate");
    }
    if (plot == Plot::Fit && shown_->scene) { // observations 1..m, clear of the frame's sides
        const inverse::Vector& y = shown_->scene->y;
        CurveSeries data{palette_.color(QPalette::WindowText), {}, CurveSeries::Style::Points};
        for (Eigen::Index i = 0; i < y.size(); ++i) data.points.emplace_back(double(i + 1), y(i));
        curves.series.insert(curves.series.begin(), std::move(data));
        curves.xMax = double(y.size() + 1);
        curves.xLabel = tr("observation");
        curves.trimStart = false;
    }
    paintCurvePlot(p, area, curves, style_, palette_, font_);
}

} // namespace flowscope
