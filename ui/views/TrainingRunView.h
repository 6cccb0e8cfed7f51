// Flowscope UI: what the live-training views (Flows, Transformers) share: pulling the run's snapshots from a
// source (LiveView's timer; the worker publishes, the view never waits), and the layout they are drawn in:
// one picture per trainer (two side by side in comparison mode) on the left and a column of small plots
// against the iteration on the right, with the trainers' legend above the plots when there are two. A view
// draws its pictures and its plots; everything around them is here.
#pragma once

#include "ui/views/LiveView.h"

#include <QColor>
#include <QFontMetricsF>
#include <QPainter>
#include <QPalette>

#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

namespace flowscope {

template <class Snapshot> class TrainingRunView : public LiveView {
  public:
    using SnapshotSource = std::function<std::shared_ptr<const Snapshot>()>;

    void setSource(SnapshotSource source) {
        source_ = std::move(source);
        refresh();
    }
    void refresh() override {
        auto s = source_ ? source_() : nullptr;
        if (s == shown_) return;
        shown_ = std::move(s);
        shownChanged();
        update();
        emit snapshotChanged();
    }
    std::shared_ptr<const Snapshot> displayedSnapshot() const { return shown_; }

    // Where trainer k's picture is drawn for the current size (logical pixels); tests and tooltips use it.
    QRectF pictureRect(int trainer) const {
        const PicturePlotLayout l = layout();
        return trainer >= 0 && trainer < int(l.pictures.size()) ? l.pictures[std::size_t(trainer)] : QRectF();
    }

  protected:
    TrainingRunView(QWidget* parent, int plotCount) : LiveView(parent), plotCount_(plotCount) {}

    PicturePlotLayout layout() const {
        const int n = shown_ ? std::max<int>(1, int(shown_->trainers.size())) : 1;
        return layoutFor(n, plotCount_, shown_ && shown_->comparison);
    }

    void paintEvent(QPaintEvent*) override {
        QPainter p(this);
        p.fillRect(rect(), palette().color(QPalette::Window));
        p.setRenderHint(QPainter::Antialiasing, true);
        if (!shown_ || shown_->trainers.empty()) {
            p.setPen(palette().color(QPalette::PlaceholderText));
            p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap, placeholder());
            return;
        }
        const PicturePlotLayout l = layout();
        for (std::size_t k = 0; k < shown_->trainers.size(); ++k) paintPicture(p, l.pictures[k], k);
        if (shown_->comparison) { // the curves' legend, above the plots
            std::vector<LegendEntry> entries;
            for (std::size_t k = 0; k < shown_->trainers.size(); ++k)
                entries.push_back({trainerColor(k), QString::fromStdString(shown_->trainers[k].label)});
            paintLegendAbove(p, l.plots[0], entries);
        }
        for (int k = 0; k < plotCount_; ++k) paintPlotAt(p, l.plots[std::size_t(k)], k);
    }

    // A picture's square: the title above it and the legend below, centred in `area`.
    QRectF squareIn(const QRectF& area) const {
        const double line = QFontMetricsF(font()).height();
        const double side = std::max(0.0, std::min(area.width(), area.height() - 2 * (line + 6)));
        return QRectF(area.left() + (area.width() - side) / 2, area.top() + line + 6, side, side);
    }
    // The title above `square` (elided to its width), then the square's background; the painter draws in the
    // square's coordinates, clipped to it, until endPicture().
    void beginPicture(QPainter& p, const QRectF& area, const QRectF& square, const QString& title) const {
        const QFontMetricsF fm(font());
        p.setPen(palette().color(QPalette::WindowText));
        p.drawText(QRectF(square.left(), area.top(), square.width(), fm.height() + 4),
                   Qt::AlignLeft | Qt::AlignVCenter, fm.elidedText(title, Qt::ElideRight, square.width()));
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

    // What the view says before the first start (which panel to use).
    virtual QString placeholder() const = 0;
    virtual void paintPicture(QPainter& p, const QRectF& area, std::size_t trainer) const = 0;
    virtual void paintPlotAt(QPainter& p, const QRectF& area, int plot) const = 0;
    // The colour of trainer k's curves (one per trainer kind, the same in every plot).
    virtual QColor trainerColor(std::size_t trainer) const = 0;
    // A new snapshot is shown (before it is painted).
    virtual void shownChanged() {}

    SnapshotSource source_;
    std::shared_ptr<const Snapshot> shown_;

  private:
    const int plotCount_;
};

} // namespace flowscope
