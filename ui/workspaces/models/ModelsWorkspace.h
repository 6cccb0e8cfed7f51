// Flowscope UI: the Models workspace: a pretrained Transformer read from a Hugging Face checkpoint folder
// (engine/models, docs/models.md) and its tokens looked at as particles (issue 49).
//
// One page with three tabs and a depth bar under them, one dock (the Model panel: the folder, the input as
// text or ids, further inputs to compare, Run, and the layer and head of the ODE):
//  * Cosines: Geshkovski et al.'s figure live: the histograms of <x_i, x_j> (i < j, normalised tokens) at the
//    chosen layers on one density scale (linear, or log with Log density above them), and the mean cosine
//    and the cluster count against depth.
//  * Through depth: the normalised tokens of each layer on the principal axes of all layers together (3-D
//    where D >= 3, drag to orbit), the layer chosen by the depth bar's slider or Play; hovering a token
//    names it.
//  * Own dynamics: the ODE of one head of one layer (ModelAnalysis.h's modelDynamics) run from the
//  embeddings,
//    its cloud at t = k beside layer k's tokens in the scene's coordinates, and their distance per layer;
//    Open in Particles sets the scene in the Particles workspace, where every tool of the app works on it.
//
// The forward pass and the ODE each run on a thread of their own (engine/runner/BackgroundJob.h) while a
// timer polls them; runFinished() and dynamicsFinished() say when they are done (the tests wait on them).
// Every failure (a bad folder, ids or layer) is one message naming the file, field or tensor, in the panel
// and in lastError(); none opens a dialog but the folder chooser.
#pragma once

#include "engine/models/ModelRun.h"
#include "engine/runner/BackgroundJob.h"
#include "engine/runner/SimulationRunner.h"
#include "ui/shell/Workspace.h"

#include <QTimer>

#include <memory>

class QCheckBox;
class QDockWidget;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QMainWindow;
class QProgressBar;
class QPushButton;
class QSlider;
class QSpinBox;
class QTabWidget;

namespace flowscope {

class ElidedLabel;
class GramHistogramView;
class LayerCurveView;
class ParticleView;
class ParticlesWorkspace;

// The ODE of one head beside the layers, with both clouds on the principal axes of the real ones.
struct ModelDynamicsShown {
    models::ModelDynamics dynamics;
    models::PrincipalAxes axes;
    std::vector<models::RowMat<double>> ode, real; // projected, per recorded time / per layer
    int layer = 0, head = 0;
};

class ModelsWorkspace : public Workspace {
    Q_OBJECT
  public:
    // `particles`: where Open in Particles sets the scene.
    ModelsWorkspace(QMainWindow* host, ParticlesWorkspace* particles);
    ~ModelsWorkspace() override; // cancels the jobs in flight and waits for them

    QString id() const override { return QStringLiteral("models"); }
    QList<WorkspacePage> pages() const override;
    QList<WorkspaceDock> docks() const override;
    QWidget* plotsOf(QWidget* page) const override;
    void setActive(bool active) override;
    QString documentName() const override;
    void saveSettings(QSettings& s) const override;
    void restoreSettings(QSettings& s) override;

    // A checkpoint folder (config.json + model.safetensors): read and checked now (the header only, no
    // weights). False (lastError(): the message naming the file, field or tensor) for a bad one. A Hugging
    // Face checkpoint has no Flowscope metadata key: the workspace declares no model kinds, and its folder
    // comes from its panel's Open, not from File ▸ Open trained model.
    bool openModel(const QString& dir) override;
    // The input: text through the folder's tokenizer, or ids ("3,1,4"), which win when given.
    void setInput(const QString& text, const QString& ids = {});
    // Further inputs compared with it in the Cosines tab, one per line: text, or "ids 3,1,4". Each runs
    // alone; their histograms are drawn over the first input's, and their mean cosines beside its curve.
    void setCompare(const QString& lines);
    // Starts the forward pass of the open folder on the input in the background. False when there is no
    // folder or the ids do not parse; a failure of the pass itself comes with runFinished(false).
    bool run();
    // Asks the forward pass and the ODE in flight to stop (after their current layer or step); their
    // finished signals then come with false and the message "cancelled".
    void cancel();
    bool running() const;
    std::shared_ptr<const models::ModelRunResult> result() const { return result_; }

