// Flowscope UI: the widget around a live-training picture (render/picture: FlowsPicture,
// TransformersPicture). It pulls the run's snapshots from a source (LiveView's timer; the worker publishes,
// the view never waits), keeps the picture at its size, palette, font and plot style, paints it, and shows
// the tooltip of the part under the mouse. What is drawn, and where, is the picture's (TrainingRunPicture.h).
#pragma once

#include "ui/views/LiveView.h"
#include "ui/widgets/Tooltips.h"

#include <QEvent>
#include <QPainter>

#include <functional>
#include <memory>

namespace flowscope {

template <class Picture> class TrainingRunView : public LiveView {
  public:
    using Snapshot = typename Picture::Snapshot;
    using Plot = typename Picture::Plot;
    static constexpr int kPlotCount = Picture::kPlotCount;
    using SnapshotSource = std::function<std::shared_ptr<const Snapshot>()>;

    void setSource(SnapshotSource source) {
        source_ = std::move(source);
        refresh();
    }
    void refresh() override {
        if (!picture_.show(source_ ? source_() : nullptr)) return;
        update();
        emit snapshotChanged();
    }
    std::shared_ptr<const Snapshot> displayedSnapshot() const { return picture_.shown(); }
    const Picture& picture() const { return picture_; }

    // Where trainer k's picture and a plot are drawn for the current size (logical pixels); empty for a plot
    // the picture leaves out.
    QRectF pictureRect(int trainer) const { return picture_.pictureRect(trainer); }
    QRectF plotRect(Plot plot) const { return picture_.plotRect(plot); }

  protected:
    TrainingRunView(QWidget* parent, const char* name) : LiveView(parent) {
        setObjectName(QString::fromLatin1(name));
        picture_.setPalette(palette());
        picture_.setFont(font());
    }

    // What the part under the mouse is, and its formula: a plot or a trainer's picture.
    QString tooltipAt(QPointF pos) const override {
        const PicturePlotLayout l = picture_.layout();
        const std::vector<int> plots = picture_.shownPlots();
        for (std::size_t k = 0; k < l.plots.size() && k < plots.size(); ++k)
            if (l.plots[k].contains(pos)) return parameterTooltip(Picture::kPlotKeys[plots[k]]);
        for (std::size_t k = 0; k < l.pictures.size(); ++k)
            if (l.pictures[k].contains(pos)) return parameterTooltip(picture_.pictureKey(k));
        return {};
    }

    void plotStyleChanged() override { picture_.setStyle(style_); }
    void resizeEvent(QResizeEvent* e) override {
        picture_.setSize(size());
        LiveView::resizeEvent(e);
    }
    void changeEvent(QEvent* e) override {
        if (e->type() == QEvent::PaletteChange) picture_.setPalette(palette());
        if (e->type() == QEvent::FontChange) picture_.setFont(font());
        LiveView::changeEvent(e);
    }
    void paintEvent(QPaintEvent*) override {
        QPainter p(this);
        picture_.paint(p);
    }

    SnapshotSource source_;
    Picture picture_;
};

} // namespace flowscope
