// Flowscope UI: the Flows workspace: a generative flow (OT-Flow, with or without the RWPO layer) trained live
// on a toy dataset or the user's points. One page (the training view), one dock (the Training panel);
// exports: the trained model, samples and the density as .npy (the bytes of flowscope-cli sample / density),
// and the training as an animation.
#pragma once

#include "engine/runner/FlowRunner.h"
#include "ui/panels/FlowPanel.h"
#include "ui/views/FlowView.h"
#include "ui/workspaces/TrainingWorkspace.h"

namespace flowscope {

class FlowsWorkspace : public TrainingWorkspace<FlowTraining, FlowPanel, FlowView> {
  public:
    explicit FlowsWorkspace(QMainWindow* host);

    QList<QAction*> exportActions() const override;
    // The guided start "Train a flow" (eight Gaussians, with and without the RWPO layer).
    QList<WorkspaceStart> guidedStarts() override;

    // The shown flow's samples and density, off the UI thread with progress(done, 1000); false cancels and
    // nothing is written.
    bool exportSamples(const QString& path, int n = 10000, std::uint64_t seed = 0,
                       const ExportProgress& progress = {});
    bool exportDensity(const QString& path, int grid = 200, double extent = 4.0, int references = 2000,
                       const ExportProgress& progress = {});
    // The training as it runs now (its trainers' configs, a loaded model's parameters included), trained
    // afresh from iteration 0 on this thread; the panel's settings before the first start.
    bool exportAnimation(const AnimationOptions& options, const QString& path,
                         const ExportProgress& progress = {});

  protected:
    // A .safetensors written by flowscope-cli train or Export ▸ Trained model (metadata key
    // flows::kFlowMetadataKey), with the data and optimizer of its record where the record has them (the
    // note says what was missing).
    flows::TrainerConfig configOfModel(const QString& path, QString& note) override;

  private:
    std::shared_ptr<const flows::FlowModel<float>> shownFlow();
    std::vector<flows::TrainerConfig> configsNow() const;
    void exportDataDialog(bool density);
    void exportAnimationDialog();

    QAction* samplesExport_ = nullptr;
    QAction* densityExport_ = nullptr;
    QAction* animationExport_ = nullptr;
};

} // namespace flowscope
