// Flowscope UI: the Transformer panel, a dock panel that sets up and drives the live training of a
// continuous-time Transformer (the Transformers tab).
//
// Settings: task (A: the straight-line toy with its closed form; B: point-cloud classification),
// architecture (OT-Transformer, N-ODE, discrete), λ_OT and its convention, steps M, horizon T, width d, MLP
// hidden units, blocks D, integrator, comparison with λ_OT = 0, batch, learning rate and seed. They apply
// when a run starts (ui/panels/RunControls.h: Start, Step, Reset, Evaluate); choosing a task loads its
// defaults. The panel only emits requests; the Transformers workspace drives the runner and feeds snapshots
// back: the status line (the iteration, it/s), a grid of read-outs under it, one column per model (the
// batch's objective, transport and learning rate; the last held-out diagnostics; λ_OT against Theorem 2's
// threshold T·L²), and rejected steps and a stopped run in a warning colour.
//
// Every control's objectName is its parameter key (Tooltips.h, "transformer.*"); the buttons are "start",
// "step", "reset" and "evaluate", the labels "status" and "warning", the grid "readouts".
#pragma once

#include "engine/ottransformer/Trainer.h"
#include "engine/runner/TransformerRunner.h"

#include "ui/panels/TrainingPanelBase.h"

#include <QString>

class QToolButton;

#include <memory>

namespace flowscope {

class TransformerPanel : public TrainingPanelBase {
    Q_OBJECT
  public:
    explicit TransformerPanel(QWidget* parent = nullptr);

    // What the panel starts with for a task: the task's settings (docs/math/transformers.md#tasks) with λ_OT
    // above the threshold (A: 1 in the paper's convention, threshold 1/6, with the padded model that reaches
    // the closed form; B: 0.01 in the code's convention, the best of the measured accuracies).
    static ot::OtTrainerConfig defaults(ot::Task task);

    // The run the controls describe.
    ot::OtTrainerConfig config() const;
    bool comparison() const;
    // Shows `config` in the controls; emits nothing.
    void setConfig(const ot::OtTrainerConfig& config, bool comparison);

    // Every new snapshot with the runner's play state (which a snapshot shows only after the worker's next
    // step).
    void setSnapshot(const std::shared_ptr<const TransformerSnapshot>& snapshot, bool playing);

    // The grid of read-outs as text, one shown row a line: its name, then its values separated by " | ".
    QString readoutText() const;

  signals:
    void startRequested(const ot::OtTrainerConfig& config, bool comparison, bool play);

  private:
    void requestStart(bool play) override { emit startRequested(config(), comparison(), play); }
    void onEdited(); // marks the controls edited and updates which of them apply
    void restate() override { setSnapshot(snapshot_, controls_->playing()); }
    void updateEnabled();
    void forgetLoadedModel(); // an architecture edit: Start builds a fresh model again
    void buildReadouts(QVBoxLayout* layout);
    void showReadouts(const TransformerSnapshot* snapshot);

    QComboBox* task_ = nullptr;
    QComboBox* architecture_ = nullptr;
    QDoubleSpinBox* lambda_ = nullptr;
    QComboBox* convention_ = nullptr;
    QSpinBox* steps_ = nullptr;
    QDoubleSpinBox* horizon_ = nullptr;
    QSpinBox* width_ = nullptr;
    QSpinBox* mlp_ = nullptr;
    QSpinBox* blocks_ = nullptr;
    QComboBox* integrator_ = nullptr;
    QCheckBox* compare_ = nullptr;
    QCheckBox* increment_ = nullptr;
    QSpinBox* batch_ = nullptr;
    QDoubleSpinBox* lr_ = nullptr;
    QSpinBox* seed_ = nullptr;
    QToolButton* more_ = nullptr; // folds the secondary settings away
    std::shared_ptr<const TransformerSnapshot> snapshot_;
    // The read-outs: a name and up to two values (one per model) a row; the first row heads the columns.
    enum Readout {
        Header,
        Objective,
        Transport,
        Rate,
        HeldOut,
        Straightness,
        Target,
        Lipschitz,
        Bound,
        Rows
    };
    QWidget* readouts_ = nullptr;
    QLabel* readoutName_[Rows] = {};
    QLabel* readoutValue_[Rows][2] = {};
    // A loaded model (MainWindow::openModelFile), kept as the flows' panel keeps one: Start trains these
    // parameters on until the task or an architecture control is edited.
    ot::TransformerConfig loadedModel_;
    std::shared_ptr<const ot::TransformerParams> loadedParams_;
};

} // namespace flowscope
