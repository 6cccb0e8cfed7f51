// Flowscope picture: what the live-training pictures (Flows, Transformers) share, without a widget: the
// layout they are drawn in (one picture per trainer, two side by side in comparison mode, on the left; a
// column of small plots against the iteration on the right, with the trainers' legend above the plots when
// there are two) and the frame of each picture (title above, background, border). A picture draws its
// trainers and its plots; everything around them is here. QPainter only: the app's views paint it in their
// paintEvent, the training animation into an image.
#pragma once

#include "render/picture/CurvePlot.h"
#include "render/picture/PlotDecorations.h"

#include <QColor>
#include <QFont>
#include <QFontMetricsF>
#include <QPainter>
#include <QPalette>
#include <QRectF>
#include <QSizeF>

#include <algorithm>
#include <memory>
#include <vector>

namespace flowscope {

// PlotT is the picture's enum of its plots 0 .. PlotCount - 1, in the order of the plots' column.
template <class SnapshotT, class PlotT, int PlotCount> class TrainingRunPicture {
  public:
    using Snapshot = SnapshotT;
    using Plot = PlotT;
    static constexpr int kPlotCount = PlotCount;
    static constexpr double kMargin = 8.0;

    virtual ~TrainingRunPicture() = default;

    // Shows `s`; false when it is the one already shown.
    bool show(std::shared_ptr<const Snapshot> s) {
        if (s == shown_) return false;
        shown_ = std::move(s);
        shownChanged();
        return true;
    }
    const std::shared_ptr<const Snapshot>& shown() const { return shown_; }

    // The plots' colours, and the text's colours and font (the app's palette and font in a view, the theme's
    // headless); the size in logical pixels.
    void setStyle(const PlotStyle& style) { style_ = style; }
    const PlotStyle& style() const { return style_; }
    void setPalette(const QPalette& palette) { palette_ = palette; }
    void setFont(const QFont& font) { font_ = font; }
    void setSize(QSizeF size) { size_ = size; }
    QSizeF size() const { return size_; }

    // Where the pictures and the plots go: picturePlotLayout over the area less the margin, with a title band
    // above and a legend band below each picture, and a band above the plots for the plots' note (one line,
    // when there is one) and the curves' legend (when two trainers are compared). layout().plots holds the
    // shown plots only, in shownPlots() order.
    PicturePlotLayout layout() const {
        const int n = shown_ ? std::max<int>(1, int(shown_->trainers.size())) : 1;
        const QRectF all = QRectF(QPointF(0, 0), size_).adjusted(kMargin, kMargin, -kMargin, -kMargin);
        const double line = QFontMetricsF(font_).height();
        const double legend = (shown_ && shown_->comparison ? line + 4.0 : 0.0) +
                              (shown_ && !plotNote().isEmpty() ? line + 4.0 : 0.0);
        return picturePlotLayout(all, n, int(shownPlots().size()), 2.0 * (line + 6.0), legend);
    }
    // The plots drawn, in order (indices of the picture's Plot enum): all of them unless a picture leaves
    // some out (a quantity that does not change in this run says so in plotNote() instead).
    virtual std::vector<int> shownPlots() const {
        std::vector<int> all(static_cast<std::size_t>(kPlotCount));
        for (int k = 0; k < kPlotCount; ++k) all[std::size_t(k)] = k;
        return all;
    }
    // One line of text above the plots (what a left-out plot would have shown); empty: none.
    virtual QString plotNote() const { return {}; }
    // Where a plot is drawn; empty when it is not shown.
    QRectF plotRect(Plot plot) const {
        const std::vector<int> shown = shownPlots();
        const auto it = std::find(shown.begin(), shown.end(), int(plot));
        return it == shown.end() ? QRectF() : layout().plots[std::size_t(it - shown.begin())];
    }
    // Where trainer k's picture is drawn (logical pixels); empty for no such trainer.
    QRectF pictureRect(int trainer) const {
        const PicturePlotLayout l = layout();
        return trainer >= 0 && trainer < int(l.pictures.size()) ? l.pictures[std::size_t(trainer)] : QRectF();
    }

    // The whole picture into `p`, over its size from (0, 0).
    void paint(QPainter& p) const {
        const QRectF area(QPointF(0, 0), size_);
        p.fillRect(area, palette_.color(QPalette::Window));
        p.setRenderHint(QPainter::Antialiasing, true);
        p.setFont(font_);
        if (!shown_ || shown_->trainers.empty()) {
            p.setPen(palette_.color(QPalette::PlaceholderText));
            p.drawText(area, Qt::AlignCenter | Qt::TextWordWrap, placeholder());
            return;
        }
        const PicturePlotLayout l = layout();
        for (std::size_t k = 0; k < shown_->trainers.size(); ++k) paintPicture(p, l.pictures[k], k);
        const std::vector<int> plots = shownPlots();
        if (plots.empty()) return;
        const QFontMetricsF fm(font_);
        const QRectF& first = l.plots[0];
        double baseline = first.top() - 4.0 - fm.descent(); // the band's lowest line
        if (shown_->comparison) {                           // the curves' legend, just above the plots
            std::vector<LegendEntry> entries;
            for (std::size_t k = 0; k < shown_->trainers.size(); ++k)
                entries.push_back({trainerColor(k), QString::fromStdString(shown_->trainers[k].label)});
            paintCurveLegend(p, QPointF(first.left(), baseline), entries, palette_, font_);
            baseline -= fm.height() + 4.0;
        }
        if (const QString note = plotNote(); !note.isEmpty()) { // dimmer than the plots' titles
            double right = first.right();
            for (const QRectF& r : l.plots) right = std::max(right, r.right());
            p.setPen(palette_.color(QPalette::PlaceholderText));
            p.drawText(QPointF(first.left(), baseline),
                       fm.elidedText(note, Qt::ElideRight, right - first.left()));
        }
        for (std::size_t k = 0; k < plots.size(); ++k) paintPlotAt(p, l.plots[k], plots[k]);
    }

  protected:
    // A picture's square: the title above it and the legend below, centred in `area`.
    QRectF squareIn(const QRectF& area) const {
        const double line = QFontMetricsF(font_).height();
        const double side = std::max(0.0, std::min(area.width(), area.height() - 2 * (line + 6)));
        return QRectF(area.left() + (area.width() - side) / 2, area.top() + line + 6, side, side);
    }
    // The title above `square` (from its left edge, elided to the area's right edge), then the square's
    // background; the painter draws in the square's coordinates, clipped to it, until endPicture().
    void beginPicture(QPainter& p, const QRectF& area, const QRectF& square, const QString& title) const {
        const QFontMetricsF fm(font_);
        const double width = area.right() - square.left();
        p.setPen(palette_.color(QPalette::WindowText));
        p.drawText(QRectF(square.left(), area.top(), width, fm.height() + 4),
                   Qt::AlignLeft | Qt::AlignVCenter, fm.elidedText(title, Qt::ElideRight, width));
        p.save();
        p.translate(square.topLeft());
        p.setClipRect(QRectF(QPointF(0, 0), square.size()));
        p.fillRect(QRectF(QPointF(0, 0), square.size()), style_.background);
    }
    // `pending` (what is being made, before the first picture) when not empty, then the square's frame.
    void endPicture(QPainter& p, const QRectF& square, const QString& pending) const {
        if (!pending.isEmpty()) {
            p.setPen(style_.label);
            p.drawText(QRectF(QPointF(0, 0), square.size()), Qt::AlignCenter, pending);
        }
        p.restore();
        p.setPen(QPen(style_.axis, 1.0));
        p.setBrush(Qt::NoBrush);
        p.drawRect(square);
    }

    // The legend under `square`: what each mark is (a dot or a square of its colour, opaque), left to right.
    struct Mark {
        QColor color;
        QString text;
        bool dot = true;
    };
    void paintMarks(QPainter& p, const QRectF& square, const std::vector<Mark>& marks) const {
        const QFontMetricsF fm(font_);
        double x = square.left();
        const double y = square.bottom() + 4 + fm.ascent();
        for (const Mark& m : marks) {
            p.setPen(Qt::NoPen);
            p.setBrush(QColor(m.color.red(), m.color.green(), m.color.blue()));
            const QRectF mark(x, y - fm.ascent() / 2 - 4, 8, 8);
            if (m.dot)
                p.drawEllipse(mark);
            else
                p.drawRect(mark);
            p.setBrush(Qt::NoBrush);
            p.setPen(palette_.color(QPalette::WindowText));
            p.drawText(QPointF(x + 12, y), m.text);
            x += 12 + fm.horizontalAdvance(m.text) + 14;
        }
    }

    // What the picture says before the first start (which panel to use).
    virtual QString placeholder() const = 0;
    virtual void paintPicture(QPainter& p, const QRectF& area, std::size_t trainer) const = 0;
    virtual void paintPlotAt(QPainter& p, const QRectF& area, int plot) const = 0;
    // The colour of trainer k's curves (one per trainer kind, the same in every plot).
    virtual QColor trainerColor(std::size_t trainer) const = 0;
    // A new snapshot is shown (before it is painted).
    virtual void shownChanged() {}

    std::shared_ptr<const Snapshot> shown_;
    PlotStyle style_;
    QPalette palette_;
    QFont font_;
    QSizeF size_{1, 1};
};

} // namespace flowscope
