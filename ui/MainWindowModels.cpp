// Flowscope UI: the main window's trained models (issue 7): File ▸ Open trained model, and File ▸ Export ▸
// Trained model, Samples as .npy, Density as .npy. The public entry points (openModelFile, exportModel,
// exportSamples, exportDensity) never show a dialog; the *Dialog functions ask, then call them (samples and
// densities on a worker thread: with the RWPO layer they take seconds to minutes).
#include "ui/MainWindow.h"

#include "engine/flows/Datasets.h"
#include "engine/flows/FlowIo.h"
#include "engine/flows/ModelFile.h"
#include "engine/flows/Sampling.h"
#include "engine/ottransformer/TransformerIo.h"
#include "ui/OffThread.h"
#include "ui/TrainingPanel.h"
#include "ui/TrainingView.h"
#include "ui/TransformerPanel.h"
#include "ui/TransformerView.h"

#include <QApplication>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QMessageBox>
#include <QProgressDialog>
#include <QSpinBox>
#include <QStatusBar>
#include <QTabWidget>

#include <cmath>
#include <limits>

namespace flowscope {

namespace {

// A number of the record's "training" object, when it is there and a finite number (the trainer's
// validation then checks its range and names the field).
template <class T> void readNumber(const nlohmann::json& training, const char* key, T& out) {
    const auto it = training.find(key);
    if (it == training.end() || !it->is_number()) return;
    const double v = it->get<double>();
    if (std::isfinite(v) && v >= double(std::numeric_limits<T>::lowest()) &&
        v <= double(std::numeric_limits<T>::max()))
        out = T(v);
}

nlohmann::json trainingOf(const nlohmann::json& record) {
    if (record.is_object() && record.contains("training") && record["training"].is_object())
        return record["training"];
    return nlohmann::json::object();
}

QString fileName(const QString& path) {
    return QFileInfo(path).fileName();
}

// The flow the Flows tab shows now (its first trainer), or null with *why.
std::shared_ptr<const flows::FlowModel<float>> shownFlow(const TrainingRunner& runner, QString* why) {
    const auto s = runner.snapshot();
    if (!s || s->trainers.empty() || !s->trainers.front().model) {
        *why = QObject::tr("No flow to export: open a trained model or start training in the Flows tab.");
        return nullptr;
    }
    return s->trainers.front().model;
}

} // namespace

bool MainWindow::openModelFile(const QString& path) {
    const std::string file = path.toStdString();
    QString note;
    try {
        if (trainedModelKind(file) == TrainedModelKind::Flow) {
            const flows::FlowModel<float> model = flows::loadFlow(file);
            std::string why;
            const nlohmann::json record = readModelRecord(file, &why);
            const nlohmann::json training = trainingOf(record);
            // The panel's data and optimizer settings, overridden by what the record says.
            flows::TrainerConfig config = trainingPanel_->config();
            const auto named = training.find("dataset");
            const std::string dataset =
                named != training.end() && named->is_string() ? named->get<std::string>() : std::string();
            readNumber(training, "batch", config.batch);
            readNumber(training, "resample_every", config.resampleEvery);
            readNumber(training, "data_seed", config.dataSeed);
            readNumber(training, "lr", config.adam.lr);
            readNumber(training, "lr_final", config.adam.lrFinal);
            readNumber(training, "decay_steps", config.adam.decaySteps);
            readNumber(training, "average_iterations", config.averageIterations);
            config.flow = model.config();
            config.initialParams = std::make_shared<const flows::FlowParams<float>>(model.params());
            if (flows::isDatasetName(dataset) && model.config().d == 2) {
                config.dataset = dataset;
            } else {
                const QString missing = !why.empty()          ? QString::fromStdString(why)
                                        : dataset == "points" ? tr("it was trained on the user's points")
                                                              : tr("its record names no toy dataset");
                if (model.config().d == 2) {
                    note = tr("%1: %2; shown beside %3, which Play would train it on. Samples and density "
                              "export as saved.")
                               .arg(fileName(path), missing, QString::fromStdString(config.dataset));
                } else {
                    // No toy dataset has this dimension: the model's own samples stand in for the data.
                    config.dataset.clear();
                    config.points = flows::toRows(
                        flows::sampleFlow(model, flows::baseSamples(model.config().d, 1000, 0)));
                    note = tr("%1: %2; its own samples stand in for the data. Samples export as saved.")
                               .arg(fileName(path), missing);
                }
            }
            if (!startTraining(config, false, false)) {
                lastError_ = tr("Cannot open %1:\n%2").arg(path, lastError_);
                return false;
            }
            showFlowsView();
        } else {
            const ot::TransformerModel model = ot::loadTransformer(file);
            const ot::Task task = model.config().head == ot::Head::Mean ? ot::Task::A : ot::Task::B;
            ot::OtTrainerConfig config = TransformerPanel::defaults(task);
            std::string why;
            const nlohmann::json training = trainingOf(readModelRecord(file, &why));
            readNumber(training, "batch", config.batch);
            readNumber(training, "data_seed", config.dataSeed);
            readNumber(training, "lr", config.adam.lr);
            readNumber(training, "lr_final", config.adam.lrFinal);
            readNumber(training, "decay_steps", config.adam.decaySteps);
            readNumber(training, "average_iterations", config.averageIterations);
            config.model = model.config();
            config.initialParams = std::make_shared<const ot::TransformerParams>(model.params());
            if (!why.empty())
                note = tr("%1: %2; task %3 with the panel's optimizer settings.")
                           .arg(fileName(path), QString::fromStdString(why),
                                QString::fromUtf8(ot::toString(task)));
            if (!startTransformer(config, false, false)) {
                lastError_ = tr("Cannot open %1:\n%2").arg(path, lastError_);
                return false;
            }
            showTransformersView();
        }
    } catch (const std::exception& e) {
        lastError_ = tr("Cannot open the trained model:\n%1").arg(QString::fromStdString(e.what()));
        return false;
    }
    lastError_.clear();
    modelDir_ = QFileInfo(path).absolutePath();
    statusBar()->showMessage(
        note.isEmpty()
            ? tr("Opened %1 (paused at iteration 0; Play trains it on)").arg(QDir::toNativeSeparators(path))
            : note);
    return true;
}

bool MainWindow::exportModel(const QString& path) {
    try {
        if (tabs_->currentWidget() == transformerView_) {
            const auto s = transformers_.snapshot();
            if (!s || s->trainers.empty()) {
                lastError_ = tr("No Transformer to export: open a trained model or start training in the "
                                "Transformers tab.");
                return false;
            }
            saveTrainedTransformer(path.toStdString(), s->trainers.front());
        } else {
            const auto s = training_.snapshot();
            if (!s || s->trainers.empty()) {
                lastError_ =
                    tr("No flow to export: open a trained model or start training in the Flows tab.");
                return false;
            }
            saveTrainedFlow(path.toStdString(), s->trainers.front());
        }
    } catch (const std::exception& e) {
        lastError_ = tr("Cannot export the model:\n%1").arg(QString::fromStdString(e.what()));
        return false;
    }
    lastError_.clear();
    return true;
}

namespace {

// The sampler's job off the UI thread (ui/OffThread.h), progress as done/1000 to `progress`: false when
// cancelled (lastError says so and nothing was written).
bool runSamplingJob(const std::function<void(const flows::SamplingProgress&)>& job,
                    const MainWindow::ExportProgress& progress, QString& error) {
    try {
        runOffThread([&](const JobProgress& p) { job(p); },
                     [&](double f) { return !progress || progress(long(f * 1000.0), 1000); });
    } catch (const flows::SamplingCancelled&) {
        error = QObject::tr("Export cancelled; nothing was written.");
        return false;
    }
    return true;
}

} // namespace

bool MainWindow::exportSamples(const QString& path, int n, std::uint64_t seed,
                               const ExportProgress& progress) {
    QString why;
    const auto model = shownFlow(training_, &why);
    if (!model || n < 1 || n > (1 << 26)) {
        lastError_ = model ? tr("Samples: n must be in [1, %1], got %2").arg(1 << 26).arg(n) : why;
        return false;
    }
    try {
        ad::Matrix<float> X;
        const auto job = [&](const flows::SamplingProgress& p) {
            X = flows::sampleFlow(*model, flows::baseSamples(model->config().d, n, seed), 2000, false,
                                  nullptr, nullptr, p);
        };
        if (!runSamplingJob(job, progress, lastError_)) return false;
        flows::writeSamplesNpy(path.toStdString(), X);
    } catch (const std::exception& e) {
        lastError_ = tr("Cannot export the samples:\n%1").arg(QString::fromStdString(e.what()));
        return false;
    }
    lastError_.clear();
    return true;
}

bool MainWindow::exportDensity(const QString& path, int grid, double extent, int references,
                               const ExportProgress& progress) {
    QString why;
    const auto model = shownFlow(training_, &why);
    if (!model) {
        lastError_ = why;
        return false;
    }
    try {
        flows::DensityGrid rho;
        const auto job = [&](const flows::SamplingProgress& p) {
            rho = flows::densityGrid(*model, grid, extent, references, 0, p);
        };
        if (!runSamplingJob(job, progress, lastError_)) return false;
        flows::writeDensityNpy(path.toStdString(), rho);
    } catch (const std::exception& e) {
        lastError_ = tr("Cannot export the density:\n%1").arg(QString::fromStdString(e.what()));
        return false;
    }
    lastError_.clear();
    return true;
}

void MainWindow::openModelDialog() {
    const QString start = modelDir_.isEmpty() ? QDir::homePath() : modelDir_;
    const QString path = QFileDialog::getOpenFileName(this, tr("Open trained model"), start,
                                                      tr("Trained models (*.safetensors)"));
    if (path.isEmpty()) return;
    if (!openModelFile(path)) QMessageBox::warning(this, tr("Open trained model"), lastError_);
}

void MainWindow::exportModelDialog() {
    const QString start = modelDir_.isEmpty() ? QDir::homePath() : modelDir_;
    QString path = QFileDialog::getSaveFileName(this, tr("Export trained model"), start,
                                                tr("Trained models (*.safetensors)"));
    if (path.isEmpty()) return;
    if (!path.endsWith(QStringLiteral(".safetensors"))) path += QStringLiteral(".safetensors");
    if (!exportModel(path)) {
        QMessageBox::warning(this, tr("Export trained model"), lastError_);
        return;
    }
    modelDir_ = QFileInfo(path).absolutePath();
    statusBar()->showMessage(tr("Exported %1 and its record %2")
                                 .arg(QDir::toNativeSeparators(path),
                                      QString::fromStdString(flows::configPathFor(path.toStdString()))),
                             8000);
}

void MainWindow::exportFlowDataDialog(bool density) {
    const QString title = density ? tr("Export density") : tr("Export samples");
    QString why;
    const auto model = shownFlow(training_, &why);
    if (!model) {
        QMessageBox::warning(this, title, why);
        return;
    }
    // n and seed (flowscope-cli sample's defaults), or the grid and its extent (density's).
    QDialog dialog(this);
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
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
    form->addRow(buttons);
    connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    if (dialog.exec() != QDialog::Accepted) return;
    const int count = first->value();
    const double value = second->value();

    const QString start = modelDir_.isEmpty() ? QDir::homePath() : modelDir_;
    QString path = QFileDialog::getSaveFileName(this, title, start, tr("NumPy arrays (*.npy)"));
    if (path.isEmpty()) return;
    if (!path.endsWith(QStringLiteral(".npy"))) path += QStringLiteral(".npy");
    // The model is an immutable copy from the snapshot: the job reads it while training goes on.
    QProgressDialog progress(density ? tr("Computing the density...") : tr("Drawing the samples..."),
                             tr("Cancel"), 0, 1000, this);
    progress.setWindowTitle(title);
    progress.setWindowModality(Qt::WindowModal);
    progress.setMinimumDuration(300);
    progress.setAutoClose(false);
    progress.setAutoReset(false);
    const auto report = [&](long done, long) {
        progress.setValue(int(done));
        return !progress.wasCanceled();
    };
    const bool ok = density ? exportDensity(path, count, value, 2000, report)
                            : exportSamples(path, count, std::uint64_t(value), report);
    progress.close();
    if (!ok) {
        if (progress.wasCanceled())
            statusBar()->showMessage(lastError_, 5000);
        else
            QMessageBox::warning(this, title, lastError_);
        return;
    }
    modelDir_ = QFileInfo(path).absolutePath();
    statusBar()->showMessage(tr("Exported %1").arg(QDir::toNativeSeparators(path)), 8000);
}

} // namespace flowscope
