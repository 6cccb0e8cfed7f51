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
#include "ui/views/TrainingRunView.h"

#include <array>
#include <functional>
#include <memory>

namespace flowscope {

class TrainingView : public TrainingRunView<TrainingSnapshot> {
    Q_OBJECT
  public:
    enum class Plot { Loss, Nll, Lambda, Beta, Mmd2 };
    static constexpr int kPlotCount = 5;
    static constexpr int kShownTrajectories = 24;

    explicit TrainingView(QWidget* parent = nullptr);

    // Where a plot is drawn for the current size (logical pixels); tests and tooltips use it.
    QRectF plotRect(Plot plot) const;
    static QString plotTitle(Plot plot);

  protected:
    QString tooltipAt(QPointF pos) const override;
    QString placeholder() const override;
    // The data and the samples over the density, with a few samples' paths through the layers.
    void paintPicture(QPainter& p, const QRectF& area, std::size_t trainer) const override;
    void paintPlotAt(QPainter& p, const QRectF& area, int plot) const override;
    QColor trainerColor(std::size_t trainer) const override;
};

} // namespace flowscope
