// Flowscope UI: the Inverse panel, a dock panel that sets up and drives the live training of a posterior
// flow on a shipped inverse problem (assets/problems).
//
// Settings: the problem, the RWPO layer, side by side (with and without the RWPO layer), iterations and seed.
// They apply when a run starts (ui/panels/RunControls.h: Start, Step, Reset, Evaluate); choosing another
// problem starts a new run of it at once, paused at iteration 0, with the problem file's iterations and RWPO
// choice. After File ▸ Open trained model (a saved posterior: setConfig with initialParams) the panel keeps
// that run: Start and Reset train the file's parameters on its own problem and frame, with the controls'
// iterations and side-by-side choice, until another problem is chosen. The panel only emits requests; the
// workspace drives the runner and feeds snapshots back to the status lines (iteration, it/s, and per flow the
// loss, misfit and the last relative L1 error), with rejected steps, a stopped run and the end of the
// iterations in the warning line.
//
// Every control's objectName is its parameter key (Tooltips.h, "inverse.*"); the buttons are "start",
// "step", "reset" and "evaluate", the labels "status" and "warning".
#pragma once

#include "engine/runner/PosteriorRunner.h"
#include "ui/panels/TrainingPanelBase.h"

#include <QString>

#include <map>
#include <memory>
#include <optional>
#include <string>

namespace flowscope {

class InversePanel : public TrainingPanelBase {
    Q_OBJECT
  public:
    explicit InversePanel(QWidget* parent = nullptr);

    // The shipped problems: the .json files of `dir` (the build's assets/problems by default).
    void setProblemDirectory(const QString& dir);
    QString problemDirectory() const { return dir_; }

    // The run the controls describe (the problem loaded, no frame yet); problem is null when the chosen
    // problem cannot be read (the warning line says why).
    PosteriorRunConfig config() const;
    bool comparison() const;
    // Shows `config` in the controls; emits nothing.
    void setConfig(const PosteriorRunConfig& config, bool comparison);
    void setSnapshot(const std::shared_ptr<const PosteriorSnapshot>& snapshot, bool playing);

    // Chooses a problem by its name ("lorenz63"): a new run of it starts, paused (startRequested).
    bool selectProblem(const QString& name);

  signals:
    void startRequested(const PosteriorRunConfig& config, bool comparison, bool play);

  private:
    void requestStart(bool play) override { emit startRequested(config(), comparison(), play); }
    void restate() override { setSnapshot(snapshot_, controls_->playing()); }
    // The chosen problem, read once; null (and why in loadError_) when it cannot be read.
    std::shared_ptr<const inverse::Problem> problem(const std::string& name) const;
    void problemChosen();
    void showProblem(const std::shared_ptr<const inverse::Problem>& p);
    void setProblemDescription(const std::shared_ptr<const inverse::Problem>& p);
    void forgetLoadedModel();
    int openedItem() const; // the problem box's entry of the opened posterior, or -1

    QString dir_;
    QComboBox* problem_ = nullptr;
    QLabel* description_ = nullptr;
    QSpinBox* iterations_ = nullptr;
    QSpinBox* seed_ = nullptr;
    std::shared_ptr<const PosteriorSnapshot> snapshot_;
    std::optional<PosteriorRunConfig> loadedRun_; // an opened posterior's run (File ▸ Open trained model)
    mutable std::map<std::string, std::shared_ptr<const inverse::Problem>> problems_;
    mutable QString loadError_;
};

} // namespace flowscope
