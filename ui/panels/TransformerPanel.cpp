#include "ui/panels/TransformerPanel.h"

#include "ui/widgets/FormWidgets.h"
#include "ui/widgets/Tooltips.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

#include <cmath>
#include <limits>

namespace flowscope {

// --- Helpers ---

namespace {

using form::addRow;
using form::named;
using form::number;

// A combo box whose items carry an enum value.
template <class E>
QComboBox* enumBox(QWidget* parent, const char* key, std::initializer_list<std::pair<QString, E>> items) {
    auto* box = named(new QComboBox(parent), key);
    for (const auto& [text, value] : items) box->addItem(text, int(value));
    return box;
}

template <class E> E valueOf(const QComboBox* box) {
    return E(box->currentData().toInt());
}

template <class E> void select(QComboBox* box, E value) {
    box->setCurrentIndex(std::max(0, box->findData(int(value))));
}

} // namespace

// --- Defaults and the form ---

ot::OtTrainerConfig TransformerPanel::defaults(ot::Task task) {
    ot::OtTrainerConfig c = ot::defaultTrainerConfig(task);
    if (task == ot::Task::A) {
        // The setting that reaches the closed form (README, train-transformer): [x; x; 0] in R⁶ routed to
        // the MLP, the increment velocity, the learning rate decaying to 1e-3 over 4000 iterations.
        c.model.convention = ot::KineticConvention::Paper;
        c.model.lambdaOt = 1.0;
        c.model.incrementVelocity = true;
        c.model.width = c.model.headDim = 6;
        c.model.padEmbed = c.model.padCopy = c.model.routingInit = true;
        c.adam.lrFinal = 1e-3;
        c.adam.decaySteps = 4000;
    } else {
        c.model.lambdaOt = 0.01;
    }
    c.dataSeed = c.model.seed + 1; // as flowscope-cli train-transformer --seed
    c.evalSets = 200;
    return c;
}

TransformerPanel::TransformerPanel(QWidget* parent) : TrainingPanelBase(parent) {
    // In a scrolling area: a dock shorter than the panel scrolls instead of cutting off the read-outs.
    auto* content = new QWidget(this);
    auto* layout = form::panelColumn(this, "transformerPanel", content);

    auto [group, form] = form::group(tr("Transformer (applies on Start)"), content);
    addLoadedNote(group, form,
                  tr("Start and Reset use the parameters of the opened model (File ▸ Open trained "
                     "model); editing the task or the architecture starts from a fresh initialization"));
    task_ = addRow(
        form, tr("Task"),
        enumBox<ot::Task>(group, "transformer.task",
                          {{tr("A: straight-line toy"), ot::Task::A}, {tr("B: point clouds"), ot::Task::B}}));
    architecture_ = addRow(
        form, tr("Architecture"),
        enumBox<ot::Architecture>(group, "transformer.architecture",
                                  {{tr("OT-Transformer"), ot::Architecture::OtTransformer},
                                   {tr("N-ODE (one ODE per block)"), ot::Architecture::NodeTransformer},
                                   {tr("Discrete (baseline)"), ot::Architecture::Discrete}}));
    lambda_ =
        addRow(form, tr("λ_OT"), form::startDoubleBox(group, "transformer.lambda_ot", 0.0, 1000.0, 4, 0.05));
    compare_ = named(new QCheckBox(tr("Compare with λ_OT = 0"), group), "transformer.compare");
    form->addRow(compare_);
    steps_ = addRow(form, tr("Steps M"), form::startIntBox(group, "transformer.steps", 1, 200));
    horizon_ = addRow(form, tr("Horizon T"),
                      form::startDoubleBox(group, "transformer.horizon", 0.05, 20.0, 2, 0.25));
    width_ = addRow(form, tr("Width d"), form::startIntBox(group, "transformer.width", 2, 128));
    // The rest of the settings under a fold, closed at first: the task's defaults are the ones to start with.
    more_ = new QToolButton(group);
    more_->setObjectName(QStringLiteral("transformer.more"));
    more_->setCheckable(true);
    more_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    more_->setAutoRaise(true);
    more_->setToolTip(tr("Convention, MLP, blocks, integrator, velocity, batch, learning rate and seed"));
    form->addRow(more_);
    const int firstMore = form->rowCount();
    convention_ = addRow(
        form, tr("Convention"),
        enumBox<ot::KineticConvention>(group, "transformer.convention",
                                       {{tr("element mean (code)"), ot::KineticConvention::ElementMean},
                                        {tr("paper"), ot::KineticConvention::Paper}}));
    mlp_ = addRow(form, tr("MLP hidden"), form::startIntBox(group, "transformer.mlp", 0, 512));
    blocks_ = addRow(form, tr("Blocks D"), form::startIntBox(group, "transformer.blocks", 1, 8));
    integrator_ = addRow(
        form, tr("Integrator"),
        enumBox<ot::Integrator>(group, "transformer.integrator",
                                {{tr("Euler"), ot::Integrator::Euler}, {tr("RK4"), ot::Integrator::Rk4}}));
    increment_ =
        named(new QCheckBox(tr("Increment velocity f = stack(X) − X"), group), "transformer.increment");
    form->addRow(increment_);
    batch_ = addRow(form, tr("Batch"), form::startIntBox(group, "transformer.batch", 1, 4096));
    lr_ =
        addRow(form, tr("Learning rate"), form::startDoubleBox(group, "transformer.lr", 1e-5, 1.0, 5, 1e-3));
    seed_ = addRow(form, tr("Seed"),
                   form::startIntBox(group, "transformer.seed", 0, std::numeric_limits<int>::max()));
    const int lastMore = form->rowCount();
    const auto fold = [this, rows = form, firstMore, lastMore](bool open) {
        more_->setArrowType(open ? Qt::DownArrow : Qt::RightArrow);
        more_->setText(open ? tr("Fewer settings") : tr("More settings"));
        for (int row = firstMore; row < lastMore; ++row) rows->setRowVisible(row, open);
    };
    connect(more_, &QToolButton::toggled, this, fold);
    fold(false);
    layout->addWidget(group);

    addRunControls(layout,
                   {tr("One iteration: objective (8) on a fresh batch, its gradient, one Adam step"),
                    tr("Back to iteration 0 of this run: the initial parameters, the same batches"),
                    parameterTooltip("transformer.evaluate"), parameterTooltip("transformer.status")});
    buildReadouts(layout);
    form::scrollInto(this, content, form::Sideways::Never);

    setConfig(defaults(ot::Task::A), true);

    // A task brings its own model and settings; the comparison choice stays.
    connect(task_, &QComboBox::currentIndexChanged, this, [this] {
        setConfig(defaults(valueOf<ot::Task>(task_)), compare_->isChecked());
        onEdited();
    });
    connect(architecture_, &QComboBox::currentIndexChanged, this, [this] {
        // Task B's discrete baseline has two blocks (docs/math/transformers.md#task-b).
        if (valueOf<ot::Architecture>(architecture_) == ot::Architecture::Discrete &&
            valueOf<ot::Task>(task_) == ot::Task::B && blocks_->value() == 1)
            blocks_->setValue(ot::taskBBaseline().blocks);
        onEdited();
    });
    for (QComboBox* box : {convention_, integrator_})
        connect(box, &QComboBox::currentIndexChanged, this, &TransformerPanel::onEdited);
    for (QCheckBox* box : {compare_, increment_})
        connect(box, &QCheckBox::toggled, this, &TransformerPanel::onEdited);
    for (QSpinBox* box : {steps_, width_, mlp_, blocks_, batch_, seed_})
        connect(box, &QSpinBox::valueChanged, this, &TransformerPanel::onEdited);
    for (QDoubleSpinBox* box : {lambda_, horizon_, lr_})
        connect(box, &QDoubleSpinBox::valueChanged, this, &TransformerPanel::onEdited);
    for (QComboBox* box : {task_, architecture_, convention_, integrator_})
        connect(box, &QComboBox::currentIndexChanged, this, &TransformerPanel::forgetLoadedModel);
    connect(increment_, &QCheckBox::toggled, this, &TransformerPanel::forgetLoadedModel);
    for (QSpinBox* box : {steps_, width_, mlp_, blocks_})
        connect(box, &QSpinBox::valueChanged, this, &TransformerPanel::forgetLoadedModel);
    for (QDoubleSpinBox* box : {lambda_, horizon_})
        connect(box, &QDoubleSpinBox::valueChanged, this, &TransformerPanel::forgetLoadedModel);
    setSnapshot(nullptr, false);
}

// --- Configuration to and from the form ---

ot::OtTrainerConfig TransformerPanel::config() const {
    const ot::Task task = valueOf<ot::Task>(task_);
    ot::OtTrainerConfig c = defaults(task);
    c.model.architecture = valueOf<ot::Architecture>(architecture_);
    c.model.lambdaOt = c.model.continuous() ? lambda_->value() : 0.0; // no ODE, no transport
    c.model.convention = valueOf<ot::KineticConvention>(convention_);
    c.model.steps = steps_->value();
    c.model.horizon = horizon_->value();
    c.model.width = c.model.headDim = width_->value();
    if (task == ot::Task::A) {
        // The tokens live in R² (the closed form is there); a wider state pads them: [x; 0], [x; x; 0] from
        // d = 4 (a copy of the initial set), routed to the MLP from d = 6.
        const int in = c.model.inputDim;
        c.model.padEmbed = c.model.width > in;
        c.model.padCopy = c.model.width >= 2 * in;
        c.model.routingInit = c.model.width >= 3 * in && mlp_->value() > 0 &&
                              c.model.architecture == ot::Architecture::OtTransformer;
    }
    c.model.incrementVelocity = increment_->isChecked();
    c.model.mlpHidden = mlp_->value();
    c.model.blocks = blocks_->value();
    c.model.integrator = valueOf<ot::Integrator>(integrator_);
    c.batch = batch_->value();
    c.adam.lr = lr_->value();
    c.model.seed = std::uint64_t(seed_->value());
    c.dataSeed = c.model.seed + 1;
    if (loadedParams_) {
        c.model = loadedModel_;
        c.initialParams = loadedParams_;
    }
    return c;
}

void TransformerPanel::forgetLoadedModel() {
    loadedParams_.reset();
    loaded_->hide();
}

bool TransformerPanel::comparison() const {
    return compare_->isChecked() && architecture_->currentData().toInt() != int(ot::Architecture::Discrete);
}

void TransformerPanel::setConfig(const ot::OtTrainerConfig& c, bool comparison) {
    const QSignalBlocker blocks[] = {
        QSignalBlocker(task_),       QSignalBlocker(architecture_), QSignalBlocker(lambda_),
        QSignalBlocker(convention_), QSignalBlocker(steps_),        QSignalBlocker(horizon_),
        QSignalBlocker(width_),      QSignalBlocker(mlp_),          QSignalBlocker(blocks_),
        QSignalBlocker(integrator_), QSignalBlocker(compare_),      QSignalBlocker(increment_),
        QSignalBlocker(batch_),      QSignalBlocker(lr_),           QSignalBlocker(seed_)};
    select(task_, c.task);
    select(architecture_, c.model.architecture);
    lambda_->setValue(c.model.lambdaOt);
    select(convention_, c.model.convention);
    steps_->setValue(c.model.steps);
    horizon_->setValue(c.model.horizon);
    width_->setValue(c.model.width);
    mlp_->setValue(c.model.mlpHidden);
    blocks_->setValue(c.model.blocks);
    select(integrator_, c.model.integrator);
    compare_->setChecked(comparison);
    increment_->setChecked(c.model.incrementVelocity);
    batch_->setValue(c.batch);
    lr_->setValue(c.adam.lr);
    seed_->setValue(
        int(std::min<std::uint64_t>(c.model.seed, std::uint64_t(std::numeric_limits<int>::max()))));
    updateEnabled();
    loadedModel_ = c.model;
    loadedParams_ = c.initialParams;
    showLoaded(tr("<b>Loaded model</b>: task %1, d = %2, %3 blocks, M = %4, λ_OT = %5. Start trains these "
                  "parameters on.")
                   .arg(QString::fromUtf8(ot::toString(c.task)))
                   .arg(c.model.width)
                   .arg(c.model.blocks)
                   .arg(c.model.steps)
                   .arg(c.model.lambdaOt),
               bool(loadedParams_));
}

// The discrete baseline has no ODE, so no transport, steps or horizon.
void TransformerPanel::updateEnabled() {
    const bool continuous = valueOf<ot::Architecture>(architecture_) != ot::Architecture::Discrete;
    for (QWidget* w : std::initializer_list<QWidget*>{lambda_, convention_, steps_, horizon_, integrator_,
                                                      compare_, increment_})
        w->setEnabled(continuous);
}

void TransformerPanel::onEdited() {
    updateEnabled();
    controls_->markEdited();
}

// --- Read-outs ---

// A grid of short rows under the run controls: a name on the left (its meaning in its tooltip), one
// right-aligned column of values per model.
void TransformerPanel::buildReadouts(QVBoxLayout* layout) {
    readouts_ = new QWidget(this);
    readouts_->setObjectName(QStringLiteral("readouts"));
    auto* grid = new QGridLayout(readouts_);
    grid->setContentsMargins(2, 0, 2, 0);
    grid->setHorizontalSpacing(10);
    grid->setVerticalSpacing(2);
    grid->setColumnStretch(0, 1);
    const QString names[Rows] = {QString(),           tr("objective"),       tr("transport"),
                                 tr("learning rate"), tr("Held-out"),        tr("straightness"),
                                 QString(),           tr("Lipschitz ratio"), tr("Theorem 2 bound")};
    const QString tips[Rows] = {
        QString(),
        tr("Objective (8) on the last batch: the loss plus λ_OT times the transport cost"),
        tr("Transport cost of the last batch: the kinetic energy of the tokens' paths"),
        tr("Adam's learning rate at this iteration"),
        tr("The last held-out evaluation (Evaluate, and every 250 iterations) on 200 fresh sets"),
        tr("‖X_M − X_0‖ / Σ‖ΔX‖ over the held-out paths: 1 for straight lines"),
        QString(),
        tr("Empirical Lipschitz ratio of the trained map on the held-out sets"),
        tr("Theorem 2's bound on the Lipschitz ratio: finite when λ_OT exceeds the threshold T·L²")};
    for (int r = 0; r < Rows; ++r) {
        readoutName_[r] = new QLabel(names[r], readouts_);
        readoutName_[r]->setToolTip(tips[r]);
        if (r == HeldOut) {
            QFont bold = readoutName_[r]->font();
            bold.setBold(true);
            readoutName_[r]->setFont(bold);
            grid->addWidget(readoutName_[r], r, 0, 1, 3);
            continue;
        }
        grid->addWidget(readoutName_[r], r, 0);
        for (int c = 0; c < 2; ++c) {
            readoutValue_[r][c] = new QLabel(readouts_);
            readoutValue_[r][c]->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
            readoutValue_[r][c]->setToolTip(tips[r]);
            readoutValue_[r][c]->setTextInteractionFlags(Qt::TextSelectableByMouse);
            grid->addWidget(readoutValue_[r][c], r, 1 + c);
        }
    }
    // Under the run controls (before the stretch addRunControls put last).
    layout->insertWidget(layout->count() - 1, readouts_);
}

QString TransformerPanel::readoutText() const {
    QStringList lines;
    for (int r = 0; r < Rows; ++r) {
        if (readoutName_[r]->isHidden()) continue;
        QString line = readoutName_[r]->text();
        if (r != HeldOut)
            for (int c = 0; c < 2; ++c)
                if (!readoutValue_[r][c]->isHidden())
                    line += QStringLiteral(" | ") + readoutValue_[r][c]->text();
        lines << line;
    }
    return lines.join(QLatin1Char('\n'));
}

void TransformerPanel::showReadouts(const TransformerSnapshot* snapshot) {
    const std::size_t models = snapshot ? std::min<std::size_t>(snapshot->trainers.size(), 2) : 0;
    bool shown[Rows] = {};
    const auto set = [&](int row, std::size_t c, const QString& text, const QString& tip = {}) {
        readoutValue_[row][c]->setText(text);
        if (!tip.isEmpty()) readoutValue_[row][c]->setToolTip(tip);
        shown[row] = true;
    };
    for (std::size_t c = 0; c < models; ++c) {
        const TransformerTrainerState& t = snapshot->trainers[c];
        set(Header, c, QString::fromStdString(t.label));
        if (!t.history.empty()) {
            const ot::LossTerms& terms = t.history.back().terms;
            set(Objective, c, number(terms.loss));
            set(Transport, c, number(terms.transport));
            set(Rate, c, number(t.learningRate));
        }
        if (!t.evaluations.empty()) {
            const ot::OtEvaluation& e = t.evaluations.back();
            readoutName_[HeldOut]->setText(tr("Held-out, iteration %1").arg(e.iteration));
            shown[HeldOut] = true;
            set(Straightness, c, number(e.straightness));
            set(Target, c, number(snapshot->task == ot::Task::A ? e.closedFormError : e.terms.accuracy));
            set(Lipschitz, c, number(e.lipschitzRatio));
        }
        // Theorem 2: λ_OT against the threshold T·L²; the bound where it holds.
        if (t.lambdaOt > 0 || snapshot->comparison) {
            const double lambda = t.lambdaOt, threshold = snapshot->threshold;
            const double bound = t.evaluations.empty() ? NAN : t.evaluations.back().lipschitzBound;
            const QString verdict = lambda > threshold
                                        ? tr("λ_OT %1 > threshold T·L² = %2: Theorem 2's bound holds")
                                              .arg(number(lambda), number(threshold))
                                        : tr("λ_OT %1 ≤ threshold T·L² = %2: no Lipschitz bound")
                                              .arg(number(lambda), number(threshold));
            set(Bound, c,
                lambda > threshold ? (std::isfinite(bound) ? number(bound) : tr("holds")) : tr("none"),
                verdict);
        }
    }
    readoutName_[Target]->setText(snapshot && snapshot->task == ot::Task::B ? tr("accuracy")
                                                                            : tr("to the closed form"));
    readoutName_[Target]->setToolTip(
        snapshot && snapshot->task == ot::Task::B
            ? tr("Held-out classification accuracy")
            : tr("Mean distance of the held-out end points to the closed form X*(T)"));
    shown[Header] = shown[Header] && models > 1; // one model: no column heads
    for (int r = 0; r < Rows; ++r) {
        readoutName_[r]->setVisible(shown[r]);
        if (r == HeldOut) continue;
        for (std::size_t c = 0; c < 2; ++c) readoutValue_[r][c]->setVisible(shown[r] && c < models);
    }
    readouts_->setVisible(models > 0);
}

void TransformerPanel::setSnapshot(const std::shared_ptr<const TransformerSnapshot>& snapshot, bool playing) {
    snapshot_ = snapshot;
    QStringList lines = beginStatus(snapshot.get(), playing);
    showReadouts(snapshot.get());
    QString warning;
    bool error = false;
    if (snapshot) {
        if (!snapshot->trainers.empty() &&
            (snapshot->comparison || snapshot->trainers.front().lambdaOt > 0)) {
            const double lambda = snapshot->trainers.front().lambdaOt;
            lines
                << (lambda > snapshot->threshold
                        ? tr("λ_OT %1 > threshold T·L² = %2").arg(number(lambda), number(snapshot->threshold))
                        : tr("λ_OT %1 ≤ threshold T·L² = %2")
                              .arg(number(lambda), number(snapshot->threshold)));
        }
        if (!snapshot->error.empty()) {
            warning = QString::fromStdString(snapshot->error);
            error = true;
        }
        if (warning.isEmpty()) warning = lastEvents(*snapshot);
    }
    controls_->setStatus(lines, warning, error);
}

} // namespace flowscope
