// Flowscope UI: the base of the views that draw a worker's snapshots with QPainter (Flows, Transformers).
//
// A timer calls refresh() every kRefreshMs (~30 Hz): the view pulls the latest snapshot from its source (the
// worker publishes, the view never waits) and repaints when it changed. Hovering shows the tooltip of the
// part under the mouse (tooltipAt).
#pragma once

#include "render/picture/CurvePlot.h"
#include "render/picture/PlotDecorations.h"

#include <QTimer>
#include <QWidget>

namespace flowscope {

class LiveView : public QWidget {
    Q_OBJECT
  public:
    static constexpr int kRefreshMs = 33;

    explicit LiveView(QWidget* parent = nullptr);

    // Pulls the latest snapshot now and repaints (emitting snapshotChanged) when it changed.
    virtual void refresh() = 0;
    void setPlotStyle(const PlotStyle& style);

    QSize sizeHint() const override { return {960, 640}; }
    QSize minimumSizeHint() const override { return {480, 360}; }

  signals:
    void snapshotChanged();

  protected:
    bool event(QEvent* e) override; // tooltips
    virtual QString tooltipAt(QPointF pos) const = 0;

    // setPlotStyle() stored a new style_.
    virtual void plotStyleChanged() {}

    PlotStyle style_;

  private:
    QTimer timer_;
};

} // namespace flowscope
