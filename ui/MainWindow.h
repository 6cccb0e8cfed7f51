// Flowscope UI: the main window: the particle view, run controls, scene files and presets.
//
// Scene changes go through openSceneFile()/setScene(), which return false and keep the current scene on
// failure (the message is in lastError()); only the interactive paths (menu, preset combo) show a dialog,
// so tests and scripts never block on a modal box.
#pragma once

#include "engine/runner/SimulationRunner.h"
#include "engine/scene/Scene.h"

#include <QImage>
#include <QMainWindow>
#include <QString>

#include <optional>
#include <utility>

class QAction;
class QComboBox;

namespace flowscope {

class ElidedLabel;
class ParticleView;

class MainWindow : public QMainWindow {
    Q_OBJECT
  public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // Lists the *.json files of `dir` in the preset combo.
    void setPresetDirectory(const QString& dir);

    bool openSceneFile(const QString& path);
    bool setScene(const Scene& scene, const QString& sourcePath = {});

    const std::optional<Scene>& scene() const { return scene_; }
    QString scenePath() const { return scenePath_; }
    QString lastError() const { return lastError_; }
    SimulationRunner& runner() { return runner_; }
    ParticleView* particleView() const { return view_; }

    // The whole window as shown, including the GL view (which a plain QWidget::grab may leave blank).
    QImage grabWindowImage();

  public slots:
    void togglePlay();
    void play();
    void stepOnce();
    void reset();
    void frameAll();
    void setMaxSpeed(bool on); // no steps/s cap

  private slots:
    void openSceneDialog();
    void openPreset(int index);
    void updateControls();

  private:
    void buildActions();
    void buildMenus();
    void buildToolBar();
    void selectPresetFor(const QString& path);

    SimulationRunner runner_;
    ParticleView* view_ = nullptr;
    std::optional<Scene> scene_;
    QString scenePath_;
    QString lastError_;

    QAction* openAction_ = nullptr;
    QAction* quitAction_ = nullptr;
    QAction* playAction_ = nullptr;
    QAction* stepAction_ = nullptr;
    QAction* resetAction_ = nullptr;
    QAction* frameAction_ = nullptr;
    QAction* maxSpeedAction_ = nullptr;
    QComboBox* presets_ = nullptr;
    ElidedLabel* sceneLabel_ = nullptr;
    std::optional<std::pair<bool, bool>> controlsState_; // (playing, have a scene) the actions show
};

} // namespace flowscope
