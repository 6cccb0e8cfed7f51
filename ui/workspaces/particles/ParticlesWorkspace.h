// Flowscope UI: the Particles workspace: tokens as particles under attention, and their Gaussian moments.
//
// Pages: the particle view and the covariance cone (the same run, two pictures). Docks: Scene, Presets,
// Matrices, Plots. Tool bars: Run (open, play / step / reset, frame, speed, preset, backend) and Time (the
// recorded history's scrubber). Menus: Simulation, Display. Exports: the trajectory, the moment trajectories,
// the animation. Scene files, presets, recent files and share strings are this workspace's: a scene is what
// it runs.
//
// The scene, its file and its run belong to a ParticleDocument (ui/document/ParticleDocument.h), the one
// owner: the workspace is that document plus the controllers of its tool bars, menus and docks. Scene changes
// go through openSceneFile()/setScene(), which return false and keep the current scene on failure (the
// message is in lastError()). Live edits (the Scene panel, the matrix editor, the quick sliders) are commands
// to the document, which checks them and sends them to the running simulation, which continues from its
// current state; structural edits (d, N, initial tokens) restart only when the scene panel's Apply asks for
// it. The views and panels follow the document's opened() and edited() signals.
#pragma once

#include "engine/runner/SimulationRunner.h"
#include "engine/scene/Scene.h"
#include "ui/document/ParticleDocument.h"
#include "ui/export/ExportService.h"
#include "ui/shell/Workspace.h"
#include "ui/views/ParticleView.h"

#include <QStringList>

#include <array>
#include <memory>
#include <optional>
#include <vector>

class QActionGroup;
class QComboBox;
class QLabel;
class QMainWindow;
class QOffscreenSurface;
class QSlider;

namespace flowscope {

class ConeView;
class ElidedLabel;
class MatrixEditor;
class PlotsPanel;
class PresetBrowser;
class ScenePanel;

// "0, 2" or "1, 3, 4": the coordinate axes a projection shows, checked against d. nullopt (and why) when the
// text is not two or three indices in [0, d).
std::optional<ProjectionSpec> parseAxes(const QString& text, int d, QString* why = nullptr);

class ParticlesWorkspace : public Workspace {
    Q_OBJECT
  public:
    explicit ParticlesWorkspace(QMainWindow* host);
    ~ParticlesWorkspace() override;

    QString id() const override { return QStringLiteral("particles"); }
    QList<WorkspacePage> pages() const override;
    QList<WorkspaceDock> docks() const override;
    QList<QToolBar*> toolBars() const override;
    QList<QMenu*> menus() const override;
    QList<QAction*> exportActions() const override;
    QWidget* plotsOf(QWidget* page) const override;
    void setActive(bool active) override;
    bool eventFilter(QObject* watched, QEvent* event) override; // the window's resizes: fitRunBar()
    void setTheme(ThemeKind kind) override;
    void saveSettings(QSettings& s) const override;
    void restoreSettings(QSettings& s) override;
    QString documentName() const override { return sceneName_; }
    // What it opens: scene files (File ▸ Open, the recent files, Save, Save as), share strings (Edit ▸ Copy
    // and Paste), the presets (command palette) and two guided starts (clustering, a blow-up).
    QList<QAction*> fileOpenActions() const override; // open, the recent files' menu
    QList<QAction*> fileSaveActions() const override; // save, save as
    QList<QAction*> editActions() const override;     // copy / paste share string
    bool takesShareString(const QString& text) const override;
    QList<WorkspaceCommand> paletteCommands() override;
    QList<WorkspaceStart> guidedStarts() override;

    // Scenes. openSceneFile() adds the file to the recent files; setScene() keeps `sourcePath` for Save.
    bool openSceneFile(const QString& path);
    bool setScene(const Scene& scene, const QString& sourcePath = {});
    // Writes the current scene (with its live edits and view settings) atomically.
    bool saveSceneFile(const QString& path);
    // The scene that runs (null before the first one): the document's.
    const Scene* scene() const { return document_.hasScene() ? &document_.scene() : nullptr; }
    QString scenePath() const { return document_.path(); }
    ParticleDocument& document() { return document_; }
    // The scene saved in the settings, when there is one that still parses (restoreSettings() reads it).
    std::optional<std::pair<Scene, QString>> savedScene() const;
    // Lists the *.json files of `dir` in the preset combo and the presets browser.
    void setPresetDirectory(const QString& dir);
    QStringList recentFiles() const { return recent_; }
    // Edit ▸ Copy / Paste scene as share string (engine/io/ShareString.h): the current scene with its live
    // edits, as Save writes it; empty (and *why) when there is none. openShareString() decodes (surrounding
    // whitespace ignored) and opens it.
    QString shareString(QString* why = nullptr) const;
    bool openShareString(const QString& text) override;

    // Where velocities are computed: a backend id ("cpu", "gl", "vulkan"), opened on the simulation's worker;
    // one that cannot run falls back to the CPU with a note in the status bar.
    void setBackend(const QString& id);
    QString backend() const;

    // Run controls.
    void togglePlay();
    void play();
    void pause();
    void stepOnce();
    void reset();
    void frameAll();
    // Follow (ParticleView::setFollow), what the Follow action shows.
    void setFollow(bool on);
    bool follow() const { return view_->follow(); }
    void setMaxSpeed(bool on); // no steps/s cap
    void setStepsPerSecond(double rate);
    // Time scrubber: preview the recorded frame `index` (play or step continues from it).
    void scrubTo(int index);

