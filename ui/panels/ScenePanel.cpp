#include "ui/panels/ScenePanel.h"

#include "ui/panels/MatrixEditor.h"
#include "ui/widgets/FormWidgets.h"
#include "ui/widgets/ParamRows.h"
#include "ui/widgets/Tooltips.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPushButton>
#include <QRegularExpressionValidator>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <climits>
#include <cmath>

namespace flowscope {

namespace {

constexpr int kMaxHeads = 1024;

bool supportsMasking(AttentionType t) {
    return t == AttentionType::Softmax || t == AttentionType::L2 || t == AttentionType::Exp ||
           t == AttentionType::Relu || t == AttentionType::Sigmoid;
}

// `m` resized to rows x cols: the leading block is kept, new entries are 0 except new diagonal ones.
Mat resized(const Mat& m, int rows, int cols, double diagonal) {
    Mat r = Mat::Zero(rows, cols);
    const Eigen::Index keepRows = std::min<Eigen::Index>(rows, m.rows());
    const Eigen::Index keepCols = std::min<Eigen::Index>(cols, m.cols());
    r.topLeftCorner(keepRows, keepCols) = m.topLeftCorner(keepRows, keepCols);
    for (int i = 0; i < std::min(rows, cols); ++i)
        if (i >= m.rows() || i >= m.cols()) r(i, i) = diagonal;
    return r;
}

Vec resized(const Vec& v, int n, double fill) {
    Vec r = Vec::Constant(n, fill);
    const Eigen::Index keep = std::min<Eigen::Index>(n, v.size());
    r.head(keep) = v.head(keep);
    return r;
}

// The attention for a new dimension d: Q, K become I_d, V keeps its leading block, the drifting target its
// leading entries.
void resizeAttention(AttentionSpec& a, int d) {
    auto resizeHeads = [d](std::vector<HeadParams>& heads) {
        for (HeadParams& h : heads) {
            if (h.Q.cols() != d || h.K.cols() != d) h.Q = h.K = Mat::Identity(d, d);
            if (h.V.rows() != d || h.V.cols() != d) h.V = resized(h.V, d, d, 0.0);
        }
    };
    resizeHeads(a.heads);
    for (Keyframe& k : a.keyframes) resizeHeads(k.heads);
    if (a.targetMean.size() != 0) a.targetMean = resized(a.targetMean, d, 0.0);
    if (a.targetCov.size() != 0) a.targetCov = resized(a.targetCov, d, d, 1.0);
    if (d < 2) a.sphere = false;
}

// Heads beyond the current count start with Q = K = I, V = 0 (no contribution to the velocity).
void setHeadCount(std::vector<HeadParams>& heads, int count, int d) {
    heads.resize(std::size_t(std::max(count, 0)),
                 HeadParams{Mat::Identity(d, d), Mat::Identity(d, d), Mat::Zero(d, d)});
}

// The defaults that empty initial fields of a C++-built Scene stand for (docs/scene.md), made explicit.
InitialSpec withDefaults(InitialSpec in, int d) {
    if (in.mean.size() != d) in.mean = resized(in.mean, d, 0.0);
    if (in.cov.rows() != d || in.cov.cols() != d) in.cov = resized(in.cov, d, d, 1.0);
    if (in.low.size() != d) in.low = resized(in.low, d, -1.0);
    if (in.high.size() != d) in.high = resized(in.high, d, 1.0);
    if (in.radii.empty()) in.radii = {1.0};
    return in;
}

// An error red that reads on the current window colour (light or dark theme).
QString errorColor(const QPalette& palette) {
    return palette.color(QPalette::Window).lightness() < 128 ? QStringLiteral("#ff6b6b")
                                                             : QStringLiteral("#c62828");
}

QString formatNumber(double v) {
    return QString::number(v, 'g', 10);
}

QString radiiText(const std::vector<double>& radii) {
    QStringList parts;
    for (double r : radii) parts << formatNumber(r);
    return parts.join(QStringLiteral(", "));
}

// ---- widget helpers (ui/widgets/FormWidgets.h): every control is named after its parameter key and carries
// its tooltip ----------------

using form::addRow;
using form::doubleBox;
using form::intBox;
using form::named;

QCheckBox* checkBox(QWidget* parent, const char* key, const QString& text) {
    return named(new QCheckBox(text, parent), key);
}

// Shows a value in a control without emitting its edited signal (the panel showing a scene, not an edit): a
// spin box's value, a check box's state, a combo box's index or a line edit's text.
template <class W, class V> void setQuietly(W* w, const V& v) {
    const QSignalBlocker blocker(w);
    if constexpr (std::is_base_of_v<QCheckBox, W>)
        w->setChecked(v);
    else if constexpr (std::is_base_of_v<QComboBox, W>)
        w->setCurrentIndex(v);
    else if constexpr (std::is_base_of_v<QLineEdit, W>)
        w->setText(v);
    else
        w->setValue(v);
}

} // namespace

ScenePanel::ScenePanel(ParticleDocument& document, QWidget* parent) : QWidget(parent), document_(document) {
    auto* content = new QWidget;
    auto* layout = form::panelColumn(this, "scenePanel", content);
    layout->addWidget(buildAttentionGroup());
    layout->addWidget(buildIntegratorGroup());
    layout->addWidget(buildSceneGroup());
    layout->addStretch();
    // One label column width for the three forms, so that their fields line up.
    int labelWidth = 0;
    const QList<QLabel*> labels = content->findChildren<QLabel*>();
    for (QLabel* l : labels)
        if (l->buddy()) labelWidth = std::max(labelWidth, l->sizeHint().width());
    for (QLabel* l : labels)
        if (l->buddy()) l->setMinimumWidth(labelWidth);

    form::scrollInto(this, content, form::Sideways::Never)->addWidget(applyBar_);

    connect(&document_, &ParticleDocument::opened, this, &ScenePanel::showDocument);
    connect(&document_, &ParticleDocument::edited, this, [this](ParticleDocument::Part part) {
        refusal_.clear();
        if (part == ParticleDocument::Part::Attention)
            showAttention();
        else
            showIntegrator();
        updateMessage(); // the edited scene's cost follows
    });
    showDocument();
}

const Scene& ScenePanel::shown() const {
    return document_.shown();
}

QWidget* ScenePanel::buildAttentionGroup() {
    auto [group, form] = form::group(tr("Attention — live"), nullptr);
    attentionForm_ = form;
    // The type's last name, "masked", is a spelling of softmax with the Masked box: not a type of its own.
    type_ = form::paramRow<QComboBox>(form, group, "/attention/type");
    type_->removeItem(type_->count() - 1);
    heads_ = addRow(form, tr("Heads"), intBox(group, "attention.heads", 1, kMaxHeads));
    beta_ = form::paramRow<QDoubleSpinBox>(form, group, "/attention/beta");
    scaleByRootK_ = form::paramRow<QCheckBox>(form, group, "/attention/scale_by_sqrt_k");
    masked_ = form::paramRow<QCheckBox>(form, group, "/attention/masked");
    // The layer normalisation, "post" being the unit sphere (a scene's `sphere`, the older name).
    normalization_ = form::paramRow<QComboBox>(form, group, "/attention/normalization");
    positionalDecay_ = form::paramRow<QDoubleSpinBox>(form, group, "/attention/positional_decay");
    // The panel's longest label, on two lines: the dock keeps the width it had (the Matrices dock beside it
    // fits a 1024 px window only so).
    if (auto* label = qobject_cast<QLabel*>(form->labelForField(positionalDecay_)))
        label->setText(label->text().replace(QLatin1String("Positional "), QLatin1String("Positional\n")));
    interpolation_ = form::paramRow<QComboBox>(form, group, "/attention/interpolation");

    const form::Row linearEps = form::row(group);
    linearEpsRow_ = linearEps.widget;
    linearEpsOn_ = checkBox(linearEpsRow_, "attention.linear_eps", tr("ε ="));
    linearEpsOn_->setObjectName(QStringLiteral("attention.linear_eps.enabled"));
    linearEps_ = form::paramControl<QDoubleSpinBox>(linearEpsRow_, "/attention/linear_eps");
    linearEps.layout->addWidget(linearEpsOn_);
    linearEps.layout->addWidget(linearEps_, 1);
    addRow(form, form::paramLabel("/attention/linear_eps"), linearEpsRow_, "attention.linear_eps");

    sinkhornEps_ = form::paramRow<QDoubleSpinBox>(form, group, "/attention/sinkhorn/eps");
    sinkhornIterations_ = form::paramRow<QSpinBox>(form, group, "/attention/sinkhorn/iterations");
    rwpoLambda_ = form::paramRow<QDoubleSpinBox>(form, group, "/attention/rwpo/lambda");
    rwpoH_ = form::paramRow<QDoubleSpinBox>(form, group, "/attention/rwpo/h");
    rwpoKernel_ = form::paramRow<QComboBox>(form, group, "/attention/rwpo/kernel");

    connect(type_, &QComboBox::currentIndexChanged, this, [this](int index) {
        AttentionSpec a = attention();
        a.type = AttentionType(index);
        if (!supportsMasking(a.type)) a.masked = false;
        // What the new type cannot take is dropped, as the mask is: a decay outside softmax, l2 and exp, pre
        // and peri normalisation for RWPO and drifting (the reader would refuse the switch).
        if (!supportsPositionalDecay(a.type)) a.positionalDecay = 0.0;
        if (!supportsPreNormalization(a.type)) a.normalization = Normalization::None; // post is `sphere`
        // Switching from RWPO/drifting: one head Q = K = V = I, the default of a scene file.
        const int d = shown().d;
        if (ParticleDocument::hasMatrices(a.type) && a.headCount() == 0)
            a.heads.push_back({Mat::Identity(d, d), Mat::Identity(d, d), Mat::Identity(d, d)});
        editAttention(a);
    });
    connect(heads_, &QSpinBox::valueChanged, this, [this](int count) {
        AttentionSpec a = attention();
        if (a.headCount() == count) return; // Enter re-emits the value shown
        const int d = shown().d;
        if (a.keyframes.empty()) setHeadCount(a.heads, count, d);
        for (Keyframe& k : a.keyframes) setHeadCount(k.heads, count, d);
        editAttention(a);
    });
    const auto setting = [this](const SceneSetting& s) { editSetting(s); };
    for (QWidget* w : std::initializer_list<QWidget*>{beta_, scaleByRootK_, masked_, normalization_,
                                                      positionalDecay_, interpolation_, sinkhornEps_,
                                                      sinkhornIterations_, rwpoLambda_, rwpoH_, rwpoKernel_})
        form::bindParam(this, w, setting);
    connect(linearEpsOn_, &QCheckBox::toggled, this, [this](bool on) {
        AttentionSpec a = attention();
        a.linearEps = on ? std::optional<double>(linearEps_->value()) : std::nullopt;
        editAttention(a);
    });
    connect(linearEps_, &QDoubleSpinBox::valueChanged, this, [this](double v) {
        AttentionSpec a = attention();
        if (!a.linearEps || *a.linearEps == v) return;
        a.linearEps = v;
        editAttention(a);
    });
    return group;
}

QWidget* ScenePanel::buildIntegratorGroup() {
    auto [group, form] = form::group(tr("Integrator — live"), nullptr);
    method_ = form::paramRow<QComboBox>(form, group, "/integrator/method");
    T_ = form::paramRow<QDoubleSpinBox>(form, group, "/integrator/T");
    steps_ = form::paramRow<QSpinBox>(form, group, "/integrator/steps");
    for (QWidget* w : std::initializer_list<QWidget*>{method_, T_, steps_})
        form::bindParam(this, w, [this](const SceneSetting& s) { editSetting(s); });
    return group;
}

QWidget* ScenePanel::buildSceneGroup() {
    auto* group = new QGroupBox(tr("Scene — Apply restarts"));
    auto* box = new QVBoxLayout(group);
    box->setContentsMargins(0, 0, 0, 6);
    auto* formWidget = new QWidget(group);
    sceneForm_ = form::panelForm(formWidget);
    box->addWidget(formWidget);
    QFormLayout* form = sceneForm_;

    d_ = form::paramRow<QSpinBox>(form, formWidget, "/d");
    // The staged fields mark the panel edited at every keystroke (Apply is enabled as one types), and Enter
    // in any of them applies (eventFilter). d commits on Enter only: a new d rebuilds the matrices.
    n_ = form::paramRow<QSpinBox>(form, formWidget, "/n", form::Tracking::Keystrokes);
    precision_ = form::paramRow<QComboBox>(form, formWidget, "/precision");
    kind_ = form::paramRow<QComboBox>(form, formWidget, "/initial/kind");
    kind_->setItemText(int(InitKind::File), tr("file (.npy, .csv)"));
    kind_->setItemText(int(InitKind::Points), tr("points (draw)"));
    // Any 64-bit seed (a sweep's runs have seeds beyond a spin box's 2^31 - 1).
    seed_ = addRow(form, tr("Seed"), named(new QLineEdit(formWidget), "initial.seed"));
    seed_->setValidator(
        new QRegularExpressionValidator(QRegularExpression(QStringLiteral("[0-9]{1,20}")), seed_));
    auto grid = [&](const QString& label, const char* key, const QString& name) {
        auto* g = addRow(form, label, named(new MatrixGrid(formWidget), key));
        g->setName(name);
        return g;
    };
    mean_ = grid(tr("Mean α"), "initial.mean", QStringLiteral("mean"));
    cov_ = grid(tr("Cov Σ₀"), "initial.cov", QStringLiteral("cov"));
    cov_->setSymmetricEditing(true);
    low_ = grid(tr("Low"), "initial.low", QStringLiteral("low"));
    high_ = grid(tr("High"), "initial.high", QStringLiteral("high"));
    gridNote_ = new QLabel(formWidget);
    gridNote_->setWordWrap(true);
    form->addRow(gridNote_);
    radii_ = addRow(form, tr("Radii"), named(new QLineEdit(formWidget), "initial.radii"));
    radii_->setPlaceholderText(tr("e.g. 0.5, 1"));
    noise_ = form::paramRow<QDoubleSpinBox>(form, formWidget, "/initial/noise", form::Tracking::Keystrokes);
    const form::Row path = form::row(formWidget);
    pathRow_ = path.widget;
    path_ = named(new QLineEdit(pathRow_), "initial.path");
    path_->setPlaceholderText(tr("tokens.npy"));
    browse_ = named(new QToolButton(pathRow_), "initial.path");
    browse_->setObjectName(QStringLiteral("initial.path.browse"));
    browse_->setText(tr("…"));
    path.layout->addWidget(path_, 1);
    path.layout->addWidget(browse_);
    addRow(form, tr("File"), pathRow_, "initial.path");
    const form::Row points = form::row(formWidget);
    pointsRow_ = points.widget;
    pointsCount_ = named(new QLabel(pointsRow_), "initial.points");
    draw_ = named(new QPushButton(tr("Draw"), pointsRow_), "initial.points");
    draw_->setObjectName(QStringLiteral("initial.points.draw"));
    draw_->setCheckable(true);
    clearPoints_ = named(new QPushButton(tr("Clear"), pointsRow_), "initial.points");
    clearPoints_->setObjectName(QStringLiteral("initial.points.clear"));
    points.layout->addWidget(pointsCount_, 1);
    points.layout->addWidget(draw_);
    points.layout->addWidget(clearPoints_);
    addRow(form, tr("Points"), pointsRow_, "initial.points");

    // The group's error line and its Revert / Apply buttons: a bar the constructor pins under the scrolled
    // forms, so that a short window (1024 x 640) still shows them while the fields scroll.
    applyBar_ = new QWidget;
    auto* bar = new QVBoxLayout(applyBar_);
    bar->setContentsMargins(4, 2, 4, 4);
    errorLabel_ = new QLabel(applyBar_);
    errorLabel_->setObjectName(QStringLiteral("error"));
    errorLabel_->setWordWrap(true);
    errorLabel_->setContentsMargins(6, 0, 6, 0);
    bar->addWidget(errorLabel_);
    auto* buttons = new QHBoxLayout;
    buttons->setContentsMargins(6, 0, 6, 0);
    revert_ = new QPushButton(tr("Revert"), applyBar_);
    revert_->setObjectName(QStringLiteral("revert"));
    revert_->setToolTip(tr("Drop the staged edits of the Scene group"));
    apply_ = new QPushButton(tr("Apply (restarts)"), applyBar_);
    apply_->setObjectName(QStringLiteral("apply"));
    apply_->setToolTip(tr("Restart the run with the edited scene"));
    buttons->addStretch();
    buttons->addWidget(revert_);
    buttons->addWidget(apply_);
    bar->addLayout(buttons);

    InitialSpec& in = staged_.initial;
    const auto stagedEdit = [this] { stagedChanged(); };
    connect(d_, &QSpinBox::valueChanged, this, [this](int d) {
        if (staged_.d == d) return; // Enter re-emits the value shown
        setStagedDimension(d);
        showStaged();
        stagedChanged();
    });
    connect(n_, &QSpinBox::valueChanged, this, [this](int n) {
        if (staged_.n == n) return; // Enter re-emits the value shown
        staged_.n = n;
        stagedChanged();
    });
    form::bind(this, precision_, staged_.precision, stagedEdit);
    connect(kind_, &QComboBox::currentIndexChanged, this, [this, &in](int index) {
        in.kind = InitKind(index);
        updateRows();
        stagedChanged();
    });
    connect(seed_, &QLineEdit::textEdited, this, [this, &in](const QString& text) {
        bool ok = false;
        const qulonglong seed = text.toULongLong(&ok);
        const bool wasValid = seedError_.isEmpty();
        seedError_ = ok ? QString()
                        : tr("initial.seed: expected a whole number from 0 to 18446744073709551615, got “%1”")
                              .arg(text);
        if (ok && seed == in.seed && wasValid) return; // nothing changed
        if (ok) in.seed = seed;
        stagedChanged();
    });
    connect(mean_, &MatrixGrid::edited, this, [this, &in] {
        in.mean = mean_->matrix().row(0).transpose();
        stagedChanged();
    });
    connect(cov_, &MatrixGrid::edited, this, [this, &in] {
        in.cov = cov_->matrix();
        stagedChanged();
    });
    connect(low_, &MatrixGrid::edited, this, [this, &in] {
        in.low = low_->matrix().row(0).transpose();
        stagedChanged();
    });
    connect(high_, &MatrixGrid::edited, this, [this, &in] {
        in.high = high_->matrix().row(0).transpose();
        stagedChanged();
    });
    connect(radii_, &QLineEdit::textEdited, this, [this, &in](const QString& text) {
        std::vector<double> radii;
        radiiError_.clear();
        for (const QString& untrimmed : text.split(QLatin1Char(','))) {
            const QString part = untrimmed.trimmed();
            if (part.isEmpty()) continue;
            bool ok = false;
            const double r = part.toDouble(&ok);
            if (!ok || !std::isfinite(r) || r < 0.0) {
                radiiError_ =
                    tr("initial.radii: expected numbers ≥ 0 separated by commas, got “%1”").arg(part);
                break;
            }
            radii.push_back(r);
        }
        if (radiiError_.isEmpty() && radii.empty())
            radiiError_ = tr("initial.radii: expected at least one radius");
        if (radiiError_.isEmpty()) in.radii = radii;
        stagedChanged();
    });
    form::bind(this, noise_, in.noise, stagedEdit);
    connect(path_, &QLineEdit::editingFinished, this, [this, &in] {
        if (QString::fromStdString(in.path) == path_->text()) return;
        in.path = path_->text().toStdString();
        stagedChanged();
    });
    connect(browse_, &QToolButton::clicked, this, &ScenePanel::browseTokenFile);
    connect(draw_, &QPushButton::toggled, this, &ScenePanel::drawRequested);
    connect(clearPoints_, &QPushButton::clicked, this, [this, &in] {
        in.points.resize(0, staged_.d);
        showStaged();
        stagedChanged();
        emit drawClearRequested();
    });
    connect(apply_, &QPushButton::clicked, this, &ScenePanel::apply);
    for (QWidget* w : std::initializer_list<QWidget*>{d_, n_, seed_, noise_, radii_, path_})
        w->installEventFilter(this);
    connect(revert_, &QPushButton::clicked, this, &ScenePanel::revert);
    return group;
}

// ---- display
// ------------------------------------------------------------------------------------------------

void ScenePanel::showDocument() {
    refusal_.clear();
    showAttention();
    showIntegrator();
    revert();
}

void ScenePanel::showAttention() {
    const Scene& scene = shown();
    const AttentionSpec& a = scene.attention;
    setQuietly(type_, int(a.type));
    setQuietly(heads_, std::max(1, a.headCount()));
    for (QWidget* w : std::initializer_list<QWidget*>{beta_, scaleByRootK_, masked_, normalization_,
                                                      positionalDecay_, interpolation_, sinkhornEps_,
                                                      sinkhornIterations_, rwpoLambda_, rwpoH_, rwpoKernel_})
        form::showParam(w, scene);
    setQuietly(linearEpsOn_, a.linearEps.has_value());
    if (a.linearEps) setQuietly(linearEps_, *a.linearEps);
    linearEps_->setEnabled(a.linearEps.has_value());
    updateRows();
}

void ScenePanel::showIntegrator() {
    for (QWidget* w : std::initializer_list<QWidget*>{method_, T_, steps_}) form::showParam(w, shown());
}

void ScenePanel::showStaged() {
    const InitialSpec& in = staged_.initial;
    setQuietly(d_, staged_.d);
    setQuietly(n_, staged_.n);
    setQuietly(precision_, int(staged_.precision));
    setQuietly(kind_, int(in.kind));
    seed_->setText(QString::number(qulonglong(in.seed)));
    seedError_.clear();
    if (staged_.d <= kMaxGridDimension) {
        mean_->setMatrix(in.mean.transpose());
        cov_->setMatrix(in.cov);
        low_->setMatrix(in.low.transpose());
        high_->setMatrix(in.high.transpose());
    }
    gridNote_->setText(tr("d = %1: the mean, covariance and box are edited in the scene file (a new d keeps "
                          "their leading entries).")
                           .arg(staged_.d));
    if (radiiError_.isEmpty()) setQuietly(radii_, radiiText(in.radii));
    setQuietly(noise_, in.noise);
    setQuietly(path_, QString::fromStdString(in.path));
    pointsCount_->setText(QString::number(in.points.rows()));
    updateRows();
}

void ScenePanel::setDrawnPoints(const Tokens& points) {
    if (points.cols() != staged_.d) return; // drawn for another dimension: ignore
    InitialSpec& in = staged_.initial;
    in.kind = InitKind::Points;
    in.points = points;
    if (points.rows() > 0) staged_.n = int(points.rows());
    showStaged();
    stagedChanged();
}

void ScenePanel::setDrawing(bool on) {
    const QSignalBlocker quiet(draw_);
    draw_->setChecked(on);
}

// Shows the rows that apply to the attention type and to the kind of initial tokens.
void ScenePanel::updateRows() {
    const AttentionType t = shown().attention.type;
    QFormLayout* a = attentionForm_;
    a->setRowVisible(heads_, ParticleDocument::hasMatrices(t));
    a->setRowVisible(beta_, t != AttentionType::Drifting);
    a->setRowVisible(scaleByRootK_, ParticleDocument::hasMatrices(t));
    a->setRowVisible(masked_, supportsMasking(t));
    a->setRowVisible(positionalDecay_, supportsPositionalDecay(t));
    a->setRowVisible(interpolation_, !shown().attention.keyframes.empty());
    a->setRowVisible(linearEpsRow_, t == AttentionType::Linear);
    a->setRowVisible(sinkhornEps_, t == AttentionType::Sinkhorn);
    a->setRowVisible(sinkhornIterations_, t == AttentionType::Sinkhorn);
    a->setRowVisible(rwpoLambda_, t == AttentionType::Rwpo);
    a->setRowVisible(rwpoH_, t == AttentionType::Rwpo);
    a->setRowVisible(rwpoKernel_, t == AttentionType::Rwpo);

    const InitKind kind = staged_.initial.kind;
    const bool grids = staged_.d <= kMaxGridDimension;
    QFormLayout* s = sceneForm_;
    s->setRowVisible(seed_, kind != InitKind::File);
    s->setRowVisible(mean_, grids && kind == InitKind::Gaussian);
    s->setRowVisible(cov_, grids && kind == InitKind::Gaussian);
    s->setRowVisible(low_, grids && kind == InitKind::Uniform);
    s->setRowVisible(high_, grids && kind == InitKind::Uniform);
    s->setRowVisible(gridNote_, !grids && (kind == InitKind::Gaussian || kind == InitKind::Uniform));
    s->setRowVisible(radii_, kind == InitKind::Rings);
    s->setRowVisible(noise_, kind == InitKind::Rings || kind == InitKind::Points);
    s->setRowVisible(pathRow_, kind == InitKind::File);
    s->setRowVisible(pointsRow_, kind == InitKind::Points);
}

// ---- edits
// --------------------------------------------------------------------------------------------------

AttentionSpec ScenePanel::attention() const {
    return document_.editableAttention();
}

void ScenePanel::editAttention(const AttentionSpec& attention) {
    QString why;
    if (!document_.setAttention(attention, this, &why)) showRefusal(why);
}

void ScenePanel::editSetting(const SceneSetting& setting) {
    QString why;
    if (!document_.set(setting, this, &why)) showRefusal(why);
}

void ScenePanel::showRefusal(const QString& why) {
    refusal_ = why;
    showAttention(); // the values in force again
    showIntegrator();
    updateMessage();
}

void ScenePanel::setStagedDimension(int d) {
    InitialSpec& in = staged_.initial;
    staged_.d = d;
    in.mean = resized(in.mean, d, 0.0);
    in.cov = resized(in.cov, d, d, 1.0);
    in.low = resized(in.low, d, -1.0);
    in.high = resized(in.high, d, 1.0);
    if (in.points.cols() != d) { // drawn points keep their leading coordinates, 0 beyond
        const Tokens old = in.points;
        in.points = Tokens::Zero(old.rows(), d);
        const int keep = int(std::min<Eigen::Index>(old.cols(), d));
        in.points.leftCols(keep) = old.leftCols(keep);
    }
}

void ScenePanel::stagedChanged() {
    dirty_ = true;
    error_ = validate();
    updateMessage();
    apply_->setEnabled(error_.isEmpty());
    revert_->setEnabled(true);
}

// The line under the forms: a refused live edit, else why the staged scene cannot be applied, else what it
// would cost.
void ScenePanel::updateMessage() {
    const QString problem = !refusal_.isEmpty() ? refusal_ : error_;
    const QString cost = problem.isEmpty() ? costWarning(editedScene()) : QString();
    errorLabel_->setStyleSheet(
        QStringLiteral("color: %1;")
            .arg(problem.isEmpty() ? QStringLiteral("#e0a040") : errorColor(palette())));
    errorLabel_->setText(problem.isEmpty() ? cost : problem);
    errorLabel_->setVisible(!problem.isEmpty() || !cost.isEmpty());
}

Scene ScenePanel::editedScene() const {
    const Scene& live = shown();
    Scene edited = live;
    edited.attention = attention();
    edited.d = staged_.d;
    edited.n = staged_.n;
    edited.precision = staged_.precision;
    edited.initial = staged_.initial;
    if (staged_.d != live.d) {
        resizeAttention(edited.attention, staged_.d);
        if (staged_.d != 2) edited.moments.grid = ConeGridSpec{}; // the cone grid is 2-D only
    }
    return edited;
}

// The first reason the staged scene cannot run, naming the field; empty when it can.
QString ScenePanel::validate() const {
    const InitialSpec& in = staged_.initial;
    const int d = staged_.d;
    if (!seedError_.isEmpty() && in.kind != InitKind::File) return seedError_;
    switch (in.kind) {
    case InitKind::Gaussian: {
        const double scale = std::max(1.0, in.cov.cwiseAbs().maxCoeff());
        for (int r = 0; r < d; ++r)
            for (int c = r + 1; c < d; ++c)
                if (std::fabs(in.cov(r, c) - in.cov(c, r)) > 1e-12 * scale)
                    return tr("initial.cov: Σ₀ must be symmetric, but cov[%1][%2] = %3 ≠ cov[%2][%1] = %4")
                        .arg(r)
                        .arg(c)
                        .arg(formatNumber(in.cov(r, c)), formatNumber(in.cov(c, r)));
        // Beyond the grids the covariance is not edited here: it is the loaded one, or a principal block of
        // it padded with I, both PSD; skip the O(d^3) check that large d would make slow.
        if (d > kMaxGridDimension) break;
        const double smallest =
            Eigen::SelfAdjointEigenSolver<Mat>(in.cov, Eigen::EigenvaluesOnly).eigenvalues().minCoeff();
        if (smallest < -1e-10 * scale)
            return tr("initial.cov: Σ₀ must be positive semi-definite, but its smallest eigenvalue is %1")
                .arg(QString::number(smallest, 'g', 6));
        break;
    }
    case InitKind::Uniform:
        for (int c = 0; c < d; ++c)
            if (!(in.low(c) < in.high(c)))
                return tr("initial.low, initial.high: expected low < high in every coordinate, but "
                          "coordinate "
                          "%1 has low = %2, high = %3")
                    .arg(c)
                    .arg(formatNumber(in.low(c)), formatNumber(in.high(c)));
        break;
    case InitKind::Rings:
        if (d < 2) return tr("initial.kind: rings need d ≥ 2 (the circles lie in the first two coordinates)");
        if (!radiiError_.isEmpty()) return radiiError_;
        break;
    case InitKind::File: {
        const QString path = QString::fromStdString(in.path);
        if (path.isEmpty()) return tr("initial.path: choose a .npy or .csv token file");
        const QString suffix = QFileInfo(path).suffix().toLower();
        if (suffix != QLatin1String("npy") && suffix != QLatin1String("csv"))
            return tr("initial.path: expected a .npy or .csv file, got “%1”").arg(QFileInfo(path).fileName());
        if (!QFileInfo(path).isFile()) return tr("initial.path: no such file: %1").arg(path);
        break;
    }
    case InitKind::Points:
        if (in.points.rows() == 0)
            return tr("initial.points: no points yet — press Draw and drag in the particle view");
        break;
    }
    return {};
}

QString ScenePanel::costWarning(const Scene& scene) {
    const double n = scene.n;
    const int evaluations = scene.integrator.method == Method::Euler  ? 1
                            : scene.integrator.method == Method::Heun ? 2
                            : scene.integrator.method == Method::Rk4  ? 4
                                                                      : 6; // Dormand-Prince, per sub-step
    const double pairs = evaluations * n * n * double(std::max<std::size_t>(1, scene.attention.heads.size()));
    if (pairs < kCostlyPairsPerStep) return {};
    constexpr double kCpuPairsPerSecond = 3e9; // bench particles, float32 softmax, this project's 2-core CPU
    return tr("N = %1: each step is %2 pair interactions (%3 evaluation%4 of N²). A CPU does about 10⁹ to "
              "10¹⁰ a second, a GPU backend about 10¹²: expect %5 a step on the CPU. Apply anyway, or lower "
              "N.")
        .arg(QLocale().toString(qlonglong(scene.n)))
        .arg(QString::number(pairs, 'g', 2))
        .arg(evaluations)
        .arg(evaluations == 1 ? QString() : QStringLiteral("s"))
        .arg(tr("about %1").arg(form::duration(pairs / kCpuPairsPerSecond)));
}

bool ScenePanel::eventFilter(QObject* watched, QEvent* event) {
    if (event->type() == QEvent::KeyPress) {
        const int key = static_cast<QKeyEvent*>(event)->key();
        if (key == Qt::Key_Return || key == Qt::Key_Enter)
            // After the field has taken the key (d and a path commit their value on it).
            QTimer::singleShot(0, this, [this] {
                if (dirty_ && apply_->isEnabled()) apply();
            });
    }
    return QWidget::eventFilter(watched, event);
}

void ScenePanel::apply() {
    if (!validate().isEmpty()) return;
    emit sceneEdited(editedScene()); // the document's opened() shows it, and drops the staged edits
}

void ScenePanel::revert() {
    const Scene& live = shown();
    staged_ = {live.d, live.n, live.precision, withDefaults(live.initial, live.d)};
    radiiError_.clear();
    seedError_.clear();
    showStaged();
    stagedChanged();
    dirty_ = false;
    apply_->setEnabled(false);
    revert_->setEnabled(false);
}

void ScenePanel::browseTokenFile() {
    const QString current = QString::fromStdString(staged_.initial.path);
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Token file"), QFileInfo(current).absolutePath(), tr("Tokens (*.npy *.csv);;All files (*)"));
    if (path.isEmpty()) return;
    staged_.initial.path = path.toStdString();
    setQuietly(path_, path);
    stagedChanged();
}

} // namespace flowscope
