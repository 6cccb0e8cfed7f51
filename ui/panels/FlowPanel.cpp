#include "ui/panels/FlowPanel.h"

#include "engine/flows/Datasets.h"
#include "ui/views/PointCanvas.h"
#include "ui/widgets/FormWidgets.h"
#include "ui/widgets/Tooltips.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include <cmath>
#include <limits>

namespace flowscope {

namespace {

// Above this mass on the evaluation grid the status line warns (a normalized density's is 1 minus its tails,
// plus the 64² quadrature's error).
constexpr double kMassWarning = 1.05;

// ui/widgets/FormWidgets.h; the spin boxes track keystrokes (edits apply on Start, not at once).
using form::addRow;
using form::named;
using form::number;

} // namespace

FlowPanel::FlowPanel(QWidget* parent) : TrainingPanelBase(parent) {
    auto* layout = form::panelColumn(this, "trainingPanel");

    auto [flowGroup, form] = form::group(tr("Flow (applies on Start)"), this);
    addLoadedNote(flowGroup, form,
                  tr("Start and Reset use the parameters of the opened model (File ▸ Open trained "
                     "model); editing the architecture starts from a fresh initialization instead"));
    dataset_ = addRow(form, tr("Dataset"), named(new QComboBox(flowGroup), "training.dataset"));
    for (const std::string& name : flows::datasetNames()) dataset_->addItem(QString::fromStdString(name));
    dataset_->addItem(tr("your points")); // the last item: points_
    const form::Row points = form::row(flowGroup);
    pointsRow_ = points.widget;
    pointsLabel_ = new QLabel(pointsRow_);
    pointsLabel_->setObjectName(QStringLiteral("pointsCount"));
    auto* draw = new QPushButton(tr("Draw..."), pointsRow_);
    draw->setObjectName(QStringLiteral("drawPoints"));
    draw->setToolTip(tr("Draw the points on a canvas over [-4, 4]²: drag to spray, right-drag to erase"));
    auto* load = new QPushButton(tr("Load..."), pointsRow_);
    load->setObjectName(QStringLiteral("loadPoints"));
    load->setToolTip(tr("Points from an (n, 2) .npy array or a .csv file with two columns (as "
                        "flowscope-cli train --data)"));
    points.layout->addWidget(pointsLabel_, 1);
    points.layout->addWidget(draw);
    points.layout->addWidget(load);
    connect(draw, &QPushButton::clicked, this, &FlowPanel::drawPoints);
    connect(load, &QPushButton::clicked, this, &FlowPanel::loadPointsDialog);
    form->addRow(pointsRow_);
    addRwpoRows(flowGroup, form, "training", tr("Side by side (with / without RWPO)"));
    layers_ = addRow(form, tr("Layers M"), form::startIntBox(flowGroup, "training.layers", 1, 64));
    width_ = addRow(form, tr("Width m"), form::startIntBox(flowGroup, "training.width", 2, 256));
    batch_ = addRow(form, tr("Batch"), form::startIntBox(flowGroup, "training.batch", 2, 8192));
    lr_ =
        addRow(form, tr("Learning rate"), form::startDoubleBox(flowGroup, "training.lr", 1e-5, 1.0, 5, 1e-3));
    lambda0_ =
        addRow(form, tr("λ₀"), form::startDoubleBox(flowGroup, "training.lambda0", 0.001, 100.0, 3, 0.1));
    beta0_ = addRow(form, tr("β₀"), form::startDoubleBox(flowGroup, "training.beta0", 0.001, 100.0, 3, 0.1));
    transport_ = addRow(form, tr("Transport weight"),
                        form::startDoubleBox(flowGroup, "training.transportWeight", 0.0, 10.0, 4, 0.01));
    seed_ = addRow(form, tr("Seed"),
                   form::startIntBox(flowGroup, "training.seed", 0, std::numeric_limits<int>::max()));
    layout->addWidget(flowGroup);

    addRunControls(layout, {tr("One iteration: loss (16) on the batch, its gradient, one Adam step"),
                            tr("Back to iteration 0 of this run: the initial parameters, the same batches"),
                            parameterTooltip("training.evaluate"), parameterTooltip("training.status")});

    setConfig(flows::TrainerConfig{}, false);

    connect(dataset_, &QComboBox::currentIndexChanged, this, &FlowPanel::markEdited);
    connect(dataset_, &QComboBox::currentIndexChanged, this, &FlowPanel::updatePointsRow);
    for (QSpinBox* box : {layers_, width_, batch_, seed_})
        connect(box, &QSpinBox::valueChanged, this, &FlowPanel::markEdited);
    for (QDoubleSpinBox* box : {lr_, lambda0_, beta0_, transport_})
        connect(box, &QDoubleSpinBox::valueChanged, this, &FlowPanel::markEdited);
    for (QCheckBox* box : {rwpo_, sideBySide_})
        connect(box, &QCheckBox::toggled, this, &FlowPanel::forgetLoadedModel);
    for (QSpinBox* box : {layers_, width_})
        connect(box, &QSpinBox::valueChanged, this, &FlowPanel::forgetLoadedModel);
    for (QDoubleSpinBox* box : {lambda0_, beta0_, transport_})
        connect(box, &QDoubleSpinBox::valueChanged, this, &FlowPanel::forgetLoadedModel);
    setSnapshot(nullptr, false);
}

flows::TrainerConfig FlowPanel::config() const {
    flows::TrainerConfig c;
    if (usesPoints()) {
        c.dataset.clear();
        c.points = points_;
    } else {
        c.dataset = dataset_->currentText().toStdString();
    }
    c.flow.rwpo = rwpo_->isChecked();
    c.flow.layers = layers_->value();
    c.flow.width = width_->value();
    c.flow.lambda0 = lambda0_->value();
    c.flow.beta0 = beta0_->value();
    c.flow.transportWeight = transport_->value();
    c.flow.seed = std::uint64_t(seed_->value());
    c.dataSeed = std::uint64_t(seed_->value());
    c.batch = batch_->value();
    c.adam.lr = lr_->value();
    const flows::AdamOptions schedule = flows::TrainerConfig{}.adam; // the trainer's default decay
    c.adam.lrFinal = lr_->value() * schedule.lrFinal / schedule.lr;
    // Held-out metrics cost O(n²) per layer with the RWPO layer (~20 s for 2000 points on two busy cores,
    // during which the run does not answer): 1000 keep them to a few seconds.
    c.evalSamples = 1000;
    if (loadedParams_) {
        c.flow = loadedFlow_;
        c.initialParams = loadedParams_;
    }
    return c;
}

bool FlowPanel::usesPoints() const {
    return dataset_->currentIndex() == dataset_->count() - 1;
}

void FlowPanel::setPoints(const Mat& points) {
    points_ = points;
    if (usesPoints()) {
        markEdited();
        updatePointsRow();
    } else {
        dataset_->setCurrentIndex(dataset_->count() - 1); // marks edited, updates the row
    }
}

bool FlowPanel::loadPointsFile(const QString& path, QString* why) {
    try {
        const Mat p = flows::loadPoints(path.toStdString());
        if (p.cols() != 2)
            throw std::invalid_argument("has " + std::to_string(p.cols()) +
                                        " columns; the Flows tab trains 2-D points");
        if (p.rows() < 2) throw std::invalid_argument("holds fewer than 2 points");
        if (!p.allFinite()) throw std::invalid_argument("holds a NaN or an infinity");
        setPoints(p);
        return true;
    } catch (const std::exception& e) {
        if (why) *why = tr("%1: %2").arg(QFileInfo(path).fileName(), QString::fromStdString(e.what()));
        return false;
    }
}

void FlowPanel::drawPoints() {
    PointCanvasDialog dialog(points_, this);
    if (dialog.exec() == QDialog::Accepted) setPoints(dialog.points());
}

void FlowPanel::loadPointsDialog() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Load points"), QString(),
                                                      tr("Points (*.npy *.csv);;All files (*)"));
    if (path.isEmpty()) return;
    QString why;
    if (!loadPointsFile(path, &why)) QMessageBox::warning(this, tr("Load points"), why);
}

