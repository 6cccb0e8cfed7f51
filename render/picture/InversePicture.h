// Flowscope picture: the Inverse tab's picture of a posterior-flow run (PosteriorSnapshot), without a widget.
// Per trainer (two side by side when comparing with and without the RWPO layer), the posterior samples:
//  * d ≤ 3: a corner plot: each unknown's marginal histogram on the diagonal, each pair's scatter below it,
//    the truth marked (a line on the histograms, a cross on the scatters), the mean ± sd beside; with a
//    reference chain (setReference: a Metropolis chain on the same posterior), its histograms as grey
//    outlines over the flow's (both as densities on one scale) and its samples as grey dots under the flow's;
//  * more unknowns (elliptic, EIT): the posterior mean of each unknown against its index with a band of ±
//    one standard deviation, the truth as dots; for EIT below it the conductivity κ on the unit square: the
//    truth's, the posterior mean's and the posterior standard deviation's.
// Beside them, plots: the loss and the data misfit per iteration, the relative L1 error of the posterior mean
// (held-out, every few iterations), the data y against F(posterior mean), and (d ≤ 3, once the reference
// chain finished) the distance to the reference: the W₂ distance between the Gaussians of the held-out
// samples' and the chain's means and covariances, which shows what training changes when the loss is flat.
#pragma once

#include "engine/runner/PosteriorSnapshot.h"
#include "render/picture/TrainingRunPicture.h"

#include <QRectF>
#include <QString>
#include <QStringList>

#include <vector>

namespace flowscope {

// The Inverse tab picture's plots, top to bottom (InversePicture::Plot).
enum class InversePlot { Loss, Misfit, Error, Fit, Distance };

class InversePicture : public TrainingRunPicture<PosteriorSnapshot, InversePlot, 5> {
  public:
    static QString plotTitle(Plot plot);
    // The keys of the tooltips the view shows on hover: each plot's, in Plot order, and a trainer's
    // picture's.
    static constexpr const char* kPlotKeys[kPlotCount] = {"inverse.loss", "inverse.misfit", "inverse.error",
                                                          "inverse.fit", "inverse.distance"};
    // The W₂ distance between the Gaussians of an evaluation's samples and of the reference (NaN when the
    // dimensions differ).
    static double distanceToReference(const PosteriorEvaluation& e, const ReferenceSamples& reference);
    // The distance a perfect flow would show: the Gaussian W₂ distance between n of the chain's own samples
    // (spread over the chain) and the whole chain, n the evaluation's sample count. Drawn as a grey line.
    static double samplingFloor(const ReferenceSamples& reference, int n);
    const char* pictureKey(std::size_t trainer) const;
    // The problem and its size, above the plots.
    QString plotNote() const override;
    // The unknowns' names: σ, r, β for Lorenz-63, x1 .. xd otherwise.
    static QStringList unknownNames(const PosteriorScene& scene);

    static const QColor kTruthColor;
    static const QColor kReferenceColor;

    // The posterior a flow should reach, drawn under the corner plot's samples (null: none). Kept across
    // snapshots; a reference of another dimension than the shown run's is not drawn.
    void setReference(std::shared_ptr<const ReferenceSamples> reference) {
        reference_ = std::move(reference);
    }
    const std::shared_ptr<const ReferenceSamples>& reference() const { return reference_; }

    // The summary lines (each unknown's "name = mean ± sd", the truth where it fits, the error) that the last
    // paint() drew in trainer k's corner plot (d ≤ 3): their text as drawn and their boxes in logical pixels.
    struct TextLine {
        QString text;
        QRectF rect;
    };
    std::vector<TextLine> summaryLines(std::size_t trainer) const {
        return trainer < summaries_.size() ? summaries_[trainer] : std::vector<TextLine>{};
    }

  protected:
    QString placeholder() const override;
    void paintPicture(QPainter& p, const QRectF& area, std::size_t trainer) const override;
    void paintPlotAt(QPainter& p, const QRectF& area, int plot) const override;
    QColor trainerColor(std::size_t trainer) const override;

  private:
    void paintCorner(QPainter& p, const QRectF& area, const PosteriorState& t) const;
    void paintUnknowns(QPainter& p, const QRectF& area, const PosteriorState& t) const;
    void paintFields(QPainter& p, const QRectF& area, const PosteriorPicture& picture) const;

    // The reference when it belongs to the shown run (its dimension), else null.
    const ReferenceSamples* shownReference() const;

    std::shared_ptr<const ReferenceSamples> reference_;
    mutable std::vector<std::vector<TextLine>> summaries_; // by trainer, of the last paint
};

} // namespace flowscope
