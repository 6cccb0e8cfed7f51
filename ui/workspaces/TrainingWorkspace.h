// Flowscope UI: what the live-training workspaces (Flows, Transformers) share, written once: a TrainerRun of
// their kind (engine/runner/TrainerRun.h), the view that draws its snapshots on one page, the panel in one
// dock that sets the run up and drives it (Start, Play, Step, Reset, Evaluate), and File ▸ Export ▸ Trained
// model. The panel only asks; this class starts and drives the run and feeds each new snapshot back to the
// panel's status lines.
//
// Panel: config(), comparison(), setConfig(config, comparison), setStarted(), setStartError(message),
// setSnapshot(snapshot, playing), and the signals startRequested(config, comparison, play),
// playRequested(bool), stepRequested(), resetRequested(), evaluateRequested().
// View: setSource(source), refresh(), displayedSnapshot(), setPlotStyle(style), signal snapshotChanged().
#pragma once

#include "engine/runner/TrainerRun.h"
#include "ui/export/ExportDialogs.h"
#include "ui/shell/Workspace.h"
#include "ui/widgets/Theme.h"

#include <QAction>
#include <QDir>
#include <QDockWidget>
#include <QFileInfo>
#include <QMainWindow>
#include <QMessageBox>
#include <QPushButton>

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <optional>
#include <string>

