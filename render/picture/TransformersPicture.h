// Flowscope picture: the Transformers tab's picture of a continuous-time Transformer's training
// (TransformerSnapshot), without a widget. Per trainer, a square of the plane with the fixed input set's
// tokens moving through depth (X_0 open circles, X(T) filled) and, for task A, the closed-form optimal end
// points and straight paths; beside them the objective, transport cost, straightness, distance to the target
// (task A) or accuracy (task B), and the Lipschitz ratio with Theorem 2's bound, against the iteration.
#pragma once

#include "engine/runner/TransformerSnapshot.h"
#include "render/picture/TrainingRunPicture.h"

#include <QFontMetricsF>
#include <QString>
#include <QStringList>

namespace flowscope {

// The Transformers tab picture's plots, top to bottom (TransformersPicture::Plot).
enum class TransformersPlot { Objective, Transport, Straightness, Target, Lipschitz };

class TransformersPicture : public TrainingRunPicture<TransformerSnapshot, TransformersPlot, 5> {
  public:
    // The square the paths are drawn in, inside pictureRect, and the pixel of a point of the plane in it.
    QRectF pictureSquare(int trainer) const;
    QPointF pictureToPixel(int trainer, double x, double y) const;
    // The titles depend on the task (Target: closed-form distance for A, accuracy for B).
    static QString plotTitle(Plot plot, ot::Task task);
    // The legend under a picture of the paths, one line of `width` pixels: "X₀", "X(T), M = <steps>" and,
    // with the closed form, "X*(T) closed form" (the crosses) and "optimal path" (the dashed lines); the
    // short forms ("X(T)", "X*(T)", "optimal") when the full ones do not fit, and then as many as fit, in
    // that order.
    static QStringList legendTexts(bool closedForm, int steps, double width, const QFontMetricsF& fm);
    static constexpr double kLegendMark = 14.0, kLegendGap = 14.0; // a mark's room, the room between entries
    // The keys of the tooltips the views show on hover: each plot's, in Plot order, and a trainer's
    // picture's.
    static constexpr const char* kPlotKeys[kPlotCount] = {"transformer.objective", "transformer.transport",
                                                          "transformer.straightness", "transformer.target",
                                                          "transformer.lipschitz"};
    const char* pictureKey(std::size_t) const { return "transformer.picture"; }

  protected:
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