void FlowPanel::updatePointsRow() {
    pointsRow_->setVisible(usesPoints());
    const int n = int(points_.rows());
    pointsLabel_->setText(n == 0 ? tr("none yet: Draw or Load") : pointCountText(n));
}

void FlowPanel::forgetLoadedModel() {
    loadedParams_.reset();
    loaded_->hide();
}

bool FlowPanel::comparison() const {
    return sideBySide_->isChecked();
}

void FlowPanel::setConfig(const flows::TrainerConfig& c, bool comparison) {
    const QSignalBlocker blocks[] = {
        QSignalBlocker(dataset_),   QSignalBlocker(rwpo_),    QSignalBlocker(sideBySide_),
        QSignalBlocker(layers_),    QSignalBlocker(width_),   QSignalBlocker(batch_),
        QSignalBlocker(lr_),        QSignalBlocker(lambda0_), QSignalBlocker(beta0_),
        QSignalBlocker(transport_), QSignalBlocker(seed_)};
    if (c.dataset.empty() && c.points.cols() == 2) {
        points_ = c.points;
        dataset_->setCurrentIndex(dataset_->count() - 1);
    } else {
        dataset_->setCurrentIndex(std::max(0, dataset_->findText(QString::fromStdString(c.dataset))));
    }
    updatePointsRow();
    showRwpo(c.flow.rwpo, comparison);
    layers_->setValue(c.flow.layers);
    width_->setValue(c.flow.width);
    batch_->setValue(c.batch);
    lr_->setValue(c.adam.lr);
    lambda0_->setValue(c.flow.lambda0);
    beta0_->setValue(c.flow.beta0);
    transport_->setValue(c.flow.transportWeight);
    seed_->setValue(
        int(std::min<std::uint64_t>(c.flow.seed, std::uint64_t(std::numeric_limits<int>::max()))));
    loadedFlow_ = c.flow;
    loadedParams_ = c.initialParams;
    showLoaded(tr("<b>Loaded model</b>: d = %1, M = %2, width %3, %4. Start trains these parameters on.")
                   .arg(c.flow.d)
                   .arg(c.flow.layers)
                   .arg(c.flow.width)
                   .arg(c.flow.rwpo ? tr("with RWPO") : tr("without RWPO")),
               bool(loadedParams_));
}

