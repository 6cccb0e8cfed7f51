#include "ui/panels/MatrixEditor.h"

#include "engine/gaussian/Regime.h"
#include "ui/widgets/FormWidgets.h"
#include "ui/widgets/Tooltips.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QEvent>
#include <QFontMetrics>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <exception>
#include <numbers>
#include <utility>

namespace flowscope {

namespace {

constexpr double kEntryLimit = 1e4; // spin box range; larger entries are kept but shown clamped

// "-0.8, 1.2" (entries within 1e-12 of the largest magnitude print as 0).
QString formatEigenvalues(const Vec& values) {
    if (values.size() == 0) return QStringLiteral("—");
    const double zero = 1e-12 * std::max(1.0, values.cwiseAbs().maxCoeff());
    QStringList parts;
    for (double v : values) parts << QString::number(std::fabs(v) <= zero ? 0.0 : v, 'g', 4);
    return parts.join(QStringLiteral(", "));
}

} // namespace

// ---- MatrixGrid
// ---------------------------------------------------------------------------------------------

MatrixGrid::MatrixGrid(QWidget* parent) : QWidget(parent) {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    scroll_ = new QScrollArea(this);
    scroll_->setFrameShape(QFrame::NoFrame);
    scroll_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    cells_ = new QWidget;
    layout_ = new QGridLayout(cells_);
    layout_->setContentsMargins(0, 0, 0, 0);
    layout_->setSpacing(2);
    layout_->setSizeConstraint(QLayout::SetFixedSize); // the cells keep their size: the area scrolls
    scroll_->setWidget(cells_);
    cells_->installEventFilter(this); // its size follows the cells: so does the grid's height
    outer->addWidget(scroll_);
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
    fitHeight();
}

QSize MatrixGrid::sizeHint() const {
    return cells_->sizeHint();
}

QSize MatrixGrid::minimumSizeHint() const {
    const QSize cells = cells_->sizeHint();
    const int columns = int(std::max<Eigen::Index>(matrix_.cols(), 1));
    return {std::min(cells.width(), 3 * cells.width() / columns), height()};
}

bool MatrixGrid::eventFilter(QObject* watched, QEvent* event) {
    if (watched == cells_ && event->type() == QEvent::Resize) {
        updateGeometry();
        fitHeight();
    }
    return QWidget::eventFilter(watched, event);
}

void MatrixGrid::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    fitHeight();
}

void MatrixGrid::fitHeight() {
    const QSize cells = cells_->sizeHint();
    const bool scrolls = cells.width() > width();
    const int h = cells.height() + (scrolls ? scroll_->horizontalScrollBar()->sizeHint().height() : 0);
    if (h != height() || minimumHeight() != h) setFixedHeight(h);
}

QDoubleSpinBox* MatrixGrid::entry(int row, int col) const {
    if (row < 0 || col < 0 || row >= matrix_.rows() || col >= matrix_.cols()) return nullptr;
    return boxes_[std::size_t(row * matrix_.cols() + col)];
}

void MatrixGrid::setMatrix(const Mat& m) {
    if (m.rows() != matrix_.rows() || m.cols() != matrix_.cols()) {
        for (QDoubleSpinBox* box : boxes_) delete box;
        boxes_.clear();
        for (int r = 0; r < m.rows(); ++r) {
            for (int c = 0; c < m.cols(); ++c) {
                auto* box = new QDoubleSpinBox(cells_);
                box->setObjectName(QStringLiteral("entry_%1_%2").arg(r).arg(c));
                box->setRange(-kEntryLimit, kEntryLimit);
                box->setDecimals(3);
                box->setSingleStep(0.1);
                box->setButtonSymbols(QAbstractSpinBox::NoButtons);
                box->setKeyboardTracking(false); // a half-typed number is not an edit
                box->setAlignment(Qt::AlignRight);
                // Compact: room for "-0.000" and the frame (larger entries scroll inside the box, the tooltip
                // has them whole), so that a 2 x 2 or 3 x 3 grid fits a narrow dock.
                box->setFixedWidth(QFontMetrics(box->font()).horizontalAdvance(QStringLiteral("-0.000")) +
                                   10);
                connect(box, &QDoubleSpinBox::valueChanged, this,
                        [this, r, c](double value) { onEntryChanged(r, c, value); });
                layout_->addWidget(box, r, c);
                box->show(); // now, not when the layout's queued show comes: fitHeight measures it
                boxes_.push_back(box);
            }
        }
        cells_->adjustSize();
        updateGeometry();
        fitHeight();
    }
    matrix_ = m;
    for (int r = 0; r < m.rows(); ++r)
        for (int c = 0; c < m.cols(); ++c) showEntry(r, c);
}

