// Flowscope UI: the "Transformers" view, a live picture of a continuous-time Transformer being trained
// (QPainter, no GL).
//
// Pulls TransformerSnapshots from a source on a timer (~30 Hz; the worker publishes, the view never waits)
// and draws, per trainer (two side by side in comparison mode: the configured λ_OT and λ_OT = 0):
//  * the tokens of one fixed held-out input set moving through depth: each token's path X_0 .. X_M as a
//    polyline with a dot per step, hollow at the start and filled at the end; for task A with λ_OT > 0 the
//    closed-form end points X*(T) as crosses, with the straight optimal paths dashed. Both pictures share
//    one frame, so their paths compare at a glance;
// and small plots against the iteration: the objective (8), the transport cost, the held-out straightness,
// task A's distance to the closed form or task B's accuracy, and the empirical Lipschitz ratio under
// Theorem 2's bound (dashed). Hovering any part shows what it is and its formula.
#pragma once

#include "engine/runner/TransformerRunner.h"
#include "ui/views/TrainingRunView.h"

#include <array>
#include <functional>
#include <memory>

namespace flowscope {

class TransformerView : public TrainingRunView<TransformerSnapshot> {
    Q_OBJECT
  public:
    enum class Plot { Objective, Transport, Straightness, Target, Lipschitz };
    static constexpr int kPlotCount = 5;

    explicit TransformerView(QWidget* parent = nullptr);

    // The square the paths are drawn in, inside pictureRect, and the pixel of a point of the plane in it.
    QRectF pictureSquare(int trainer) const;
    QPointF pictureToPixel(int trainer, double x, double y) const;
    QRectF plotRect(Plot plot) const;
    // The titles depend on the task (Target: closed-form distance for A, accuracy for B).
    static QString plotTitle(Plot plot, ot::Task task);

  protected:
    QString tooltipAt(QPointF pos) const override;
    QString placeholder() const override;
    // The fixed input set's tokens moving through depth, and the closed-form end points (task A).
    void paintPicture(QPainter& p, const QRectF& area, std::size_t trainer) const override;
    void paintPlotAt(QPainter& p, const QRectF& area, int plot) const override;
    QColor trainerColor(std::size_t trainer) const override;
    void shownChanged() override { frame_ = frame(); }

  private:
    QRectF frame() const; // the plane's region every picture shows

    QRectF frame_; // frame() of shown_, computed when it arrives
};

} // namespace flowscope