void FlowPanel::setSnapshot(const std::shared_ptr<const FlowSnapshot>& snapshot, bool playing) {
    snapshot_ = snapshot;
    QStringList lines = beginStatus(snapshot.get(), playing);
    QString warning;
    bool error = false;
    if (snapshot) {
        for (const FlowTrainerState& t : snapshot->trainers) {
            QStringList parts;
            // Before the first step: the model's own λ and β (a loaded model's are not λ₀ and β₀).
            const double lambda = !t.history.empty() ? t.history.back().lambda
                                  : t.model          ? t.model->params().lambda()
                                                     : 0.0;
            const double beta = !t.history.empty() ? t.history.back().beta
                                : t.model          ? t.model->params().beta()
                                                   : 0.0;
            if (t.rwpo) parts << tr("λ %1").arg(number(lambda)) << tr("β %1").arg(number(beta));
            parts << tr("lr %1").arg(number(t.learningRate));
            const QString prefix = trainerPrefix(snapshot->comparison, t.label, ": ");
            lines << prefix + parts.join(QStringLiteral(" · "));
            if (!t.evaluations.empty()) {
                const flows::Evaluation& e = t.evaluations.back();
                QString line = tr("held-out NLL %1 · MMD² %2").arg(number(e.nll), number(e.mmd2));
                if (std::isfinite(e.gridMass)) line += tr(" · mass %1").arg(number(e.gridMass));
                lines << prefix + line + tr(" (at %1)").arg(e.iteration);
            }
        }
        if (!snapshot->error.empty()) {
            warning = QString::fromStdString(snapshot->error);
            error = true;
        }
        // A density whose mass on the grid is well above 1 is not a density: its NLL is no likelihood.
        if (warning.isEmpty()) {
            for (const FlowTrainerState& t : snapshot->trainers)
                if (!t.evaluations.empty() && t.evaluations.back().gridMass > kMassWarning) {
                    const QString prefix = trainerPrefix(snapshot->comparison, t.label, ": ");
                    warning += (warning.isEmpty() ? QString() : QStringLiteral("\n")) + prefix +
                               tr("the model density's mass on the grid is %1, not 1: its NLL is not a "
                                  "likelihood (the map folds, or the first-order log-det overstates it)")
                                   .arg(number(t.evaluations.back().gridMass));
                }
        }
        // The latest rejection of any trainer stays visible: the learning rate it halved is still in force.
        if (warning.isEmpty()) warning = lastEvents(*snapshot);
    }
    controls_->setStatus(lines, warning, error);
}

} // namespace flowscope
