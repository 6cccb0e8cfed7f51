#include "ui/workspaces/sweeps/SweepsWorkspace.h"

#include "engine/backend/Registry.h"
#include "render/ConeData.h"
#include "render/picture/Theme.h"
#include "ui/panels/PresetBrowser.h"
#include "ui/panels/SweepPanel.h"
#include "ui/views/ConeView.h"
#include "ui/views/SweepView.h"
#include "ui/workspaces/particles/ParticlesWorkspace.h"

#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QMainWindow>
#include <QMessageBox>
#include <QSettings>

#include <nlohmann/json.hpp>

#include <thread>

namespace flowscope {

namespace {

// The spec's name, else its file's.
QString sweepName(const SweepSpec& spec, const QString& path) {
    return spec.name.empty() ? QFileInfo(path).completeBaseName() : QString::fromStdString(spec.name);
}

} // namespace

SweepsWorkspace::SweepsWorkspace(QMainWindow* host, ParticlesWorkspace* particles)
    : Workspace(host), particles_(particles), view_(new SweepView(host)), panel_(new SweepPanel(host)) {
    dock_ = new QDockWidget(tr("Sweeps"), host);
    dock_->setObjectName(QStringLiteral("sweepsDock"));
    dock_->setWidget(panel_);
    dock_->setAllowedAreas(Qt::AllDockWidgetAreas);
    sweepDir_ = QStringLiteral(FLOWSCOPE_SWEEP_DIR);
    panel_->setSweepDirectory(sweepDir_);
    panel_->setProgress({});
    view_->setSweep(nullptr);

    connect(panel_, &SweepPanel::sweepChosen, this, [this](const QString& path) { openSweep(path); });
    connect(panel_, &SweepPanel::openRequested, this, [this] { openSweepDialog(); });
    connect(panel_, &SweepPanel::runRequested, this, [this](int threads) { run(threads); });
    connect(panel_, &SweepPanel::cancelRequested, this, [this] { cancel(); });
    connect(panel_, &SweepPanel::saveRequested, this, [this] { saveTableDialog(); });
    connect(panel_, &SweepPanel::selectionChanged, this,
            [this] { view_->setSelection(panel_->x(), panel_->y(), panel_->measure()); });
    connect(this, &Workspace::errorReported, panel_, [this](const QString& message) {
        if (!message.isEmpty()) panel_->setMessage(message);
    });
    connect(view_, &SweepView::hovered, panel_, &SweepPanel::setReadout);
    connect(view_, &SweepView::cellClicked, this, [this](long r) { openRun(r); });

    poll_.setInterval(100);
    connect(&poll_, &QTimer::timeout, this, &SweepsWorkspace::poll);

    tableExport_ = new QAction(tr("Sweep &table..."), this);
    tableExport_->setToolTip(tr("The Sweeps tab's finished sweep as results.csv, results.json and a .npy per "
                                "column in a folder, as flowscope-cli sweep writes them"));
    tableExport_->setStatusTip(tableExport_->toolTip());
    connect(tableExport_, &QAction::triggered, this, [this] { saveTableDialog(); });

    openAction_ = new QAction(tr("Open s&weep..."), this);
    openAction_->setObjectName(QStringLiteral("openSweep"));
    openAction_->setToolTip(tr(
        "A SWEEP.json (flowscope-cli sweep's spec, docs/sweeps.md), shown in the Sweeps tab, ready to run"));
    openAction_->setStatusTip(openAction_->toolTip());
    connect(openAction_, &QAction::triggered, this, &SweepsWorkspace::openSweepDialog);
}

SweepsWorkspace::~SweepsWorkspace() {
    poll_.stop();
    run_.cancel(); // the runner's destructor then waits for the runs in flight only
}

QList<WorkspacePage> SweepsWorkspace::pages() const {
    return {{view_,
             tr("Sweeps"),
             tr("A sweep run on this machine's threads: its phase diagram or histograms fill in as runs "
                "finish (Sweeps panel); click a cell to open its scene"),
             QKeySequence(Qt::Key_6),
             {}}};
}

QList<WorkspaceDock> SweepsWorkspace::docks() const {
    return {{dock_, Qt::LeftDockWidgetArea}};
}

QWidget* SweepsWorkspace::plotsOf(QWidget*) const {
    return view_;
}

void SweepsWorkspace::setActive(bool active) {
    Workspace::setActive(active);
    if (active) dock_->raise();
}

void SweepsWorkspace::setTheme(ThemeKind kind) {
    view_->setPlotStyle(plotStyle(kind));
}

void SweepsWorkspace::saveSettings(QSettings& s) const {
    s.setValue(QStringLiteral("sweep"), specPath_);
    s.setValue(QStringLiteral("threads"), panel_->threads());
    s.setValue(QStringLiteral("backend"), QString::fromStdString(panel_->backend()));
    s.setValue(QStringLiteral("tableDir"), tableDir_);
}

void SweepsWorkspace::restoreSettings(QSettings& s) {
    if (const int threads = s.value(QStringLiteral("threads")).toInt(); threads > 0)
        panel_->setThreads(threads);
    panel_->setBackend(s.value(QStringLiteral("backend")).toString().toStdString());
    tableDir_ = s.value(QStringLiteral("tableDir")).toString();
    const QString path = s.value(QStringLiteral("sweep")).toString();
    // The last sweep shown, else the first shipped one of the list (shown, not run).
    if (!(!path.isEmpty() && QFileInfo::exists(path) && openSweep(path)) && panel_->sweepBox()->count() > 0)
        openSweep(panel_->sweepBox()->itemData(0).toString());
}

bool SweepsWorkspace::openSweep(const QString& pathOrName) {
    QString path = pathOrName;
    if (!QFileInfo::exists(path) && !path.contains(QLatin1Char('/')) &&
        !path.endsWith(QStringLiteral(".json")))
        path = QDir(sweepDir_).filePath(pathOrName + QStringLiteral(".json"));
    const QString presets = particles_->presetBrowser()->directory();
    std::shared_ptr<const SweepSpec> spec;
    try {
        spec = std::make_shared<const SweepSpec>(
            loadSweep(QFile::encodeName(path).toStdString(),
                      QFile::encodeName(presets.isEmpty() ? QStringLiteral(FLOWSCOPE_PRESET_DIR) : presets)
                          .toStdString()));
    } catch (const std::exception& e) {
        if (!specPath_.isEmpty()) panel_->addSweepFile(specPath_); // the combo shows the sweep still shown
        return fail(tr("Cannot open the sweep %1:\n%2")
                        .arg(QFileInfo(path).fileName(), QString::fromStdString(e.what())));
    }
    poll_.stop();
    run_.cancel();
    run_.wait(); // the runs in flight of the sweep shown until now
    reported_ = true;
    spec_ = spec;
    specPath_ = QFileInfo(path).absoluteFilePath();
    shownVersion_ = -1;
    panel_->addSweepFile(specPath_);
    panel_->setSweep(spec_.get());
    LocalSweepProgress idle;
    idle.total = spec_->runs();
    panel_->setProgress(idle);
    view_->setSweep(spec_);
    view_->setSelection(panel_->x(), panel_->y(), panel_->measure());
    emit statusMessage(
        tr("Sweep %1: %2 runs; Run starts them").arg(sweepName(*spec_, path)).arg(spec_->runs()), 5000);
    emit documentNameChanged();
    return succeed();
}

bool SweepsWorkspace::run(int threads) {
    if (!spec_) return fail(tr("No sweep to run: choose one in the Sweeps panel."));
    if (running()) return fail(tr("The sweep is still running: Cancel it first."));
    try {
        checkSweep(*spec_); // every cell's scene, before any work (the CLI's check)
    } catch (const std::exception& e) {
        return fail(tr("Cannot run the sweep:\n%1").arg(QString::fromStdString(e.what())));
    }
    // The sweep gets the cores: the Particles tab's simulation (which plays on behind the other tabs) waits.
    if (particles_->runner().playing()) {
        particles_->pause();
        emit statusMessage(tr("The Particles simulation is paused while the sweep runs"), 5000);
    }
    // The backend is opened once first, so that one that cannot open says why before any work; each worker
    // thread then opens its own (a GPU context is current on one thread). The trial opens on a thread of its
    // own too: this one has the views' OpenGL context current, beside which a headless one cannot be made
    // current.
    const std::string backend = panel_->backend();
    std::function<SweepCompute()> openCompute;
    if (backend != "cpu" && !backend.empty()) {
        QString why;
        std::thread([&] {
            try {
                (void)openBackend(backend);
            } catch (const std::exception& e) {
                why = QString::fromStdString(e.what());
            }
        }).join();
        if (!why.isEmpty()) return fail(tr("Cannot run the sweep on this backend:\n%1").arg(why));
        openCompute = [backend] {
            return sweepComputeOn(std::make_shared<const ComputeBackend>(openBackend(backend)));
        };
    }
    runBackend_ = backend.empty() ? "cpu" : backend;
    run_.start(spec_, threads > 0 ? threads : panel_->threads(), std::move(openCompute));
    reported_ = false;
    shownVersion_ = -1;
    poll();
    poll_.start();
    return succeed();
}

void SweepsWorkspace::cancel() {
    run_.cancel();
    poll();
}

bool SweepsWorkspace::running() const {
    const LocalSweepProgress p = run_.progress();
    return p.state == LocalSweepProgress::State::Running || p.state == LocalSweepProgress::State::Cancelling;
}

void SweepsWorkspace::poll() {
    if (!spec_) return;
    const LocalSweepProgress p = run_.progress();
    if (run_.version() != shownVersion_ || p.ended()) {
        shownVersion_ = run_.version();
        view_->setTable(sweepTableOf(*spec_, run_.entries()));
    }
    panel_->setProgress(p);
    if (!p.ended() || reported_) return;
    poll_.stop();
    run_.wait(); // the thread has ended: immediate
    reported_ = true;
    const QString name = sweepName(*spec_, specPath_);
    using State = LocalSweepProgress::State;
    if (p.state == State::Failed) {
        fail(tr("Sweep %1 failed:\n%2").arg(name, QString::fromStdString(p.error)));
        emit statusMessage(tr("Sweep %1 failed after %2 runs").arg(name).arg(p.done), 0);
        return;
    }
    emit statusMessage(p.state == State::Finished
                           ? tr("Sweep %1: %2 runs in %3 s").arg(name).arg(p.total).arg(p.seconds, 0, 'f', 1)
                           : tr("Sweep %1 cancelled after %2 of %3 runs").arg(name).arg(p.done).arg(p.total),
                       0);
}

void SweepsWorkspace::setSelection(const std::string& x, const std::string& y, const std::string& measure) {
    panel_->setSelection(x, y, measure);
}

QString SweepsWorkspace::documentName() const {
    return spec_ ? sweepName(*spec_, specPath_) : QString();
}

bool SweepsWorkspace::openRun(long run) {
    if (!spec_ || run < 0 || run >= spec_->runs()) return fail(tr("No such run in the sweep shown."));
    if (isTrainingMode(spec_->mode)) // a trained flow, not a particle run: say how to train it again
        return fail(
            tr("Run %1 trains a %2 flow; it has no scene to open. flowscope-cli sweep %3 --print-run %1 "
               "prints its command (flowscope-cli train, to which add --out FILE; or the problem for infer).")
                .arg(run)
                .arg(spec_->mode == SweepMode::Flow ? tr("generative") : tr("posterior"))
                .arg(specPath_.isEmpty() ? tr("SWEEP.json") : specPath_));
    Scene scene;
    try {
        scene = sweepSceneToOpen(*spec_, run);
        // Named as what it is, not as the sweep's base scene: the title then says where it came from.
        scene.name = tr("%1 run %2").arg(sweepName(*spec_, specPath_)).arg(run).toStdString();
    } catch (const std::exception& e) {
        return fail(tr("Run %1 has no scene to open:\n%2").arg(run).arg(QString::fromStdString(e.what())));
    }
    if (!particles_->setScene(scene)) return fail(particles_->lastError());
    // A Gaussian-mode scene the cone can draw opens there (as its presets do); any other in the particles.
    const bool cone = spec_->mode == SweepMode::Moments && !coneUnsupported(scene);
    QWidget* page = cone ? static_cast<QWidget*>(particles_->coneView()) : particles_->particleView();
    emit showPageRequested(page);
    if (!cone) particles_->play();
    const SweepPoint point = sweepPoint(*spec_, run);
    QStringList values;
    for (std::size_t a = 0; a < spec_->axes.size(); ++a)
        values << QStringLiteral("%1 = %2")
                      .arg(QString::fromStdString(spec_->axes[a].name))
                      .arg(point.values[a], 0, 'g', 6);
    emit statusMessage(tr("Opened run %1 of sweep %2 (%3)")
                           .arg(run)
                           .arg(sweepName(*spec_, specPath_), values.join(QStringLiteral(", "))),
                       8000);
    return succeed();
}

bool SweepsWorkspace::saveTable(const QString& dir) {
    if (!spec_) return fail(tr("No sweep to save: run one in the Sweeps tab."));
    const LocalSweepProgress p = run_.progress();
    if (!p.ended() || p.done == 0)
        return fail(p.ended() || p.state == LocalSweepProgress::State::Idle
                        ? tr("No finished run to save: run the sweep first.")
                        : tr("The sweep is still running: wait for it or Cancel it, then save."));
    if (!QDir().mkpath(dir))
        return fail(tr("Cannot create the folder %1").arg(QDir::toNativeSeparators(dir)));
    try {
        // A sweep directory, as flowscope-cli sweep keeps one: the spec and the finished runs in a journal of
        // the app's own, so that `flowscope-cli sweep` on it runs only the runs left; then, once every run
        // is in, the table.
        const std::string path = QFile::encodeName(dir).toStdString();
        prepareSweepDir(path, *spec_);
        const std::map<long, SweepJournalEntry> there = readSweepJournals(path, *spec_);
        std::vector<SweepJournalEntry> missing;
        for (const auto& [run, entry] : run_.entries())
            if (!there.count(run)) missing.push_back(entry);
        if (!missing.empty()) SweepJournal(path, "app", *spec_).append(missing);
        if (p.state == LocalSweepProgress::State::Finished)
            writeSweepTable(path, *spec_, run_.entries(),
                            {{"execution",
                              {{"backend", runBackend_},
                               {"workers", panel_->threads()},
                               {"schedule", "dynamic"},
                               {"wall_seconds", p.seconds},
                               {"app", true}}}});
    } catch (const std::exception& e) {
        return fail(tr("Cannot save the table:\n%1").arg(QString::fromStdString(e.what())));
    }
    return succeed();
}

void SweepsWorkspace::openSweepDialog() {
    const QString path = QFileDialog::getOpenFileName(
        host(), tr("Open sweep"), QFileInfo(specPath_).absolutePath(), tr("Sweeps (*.json)"));
    if (path.isEmpty()) return;
    if (!openSweep(path)) {
        QMessageBox::warning(host(), tr("Open sweep"), lastError());
        return;
    }
    emit showPageRequested(view_);
}

void SweepsWorkspace::saveTableDialog() {
    const QString title = tr("Save sweep table");
    const LocalSweepProgress p = run_.progress();
    if (!spec_ || !p.ended() || p.done == 0) {
        saveTable({}); // the message
        QMessageBox::information(host(), title, lastError());
        return;
    }
    const QString dir =
        QFileDialog::getExistingDirectory(host(), title, tableDir_.isEmpty() ? QDir::homePath() : tableDir_);
    if (dir.isEmpty()) return;
    if (!saveTable(dir)) {
        QMessageBox::warning(host(), title, lastError());
        return;
    }
    tableDir_ = dir;
    const QString where = QDir::toNativeSeparators(dir);
    if (p.state == LocalSweepProgress::State::Finished) {
        emit statusMessage(tr("Wrote %1 (results.csv, results.json, a .npy per column)").arg(where), 8000);
        return;
    }
    // A partial sweep: its runs are kept for the command line to finish.
    QMessageBox::information(
        host(), title,
        tr("The sweep has %1 of its %2 runs, so %3 holds them in a journal, without a table yet.\n\n"
           "To run the %4 left and write the table:\n    flowscope-cli sweep %5 --out %3")
            .arg(p.done)
            .arg(p.total)
            .arg(where)
            .arg(p.total - p.done)
            .arg(QDir::toNativeSeparators(QDir(dir).filePath(QStringLiteral("sweep.json")))));
}

} // namespace flowscope