void MatrixGrid::showEntry(int row, int col) {
    QDoubleSpinBox* box = entry(row, col);
    const QSignalBlocker blocker(box);
    box->setValue(matrix_(row, col));
    box->setToolTip(QStringLiteral("%1[%2][%3] = %4")
                        .arg(name_.isEmpty() ? QStringLiteral("M") : name_)
                        .arg(row)
                        .arg(col)
                        .arg(QString::number(matrix_(row, col), 'g', 17)));
}

void MatrixGrid::onEntryChanged(int row, int col, double value) {
    matrix_(row, col) = value;
    showEntry(row, col);
    if (symmetric_ && row != col && matrix_.rows() == matrix_.cols()) {
        matrix_(col, row) = value;
        showEntry(col, row);
    }
    emit edited();
}

// ---- MatrixEditor
// -------------------------------------------------------------------------------------------

MatrixEditor::MatrixEditor(ParticleDocument& document, QWidget* parent)
    : QWidget(parent), document_(document) {
    setObjectName(QStringLiteral("matrixEditor"));
    auto* content = new QWidget;
    auto* layout = new QVBoxLayout(content);

    // The head, and below it the keyframe (one row each: side by side they set the dock's minimum width):
    // a labelled combo box on a row of its own.
    auto selector = [](QWidget* row, const QString& label, const char* name, const char* key) {
        auto* line = new QHBoxLayout(row);
        line->setContentsMargins(0, 0, 0, 0);
        auto* box = new QComboBox(row);
        box->setObjectName(QString::fromLatin1(name));
        box->setToolTip(parameterTooltip(key));
        auto* l = new QLabel(label, row);
        l->setBuddy(box);
        line->addWidget(l);
        line->addWidget(box);
        line->addStretch();
        return box;
    };
    auto* headRow = new QWidget(content);
    head_ = selector(headRow, tr("Head"), "head", "attention.heads");
    layout->addWidget(headRow);
    layerRow_ = new QWidget(content);
    layer_ = selector(layerRow_, tr("Keyframe"), "layer", "attention.keyframes");
    layout->addWidget(layerRow_);
    connect(head_, &QComboBox::currentIndexChanged, this, [this] {
        showMatrices();
        updateAnalysis();
    });
    connect(layer_, &QComboBox::currentIndexChanged, this, [this] {
        showMatrices();
        updateAnalysis();
    });

    message_ = new QLabel(content);
    message_->setWordWrap(true);
    message_->setVisible(false);
    layout->addWidget(message_);

    for (char name : {'Q', 'K', 'V'}) {
        sections_.push_back(makeSection(name, content));
        layout->addWidget(sections_.back().box);
    }

    auto* analysis = new QGroupBox(tr("Analysis"), content);
    auto* form = new QFormLayout(analysis);
    eigenvaluesSymA_ = new QLabel(analysis);
    eigenvaluesSymA_->setObjectName(QStringLiteral("eigenvaluesSymA"));
    eigenvaluesB_ = new QLabel(analysis);
    eigenvaluesB_->setObjectName(QStringLiteral("eigenvaluesB"));
    for (QLabel* l : {eigenvaluesSymA_, eigenvaluesB_}) {
        l->setWordWrap(true);
        l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    }
    auto* symALabel = new QLabel(tr("eig(A + Aᵀ)"), analysis);
    auto* bLabel = new QLabel(tr("eig(B)"), analysis);
    symALabel->setToolTip(parameterTooltip("analysis.sym_a"));
    eigenvaluesSymA_->setToolTip(parameterTooltip("analysis.sym_a"));
    bLabel->setToolTip(parameterTooltip("analysis.B"));
    eigenvaluesB_->setToolTip(parameterTooltip("analysis.B"));
    form->addRow(symALabel, eigenvaluesSymA_);
    form->addRow(bLabel, eigenvaluesB_);
    regime_ = new QLabel(analysis);
    regime_->setObjectName(QStringLiteral("regime"));
    regime_->setWordWrap(true);
    regime_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    regime_->setToolTip(parameterTooltip("analysis.regime"));
    form->addRow(regime_);
    layout->addWidget(analysis);
    layout->addStretch();

    form::scrollInto(this, content);

    connect(&document_, &ParticleDocument::opened, this, [this] {
        analysisStart_.reset();
        show();
    });
    connect(&document_, &ParticleDocument::edited, this, [this](ParticleDocument::Part part) {
        if (part == ParticleDocument::Part::Attention) show();
    });
    show();
}

