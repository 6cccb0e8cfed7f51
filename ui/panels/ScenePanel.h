// Flowscope UI: the scene panel, a dock panel that edits the running scene's parameters.
//
// It shows the scene of a ParticleDocument (ui/document/ParticleDocument.h), the one owner of the running
// scene, and keeps none of its own: a live edit is a command to the document, which checks it and either
// takes it (the panel shows the document's scene again) or refuses it (the panel shows why, and the value in
// force). Three groups, by what an edit costs:
//  * Attention (live): type, heads, β, scale by √k, masked, sphere, keyframe interpolation, lin,ε, Sinkhorn ε
//    and iterations, RWPO λ, h and kernel. Rows that do not apply to the chosen type are hidden. A new head
//    gets Q = K = I, V = 0 (it adds nothing to the velocity, so the dynamics do not jump); fewer heads drop
//    the last ones.
//  * Integrator (live): method, T, steps.
//  * Scene (restart): d, N, precision and the initial tokens (Gaussian mean and covariance, uniform box,
//    rings, points drawn with the mouse in the particle view, or a .npy/.csv file) with their seed. These
//    edits are staged, a difference against the document's scene: "Apply (restarts)" emits sceneEdited()
//    with the document's scene edited by them, "Revert" drops them. A changed d resizes every head (Q, K
//    become I_d, V keeps its leading block) and the mean/covariance/box (leading entries kept, identity and
//    the default box beyond). An invalid staged scene (e.g. a covariance that is not symmetric positive
//    semi-definite) shows a red message naming the field and disables Apply.
// Number ranges are enforced by the spin boxes; numbers are committed on Enter or focus loss, not on every
// keystroke. Showing the document's scene emits nothing.
//
// Every control's objectName is its parameter key (Tooltips.h), e.g. "attention.beta", "integrator.T", "d",
// "initial.cov"; the buttons are "apply" and "revert", the message label "error".
#pragma once

#include "engine/scene/Scene.h"
#include "ui/document/ParticleDocument.h"

#include <QString>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QToolButton;

namespace flowscope {

class MatrixGrid;

class ScenePanel : public QWidget {
    Q_OBJECT
  public:
    static constexpr int kMaxGridDimension = 8; // larger d: the mean/covariance/box are not edited here

    // Shows `document`'s scene, follows its changes and sends it the live edits. The document outlives the
    // panel.
    explicit ScenePanel(ParticleDocument& document, QWidget* parent = nullptr);

    // The document's scene with the staged edits applied: what Apply would emit.
    Scene editedScene() const;
    bool hasStagedChanges() const { return dirty_; }
    // Why the staged scene cannot be applied ("initial.cov: ..."); empty when it can.
    QString stagedError() const { return error_; }

    // Points drawn in the particle view become the staged initial tokens (kind "points", N = their count).
    void setDrawnPoints(const Tokens& points);
    // Shows whether the particle view is drawing (the Draw button's state); emits nothing.
    void setDrawing(bool on);

    // A staged scene whose steps cost at least this many pair interactions (about half a minute on this
    // project's 2-core CPU at 3·10⁹ pairs/s) gets a note under Apply with the cost; Apply stays enabled.
    static constexpr double kCostlyPairsPerStep = 1e11;
    // The note for `scene`: its pair interactions per step and the time a CPU takes; empty below the bar.
    static QString costWarning(const Scene& scene);

  signals:
    void sceneEdited(const Scene& scene);
    // The Draw button: start or stop drawing points in the particle view; Clear drops the drawn points.
    void drawRequested(bool on);
    void drawClearRequested();

  protected:
    // Enter in a staged field (d, N, seed, noise, radii, path) applies the staged scene.
    bool eventFilter(QObject* watched, QEvent* event) override;

  private:
    QWidget* buildAttentionGroup();
    QWidget* buildIntegratorGroup();
    QWidget* buildSceneGroup();

