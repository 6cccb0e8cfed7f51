#include "ui/workspaces/flows/FlowsWorkspace.h"

#include "engine/flows/Datasets.h"
#include "engine/flows/FlowIo.h"
#include "engine/flows/ModelFile.h"
#include "engine/flows/Sampling.h"
#include "ui/widgets/Dialogs.h"

#include <QDialog>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QSpinBox>

namespace flowscope {

namespace {

QString fileName(const QString& path) {
    return QFileInfo(path).fileName();
}

} // namespace

FlowsWorkspace::FlowsWorkspace(QMainWindow* host)
    : TrainingWorkspace(host,
                        {QStringLiteral("flows"), tr("Flows"),
                         tr("A generative flow trained live on a toy dataset (Training panel), with or "
                            "without the RWPO layer"),
                         QKeySequence(Qt::Key_3), tr("Training"), QStringLiteral("trainingDock"),
                         tr("No flow to export: open a trained model or start training in the Flows tab."),
                         tr("The Flows tab's model as .safetensors with its record (.json) beside it, as "
                            "flowscope-cli train writes them"),
                         flows::kFlowMetadataKey}) {
    samplesExport_ = new QAction(tr("&Samples as .npy..."), this);
    samplesExport_->setToolTip(
        tr("n samples of the Flows tab's model from a seed, as an (n, d) float32 array: "
           "the bytes of flowscope-cli sample --n --seed"));
    connect(samplesExport_, &QAction::triggered, this, [this] { exportDataDialog(false); });
    densityExport_ = new QAction(tr("&Density as .npy..."), this);
    densityExport_->setToolTip(
        tr("The Flows tab's model density on a grid over [-extent, extent]² (row = y, "
           "column = x), float64: the bytes of flowscope-cli density --grid --half-width"));
    connect(densityExport_, &QAction::triggered, this, [this] { exportDataDialog(true); });
    animationExport_ = new QAction(tr("&Animation..."), this);
    animationExport_->setToolTip(
        tr("The training from iteration 0 as MP4, GIF or numbered PNGs: the frames of "
           "flowscope-cli render --view training"));
    connect(animationExport_, &QAction::triggered, this, [this] { exportAnimationDialog(); });
    for (QAction* a : {samplesExport_, densityExport_, animationExport_}) a->setStatusTip(a->toolTip());
}

QList<QAction*> FlowsWorkspace::exportActions() const {
    return {animationExport_, modelExport_, samplesExport_, densityExport_};
}

std::shared_ptr<const flows::FlowModel<float>> FlowsWorkspace::shownFlow() {
    const auto s = run_.snapshot();
    if (!s || s->trainers.empty() || !s->trainers.front().model) {
        fail(text_.nothing);
        return nullptr;
    }
    return s->trainers.front().model;
}

QList<WorkspaceStart> FlowsWorkspace::guidedStarts() {
    return {{QStringLiteral("start.flow"), tr("Train a flow"),
             tr("Two flows learn to carry a Gaussian onto eight Gaussians, with and without the RWPO layer: "
                "watch their samples find the eight modes and their losses fall."),
             [this] {
                 flows::TrainerConfig config = panel_->config();
                 config.dataset = "8gaussians";
                 if (!start(config, true, true)) return false;
                 emit showPageRequested(view_);
                 return true;
             }}};
}

flows::TrainerConfig FlowsWorkspace::configOfModel(const QString& path, QString& note) {
    const std::string file = path.toStdString();
    const flows::FlowModel<float> model = flows::loadFlow(file);
    std::string why;
    const nlohmann::json training = trainingOfRecord(readModelRecord(file, &why));
    // The panel's data and optimizer settings, overridden by what the record says.
    flows::TrainerConfig config = panel_->config();
    const auto named = training.find("dataset");
    const std::string dataset =
        named != training.end() && named->is_string() ? named->get<std::string>() : std::string();
    readOptimizerRecord(training, config);
    readRecordNumber(training, "resample_every", config.resampleEvery);
    config = FlowTraining::fromModel(model, config);
    if (flows::isDatasetName(dataset) && model.config().d == 2) {
        config.dataset = dataset;
    } else {
        const QString missing = !why.empty()          ? QString::fromStdString(why)
                                : dataset == "points" ? tr("it was trained on the user's points")
                                                      : tr("its record names no toy dataset");
        if (model.config().d == 2) {
            note = tr("%1: %2; shown beside %3, which Play would train it on. Samples and density export "
                      "as saved.")
                       .arg(fileName(path), missing, QString::fromStdString(config.dataset));
        } else {
            // No toy dataset has this dimension: the model's own samples stand in for the data.
            config.dataset.clear();
            config.points =
                flows::toRows(flows::sampleFlow(model, flows::baseSamples(model.config().d, 1000, 0)));
            note = tr("%1: %2; its own samples stand in for the data. Samples export as saved.")
                       .arg(fileName(path), missing);
        }
    }
    return config;
}

bool FlowsWorkspace::exportSamples(const QString& path, int n, std::uint64_t seed,
                                   const ExportProgress& progress) {
    const auto model = shownFlow();
    return model && report(exportFlowSamples(*model, path, n, seed, progress));
}

bool FlowsWorkspace::exportDensity(const QString& path, int grid, double extent, int references,
                                   const ExportProgress& progress) {
    const auto model = shownFlow();
    return model && report(exportFlowDensity(*model, path, grid, extent, references, progress));
}

// What the tab trains now: its trainers' own configs (the user's points and a loaded model's parameters
// included), or the panel's settings before the first start.
std::vector<flows::TrainerConfig> FlowsWorkspace::configsNow() const {
    std::vector<flows::TrainerConfig> configs;
    if (const auto running = run_.snapshot())
        for (const FlowTrainerState& t : running->trainers)
            if (t.config) configs.push_back(*t.config);
    if (configs.empty()) configs = trainingConfigs(panel_->config(), panel_->comparison());
    return configs;
}

bool FlowsWorkspace::exportAnimation(const AnimationOptions& options, const QString& path,
                                     const ExportProgress& progress) {
    return report(exportFlowAnimation(configsNow(), options, path, progress));
}

void FlowsWorkspace::exportAnimationDialog() {
    animationExportDialog(
        host(), Scene(), view_->size() * view_->devicePixelRatioF(), AnimationView::Training,
        [this](const AnimationOptions& o, const QString& path, const ExportProgress& progress) {
            return reported(exportFlowAnimation(configsNow(), o, path, progress));
        },
        [this](const QString& text, int ms) { emit statusMessage(text, ms); });
}

void FlowsWorkspace::exportDataDialog(bool density) {
    const QString title = density ? tr("Export density") : tr("Export samples");
    const auto model = shownFlow();
    if (!model) {
        QMessageBox::warning(host(), title, lastError());
        return;
    }
    // n and seed (flowscope-cli sample's defaults), or the grid and its extent (density's).
    QDialog dialog(host());
    dialog.setWindowTitle(title);
    auto* form = new QFormLayout(&dialog);
    auto* first = new QSpinBox(&dialog);
    auto* second = new QDoubleSpinBox(&dialog);
    if (density) {
        first->setRange(2, 4096);
        first->setValue(200);
        first->setToolTip(tr("Cells per side (flowscope-cli density --grid)"));
        second->setRange(0.01, 1000.0);
        second->setDecimals(2);
        second->setValue(4.0);
        second->setToolTip(tr("The grid covers [-extent, extent]² (flowscope-cli density --half-width)"));
        form->addRow(tr("Grid"), first);
        form->addRow(tr("Extent"), second);
    } else {
        first->setRange(1, 1 << 26);
        first->setValue(10000);
        first->setToolTip(tr("How many samples (flowscope-cli sample --n)"));
        second->setRange(0, double(std::numeric_limits<int>::max()));
        second->setDecimals(0);
        second->setValue(0);
        second->setToolTip(tr("The base draws' seed (flowscope-cli sample --seed)"));
        form->addRow(tr("Samples n"), first);
        form->addRow(tr("Seed"), second);
    }
    form->addRow(okCancel(&dialog));
    if (dialog.exec() != QDialog::Accepted) return;
    const int count = first->value();
    const double value = second->value();

    const QString path =
        askSavePath(host(), title, modelDir_, tr("NumPy arrays (*.npy)"), {QStringLiteral(".npy")});
    if (path.isEmpty()) return;
    // The model is an immutable copy from the snapshot: the job reads it while training goes on.
    const QString label = density ? tr("Computing the density...") : tr("Drawing the samples...");
    const bool ok = runExport(
        host(), title, 1000, [&label](long, long) { return label; },
        [&](const ExportProgress& progress) {
            return reported(density ? exportFlowDensity(*model, path, count, value, 2000, progress)
                                    : exportFlowSamples(*model, path, count, std::uint64_t(value), progress));
        },
        [this](const QString& text, int ms) { emit statusMessage(text, ms); },
        [&path](double) { return tr("Exported %1").arg(QDir::toNativeSeparators(path)); });
    if (ok) modelDir_ = QFileInfo(path).absolutePath();
}

} // namespace flowscope