MatrixEditor::MatrixSection MatrixEditor::makeSection(char name, QWidget* parent) {
    const QString n(QChar::fromLatin1(name));
    const std::string key = std::string("attention.") + name;
    MatrixSection s;
    s.name = name;
    s.box = new QWidget(parent);
    auto* v = new QVBoxLayout(s.box);
    v->setContentsMargins(0, 4, 0, 0);
    v->setSpacing(2);

    // Two rows of buttons at the right, the title beside the first: in one row they would make the dock
    // scroll sideways at 1024 px.
    auto* top = new QHBoxLayout;
    top->setSpacing(2);
    auto* second = new QHBoxLayout;
    second->setSpacing(2);
    second->addStretch();
    const QString role = name == 'Q' ? tr("query") : name == 'K' ? tr("key") : tr("value");
    auto* title = new QLabel(QStringLiteral("<b>%1</b> %2").arg(n, role), s.box);
    title->setToolTip(parameterTooltip(key));
    top->addWidget(title);
    top->addStretch();
    QHBoxLayout* row = top;
    auto button = [&](const QString& text, const QString& object, const QString& tip, Op op) {
        auto* b = new QToolButton(s.box);
        b->setText(text);
        b->setObjectName(QStringLiteral("%1_%2").arg(object, n));
        b->setToolTip(tip);
        connect(b, &QToolButton::clicked, this, [this, name, op] { apply(name, op); });
        row->addWidget(b);
        return b;
    };
    button(tr("I"), QStringLiteral("identity"), tr("Identity: %1 = I (ones on the diagonal)").arg(n),
           Op::Identity);
    button(tr("Rand"), QStringLiteral("random"),
           tr("Random: entries of %1 drawn from N(0, 1)/√d (seeded: the same sequence every session)").arg(n),
           Op::Random);
    row = second;
    s.symmetrize = button(tr("Sym"), QStringLiteral("symmetrize"),
                          tr("Symmetrize: %1 ← (%1 + %1ᵀ)/2 (square matrices)").arg(n), Op::Symmetrize);
    button(tr("Neg"), QStringLiteral("negate"), tr("Negate: %1 ← −%1").arg(n), Op::Negate);
    button(tr("×"), QStringLiteral("scale"), tr("Scale: %1 ← factor · %1 (factor on the right)").arg(n),
           Op::Scale);
    s.factor = new QDoubleSpinBox(s.box);
    s.factor->setObjectName(QStringLiteral("factor_%1").arg(n));
    s.factor->setRange(-100.0, 100.0);
    s.factor->setDecimals(2);
    s.factor->setSingleStep(0.1);
    s.factor->setValue(0.5);
    s.factor->setButtonSymbols(QAbstractSpinBox::NoButtons);
    s.factor->setToolTip(tr("The factor of the × button: %1 ← factor · %1").arg(n));
    second->addWidget(s.factor);
    v->addLayout(top);
    v->addLayout(second);

    s.grid = new MatrixGrid(s.box);
    s.grid->setObjectName(QStringLiteral("grid_%1").arg(n));
    s.grid->setName(n);
    s.grid->setToolTip(parameterTooltip(key));
    connect(s.grid, &MatrixGrid::edited, this, [this, name, grid = s.grid] {
        AttentionSpec a = attention();
        Mat* m = selectedMatrix(a, name);
        if (!m) return;
        *m = grid->matrix();
        commit(a);
    });
    v->addWidget(s.grid, 0, Qt::AlignLeft);
    return s;
}

