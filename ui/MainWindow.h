// Flowscope UI: the main window: the particle, covariance-cone, flow-training and Transformer-training views,
// the dockable panels (scene, matrices, presets, plots, training, transformer), run controls with a time
// scrubber, scene files, presets, settings. The Flows tab has its own runner (TrainingRunner) and controls
// (the Training panel), the Transformers tab likewise (TransformerRunner, the Transformer panel); the run
// controls of the toolbar drive the particle simulation.
//
// Scene changes go through openSceneFile()/setScene(), which return false and keep the current scene on
// failure (the message is in lastError()); only the interactive paths (menu, preset browser) show a dialog,
// so tests and scripts never block on a modal box. Live edits (attention, integrator, quick sliders) go to
// the running simulation at once and continue from its current state; structural edits (d, N, initial
// tokens) restart only when the scene panel's Apply asks for it.
#pragma once

#include "engine/runner/SimulationRunner.h"
#include "engine/runner/TrainingRunner.h"
#include "engine/runner/TransformerRunner.h"
#include "engine/scene/Scene.h"
#include "ui/ParticleView.h"
#include "ui/Theme.h"

#include <QImage>
#include <QMainWindow>
#include <QString>
#include <QStringList>

#include <functional>
#include <optional>
#include <utility>
#include <vector>

class QAction;
class QActionGroup;
class QComboBox;
class QDockWidget;
class QLabel;
class QMenu;
class QSlider;
class QTabWidget;

class QOffscreenSurface;

namespace flowscope {

struct AnimationOptions;
class FrameSink;
class ConeView;
class ElidedLabel;
class MatrixEditor;
class ParticleView;
class PlotsPanel;
class PresetBrowser;
class ScenePanel;
class TrainingPanel;
class TrainingView;
class TransformerPanel;
class TransformerView;

// "0, 2" or "1, 3, 4": the coordinate axes a projection shows, checked against d. nullopt (and why) when the
// text is not two or three indices in [0, d).
std::optional<ProjectionSpec> parseAxes(const QString& text, int d, QString* why = nullptr);

class MainWindow : public QMainWindow {
    Q_OBJECT
  public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // Lists the *.json files of `dir` in the preset combo and the presets browser.
    void setPresetDirectory(const QString& dir);

    bool openSceneFile(const QString& path);
    // Where velocities are computed: "cpu", "gl" (OpenGL compute) or "vulkan" (when this build has them).
    // Opened on the simulation's worker; one that cannot run falls back to the CPU with a note.
    void setBackend(const QString& kind);
    QString backend() const;
    bool setScene(const Scene& scene, const QString& sourcePath = {});
    // Writes the current scene (with its live edits and view settings) atomically. False: see lastError().
    bool saveSceneFile(const QString& path);

    // The scene as it runs now: the opened scene with every live edit applied.
    const std::optional<Scene>& scene() const { return scene_; }
    QString scenePath() const { return scenePath_; }
    QString lastError() const { return lastError_; }

    // File ▸ Export. The shown tab as a PNG (the GL views at their framebuffer's resolution), and every
    // recorded frame that still has its tokens as one (frames, N, d) .npy, with their times in a sibling
    // "<name>_times.npy". Both atomic; false with the message in lastError().
    bool exportViewPng(const QString& path);
    // The shown tab's plots (the Plots panel for the particle and cone tabs, the whole Flows or Transformers
    // view) as .svg (vector: all of them are QPainter drawings) or .png. False: see lastError().
    bool exportPlots(const QString& path);
    QWidget* shownPlots() const;
    bool exportTrajectory(const QString& path, bool asFloat32 = false);
    // File ▸ Export ▸ Moment trajectories: the scene's mean/covariance ODE solutions (Gaussian mode, every
    // initial Gaussian of its grid), solved off the UI thread with progress(done, 1000) every 50 ms (false:
    // nothing is written), written as engine/gaussian/MomentFiles.h says: the bytes of flowscope-cli moments
    // --out x.npy. False with lastError() (a scene without moment equations names why).
    bool exportMoments(const QString& path, const std::function<bool(long done, long total)>& progress = {});
    // File ▸ Export ▸ Animation: the scene as it runs now (scene(), live edits included) from t = 0, drawn
    // offscreen frame by frame on this thread by ui/AnimationExporter (the frames of `flowscope-cli render`)
    // in a Qt offscreen OpenGL context; the context current before is current again after. progress(done,
    // total) runs after each frame (done = 0 while the cone's trajectories are solved); false cancels.
    // Atomic: a cancel or a failure leaves nothing under `path`. False with the message in lastError().
    // options.view == Training animates the Flows tab's training instead (exportTrainingAnimation()).
    using ExportProgress = std::function<bool(long done, long total)>;
    bool exportAnimation(const AnimationOptions& options, const QString& path,
                         const ExportProgress& progress = {});
    // The Flows tab's training as it runs now (its trainers' configs: data, settings, a loaded model's
    // parameters), trained afresh from iteration 0 by ui/TrainingAnimator (the frames of `flowscope-cli
    // render --view training`), on this thread; the running training is not touched. The panel's settings
    // when nothing has started yet.
    bool exportTrainingAnimation(const AnimationOptions& options, const QString& path,
                                 const ExportProgress& progress = {});

