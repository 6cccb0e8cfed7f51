// Flowscope picture: a sweep's table as a heatmap or histograms in the app's style (SweepPicture.h).
#include "render/picture/SweepPicture.h"

#include "render/picture/Colormap.h"

#include <QCoreApplication>
#include <QFontMetricsF>
#include <QPainter>

#include <algorithm>
#include <cmath>

namespace flowscope {

// --- Helpers ---

namespace {

QString tr(const char* text) {
    return QCoreApplication::translate("SweepView", text);
}

constexpr double kMargin = 12;
constexpr double kBarWidth = 14;
const QColor kBoundary(255, 255, 255);

QString number(double v) {
    if (std::isnan(v)) return QStringLiteral("—");
    return QString::number(v, 'g', 5).replace(QLatin1Char('-'), QChar(0x2212));
}

QColor noValueColour(const PlotStyle& s) {
    return s.axis;
}

void hatch(QPainter& p, const QRectF& r, const PlotStyle& s) {
    p.fillRect(r, s.background);
    p.fillRect(r, QBrush(s.axis, Qt::BDiagPattern));
}

} // namespace

// --- What is shown ---

void SweepPicture::setSweep(std::shared_ptr<const SweepSpec> spec) {
    spec_ = std::move(spec);
    table_ = {};
    update();
}

void SweepPicture::setTable(SweepTable table) {
    table_ = std::move(table);
    update();
}

void SweepPicture::setSelection(const std::string& x, const std::string& y, const std::string& measure) {
    x_ = x;
    y_ = y;
    measure_ = measure;
    update();
}

std::vector<double> SweepPicture::axisValues(const std::string& name) const {
    if (spec_)
        for (const SweepAxis& a : spec_->axes)
            if (a.name == name) return a.values;
    return {};
}

void SweepPicture::update() {
    kind_ = Kind::Empty;
    note_.clear();
    heat_ = {};
    histogram_ = {};
    if (!spec_) {
        note_ = tr("No sweep yet: choose one in the Sweeps panel and Run it.");
        return;
    }
    if (table_.columns.empty()) table_ = sweepTableOf(*spec_, {}); // the columns, no rows yet
    if (!y_.empty() && x_.empty()) {
        note_ = tr("Choose an X axis for the heatmap (or Y axis: none, for histograms).");
        return;
    }
    if (y_.empty() && axisValues(x_).size() > 12) {
        note_ = tr("%1 has %2 values: too many histogram panels. Choose a Y axis for a heatmap, or "
                   "X axis: none for one histogram of all runs.")
                    .arg(QString::fromStdString(x_))
                    .arg(axisValues(x_).size());
        return;
    }
    try {
        if (!y_.empty()) {
            heat_ = sweepHeat(table_, x_, y_, measure_, axisValues(x_), axisValues(y_));
            kind_ = Kind::Heatmap;
        } else {
            histogram_ = sweepHistogram(table_, x_, measure_, axisValues(x_));
            kind_ = Kind::Histograms;
        }
    } catch (const std::exception& e) {
        note_ = QString::fromStdString(e.what());
    }
}

QString SweepPicture::levelText(double v) const {
    return number(v);
}

QString SweepPicture::titleText() const {
    const QString name = QString::fromStdString(spec_->name.empty() ? "sweep" : spec_->name);
    const long done = table_.values.empty() ? 0 : long(table_.values.front().size());
    const QString what = kind_ == Kind::Heatmap
                             ? tr("%1, mean per cell").arg(QString::fromStdString(measure_))
                             : tr("histogram of %1").arg(QString::fromStdString(measure_));
    return tr("%1: %2 — %3 of %4 runs").arg(name, what).arg(done).arg(spec_->runs());
}

// --- Layout and painting ---

SweepPicture::Layout SweepPicture::layout() const {
    Layout l;
    const QFontMetricsF fm(font_);
    const double line = fm.height();
    const double w = size_.width(), h = size_.height();
    l.title = QRectF(kMargin, kMargin, w - 2 * kMargin, line * 1.4);
    l.legend = QRectF(kMargin, h - kMargin - line, w - 2 * kMargin, line);
    if (kind_ == Kind::Heatmap) {
        double yLabels = 0;
        for (double v : heat_.yLevels) yLabels = std::max(yLabels, fm.horizontalAdvance(levelText(v)));
        double barLabels = fm.horizontalAdvance(QString::fromStdString(measure_)) / 2;
        for (double v : {heat_.lo, heat_.hi, -std::abs(heat_.hi - heat_.lo)})
            barLabels = std::max(barLabels, fm.horizontalAdvance(levelText(v)));
        const double left = kMargin + line + 8 + yLabels + 6;
        const double right = w - kMargin - barLabels - 10 - kBarWidth - 20;
        const double top = l.title.bottom() + 1.5 * line + 8; // room for the colour bar's name
        const double bottom = l.legend.top() - 8 - 2 * line - 8;
        QRectF plot(left, top, std::max(right - left, 10.0), std::max(bottom - top, 10.0));
        if (heat_.nx() == heat_.ny()) { // a square grid in a square (the trace-1 disc stays round), centred
            const double side = std::min(plot.width(), plot.height());
            plot = QRectF(plot.left() + (plot.width() - side) / 2, plot.top() + (plot.height() - side) / 2,
                          side, side);
        }
        l.plot = plot;
        l.bar = QRectF(plot.right() + 20, plot.top(), kBarWidth, plot.height());
    } else if (kind_ == Kind::Histograms) {
        const std::size_t n = histogram_.panels.size();
        const int cols = int(std::clamp<std::size_t>(std::size_t(std::max(1.0, (w - 2 * kMargin) / 240)), 1,
                                                     std::min<std::size_t>(n, 4)));
        const int rows = int((n + std::size_t(cols) - 1) / std::size_t(cols));
        const double top = l.title.bottom() + 4, bottom = l.legend.top() - 4;
        const double pw = (w - 2 * kMargin) / cols, ph = (bottom - top) / std::max(rows, 1);
        for (std::size_t k = 0; k < n; ++k) {
            const double ox = kMargin + pw * double(k % std::size_t(cols)),
                         oy = top + ph * double(k / std::size_t(cols));
            // Bars no taller than the panel is wide: a short panel reads better than a tall one.
            const double width = std::max(pw - 24, 10.0);
            const double height = std::min(std::max(ph - line * 1.6 - line - line * 1.8, 10.0), 0.8 * width);
            l.panels.push_back(QRectF(ox + 12, oy + line * 1.6 + line, width, height));
        }
    }
    return l;
}

void SweepPicture::paint(QPainter& p) const {
    p.save();
    p.setRenderHint(QPainter::Antialiasing, false);
    p.setFont(font_);
    p.fillRect(QRectF(QPointF(0, 0), size_), style_.background);
    const Layout l = layout();
    if (kind_ == Kind::Empty) {
        p.setPen(style_.label);
        p.drawText(QRectF(QPointF(0, 0), size_).adjusted(24, 24, -24, -24),
                   Qt::AlignCenter | Qt::TextWordWrap, note_);
        p.restore();
        return;
    }
    p.setPen(palette_.color(QPalette::WindowText));
    QFont bold = font_;
    bold.setBold(true);
    p.setFont(bold);
    p.drawText(l.title, Qt::AlignLeft | Qt::AlignVCenter,
               QFontMetricsF(bold).elidedText(titleText(), Qt::ElideRight, l.title.width()));
    p.setFont(font_);
    if (kind_ == Kind::Heatmap)
        paintHeatmap(p, l);
    else
        paintHistograms(p, l);
    p.restore();
}

void SweepPicture::paintHeatmap(QPainter& p, const Layout& l) const {
    const QFontMetricsF fm(font_);
    const double line = fm.height();
    const std::size_t nx = heat_.nx(), ny = heat_.ny();
    if (nx == 0 || ny == 0) return;
    for (std::size_t j = 0; j < ny; ++j)
        for (std::size_t i = 0; i < nx; ++i) {
            const std::size_t k = heat_.index(i, j);
            const QRectF r = cellRect({i, j});
            if (heat_.rows[k] == 0)
                hatch(p, r, style_);
            else if (heat_.numbers[k] == 0)
                p.fillRect(r, noValueColour(style_));
            else
                p.fillRect(r.adjusted(0, 0, 0.5, 0.5), viridis(heat_.unit(heat_.mean[k])));
        }
    // Prop 2's predicted boundary.
    p.setRenderHint(QPainter::Antialiasing, true);
    p.setPen(QPen(kBoundary, 2.5, Qt::SolidLine, Qt::FlatCap));
    for (const SweepHeat::Edge& e : heat_.boundary) {
        const QRectF r = cellRect({e.i, e.j});
        if (e.right)
            p.drawLine(r.topRight(), r.bottomRight());
        else
            p.drawLine(r.topLeft(), r.topRight());
    }
    p.setRenderHint(QPainter::Antialiasing, false);
    // Frame, ticks (as many labels as fit) and the axes' names.
    const QRectF& plot = l.plot;
    p.setPen(style_.axis);
    p.setBrush(Qt::NoBrush);
    p.drawRect(plot);
    const double cw = plot.width() / double(nx), ch = plot.height() / double(ny);
    p.setPen(style_.label);
    // An axis of evenly spaced numbers (a lin range) gets round ticks at their places along it; any other
    // (listed values, a log range) a label per cell, as many as fit.
    const auto evenlySpaced = [](const std::vector<double>& v) {
        if (v.size() < 3) return false;
        const double d = (v.back() - v.front()) / double(v.size() - 1);
        if (!(d > 0)) return false;
        for (std::size_t i = 1; i < v.size(); ++i)
            if (std::abs(v[i] - v[i - 1] - d) > 1e-9 * std::abs(v.back() - v.front())) return false;
        return true;
    };
    // Ticks of an even axis: value v sits at cell position (v - v0) / d + 0.5 (cells 0 .. n - 1).
    const auto evenTicks = [&](const std::vector<double>& v, double pixelsPerCell, double minPixels,
                               const auto& draw) {
        const double d = (v.back() - v.front()) / double(v.size() - 1);
        const double lo = v.front() - d / 2, hi = v.back() + d / 2;
        const int count = std::max(2, int(double(v.size()) * pixelsPerCell / minPixels));
        double step = 1;
        for (double t : niceTicks(lo, hi, count, &step)) draw((t - v.front()) / d + 0.5, formatTick(t, step));
    };
    if (evenlySpaced(heat_.xLevels)) {
        evenTicks(heat_.xLevels, cw, fm.horizontalAdvance(QStringLiteral("-0.00")) + 24,
                  [&](double at, const QString& text) {
                      const double cx = plot.left() + at * cw;
                      p.drawLine(QPointF(cx, plot.bottom()), QPointF(cx, plot.bottom() + 4));
                      p.drawText(QRectF(cx - 100, plot.bottom() + 5, 200, line),
                                 Qt::AlignHCenter | Qt::AlignTop, text);
                  });
    } else {
        double widest = 0;
        for (double v : heat_.xLevels) widest = std::max(widest, fm.horizontalAdvance(levelText(v)));
        const std::size_t xStep = std::max<std::size_t>(1, std::size_t(std::ceil((widest + 10) / cw)));
        for (std::size_t i = 0; i < nx; i += xStep) {
            const double cx = plot.left() + (double(i) + 0.5) * cw;
            p.drawLine(QPointF(cx, plot.bottom()), QPointF(cx, plot.bottom() + 4));
            p.drawText(QRectF(cx - widest, plot.bottom() + 5, 2 * widest, line),
                       Qt::AlignHCenter | Qt::AlignTop, levelText(heat_.xLevels[i]));
        }
    }
    if (evenlySpaced(heat_.yLevels)) {
        evenTicks(heat_.yLevels, ch, line * 3.0, [&](double at, const QString& text) {
            const double cy = plot.bottom() - at * ch;
            p.drawLine(QPointF(plot.left() - 4, cy), QPointF(plot.left(), cy));
            p.drawText(QRectF(plot.left() - 6 - 200, cy - line / 2, 200, line),
                       Qt::AlignRight | Qt::AlignVCenter, text);
        });
    } else {
        const std::size_t yStep = std::max<std::size_t>(1, std::size_t(std::ceil(line * 1.2 / ch)));
        for (std::size_t j = 0; j < ny; j += yStep) {
            const double cy = plot.bottom() - (double(j) + 0.5) * ch;
            p.drawLine(QPointF(plot.left() - 4, cy), QPointF(plot.left(), cy));
            p.drawText(QRectF(plot.left() - 6 - 200, cy - line / 2, 200, line),
                       Qt::AlignRight | Qt::AlignVCenter, levelText(heat_.yLevels[j]));
        }
    }
    p.setPen(palette_.color(QPalette::WindowText));
    p.drawText(QRectF(plot.left(), plot.bottom() + 6 + line, plot.width(), line),
               Qt::AlignHCenter | Qt::AlignTop, QString::fromStdString(x_));
    p.save();
    p.translate(kMargin, plot.center().y());
    p.rotate(-90);
    p.drawText(QRectF(-plot.height() / 2, 0, plot.height(), line), Qt::AlignHCenter | Qt::AlignTop,
               QString::fromStdString(y_));
    p.restore();

    // Colour bar with five labels.
    const QRectF& bar = l.bar;
    const int steps = 64;
    for (int s = 0; s < steps; ++s) {
        const double y0 = bar.bottom() - bar.height() * (s + 1) / steps;
        p.fillRect(QRectF(bar.left(), y0, bar.width(), bar.height() / steps + 0.5),
                   viridis((s + 0.5) / steps));
    }
    p.setPen(style_.axis);
    p.drawRect(bar);
    p.setPen(palette_.color(QPalette::WindowText));
    p.drawText(QRectF(bar.center().x() - 150, bar.top() - 1.5 * line - 4, 300, line),
               Qt::AlignHCenter | Qt::AlignBottom, QString::fromStdString(measure_));
    p.setPen(style_.label);
    const bool any = std::any_of(heat_.numbers.begin(), heat_.numbers.end(), [](long n) { return n > 0; });
    const auto barTick = [&](double v, const QString& text) {
        const double y = bar.bottom() -
                         bar.height() * (heat_.hi > heat_.lo ? (v - heat_.lo) / (heat_.hi - heat_.lo) : 0.0);
        p.drawLine(QPointF(bar.right(), y), QPointF(bar.right() + 4, y));
        p.drawText(QRectF(bar.right() + 7, y - line / 2, 200, line), Qt::AlignLeft | Qt::AlignVCenter, text);
    };
    if (any && heat_.hi > heat_.lo) { // round values along the bar
        double step = 1;
        for (double v : niceTicks(heat_.lo, heat_.hi, 6, &step)) barTick(v, formatTick(v, step));
    } else if (any) {
        barTick(heat_.lo, levelText(heat_.lo)); // one value
    }

    // Legend: what the hatched, grey and white marks mean.
    double x = l.legend.left();
    const auto swatch = [&](int kind, const QString& text) {
        const QRectF r(x, l.legend.top() + 2, line - 4, line - 4);
        if (kind == 0)
            hatch(p, r, style_);
        else if (kind == 1)
            p.fillRect(r, noValueColour(style_));
        else {
            p.fillRect(r, viridis(0.3));
            p.setPen(QPen(kBoundary, 2.5));
            p.drawLine(QPointF(r.center().x(), r.top()), QPointF(r.center().x(), r.bottom()));
        }
        p.setPen(style_.axis);
        p.drawRect(r);
        p.setPen(style_.label);
        const double tw = fm.horizontalAdvance(text);
        p.drawText(QRectF(r.right() + 5, l.legend.top(), tw + 2, line), Qt::AlignLeft | Qt::AlignVCenter,
                   text);
        x = r.right() + 5 + tw + 18;
    };
    swatch(0, tr("not run yet"));
    swatch(1, tr("no value"));
    if (std::any_of(heat_.regime.begin(), heat_.regime.end(), [](int r) { return r >= 0; })) {
        const bool complete = !table_.values.empty() && long(table_.values.front().size()) == spec_->runs();
        swatch(2, !heat_.boundary.empty() ? tr("Prop 2's blow-up boundary")
                  : complete              ? tr("Prop 2's blow-up boundary: none, one regime in every cell")
                                          : tr("Prop 2's blow-up boundary: none so far"));
    }
}

void SweepPicture::paintHistograms(QPainter& p, const Layout& l) const {
    const QFontMetricsF fm(font_);
    const double line = fm.height();
    const SweepHistogram& h = histogram_;
    const QColor bars = viridis(0.55);
    for (std::size_t k = 0; k < l.panels.size(); ++k) {
        const QRectF& area = l.panels[k];
        const std::vector<long>& count = h.counts[k];
        long total = h.excluded[k];
        for (long c : count) total += c;
        const long most = std::max<long>(1, *std::max_element(count.begin(), count.end()));
        QString title =
            x_.empty() ? QString::fromStdString(measure_)
                       : QStringLiteral("%1 = %2").arg(QString::fromStdString(x_), levelText(h.panels[k]));
        title += total == 1 ? tr(": 1 run") : tr(": %1 runs").arg(total);
        if (h.excluded[k]) title += tr(", %1 without a value").arg(h.excluded[k]);
        p.setPen(palette_.color(QPalette::WindowText));
        p.drawText(QRectF(area.left(), area.top() - line * 2.5, area.width(), line),
                   Qt::AlignHCenter | Qt::AlignBottom, fm.elidedText(title, Qt::ElideRight, area.width()));
        if (total == 0) { // no run yet: no bins to label
            p.setPen(style_.axis);
            p.drawLine(area.bottomLeft(), area.bottomRight());
            p.setPen(style_.label);
            p.drawText(area, Qt::AlignCenter, tr("no run finished yet"));
            continue;
        }
        const double bw = area.width() / h.bins;
        double widest = 0;
        for (int b = 0; b < h.bins; ++b)
            widest = std::max(widest, fm.horizontalAdvance(levelText(h.binStart(b))));
        const int labelStep = std::max(1, int(std::ceil((widest + 8) / bw)));
        for (int b = 0; b < h.bins; ++b) {
            const long c = count[std::size_t(b)];
            const double bh = area.height() * double(c) / double(most);
            const QRectF col = cellRect({k, std::size_t(b)});
            p.fillRect(QRectF(col.left() + 1, area.bottom() - bh, std::max(col.width() - 2, 1.0), bh), bars);
            p.setPen(style_.label);
            if (c > 0)
                p.drawText(QRectF(col.center().x() - 40, area.bottom() - bh - line - 1, 80, line),
                           Qt::AlignHCenter | Qt::AlignBottom, QString::number(c));
            if (b % labelStep == 0) {
                const double at = h.integral ? col.center().x() : col.left();
                p.drawText(QRectF(at - 60, area.bottom() + 3, 120, line), Qt::AlignHCenter | Qt::AlignTop,
                           levelText(h.binStart(b)));
            }
        }
        p.setPen(style_.axis);
        p.drawLine(area.bottomLeft(), area.bottomRight());
        p.setPen(style_.label);
        p.drawText(QRectF(area.left(), area.bottom() + 3 + line, area.width(), line),
                   Qt::AlignHCenter | Qt::AlignTop, QString::fromStdString(measure_));
    }
    p.setPen(style_.label);
    p.drawText(l.legend, Qt::AlignLeft | Qt::AlignVCenter,
               tr("Bars: runs per value (finished runs so far); click a bar to open one of its runs."));
}

// --- Hit testing and read-outs ---

QRectF SweepPicture::cellRect(Hit hit) const {
    const Layout l = layout();
    if (kind_ == Kind::Heatmap) {
        if (hit.i >= heat_.nx() || hit.j >= heat_.ny()) return {};
        const double cw = l.plot.width() / double(heat_.nx()), ch = l.plot.height() / double(heat_.ny());
        return QRectF(l.plot.left() + double(hit.i) * cw, l.plot.bottom() - double(hit.j + 1) * ch, cw, ch);
    }
    if (kind_ == Kind::Histograms) {
        if (hit.i >= l.panels.size() || hit.j >= std::size_t(histogram_.bins)) return {};
        const QRectF& a = l.panels[hit.i];
        const double bw = a.width() / histogram_.bins;
        return QRectF(a.left() + double(hit.j) * bw, a.top(), bw, a.height());
    }
    return {};
}

std::optional<SweepPicture::Hit> SweepPicture::hitAt(QPointF pos) const {
    const Layout l = layout();
    if (kind_ == Kind::Heatmap) {
        if (!l.plot.contains(pos) || heat_.nx() == 0 || heat_.ny() == 0) return std::nullopt;
        const auto i = std::size_t((pos.x() - l.plot.left()) / l.plot.width() * double(heat_.nx()));
        const auto j = std::size_t((l.plot.bottom() - pos.y()) / l.plot.height() * double(heat_.ny()));
        return Hit{std::min(i, heat_.nx() - 1), std::min(j, heat_.ny() - 1)};
    }
    if (kind_ == Kind::Histograms)
        for (std::size_t k = 0; k < l.panels.size(); ++k)
            if (l.panels[k].contains(pos)) {
                const auto b =
                    std::size_t((pos.x() - l.panels[k].left()) / l.panels[k].width() * histogram_.bins);
                return Hit{k, std::min(b, std::size_t(histogram_.bins - 1))};
            }
    return std::nullopt;
}

QString SweepPicture::describe(Hit hit) const {
    if (kind_ == Kind::Heatmap) {
        if (hit.i >= heat_.nx() || hit.j >= heat_.ny()) return {};
        const double xv = heat_.xLevels[hit.i], yv = heat_.yLevels[hit.j];
        const std::vector<double>&xs = table_.column(x_), &ys = table_.column(y_);
        const std::vector<std::string> measures = spec_->measureColumns();
        std::vector<double> sum(measures.size(), 0.0);
        std::vector<long> numbers(measures.size(), 0);
        long rows = 0;
        for (std::size_t r = 0; r < xs.size(); ++r) {
            if (xs[r] != xv || ys[r] != yv) continue;
            ++rows;
            for (std::size_t m = 0; m < measures.size(); ++m) {
                const double v = table_.column(measures[m])[r];
                if (std::isnan(v)) continue;
                sum[m] += v;
                ++numbers[m];
            }
        }
        const std::vector<double> xa = axisValues(x_), ya = axisValues(y_);
        const long expected = spec_->runs() / long(xa.size() * ya.size()) *
                              long(std::count(xa.begin(), xa.end(), xv)) *
                              long(std::count(ya.begin(), ya.end(), yv));
        QString text =
            QStringLiteral("%1 = %2, %3 = %4: ")
                .arg(QString::fromStdString(x_), levelText(xv), QString::fromStdString(y_), levelText(yv));
        text += rows == 0 ? tr("not run yet") : tr("%1 of %2 runs done").arg(rows).arg(expected);
        for (std::size_t m = 0; m < measures.size() && rows > 0; ++m) {
            text += QStringLiteral("\n%1 = %2")
                        .arg(QString::fromStdString(measures[m]),
                             numbers[m] ? levelText(sum[m] / double(numbers[m])) : tr("no value"));
            if (numbers[m] > 1 && numbers[m] == rows) text += tr(" (mean of %1)").arg(numbers[m]);
            if (numbers[m] > 0 && numbers[m] < rows)
                text += tr(" (mean of the %1 of %2 runs with a value)").arg(numbers[m]).arg(rows);
        }
        return text;
    }
    if (kind_ == Kind::Histograms) {
        const SweepHistogram& h = histogram_;
        if (hit.i >= h.panels.size() || hit.j >= std::size_t(h.bins)) return {};
        long total = h.excluded[hit.i];
        for (long c : h.counts[hit.i]) total += c;
        const QString where =
            x_.empty()
                ? QString()
                : QStringLiteral("%1 = %2: ").arg(QString::fromStdString(x_), levelText(h.panels[hit.i]));
        const QString value =
            h.integral ? QStringLiteral("%1 = %2").arg(QString::fromStdString(measure_),
                                                       levelText(h.binStart(int(hit.j))))
                       : QStringLiteral("%1 in [%2, %3)")
                             .arg(QString::fromStdString(measure_), levelText(h.binStart(int(hit.j))),
                                  levelText(h.binStart(int(hit.j) + 1)));
        return where + tr("%1 in %2 of %3 finished runs").arg(value).arg(h.counts[hit.i][hit.j]).arg(total);
    }
    return {};
}

long SweepPicture::runOf(Hit hit) const {
    if (!spec_) return -1;
    if (kind_ == Kind::Heatmap) {
        if (hit.i >= heat_.nx() || hit.j >= heat_.ny()) return -1;
        const long cell = sweepCellWith(*spec_, {{x_, heat_.xLevels[hit.i]}, {y_, heat_.yLevels[hit.j]}});
        return cell < 0 ? -1 : cell * spec_->replicates;
    }
    if (kind_ == Kind::Histograms) {
        const SweepHistogram& h = histogram_;
        if (hit.i >= h.panels.size() || hit.j >= std::size_t(h.bins)) return -1;
        const std::vector<double>& ms = table_.column(measure_);
        const std::vector<double>& runs = table_.column("run");
        for (std::size_t r = 0; r < ms.size(); ++r) {
            if (!x_.empty() && table_.column(x_)[r] != h.panels[hit.i]) continue;
            if (!std::isfinite(ms[r])) continue;
            if (std::size_t(h.bin(ms[r])) == hit.j) return long(runs[r]);
        }
    }
    return -1;
}

} // namespace flowscope