void MatrixEditor::setAnalysisStart(double t, const Mat& cov) {
    const int d = document_.shown().d;
    if (cov.rows() != d || cov.cols() != d) return;
    analysisStart_.emplace(t, cov);
    updateAnalysis();
}

void MatrixEditor::show() {
    rebuildSelectors();
    showMatrices();
    updateAnalysis();
}

int MatrixEditor::currentHead() const {
    return std::max(0, head_->currentIndex());
}

int MatrixEditor::currentKeyframe() const {
    return document_.shown().attention.keyframes.empty() ? 0 : std::max(0, layer_->currentIndex());
}

void MatrixEditor::rebuildSelectors() {
    const AttentionSpec a = attention();
    {
        const QSignalBlocker blocker(head_);
        const int keep = head_->currentIndex();
        head_->clear();
        for (int h = 0; h < a.headCount(); ++h) head_->addItem(tr("%1").arg(h + 1));
        head_->setCurrentIndex(std::clamp(keep, 0, a.headCount() - 1));
        head_->setEnabled(a.headCount() > 1);
    }
    {
        const QSignalBlocker blocker(layer_);
        const int keep = layer_->currentIndex();
        layer_->clear();
        for (std::size_t k = 0; k < a.keyframes.size(); ++k)
            layer_->addItem(tr("%1: t = %2").arg(k + 1).arg(a.keyframes[k].t, 0, 'g', 6));
        layer_->setCurrentIndex(std::clamp(keep, 0, int(a.keyframes.size()) - 1));
        layerRow_->setVisible(!a.keyframes.empty());
    }
}

const HeadParams* MatrixEditor::selectedHead(const AttentionSpec& a) const {
    const int h = currentHead();
    if (!ParticleDocument::hasMatrices(a.type) || h >= a.headCount()) return nullptr;
    return a.keyframes.empty() ? &a.heads[std::size_t(h)]
                               : &a.keyframes[std::size_t(currentKeyframe())].heads[std::size_t(h)];
}

Mat* MatrixEditor::selectedMatrix(AttentionSpec& a, char name) const {
    auto* head = const_cast<HeadParams*>(selectedHead(a));
    if (!head) return nullptr;
    return name == 'Q' ? &head->Q : name == 'K' ? &head->K : &head->V;
}

QDoubleSpinBox* MatrixEditor::entry(char matrix, int row, int col) const {
    for (const MatrixSection& s : sections_)
        if (s.name == matrix && s.box->isVisibleTo(this)) return s.grid->entry(row, col);
    return nullptr;
}

void MatrixEditor::showMatrices() {
    AttentionSpec a = attention();
    const int d = document_.shown().d;
    QString why;
    if (!ParticleDocument::hasMatrices(a.type))
        why = tr("%1 attention has no Q, K, V: its parameters are in the scene panel.")
                  .arg(QString::fromUtf8(toString(a.type)));
    else if (a.headCount() == 0)
        why = tr("No heads.");
    else if (d > kMaxGridDimension)
        why = tr("d = %1: matrices larger than %2 × %2 are edited in the scene file.")
                  .arg(d)
                  .arg(kMaxGridDimension);
    message_->setText(why);
    message_->setVisible(!why.isEmpty());
    for (MatrixSection& s : sections_) {
        const Mat* m = why.isEmpty() ? selectedMatrix(a, s.name) : nullptr;
        s.box->setVisible(m != nullptr);
        if (!m) continue;
        s.grid->setMatrix(*m);
        s.symmetrize->setEnabled(m->rows() == m->cols());
    }
}