    // Edit ▸ Copy / Paste scene as share string (engine/io/ShareString.h). shareString(): the current scene
    // with its live edits, as Save writes it; empty (and *why) when there is none or it cannot be encoded.
    // openShareString(): decodes (surrounding whitespace ignored) and opens it; false with lastError() and
    // the current scene kept.
    QString shareString(QString* why = nullptr) const;
    bool openShareString(const QString& text);
    // Trained models (issue 7; ui/MainWindowModels.cpp). openModelFile(): a .safetensors written by
    // flowscope-cli train / train-transformer or exportModel(), its kind from its metadata; the Flows or
    // Transformers tab then shows it paused at iteration 0, with the data and optimizer of the record beside
    // it where the record has them (the status line says what was missing), and Play trains it on.
    // exportModel(): the shown training tab's model (the Flows tab's unless the Transformers tab is shown)
    // as .safetensors + .json. exportSamples() / exportDensity(): the Flows tab's model (the first trainer
    // side by side), the same bytes as flowscope-cli sample --n --seed / density --grid --half-width
    // --reference (engine/flows/Sampling.h). All atomic; false with lastError() set, the current runs kept.
    bool openModelFile(const QString& path);
    bool exportModel(const QString& path);
    // Both run the sampler off the UI thread (which keeps answering) and report progress(done, 1000) every
    // 50 ms; false cancels, and nothing is written.
    bool exportSamples(const QString& path, int n = 10000, std::uint64_t seed = 0,
                       const ExportProgress& progress = {});
    bool exportDensity(const QString& path, int grid = 200, double extent = 4.0, int references = 2000,
                       const ExportProgress& progress = {});
    SimulationRunner& runner() { return runner_; }
    ParticleView* particleView() const { return view_; }
    ConeView* coneView() const { return cone_; }
    ScenePanel* scenePanel() const { return scenePanel_; }
    MatrixEditor* matrixEditor() const { return matrixEditor_; }
    PresetBrowser* presetBrowser() const { return presets_; }
    PlotsPanel* plotsPanel() const { return plots_; }
    QSlider* scrubber() const { return scrubber_; }
    QStringList recentFiles() const { return recent_; }

    // Live training of generative flows (the Flows tab and the Training panel).
    TrainingRunner& trainingRunner() { return training_; }
    TrainingView* trainingView() const { return trainingView_; }
    TrainingPanel* trainingPanel() const { return trainingPanel_; }
    // Starts a new training run (shown in the panel's controls); false, with the message in lastError() and
    // the panel, when the config is invalid. The current run then goes on untouched.
    bool startTraining(const flows::TrainerConfig& config, bool sideBySide, bool play);

    // Live training of continuous-time Transformers (the Transformers tab and the Transformer panel), like
    // the flows above.
    TransformerRunner& transformerRunner() { return transformers_; }
    TransformerView* transformerView() const { return transformerView_; }
    TransformerPanel* transformerPanel() const { return transformerPanel_; }
    bool startTransformer(const ot::OtTrainerConfig& config, bool comparison, bool play);

    // Settings (QSettings "Flowscope"): window geometry and dock layout, theme, view options, recent files,
    // and the last scene (its JSON, so unsaved edits survive). restoreSettings() returns the last scene when
    // there is one that still parses.
    void saveSettings();
    std::optional<std::pair<Scene, QString>> restoreSettings();
    void setTheme(ThemeKind kind);
    ThemeKind theme() const { return theme_; }

    // The whole window as shown, including the GL views (which a plain QWidget::grab may leave blank).
    QImage grabWindowImage();