    // Exports (ExportService.h); false with lastError().
    bool exportTrajectory(const QString& path, bool asFloat32 = false);
    bool exportMoments(const QString& path, const ExportProgress& progress = {});
    // The scene as it runs now (live edits included) from t = 0, drawn offscreen; options.view picks the
    // particles, the cone or the disc.
    bool exportAnimation(const AnimationOptions& options, const QString& path,
                         const ExportProgress& progress = {});

    SimulationRunner& runner() { return document_.runner(); }
    ParticleView* particleView() const { return view_; }
    ConeView* coneView() const { return cone_; }
    ScenePanel* scenePanel() const { return scenePanel_; }
    MatrixEditor* matrixEditor() const { return matrixEditor_; }
    PresetBrowser* presetBrowser() const { return presets_; }
    PlotsPanel* plotsPanel() const { return plots_; }
    QSlider* scrubber() const { return scrubber_; }
    QMenu* recentMenu() const { return recentMenu_; }

  signals:

  private:
    void buildActions();
    void buildDocks();
    void buildToolBars();
    // The Run tool bar's buttons with their text beside the icons when the window is wide enough for all of
    // it, else icons only (tooltips say what they are), so that no control goes to the overflow menu.
    void fitRunBar();
    void buildMenus();
    void connectViews();
    void selectPresetFor(const QString& path);
    // The document ran a new scene / changed a live part: the views, the plots and the labels follow.
    void showOpened();
    void showEdited(ParticleDocument::Part part, QObject* from);
    // A quick slider's attention: sent to the document; a refusal goes to the status bar.
    void editAttention(const AttentionSpec& spec);
    void continueFromScrub();
    void addRecent(const QString& path);
    void rebuildRecentMenu();
    void syncRateControls();
    void updateControls();
    void onSnapshot();
    void updatePlots();
    void openSceneDialog();
    void saveSceneDialog();
    void openPreset(int index);
    enum class ExportKind { Trajectory, Moments };
    void exportDialog(ExportKind kind);
    void exportAnimationDialog();
    ExportResult momentsResult(const QString& path, const ExportProgress& progress) const;
    ExportResult animationResult(const AnimationOptions& options, const QString& path,
                                 const ExportProgress& progress) const;
    // A guided start: opens a preset of the preset directory and plays it, on `page` (the particles or the
    // cone).
    bool playPreset(const QString& file, QWidget* page);
    void copyShareString();
    void pasteShareString();

    QMainWindow* window_;
    // Declared before the document: its runner's worker's OpenGL context is current on this surface until it
    // joins.
    std::unique_ptr<QOffscreenSurface> computeSurface_;
    ParticleDocument document_;
    ParticleView* view_ = nullptr;
    ConeView* cone_ = nullptr;
    ScenePanel* scenePanel_ = nullptr;
    MatrixEditor* matrixEditor_ = nullptr;
    PresetBrowser* presets_ = nullptr;
    PlotsPanel* plots_ = nullptr;
    QList<WorkspaceDock> docks_;
    QString savedSceneJson_, savedScenePath_; // the settings' scene, read by savedScene()
    std::vector<HeadParams> baseHeads_;       // V before the quick V-scale slider
    QString presetDir_;
    QStringList recent_;
    std::optional<int> scrubIndex_; // the recorded frame previewed, when not following the run
    double rate_ = WorkerLoop::kDefaultStepsPerSecond;
    std::optional<std::pair<bool, bool>> controlsState_; // (playing, have a scene) the actions show

    QAction *openAction_ = nullptr, *saveAction_ = nullptr, *saveAsAction_ = nullptr;
    QAction *playAction_ = nullptr, *stepAction_ = nullptr, *resetAction_ = nullptr, *frameAction_ = nullptr;
    QAction* followAction_ = nullptr;
    QAction *maxSpeedAction_ = nullptr, *hudAction_ = nullptr, *discAction_ = nullptr, *axesAction_ = nullptr;
    std::array<QAction*, ParticlePicture::kLayerCount> layerActions_{}; // in ParticlePicture::Layer's order
    QAction* layerAction(ParticleView::Layer layer) const { return layerActions_[std::size_t(layer)]; }
    QAction *copyShareAction_ = nullptr, *pasteShareAction_ = nullptr;
    QAction *trajectoryExport_ = nullptr, *momentsExport_ = nullptr, *animationExport_ = nullptr;
    QActionGroup* colorGroup_ = nullptr;
    QActionGroup* projectionGroup_ = nullptr;
    QMenu* recentMenu_ = nullptr;
    QMenu* simulationMenu_ = nullptr;
    QMenu* displayMenu_ = nullptr;
    QToolBar* runBar_ = nullptr;
    QToolBar* timeBar_ = nullptr;
    QComboBox* presetCombo_ = nullptr;
    QComboBox* backendCombo_ = nullptr; // data: the backend ids
    QLabel* backendNote_ = nullptr;     // status bar: why the chosen backend is not running
    QSlider* speed_ = nullptr;
    QLabel* speedLabel_ = nullptr;
    QSlider* scrubber_ = nullptr;
    QLabel* scrubLabel_ = nullptr;
    ElidedLabel* sceneLabel_ = nullptr;
    QString sceneName_; // the scene's name, else its file's, else "untitled": the window title's
    QString sceneLine_; // sceneLabel_'s text while the workspace is shown (empty while another is)
};

} // namespace flowscope