namespace flowscope {

// A trained model's record (the JSON beside its .safetensors): the "training" object, or an empty one.
inline nlohmann::json trainingOfRecord(const nlohmann::json& record) {
    if (record.is_object() && record.contains("training") && record["training"].is_object())
        return record["training"];
    return nlohmann::json::object();
}

// A number of a record's "training" object, when it is there and a finite number in T's range (the trainer's
// validation then checks its range and names the field); else `out` keeps its value.
template <class T> void readRecordNumber(const nlohmann::json& training, const char* key, T& out) {
    const auto it = training.find(key);
    if (it == training.end() || !it->is_number()) return;
    const double v = it->get<double>();
    if (std::isfinite(v) && v >= double(std::numeric_limits<T>::lowest()) &&
        v <= double(std::numeric_limits<T>::max()))
        out = T(v);
}

// The optimizer settings a record's "training" object holds, over `config`'s (both trainer kinds have them).
template <class Config> void readOptimizerRecord(const nlohmann::json& training, Config& config) {
    readRecordNumber(training, "batch", config.batch);
    readRecordNumber(training, "data_seed", config.dataSeed);
    readRecordNumber(training, "lr", config.adam.lr);
    readRecordNumber(training, "lr_final", config.adam.lrFinal);
    readRecordNumber(training, "decay_steps", config.adam.decaySteps);
    readRecordNumber(training, "average_iterations", config.averageIterations);
}

struct TrainingWorkspaceText {
    QString id;       // settings group
    QString page;     // the tab's title
    QString pageTip;  // its tool tip
    QKeySequence key; // View ▸ page
    QString dock;     // the panel's dock title
    QString dockName; // its objectName (window state)
    QString nothing;  // why there is no model to export yet
    QString modelExportTip;
    const char* modelKind = ""; // the metadata key of the trained models it opens (File ▸ Open trained model)
};

template <class Kind, class Panel, class View> class TrainingWorkspace : public Workspace {
  public:
    using Runner = TrainerRun<Kind>;
    using Config = typename Kind::Config;

    TrainingWorkspace(QMainWindow* host, TrainingWorkspaceText text)
        : Workspace(host), text_(std::move(text)), view_(new View(host)), panel_(new Panel(host)) {
        view_->setSource([this] { return run_.snapshot(); });
        dock_ = new QDockWidget(text_.dock, host);
        dock_->setObjectName(text_.dockName);
        dock_->setWidget(panel_);
        dock_->setAllowedAreas(Qt::AllDockWidgetAreas);

        QObject::connect(
            panel_, &Panel::startRequested, this,
            [this](const Config& config, bool comparison, bool play) { start(config, comparison, play); });
        QObject::connect(panel_, &Panel::playRequested, this, [this](bool play) {
            if (play)
                run_.play();
            else
                run_.pause();
            showStatus();
        });
        QObject::connect(panel_, &Panel::stepRequested, this, [this] { run_.stepOnce(); });
        QObject::connect(panel_, &Panel::resetRequested, this, [this] { run_.reset(); });
        QObject::connect(panel_, &Panel::evaluateRequested, this, [this] { run_.evaluateNow(); });
        QObject::connect(view_, &View::snapshotChanged, this, [this] { showStatus(); });

        // Space: the panel's Start / Pause / Resume button, as Space plays and pauses the particles (enabled
        // while this workspace is shown, so the two never compete for the key).
        playAction_ = new QAction(QObject::tr("Start, pause or resume training"), this);
        playAction_->setObjectName(text_.id + QStringLiteral(".play"));
        playAction_->setShortcut(Qt::Key_Space);
        playAction_->setEnabled(false);
        QObject::connect(playAction_, &QAction::triggered, this, [this] {
            if (auto* start = panel_->template findChild<QPushButton*>(QStringLiteral("start"));
                start && start->isEnabled())
                start->click();
        });
        host->addAction(playAction_);

        modelExport_ = new QAction(QObject::tr("Trained &model..."), this);
        modelExport_->setToolTip(text_.modelExportTip);
        modelExport_->setStatusTip(text_.modelExportTip);
        QObject::connect(modelExport_, &QAction::triggered, this, [this] { exportModelDialog(); });
    }
    // The view outlives the workspace (the shell deletes it first): cut its link to the run.
    ~TrainingWorkspace() override { view_->setSource({}); }

    QString id() const override { return text_.id; }
    QList<WorkspacePage> pages() const override {
        return {{view_, text_.page, text_.pageTip, text_.key, {}}};
    }
    QList<WorkspaceDock> docks() const override { return {{dock_, Qt::LeftDockWidgetArea}}; }
    QList<QAction*> exportActions() const override { return {modelExport_}; }
    QWidget* plotsOf(QWidget*) const override { return view_; } // the whole view is plots
    void setTheme(ThemeKind kind) override { view_->setPlotStyle(plotStyle(kind)); }
    QString unsavedWork() const override {
        const auto s = run_.snapshot();
        const long iteration = s ? s->iteration() : 0;
        if (iteration <= savedIteration_) return {};
        return QObject::tr("%1: %2 iterations of training, not exported").arg(text_.page).arg(iteration);
    }
    bool saveUnsavedWork() override { return exportModelDialog(); }
    void setActive(bool active) override {
        Workspace::setActive(active);
        playAction_->setEnabled(active);
        if (active) dock_->raise(); // the panel comes to the front of its dock area
    }

    // Starts a new run (shown in the panel's controls); false, with the message in lastError() and the panel,
    // when the config is invalid. The current run then goes on untouched.
    bool start(const Config& config, bool comparison, bool play) {
        try {
            run_.start(prepare(config), comparison);
        } catch (const std::exception& e) {
            fail(QObject::tr("Cannot start training:\n%1").arg(QString::fromStdString(e.what())));
            panel_->setStartError(lastError());
            return false;
        }
        panel_->setConfig(config, comparison);
        panel_->setStarted();
        if (play)
            run_.play();
        else
            run_.pause();
        view_->refresh(); // shows the new run's first snapshot
        showStatus();
        return succeed();
    }

    // The shown (first) trainer's model as .safetensors + .json, as the CLI's training commands write them.
    bool exportModel(const QString& path) {
        const auto s = run_.snapshot();
        if (!s || s->trainers.empty()) return fail(text_.nothing);
        try {
            Kind::save(path.toStdString(), s->trainers.front());
        } catch (const std::exception& e) {
            return fail(QObject::tr("Cannot export the model:\n%1").arg(QString::fromStdString(e.what())));
        }
        savedIteration_ = std::max(savedIteration_, s->iteration());
        return succeed();
    }

    Runner& runner() { return run_; }
    Panel* panel() const { return panel_; }
    View* view() const { return view_; }
    QDockWidget* dock() const { return dock_; }
    // Where the model dialogs start: the folder of the last model opened or exported.
    QString modelDir() const override { return modelDir_; }

    QStringList modelKinds() const override { return {QString::fromLatin1(text_.modelKind)}; }
    // A trained model (configOfModel) as a new run, paused at iteration 0; false, with the message in
    // lastError(), for a file that cannot be opened or started: the current run then goes on.
    bool openModel(const QString& path) override {
        QString note;
        std::optional<Config> config;
        try {
            config = configOfModel(path, note);
        } catch (const std::exception& e) {
            return fail(
                QObject::tr("Cannot open the trained model:\n%1").arg(QString::fromStdString(e.what())));
        }
        if (!start(*config, false, false))
            return fail(QObject::tr("Cannot open %1:\n%2").arg(path, lastError()));
        return opened(path, note);
    }

  protected:
    // The run of the trained model at `path`: its architecture and parameters, with what its record says (the
    // data, the optimizer); `note` says what the record lacked, for the status line. Throws std::exception
    // naming the fault of a file that is not such a model.
    virtual Config configOfModel(const QString& path, QString& note) = 0;
    // The config a start trains, made ready: a kind's costly preparation (the Inverse workspace's frame,
    // made off the UI thread). Throws std::exception to refuse the start with its message.
    virtual Config prepare(const Config& config) { return config; }
    // A trained model at `path` now runs (paused at iteration 0): its tab comes to the front, the status line
    // says so (or gives `note`, what the record lacked).
    bool opened(const QString& path, const QString& note) {
        modelDir_ = QFileInfo(path).absolutePath();
        savedIteration_ = 0; // the run starts again from the file's model
        emit showPageRequested(view_);
        emit statusMessage(note.isEmpty()
                               ? QObject::tr("Opened %1 (paused at iteration 0; Play trains it on)")
                                     .arg(QDir::toNativeSeparators(path))
                               : note,
                           0);
        return succeed();
    }
    bool exportModelDialog() {
        const QString title = QObject::tr("Export trained model");
        const QString path =
            askSavePath(host(), title, modelDir_, QObject::tr("Trained models (*.safetensors)"),
                        {QStringLiteral(".safetensors")});
        if (path.isEmpty()) return false;
        if (!exportModel(path)) {
            QMessageBox::warning(host(), title, lastError());
            return false;
        }
        modelDir_ = QFileInfo(path).absolutePath();
        emit statusMessage(
            QObject::tr("Exported %1 and its record (.json beside it)").arg(QDir::toNativeSeparators(path)),
            8000);
        return true;
    }
    void showStatus() { panel_->setSnapshot(view_->displayedSnapshot(), run_.playing()); }

    const TrainingWorkspaceText text_;
    Runner run_;
    View* view_;
    Panel* panel_;
    QDockWidget* dock_ = nullptr;
    QAction* modelExport_ = nullptr;
    QAction* playAction_ = nullptr; // Space
    QString modelDir_;
    long savedIteration_ = 0; // the run's iteration when its model was last exported (or opened: 0)
};

} // namespace flowscope