    // The document's scene (a default one while it has none).
    const Scene& shown() const;
    // The document opened a new scene: show it and drop the staged edits.
    void showDocument();
    void showAttention();
    void showIntegrator();
    void showStaged();
    void updateRows();

    // The document's attention, with the one head Q = K = V = I that an empty head list of a type with
    // matrices stands for made explicit (the base of an edit).
    AttentionSpec attention() const;
    // Live edits: sent to the document; a refusal is shown under the forms, and the value in force again.
    void editAttention(const AttentionSpec& attention);
    void editSetting(const SceneSetting& setting);
    void showRefusal(const QString& why);
    void stagedChanged(); // staged_ changed: validate, enable Apply
    void updateMessage();
    void setStagedDimension(int d);
    QString validate() const;
    void apply();
    void revert();
    void browseTokenFile();

    // The Scene group's fields as shown: equal to the document's where nothing is staged.
    struct Staged {
        int d = 2;
        int n = 0;
        Precision precision = Precision::Float64;
        InitialSpec initial;
    };

    ParticleDocument& document_;
    Staged staged_;
    bool dirty_ = false;
    QString refusal_; // why the document refused the last live edit, until the next edit takes
    QString error_;
    QString radiiError_; // the radii text does not parse
    QString seedError_;  // the seed text does not parse

    // Attention (live)
    QFormLayout* attentionForm_ = nullptr;
    QComboBox* type_ = nullptr;
    QSpinBox* heads_ = nullptr;
    QDoubleSpinBox* beta_ = nullptr;
    QCheckBox* scaleByRootK_ = nullptr;
    QCheckBox* masked_ = nullptr;
    QComboBox* normalization_ = nullptr; // none, post (the unit sphere: the scene's "sphere"), pre, peri
    QDoubleSpinBox* positionalDecay_ = nullptr;
    QComboBox* interpolation_ = nullptr;
    QWidget* linearEpsRow_ = nullptr;
    QCheckBox* linearEpsOn_ = nullptr;
    QDoubleSpinBox* linearEps_ = nullptr;
    QDoubleSpinBox* sinkhornEps_ = nullptr;
    QSpinBox* sinkhornIterations_ = nullptr;
    QDoubleSpinBox* rwpoLambda_ = nullptr;
    QDoubleSpinBox* rwpoH_ = nullptr;
    QComboBox* rwpoKernel_ = nullptr;
    // Integrator (live)
    QComboBox* method_ = nullptr;
    QDoubleSpinBox* T_ = nullptr;
    QSpinBox* steps_ = nullptr;
    // Scene (staged)
    QFormLayout* sceneForm_ = nullptr;
    QSpinBox* d_ = nullptr;
    QSpinBox* n_ = nullptr;
    QComboBox* precision_ = nullptr;
    QComboBox* kind_ = nullptr;
    QLineEdit* seed_ = nullptr;
    MatrixGrid* mean_ = nullptr;
    MatrixGrid* cov_ = nullptr;
    MatrixGrid* low_ = nullptr;
    MatrixGrid* high_ = nullptr;
    QLabel* gridNote_ = nullptr; // d > kMaxGridDimension
    QLineEdit* radii_ = nullptr;
    QDoubleSpinBox* noise_ = nullptr;
    QWidget* pathRow_ = nullptr;
    QLineEdit* path_ = nullptr;
    QToolButton* browse_ = nullptr;
    QWidget* pointsRow_ = nullptr;
    QLabel* pointsCount_ = nullptr;
    QPushButton* draw_ = nullptr;
    QPushButton* clearPoints_ = nullptr;
    QLabel* errorLabel_ = nullptr;
    QWidget* applyBar_ = nullptr; // errorLabel_, revert_ and apply_, under the scroll area
    QPushButton* apply_ = nullptr;
    QPushButton* revert_ = nullptr;
};

} // namespace flowscope
