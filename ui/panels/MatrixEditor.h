// Flowscope UI: the matrix editor, a dock panel that edits Q, K and V of one attention head entry by entry
// and shows what the theory predicts for them.
//
// The head (and, for time-dependent parameters, the keyframe) is chosen in combo boxes; Q and K (k x d) and
// V (d x d) are grids of spin boxes (d <= 8; larger matrices are left to the scene file). Each matrix has
// buttons Identity, Random (N(0, 1)/√d entries from the editor's own seeded generator), Symmetrize
// ((M + Mᵀ)/2, square matrices), Negate and Scale (by the factor next to it). It shows the attention of a
// ParticleDocument (the one owner of the running scene) and keeps none of its own: every change is sent to
// the document at once as the edited attention (a refusal shows why, and the matrices in force), and the
// analysis follows the document: the eigenvalues of A + Aᵀ and of
// B = Σ_h V_h A_h + A_hᵀ V_hᵀ and the regime predicted by predictRegime() (engine/gaussian/Regime.h) for the
// scene's initial covariance (the identity when the initial tokens are not Gaussian).
//
// Child object names (for tests and style sheets): "head", "layer"; per matrix X in {Q, K, V}: "grid_X",
// "identity_X", "random_X", "symmetrize_X", "negate_X", "scale_X", "factor_X"; "eigenvaluesSymA",
// "eigenvaluesB", "regime".
#pragma once

#include "engine/scene/Scene.h"
#include "ui/document/ParticleDocument.h"

#include <QRandomGenerator>
#include <QString>
#include <QWidget>

#include <optional>
#include <utility>
#include <vector>

class QComboBox;
class QDoubleSpinBox;
class QGridLayout;
class QLabel;
class QScrollArea;
class QToolButton;

namespace flowscope {

// A grid of spin boxes that edits one matrix. The matrix is kept at full precision: the boxes show it
// rounded to three decimals, and an edit changes only the entry that was edited. A grid wider than the room
// it is given scrolls sideways inside itself (its height grows by the scroll bar), so a large d never
// widens the dock that holds it.
class MatrixGrid : public QWidget {
    Q_OBJECT
  public:
    explicit MatrixGrid(QWidget* parent = nullptr);

    QSize sizeHint() const override;
    // At most three columns wide: the rest scrolls.
    QSize minimumSizeHint() const override;

    // Shows `m` (any shape, 0 x 0 included) without emitting edited().
    void setMatrix(const Mat& m);
    const Mat& matrix() const { return matrix_; }
    // When on, editing entry (i, j) also sets entry (j, i) (for covariance matrices).
    void setSymmetricEditing(bool on) { symmetric_ = on; }
    // The matrix's name in the entries' tooltips ("Q[0][1] = 0.7071067811865476").
    void setName(const QString& name) { name_ = name; }
    QDoubleSpinBox* entry(int row, int col) const;

  signals:
    // The user changed an entry; matrix() holds the new matrix.
    void edited();

  protected:
    void resizeEvent(QResizeEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override; // the cells' resizes

  private:
    void onEntryChanged(int row, int col, double value);
    // The cells' height, and the scroll bar's under them when they are wider than the grid.
    void fitHeight();

    void showEntry(int row, int col);

    Mat matrix_;
    QString name_;
    bool symmetric_ = false;
    QScrollArea* scroll_ = nullptr;
    QWidget* cells_ = nullptr;
    QGridLayout* layout_ = nullptr;
    std::vector<QDoubleSpinBox*> boxes_; // row-major, matrix_.rows() x matrix_.cols()
};

class MatrixEditor : public QWidget {
    Q_OBJECT
  public:
    static constexpr int kMaxGridDimension = 8;       // larger d: no grids
    static constexpr int kMaxAnalysisDimension = 128; // larger d: no eigenvalues (they would stall the UI)
    static constexpr quint32 kRandomSeed = 20250118;

    // Shows `document`'s attention and analysis (keeping the selected head and keyframe when they still
    // exist), follows its changes and sends it the edits. The document outlives the editor.
    explicit MatrixEditor(ParticleDocument& document, QWidget* parent = nullptr);

    // After a live edit at time t the analysis speaks of the tokens as they are then (their covariance as
    // Σ0, blow-up times counted from t) and says so; a new scene returns it to the scene's initial Σ0.
    void setAnalysisStart(double t, const Mat& cov);

    AttentionSpec attention() const { return document_.editableAttention(); }
    QString regimeText() const;
    int currentHead() const;
    int currentKeyframe() const; // 0 when the parameters are constant
    // The spin box of entry (row, col) of matrix 'Q', 'K' or 'V' of the selected head; nullptr when there is
    // no such entry (or no grid).
    QDoubleSpinBox* entry(char matrix, int row, int col) const;

  private:
    enum class Op { Identity, Random, Symmetrize, Negate, Scale };
    struct MatrixSection {
        char name = 'Q';
        QWidget* box = nullptr; // title, buttons and grid
        MatrixGrid* grid = nullptr;
        QDoubleSpinBox* factor = nullptr;
        QToolButton* symmetrize = nullptr;
    };

    MatrixSection makeSection(char name, QWidget* parent);
    // The selected head of `a` and its matrix Q, K or V; nullptr when there is none.
    const HeadParams* selectedHead(const AttentionSpec& a) const;
    Mat* selectedMatrix(AttentionSpec& a, char name) const;
    void apply(char name, Op op);
    // Sends the edited attention to the document; a refusal is shown above the grids.
    void commit(const AttentionSpec& a);
    void rebuildSelectors();
    void showMatrices();
    void show(); // the document's attention and its analysis
    void updateAnalysis();

    ParticleDocument& document_;
    std::optional<std::pair<double, Mat>> analysisStart_; // (t, the tokens' covariance) after a live edit
    QRandomGenerator random_{kRandomSeed};
    QComboBox* head_ = nullptr;
    QComboBox* layer_ = nullptr;
    QWidget* layerRow_ = nullptr;
    QLabel* message_ = nullptr; // why there are no grids
    std::vector<MatrixSection> sections_;
    QLabel* eigenvaluesSymA_ = nullptr;
    QLabel* eigenvaluesB_ = nullptr;
    QLabel* regime_ = nullptr;
};

} // namespace flowscope
