// Flowscope UI: the "Flows" view, a live picture of a generative flow being trained (QPainter, no GL).
//
// Pulls TrainingSnapshots from a source on a timer (~30 Hz; the worker publishes, the view never waits) and
// draws, per trainer (two side by side when comparing with and without the RWPO layer):
//  * a scatter of data points (grey) and generated samples (orange) over the density heat map, with a few
//    samples' trajectories x^0 .. x^M through the layers as thin polylines;
// and, in a column on the right, small plots against the iteration: loss (16), NLL (batch line, held-out
// dots), λ, β and the held-out MMD² (one curve per trainer). Hovering any part shows what it is and its
// formula.
#pragma once

#include "engine/runner/TrainingRunner.h"
#include "ui/views/LiveView.h"

#include <array>
#include <functional>
#include <memory>

namespace flowscope {

class TrainingView : public LiveView {
    Q_OBJECT
  public:
    using SnapshotSource = std::function<std::shared_ptr<const TrainingSnapshot>()>;
    enum class Plot { Loss, Nll, Lambda, Beta, Mmd2 };
    static constexpr int kPlotCount = 5;
    static constexpr int kShownTrajectories = 24;

    explicit TrainingView(QWidget* parent = nullptr);

    void setSource(SnapshotSource source);
    void refresh() override;
    std::shared_ptr<const TrainingSnapshot> displayedSnapshot() const { return shown_; }

    // Where things are drawn for the current size (logical pixels); tests and tooltips use them.
    QRectF scatterRect(int trainer) const;
    QRectF plotRect(Plot plot) const;
    static QString plotTitle(Plot plot);

  protected:
    void paintEvent(QPaintEvent* e) override;
    QString tooltipAt(QPointF pos) const override;

  private:
    PicturePlotLayout layout() const;
    void paintScatter(QPainter& p, const QRectF& area, const TrainerState& trainer) const;
    void paintPlot(QPainter& p, const QRectF& area, Plot plot) const;

    SnapshotSource source_;
    std::shared_ptr<const TrainingSnapshot> shown_;
};

} // namespace flowscope