void MatrixEditor::apply(char name, Op op) {
    AttentionSpec a = attention();
    Mat* m = selectedMatrix(a, name);
    if (!m) return;
    const Eigen::Index rows = m->rows(), cols = m->cols();
    switch (op) {
    case Op::Identity:
        *m = Mat::Identity(rows, cols);
        break;
    case Op::Random: {
        // Box-Muller on the editor's own generator: N(0, 1) entries, scaled by 1/sqrt(d).
        const double scale = 1.0 / std::sqrt(double(std::max(1, document_.shown().d)));
        for (Eigen::Index r = 0; r < rows; ++r)
            for (Eigen::Index c = 0; c < cols; ++c) {
                const double u1 = 1.0 - random_.generateDouble(), u2 = random_.generateDouble();
                (*m)(r, c) = scale * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
            }
        break;
    }
    case Op::Symmetrize:
        if (rows != cols) return;
        *m = (0.5 * (*m + m->transpose())).eval();
        break;
    case Op::Negate:
        *m = -*m;
        break;
    case Op::Scale:
        for (const MatrixSection& s : sections_)
            if (s.name == name) *m *= s.factor->value();
        break;
    }
    commit(a);
}

void MatrixEditor::commit(const AttentionSpec& a) {
    QString why;
    if (document_.setAttention(a, this, &why)) return; // edited() shows it
    show();                                            // the matrices in force
    message_->setText(why);
    message_->setVisible(true);
}

void MatrixEditor::updateAnalysis() {
    Scene scene = document_.shown(); // with the heads an empty list stands for
    scene.attention = attention();
    const int d = scene.d;
    const InitialSpec& init = scene.initial;
    const bool fromTokens = analysisStart_.has_value();
    const bool gaussian =
        fromTokens || (init.kind == InitKind::Gaussian && init.cov.rows() == d && init.cov.cols() == d);
    const Mat sigma0 = fromTokens ? analysisStart_->second : gaussian ? init.cov : Mat::Identity(d, d);
    const AttentionSpec& a = scene.attention;
    const double t = fromTokens            ? analysisStart_->first
                     : a.keyframes.empty() ? 0.0
                                           : a.keyframes[std::size_t(currentKeyframe())].t;
    if (d > kMaxAnalysisDimension) {
        eigenvaluesSymA_->setText(QStringLiteral("—"));
        eigenvaluesB_->setText(QStringLiteral("—"));
        regime_->setText(tr("d = %1: no analysis beyond d = %2.").arg(d).arg(kMaxAnalysisDimension));
        return;
    }
    try {
        const RegimePrediction p = predictRegime(scene, sigma0, t, fromTokens ? t : 0.0);
        const bool matrices = ParticleDocument::hasMatrices(a.type) && a.headCount() > 0;
        eigenvaluesSymA_->setText(matrices ? formatEigenvalues(p.eigenvaluesSymA) : QStringLiteral("—"));
        eigenvaluesB_->setText(matrices ? formatEigenvalues(p.eigenvaluesB) : QStringLiteral("—"));
        QString text = QString::fromStdString(p.summary);
        if (!gaussian && matrices) text += tr(" (Σ0 = I: the initial tokens are not Gaussian.)");
        if (fromTokens)
            text = tr("From the tokens at t = %1 (their covariance as Σ0): %2").arg(t, 0, 'g', 4).arg(text);
        regime_->setText(text);
    } catch (const std::exception& e) {
        eigenvaluesSymA_->setText(QStringLiteral("—"));
        eigenvaluesB_->setText(QStringLiteral("—"));
        regime_->setText(tr("No prediction: %1").arg(QString::fromStdString(e.what())));
    }
}

QString MatrixEditor::regimeText() const {
    return regime_->text();
}

} // namespace flowscope
