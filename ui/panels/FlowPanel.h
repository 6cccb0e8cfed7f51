// Flowscope UI: the training panel, a dock panel that sets up and drives the live training of a flow.
//
// Settings: dataset, the RWPO layer, side by side (with / without RWPO), layers M, width, batch, learning
// rate, λ0, β0 and seed. They apply when a run starts (ui/panels/RunControls.h: Start, Step, Reset,
// Evaluate). Reset goes back to iteration 0 of the current run, Evaluate computes the held-out metrics now.
// The panel only emits requests; the Flows workspace drives the runner and feeds snapshots back to the status
// lines (iteration, it/s, λ, β, the last held-out NLL and MMD²), with rejected steps and a stopped run shown
// in a warning colour.
//
// A config with initialParams (a loaded model, MainWindow::openModelFile) is kept by the panel: Start then
// trains those parameters on, with the panel's data and optimizer settings, until an architecture control
// (RWPO, side by side, layers, width, λ₀, β₀, transport weight) is edited; the label "loaded" says so.
//
// The dataset list ends with "your points": points drawn on a canvas (ui/views/PointCanvas.h, button
// "drawPoints") or loaded from .npy / .csv ("loadPoints"), trained on as flowscope-cli train --data trains on
// a file.
//
// Every control's objectName is its parameter key (Tooltips.h, "training.*"); the buttons are "start",
// "step", "reset" and "evaluate", the labels "status" and "warning".
#pragma once

#include "engine/flows/Trainer.h"
#include "engine/runner/FlowRunner.h"

#include "ui/panels/TrainingPanelBase.h"

#include <QString>

#include <memory>

namespace flowscope {

class FlowPanel : public TrainingPanelBase {
    Q_OBJECT
  public:
    explicit FlowPanel(QWidget* parent = nullptr);

    // The run the controls describe.
    flows::TrainerConfig config() const;
    bool comparison() const;
    // Shows `config` in the controls; emits nothing.
    void setConfig(const flows::TrainerConfig& config, bool comparison);

    // Every new snapshot with the runner's play state (which a snapshot shows only after the worker's next
    // step).
    void setSnapshot(const std::shared_ptr<const FlowSnapshot>& snapshot, bool playing);

    // The user's points (n x 2) and whether the dataset is "your points". setPoints() selects it; a load
    // that fails (unreadable, not n x 2, non-finite) keeps the points and says why.
    const Mat& points() const { return points_; }
    bool usesPoints() const;
    void setPoints(const Mat& points);
    bool loadPointsFile(const QString& path, QString* why);

  signals:
    void startRequested(const flows::TrainerConfig& config, bool comparison, bool play);

  private:
    void requestStart(bool play) override { emit startRequested(config(), comparison(), play); }
    void restate() override { setSnapshot(snapshot_, controls_->playing()); }
    void drawPoints();
    void loadPointsDialog();
    void updatePointsRow();
    void forgetLoadedModel(); // an architecture edit: Start builds a fresh model again

    QComboBox* dataset_ = nullptr;
    QWidget* pointsRow_ = nullptr; // shown for "your points": the count, Draw..., Load...
    QLabel* pointsLabel_ = nullptr;
    Mat points_ = Mat(0, 2);
    QSpinBox* layers_ = nullptr;
    QSpinBox* width_ = nullptr;
    QSpinBox* batch_ = nullptr;
    QDoubleSpinBox* lr_ = nullptr;
    QDoubleSpinBox* lambda0_ = nullptr;
    QDoubleSpinBox* beta0_ = nullptr;
    QDoubleSpinBox* transport_ = nullptr;
    QSpinBox* seed_ = nullptr;
    std::shared_ptr<const FlowSnapshot> snapshot_;
    flows::FlowConfig loadedFlow_;                                 // the loaded model's architecture
    std::shared_ptr<const flows::FlowParams<float>> loadedParams_; // null: Start initializes afresh
};

} // namespace flowscope
