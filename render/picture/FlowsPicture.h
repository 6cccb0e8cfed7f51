// Flowscope picture: the Flows tab's picture of a flow training run (FlowSnapshot), without a widget.
// Per trainer, a square of the plane: the model's density (or a histogram of its samples) as a heat map, the
// data in grey, generated samples in orange and a few samples' paths through the layers; beside them the
// loss, NLL, λ, β and held-out MMD² against the iteration. λ is frozen by default (FlowConfig::trainLambda):
// then its plot is left out and one line above the plots gives its value.
#pragma once

#include "engine/runner/FlowSnapshot.h"
#include "render/picture/TrainingRunPicture.h"

#include <QString>

namespace flowscope {

// The Flows tab picture's plots, top to bottom (FlowsPicture::Plot).
enum class FlowsPlot { Loss, Nll, Lambda, Beta, Mmd2 };

class FlowsPicture : public TrainingRunPicture<FlowSnapshot, FlowsPlot, 5> {
  public:
    static constexpr int kShownTrajectories = 24;

    static QString plotTitle(Plot plot);
    // The keys of the tooltips the views show on hover: each plot's, in Plot order, and a trainer's picture's
    // (its density, or the histogram of its samples).
    static constexpr const char* kPlotKeys[kPlotCount] = {"training.loss", "training.nll", "training.lambda",
                                                          "training.beta", "training.mmd2"};
    const char* pictureKey(std::size_t trainer) const;

    // Every plot but λ's when no trainer of the shown run trains λ (it is then constant, or unused without
    // the RWPO layer); plotNote() says so.
    std::vector<int> shownPlots() const override;
    QString plotNote() const override;

  protected:
    QString placeholder() const override;
    // The data and the samples over the density, with a few samples' paths through the layers.
    void paintPicture(QPainter& p, const QRectF& area, std::size_t trainer) const override;
    void paintPlotAt(QPainter& p, const QRectF& area, int plot) const override;
    QColor trainerColor(std::size_t trainer) const override;
};

} // namespace flowscope
