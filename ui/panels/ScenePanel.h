// Flowscope UI: the scene panel, a dock panel that edits the running scene's parameters.
//
// Three groups, by what an edit costs:
//  * Attention (live): type, heads, β, scale by √k, masked, sphere, keyframe interpolation, lin,ε, Sinkhorn ε
//    and iterations, RWPO λ, h and kernel. Each committed edit emits attentionEdited() with the whole
//    AttentionSpec; rows that do not apply to the chosen type are hidden. A new head gets Q = K = I, V = 0
//    (it adds nothing to the velocity, so the dynamics do not jump); fewer heads drop the last ones.
//  * Integrator (live): method, T, steps; emits integratorEdited().
//  * Scene (restart): d, N, precision and the initial tokens (Gaussian mean and covariance, uniform box,
//    rings, points drawn with the mouse in the particle view, or a .npy/.csv file) with their seed. These
//    edits are staged: "Apply (restarts)" emits sceneEdited() with the full edited scene, "Revert" drops
//    them. A changed d resizes every head (Q, K become I_d, V keeps its leading block) and the
//    mean/covariance/box (leading entries kept, identity and the default box beyond). An invalid staged scene
//    (e.g. a covariance that is not symmetric positive semi-definite) shows a red message naming the field
//    and disables Apply.
// Number ranges are enforced by the spin boxes; numbers are committed on Enter or focus loss, not on every
// keystroke. setScene()/setAttention() only display: they emit nothing.
//
// Every control's objectName is its parameter key (Tooltips.h), e.g. "attention.beta", "integrator.T", "d",
// "initial.cov"; the buttons are "apply" and "revert", the message label "error".
#pragma once

#include "engine/scene/Scene.h"

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

    explicit ScenePanel(QWidget* parent = nullptr);

    // Shows `scene` (the one running) and drops staged edits; emits nothing.
    void setScene(const Scene& scene);
    // Replaces the attention only (e.g. after a matrix edit elsewhere), keeping staged edits; emits nothing.
    void setAttention(const AttentionSpec& attention);

    // The running scene with the live edits and the staged edits applied: what Apply would emit.
    const Scene& editedScene() const { return edited_; }
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
    void attentionEdited(const AttentionSpec& attention);
    void integratorEdited(const IntegratorSpec& integrator);
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

    void showAttention();
    void showIntegrator();
    void showStaged();
    void updateRows();

    void attentionChanged();  // live_.attention changed: emit it
    void integratorChanged(); // live_.integrator changed: emit it
    void stagedChanged();     // staged_ changed: validate, enable Apply
    void setStagedDimension(int d);
    void rebuildEdited();
    QString validate() const;
    void apply();
    void revert();
    void browseTokenFile();

    Scene live_;   // the running scene plus live edits
    Scene staged_; // holds the staged d, n, precision and initial
    Scene edited_; // live_ with the staged edits: editedScene()
    bool dirty_ = false;
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
    QCheckBox* sphere_ = nullptr;
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