    // The layer the depth bar shows (clamped to 0 .. L), and Play through the layers.
    void setDepth(int layer);
    int depth() const;
    void setPlaying(bool on);
    bool playing() const { return play_.isActive(); }

    // Starts the ODE of head `head` of layer `layer` of the last run in the background; dynamicsFinished()
    // when done. False (lastError()) when there is no run or the layer or head is out of range.
    bool buildDynamics(int layer, int head);
    std::shared_ptr<const ModelDynamicsShown> dynamics() const { return dynamics_; }
    // Sets the ODE's scene in the Particles workspace and shows it there.
    bool openInParticles();

    // Reads the jobs now (a timer does it while one runs).
    void poll();

    // What the page shows, for the tests.
    QTabWidget* tabs() const { return tabs_; }
    GramHistogramView* histogramView() const { return histograms_; }
    QCheckBox* logDensityBox() const { return logDensity_; }
    LayerCurveView* depthCurves() const { return curves_; }
    LayerCurveView* distanceCurve() const { return distance_; }
    ParticleView* depthView() const { return depthView_; }
    ParticleView* odeView() const { return odeView_; }
    ParticleView* realView() const { return realView_; }
    QLabel* hoverLabel() const { return hover_; }
    QLabel* messageLabel() const { return message_; }
    QDockWidget* dock() const { return dock_; }

  signals:
    void runFinished(bool ok);
    void dynamicsFinished(bool ok);

  private:
    QWidget* buildPanel();
    QWidget* buildPage();
    void openModelDialog();
    void showResult();
    void showDynamics();
    void showDepth();
    void showHover(int token);
    void setMessage(const QString& text, bool error);
    void updateControls();

    ParticlesWorkspace* particles_;
    QString dir_;
    std::shared_ptr<const models::Checkpoint> checkpoint_; // of the folder as opened (its header)
    BackgroundJob<models::ModelRunResult> runJob_;
    BackgroundJob<ModelDynamicsShown> dynamicsJob_;
    std::shared_ptr<const models::ModelRunResult> result_;
    std::shared_ptr<const ModelDynamicsShown> dynamics_;
    std::shared_ptr<const Snapshot> depthShot_, odeShot_, realShot_;
    std::uint64_t generation_ = 0;
    bool runPending_ = false, dynamicsPending_ = false;
    QTimer poll_, play_;

    // the page
    QWidget* page_ = nullptr;
    QTabWidget* tabs_ = nullptr;
    GramHistogramView* histograms_ = nullptr;
    QCheckBox* logDensity_ = nullptr;
    LayerCurveView* curves_ = nullptr;
    LayerCurveView* distance_ = nullptr;
    ParticleView *depthView_ = nullptr, *odeView_ = nullptr, *realView_ = nullptr;
    QLabel *odeCaption_ = nullptr, *realCaption_ = nullptr;
    QSlider* depthSlider_ = nullptr;
    QPushButton* playButton_ = nullptr;
    QLabel* depthLabel_ = nullptr;
    QLabel* hover_ = nullptr;
    // the panel
    QDockWidget* dock_ = nullptr;
    ElidedLabel* folder_ = nullptr;
    QLabel* summary_ = nullptr;
    QLineEdit *text_ = nullptr, *ids_ = nullptr, *histogramLayers_ = nullptr;
    QPlainTextEdit* compare_ = nullptr;
    QSpinBox* layers_ = nullptr;
    QCheckBox* threeD_ = nullptr;
    QPushButton* runButton_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QPushButton* cancelButton_ = nullptr;
    QLabel* message_ = nullptr;
    QSpinBox *odeLayer_ = nullptr, *odeHead_ = nullptr, *odeSteps_ = nullptr;
    QPushButton *odeButton_ = nullptr, *particlesButton_ = nullptr;
    QString lastDir_;
    QString runLabel_; // the first input of the run in flight or shown, for the histograms' legend
};

} // namespace flowscope