  public slots:
    void togglePlay();
    void play();
    void stepOnce();
    void reset();
    void frameAll();
    void setMaxSpeed(bool on); // no steps/s cap
    void setStepsPerSecond(double rate);
    void showConeView();
    void showParticleView();
    void showFlowsView();
    void showTransformersView();
    // Time scrubber: preview the recorded frame `index` (play or step continues from it).
    void scrubTo(int index);

  protected:
    void closeEvent(QCloseEvent* e) override;

  private slots:
    void openSceneDialog();
    void saveSceneDialog();
    void openPreset(int index);
    void updateControls();
    void onSnapshot();
    void updatePlots();

  private:
    enum class ExportKind { ViewPng, Trajectory, Plots, Moments };
    void exportDialog(ExportKind kind);
    void buildActions();
    void buildMenus();
    void buildToolBars();
    void buildDocks();
    void selectPresetFor(const QString& path);
    void applyAttention(const AttentionSpec& spec, QObject* from);
    void applyIntegrator(const IntegratorSpec& spec);
    void continueFromScrub();
    void addRecent(const QString& path);
    void rebuildRecentMenu();
    void syncRateControls();
    void openModelDialog();
    void exportModelDialog();
    void exportFlowDataDialog(bool density); // samples or density: a small dialog, then a progress dialog
    void exportAnimationDialog();
    // The sink of an animation export at `path` (.mp4, .gif or a PNG directory); null with lastError().
    std::unique_ptr<FrameSink> openExportSink(const QString& path, const AnimationOptions& options);
    void copyShareString();
    void pasteShareString();

    // Declared before the runner: its worker's OpenGL context is current on this surface until it joins.
    std::unique_ptr<QOffscreenSurface> computeSurface_;
    SimulationRunner runner_;
    ParticleView* view_ = nullptr;
    ConeView* cone_ = nullptr;
    QTabWidget* tabs_ = nullptr;
    ScenePanel* scenePanel_ = nullptr;
    MatrixEditor* matrixEditor_ = nullptr;
    PresetBrowser* presets_ = nullptr;
    PlotsPanel* plots_ = nullptr;
    TrainingRunner training_;
    TrainingView* trainingView_ = nullptr;
    TrainingPanel* trainingPanel_ = nullptr;
    QDockWidget* trainingDock_ = nullptr;
    TransformerRunner transformers_;
    TransformerView* transformerView_ = nullptr;
    TransformerPanel* transformerPanel_ = nullptr;
    QDockWidget* transformerDock_ = nullptr;
    std::optional<Scene> scene_;
    std::vector<HeadParams> baseHeads_; // V before the quick V-scale slider
    QString scenePath_;
    QString presetDir_;
    QString lastError_;
    QStringList recent_;
    ThemeKind theme_ = ThemeKind::Dark;
    std::optional<int> scrubIndex_; // the recorded frame previewed, when not following the run
    double rate_ = WorkerLoop::kDefaultStepsPerSecond;

    QAction* openAction_ = nullptr;
    QAction* saveAction_ = nullptr;
    QAction* saveAsAction_ = nullptr;
    QAction* quitAction_ = nullptr;
    QAction* playAction_ = nullptr;
    QAction* stepAction_ = nullptr;
    QAction* resetAction_ = nullptr;
    QAction* frameAction_ = nullptr;
    QAction* maxSpeedAction_ = nullptr;
    QAction* overlayAction_ = nullptr;
    QAction* hudAction_ = nullptr;
    QAction* trailsAction_ = nullptr;
    QAction* discAction_ = nullptr;
    QAction* axesAction_ = nullptr;
    QActionGroup* colorGroup_ = nullptr;
    QActionGroup* projectionGroup_ = nullptr;
    QActionGroup* themeGroup_ = nullptr;
    QMenu* recentMenu_ = nullptr;
    QMenu* panelsMenu_ = nullptr;
    QComboBox* presetCombo_ = nullptr;
    QComboBox* backendCombo_ = nullptr; // data: "cpu", "gl", "vulkan"
    QLabel* backendNote_ = nullptr;     // status bar: why the chosen backend is not running
    QSlider* speed_ = nullptr;
    QLabel* speedLabel_ = nullptr;
    QSlider* scrubber_ = nullptr;
    QLabel* scrubLabel_ = nullptr;
    ElidedLabel* sceneLabel_ = nullptr;
    std::optional<std::pair<bool, bool>> controlsState_; // (playing, have a scene) the actions show
    QString modelDir_;                                   // where the model dialogs start
    // Samples and densities of a dialog are computed here, not on the UI thread (seconds to minutes with
    // the RWPO layer). Declared last: destroyed, i.e. joined, before anything it reports to.
};

} // namespace flowscope
