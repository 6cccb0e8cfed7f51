// Flowscope UI: the Particles workspace (ParticlesWorkspace.h): its scene, run, exports and settings. The
// controls it builds (actions, tool bars, menus, docks, their wiring) are in ParticlesControls.cpp.
#include "ui/workspaces/particles/ParticlesWorkspace.h"

#include "engine/backend/Registry.h"
#include "engine/gaussian/MomentField.h"
#include "engine/io/ShareString.h"
#include "engine/scene/SceneShareString.h"
#include "render/animation/AnimationExporter.h"
#include "ui/export/ExportDialogs.h"
#include "ui/panels/MatrixEditor.h"
#include "ui/panels/PlotsPanel.h"
#include "ui/panels/PresetBrowser.h"
#include "ui/panels/ScenePanel.h"
#include "ui/views/ConeView.h"
#include "ui/views/SharedGlBackend.h"
#include "ui/widgets/ElidedLabel.h"
#include "ui/widgets/Icons.h"
#include "ui/widgets/Theme.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMainWindow>
#include <QMenu>
#include <QMessageBox>
#include <QOffscreenSurface>
#include <QSettings>
#include <QSlider>
#include <QStatusBar>
#include <QTimer>
#include <QToolBar>

#include <cmath>
#include <exception>

namespace flowscope {

namespace {
constexpr int kMaxRecent = 8;
// The settings keys of the picture's line layers, in ParticlePicture::Layer's order.
const std::array<QString, ParticlePicture::kLayerCount> kLayerKeys{
    QStringLiteral("view/overlay"), QStringLiteral("view/parking"), QStringLiteral("view/hardmax"),
    QStringLiteral("view/trails")};

} // namespace

std::optional<ProjectionSpec> parseAxes(const QString& text, int d, QString* why) {
    const QStringList parts = text.split(QLatin1Char(','), Qt::SkipEmptyParts);
    if (parts.size() < 2 || parts.size() > 3) {
        if (why) *why = QObject::tr("Give two or three indices separated by commas, e.g. \"0, 2\".");
        return std::nullopt;
    }
    if (parts.size() == 3 && d < 3) {
        if (why) *why = QObject::tr("Three axes need d >= 3; this scene has d = %1.").arg(d);
        return std::nullopt;
    }
    ProjectionSpec p;
    p.dims = int(parts.size());
    for (int k = 0; k < p.dims; ++k) {
        bool ok = false;
        const int axis = parts[k].trimmed().toInt(&ok);
        if (!ok || axis < 0 || axis >= d) {
            if (why)
                *why = QObject::tr("\"%1\" is not a coordinate index from 0 to %2.")
                           .arg(parts[k].trimmed())
                           .arg(d - 1);
            return std::nullopt;
        }
        p.axes[std::size_t(k)] = axis;
    }
    return p;
}

// --- Scenes: open, apply, live edits, save ---

void ParticlesWorkspace::setPresetDirectory(const QString& dir) {
    presetCombo_->clear();
    const QFileInfoList files =
        QDir(dir).entryInfoList({QStringLiteral("*.json")}, QDir::Files | QDir::Readable, QDir::Name);
    for (const QFileInfo& f : files) presetCombo_->addItem(f.completeBaseName(), f.absoluteFilePath());
    presetCombo_->setEnabled(!files.isEmpty());
    presetCombo_->setPlaceholderText(files.isEmpty() ? tr("(no presets)") : tr("(none)"));
    presets_->setDirectory(dir);
    presetDir_ = QFileInfo(dir).absoluteFilePath();
    selectPresetFor(document_.path());
}

void ParticlesWorkspace::selectPresetFor(const QString& path) {
    const QString absolute = path.isEmpty() ? QString() : QFileInfo(path).absoluteFilePath();
    presetCombo_->setCurrentIndex(absolute.isEmpty() ? -1 : presetCombo_->findData(absolute));
    presets_->select(absolute);
}

bool ParticlesWorkspace::openSceneFile(const QString& path) {
    Scene scene;
    try {
        scene = loadScene(QFile::encodeName(path).toStdString());
    } catch (const std::exception& e) {
        return fail(
            tr("Cannot open %1:\n%2").arg(QFileInfo(path).fileName(), QString::fromStdString(e.what())));
    }
    if (!setScene(scene, path)) return false;
    addRecent(QFileInfo(path).absoluteFilePath());
    return true;
}

bool ParticlesWorkspace::setScene(const Scene& scene, const QString& sourcePath) {
    QString why;
    if (!document_.open(scene, sourcePath, &why)) { // showOpened() follows when it runs
        const QString what = sourcePath.isEmpty() ? tr("the scene") : QFileInfo(sourcePath).fileName();
        return fail(tr("Cannot run %1:\n%2").arg(what, why));
    }
    return succeed();
}

void ParticlesWorkspace::showOpened() {
    const Scene& scene = document_.scene();
    const QString sourcePath = document_.path();
    baseHeads_ = scene.attention.heads;
    scrubIndex_.reset();
    view_->setPreview(nullptr);
    view_->setScene(scene);
    cone_->setScene(scene);
    plots_->clear();
    plots_->setRankTolerance(scene.output.rankTol);
    plots_->setScene(scene);
    // A 3-D default camera for d >= 3 (axes for d = 3, principal components beyond).
    const int projection = scene.d >= 3 ? (scene.d > 3 ? 3 : 2) : 0;
    if (QAction* a = projectionGroup_->actions().value(projection)) a->setChecked(true);

    const QString name = !scene.name.empty()     ? QString::fromStdString(scene.name)
                         : !sourcePath.isEmpty() ? QFileInfo(sourcePath).completeBaseName()
                                                 : tr("untitled");
    sceneName_ = name;
    emit documentNameChanged();
    QString label = name;
    if (!scene.figure.empty()) label += tr(" (%1)").arg(QString::fromStdString(scene.figure));
    if (!scene.description.empty()) label += tr(" — %1").arg(QString::fromStdString(scene.description));
    sceneLine_ = label;
    if (active()) sceneLabel_->setText(label);
    selectPresetFor(sourcePath);
    updateControls();
}

bool ParticlesWorkspace::saveSceneFile(const QString& path) {
    QString why;
    if (!document_.save(path, &why))
        return fail(document_.hasScene() ? tr("Cannot save %1:\n%2").arg(QFileInfo(path).fileName(), why)
                                         : why);
    addRecent(QFileInfo(path).absoluteFilePath());
    return succeed();
}

void ParticlesWorkspace::editAttention(const AttentionSpec& spec) {
    if (!document_.hasScene()) return;
    QString why;
    if (!document_.setAttention(spec, view_, &why)) emit statusMessage(why, 8000);
}

void ParticlesWorkspace::showEdited(ParticleDocument::Part part, QObject* from) {
    const Scene& scene = document_.scene();
    plots_->setScene(scene, true);
    if (part == ParticleDocument::Part::Integrator) {
        view_->setIntegrator(scene.integrator);
        return;
    }
    view_->setAttention(scene.attention);
    cone_->setScene(scene);
    // Once the run has moved, the analysis speaks of the tokens as they are (as the view's overlay does).
    if (const std::shared_ptr<const Snapshot> now = runner().snapshot(); now && now->step > 0)
        if (const std::optional<GaussianState> g = tokenGaussian(now->tokens))
            matrixEditor_->setAnalysisStart(now->t, g->cov);
    if (from != view_) {
        baseHeads_ = scene.attention.heads; // the V-scale slider restarts from the matrices as edited
        view_->resetValueScale();
    }
}

// --- Recent files, file dialogs, share strings, presets ---

void ParticlesWorkspace::addRecent(const QString& path) {
    recent_.removeAll(path);
    recent_.prepend(path);
    while (recent_.size() > kMaxRecent) recent_.removeLast();
    rebuildRecentMenu();
}

void ParticlesWorkspace::rebuildRecentMenu() {
    if (!recentMenu_) return;
    recentMenu_->clear();
    for (const QString& path : recent_) {
        QAction* a = recentMenu_->addAction(QFileInfo(path).fileName());
        a->setToolTip(path);
        connect(a, &QAction::triggered, this, [this, path] {
            if (!openSceneFile(path)) QMessageBox::warning(host(), tr("Open recent"), lastError());
        });
    }
    recentMenu_->setEnabled(!recent_.isEmpty());
}

void ParticlesWorkspace::openSceneDialog() {
    const QString start = document_.path().isEmpty() ? QString() : QFileInfo(document_.path()).absolutePath();
    const QString path =
        QFileDialog::getOpenFileName(host(), tr("Open scene"), start, tr("Scenes (*.json);;All files (*)"));
    if (path.isEmpty()) return;
    if (!openSceneFile(path)) QMessageBox::warning(host(), tr("Open scene"), lastError());
}

void ParticlesWorkspace::saveSceneDialog() {
    const QString path = askSavePathOfKind(host(), tr("Save scene"), QStringLiteral("scene"),
                                           tr("Scenes (*.json)"), {QStringLiteral(".json")});
    if (path.isEmpty()) return;
    if (!saveSceneFile(path)) QMessageBox::warning(host(), tr("Save scene"), lastError());
}

QString ParticlesWorkspace::shareString(QString* why) const {
    if (!document_.hasScene()) {
        if (why) *why = tr("There is no scene to share.");
        return {};
    }
    try {
        return QString::fromStdString(
            encodeShareString(document_.scene())); // what Save would write, as one line
    } catch (const std::exception& e) {
        if (why) *why = tr("Cannot make the share string:\n%1").arg(QString::fromStdString(e.what()));
        return {};
    }
}

bool ParticlesWorkspace::takesShareString(const QString& text) const {
    return looksLikeShareString(text.trimmed().toStdString());
}

bool ParticlesWorkspace::openShareString(const QString& text) {
    Scene scene;
    try {
        scene = decodeShareString(text.trimmed().toStdString());
    } catch (const std::exception& e) {
        return fail(tr("Cannot open the share string:\n%1").arg(QString::fromStdString(e.what())));
    }
    return setScene(scene);
}

void ParticlesWorkspace::copyShareString() {
    QString why;
    const QString text = shareString(&why);
    if (text.isEmpty()) {
        QMessageBox::warning(host(), tr("Copy scene as share string"), why);
        return;
    }
    QGuiApplication::clipboard()->setText(text);
    emit statusMessage(tr("Copied the scene as a share string (%1 characters)").arg(text.size()), 5000);
}

void ParticlesWorkspace::pasteShareString() {
    const QString text = QGuiApplication::clipboard()->text();
    if (text.trimmed().isEmpty()) {
        QMessageBox::warning(host(), tr("Paste scene from share string"),
                             tr("The clipboard holds no text: copy a share string (fs1.…) first."));
        return;
    }
    if (!openShareString(text))
        QMessageBox::warning(host(), tr("Paste scene from share string"), lastError());
    else
        emit statusMessage(tr("Opened the scene from the share string"), 5000);
}

void ParticlesWorkspace::openPreset(int index) {
    const QString path = presetCombo_->itemData(index).toString();
    if (path.isEmpty() || !openSceneFile(path)) {
        QMessageBox::warning(host(), tr("Open preset"), lastError());
        selectPresetFor(document_.path()); // the combo shows the scene that is actually running
    }
}

// --- Transport: play, pause, step, scrub ---

void ParticlesWorkspace::continueFromScrub() {
    if (!scrubIndex_) return;
    if (auto s = runner().snapshot(); s && s->history && std::size_t(*scrubIndex_) < s->history->size())
        runner().seek(s->history->at(std::size_t(*scrubIndex_)).t);
    scrubIndex_.reset();
    view_->setPreview(nullptr);
}

void ParticlesWorkspace::togglePlay() {
    if (runner().playing())
        pause();
    else
        play();
}

void ParticlesWorkspace::pause() {
    runner().pause();
    updateControls();
}

void ParticlesWorkspace::play() {
    continueFromScrub();
    // Play at the end of a run (or after an event) starts it again from the beginning.
    if (auto s = runner().snapshot(); s && s->finished && !scrubIndex_) runner().reset();
    runner().play();
    updateControls();
}

void ParticlesWorkspace::stepOnce() {
    continueFromScrub();
    runner().stepOnce();
    updateControls();
}

void ParticlesWorkspace::reset() {
    scrubIndex_.reset();
    view_->setPreview(nullptr);
    runner().reset();
}

void ParticlesWorkspace::frameAll() {
    view_->frameAll();
}

void ParticlesWorkspace::setFollow(bool on) {
    followAction_->setChecked(on);
}

void ParticlesWorkspace::setMaxSpeed(bool on) {
    maxSpeedAction_->setChecked(on);
}

void ParticlesWorkspace::scrubTo(int index) {
    const auto live = runner().snapshot();
    if (!live || !live->history) return;
    const long count = long(live->history->size());
    if (index >= count - 1 || index < 0) { // the right end: follow the run again
        scrubIndex_.reset();
        view_->setPreview(nullptr);
        return;
    }
    runner().pause();
    const long k = live->history->frameWithTokensAtOrBefore(live->history->at(std::size_t(index)).t);
    if (k < 0) return;
    const RecordedFrame f = live->history->at(std::size_t(k));
    auto preview = std::make_shared<Snapshot>(*live);
    preview->t = f.t;
    preview->step = f.step;
    preview->tokens = *f.tokens;
    preview->observables = f.obs;
    preview->finished = false;
    preview->event.reset();
    preview->playing = false;
    scrubIndex_ = int(k);
    view_->setPreview(preview);
}

// --- The run's snapshots and the backend ---

void ParticlesWorkspace::updatePlots() {
    if (!plots_->isVisible()) return;
    plots_->setSnapshot(runner().snapshot());
    if (const auto shown = view_->displayedSnapshot()) plots_->setCursorTime(shown->t);
}

void ParticlesWorkspace::onSnapshot() {
    updateControls();
    const auto shown = view_->displayedSnapshot();
    const auto live = runner().snapshot();
    if (!shown) return;
    // The particles' covariance as a dot in the cone: O(N d^2), so only while the cone is shown (switching
    // tabs calls this again).
    if (cone_->isVisible()) {
        cone_->setTime(shown->t);
        if (shown->tokens.cols() == 2)
            cone_->setCurrentCovariance(tokenCovariance(shown->tokens));
        else
            cone_->setCurrentCovariance(std::nullopt);
        cone_->setParticleEvent(shown->event); // the particles stopped (diverged, ...): a banner says so
    }

    const int frames = live && live->history ? int(live->history->size()) : 0;
    const QSignalBlocker block(scrubber_);
    scrubber_->setRange(0, std::max(frames - 1, 0));
    if (!scrubIndex_ && !scrubber_->isSliderDown()) scrubber_->setValue(scrubber_->maximum());
    scrubLabel_->setText(scrubIndex_ ? tr("t = %1").arg(shown->t, 0, 'f', 3)
                                     : tr("t = %1 (live)").arg(shown->t, 0, 'f', 3));
    if (live) {
        const QString note = QString::fromStdString(live->backendNote);
        if (backendNote_->text() != note) {
            backendNote_->setText(note);
            backendNote_->setToolTip(note);
            backendNote_->setVisible(!note.isEmpty());
        }
    }
}

void ParticlesWorkspace::setBackend(const QString& kind) {
    const int index = backendCombo_->findData(kind);
    backendCombo_->setCurrentIndex(std::max(index, 0));
    runner().setBackend(
        backendOpener(backendCombo_->currentData().toString().toStdString(), computeSurface_));
}

QString ParticlesWorkspace::backend() const {
    return backendCombo_->currentData().toString();
}

// --- The animation export dialog ---

void ParticlesWorkspace::exportAnimationDialog() {
    if (!document_.hasScene()) return;
    QWidget* shown = cone_->isVisible() ? static_cast<QWidget*>(cone_) : view_;
    std::optional<AnimationView> view;
    if (shown == cone_) view = discAction_->isChecked() ? AnimationView::Disc : AnimationView::Cone;
    animationExportDialog(
        host(), document_.scene(), shown->size() * shown->devicePixelRatioF(), view,
        [this](const AnimationOptions& o, const QString& path, const ExportProgress& progress) {
            return reported(animationResult(o, path, progress));
        },
        [this](const QString& text, int ms) { emit statusMessage(text, ms); });
}

// --- Construction and the shell's contract: pages, docks, menus, settings ---

ParticlesWorkspace::ParticlesWorkspace(QMainWindow* host) : Workspace(host), window_(host) {
    view_ = new ParticleView(host);
    view_->setSource([this] { return runner().snapshot(); });
    cone_ = new ConeView(host);
    connect(view_, &ParticleView::snapshotChanged, this, &ParticlesWorkspace::onSnapshot);
    // Charts re-lay out all their series on every change: 4 Hz, and only while the Plots panel is shown.
    auto* plotTimer = new QTimer(this);
    connect(plotTimer, &QTimer::timeout, this, &ParticlesWorkspace::updatePlots);
    plotTimer->start(250);

    buildActions();
    buildDocks();
    buildToolBars();
    buildMenus();
    connectViews();
    sceneLabel_ = new ElidedLabel(host);
    sceneLabel_->setObjectName(QStringLiteral("sceneLine"));
    sceneLabel_->setText(tr("No scene"));
    window_->statusBar()->addWidget(sceneLabel_, 1);
    backendNote_ = new QLabel(host);
    backendNote_->setObjectName(QStringLiteral("backendNote"));
    backendNote_->setVisible(false);
    window_->statusBar()->addPermanentWidget(backendNote_);
    updateControls();
}

// The views outlive the workspace (the shell deletes it first): cut their link to the runner.
ParticlesWorkspace::~ParticlesWorkspace() {
    view_->setSource({});
}

QList<WorkspacePage> ParticlesWorkspace::pages() const {
    return {
        {view_,
         tr("Particles"),
         tr("The tokens x_i(t) of dx_i/dt = Σ_j P_ij V x_j"),
         QKeySequence(Qt::Key_1),
         {}},
        {cone_, tr("Covariance cone"),
         tr("2×2 covariances Σ = [[a, c], [c, b]] as points (a − b, 2c, a + b) of the PSD cone; its boundary "
            "is the rank-1 matrices"),
         QKeySequence(Qt::Key_2), tr("Cone")}};
}

QList<WorkspaceDock> ParticlesWorkspace::docks() const {
    return docks_;
}

QList<QToolBar*> ParticlesWorkspace::toolBars() const {
    return {runBar_, timeBar_};
}

QList<QMenu*> ParticlesWorkspace::menus() const {
    return {simulationMenu_, displayMenu_};
}

QList<QAction*> ParticlesWorkspace::exportActions() const {
    return {trajectoryExport_, momentsExport_, animationExport_};
}

QList<QAction*> ParticlesWorkspace::fileOpenActions() const {
    return {openAction_, recentMenu_->menuAction()};
}

QList<QAction*> ParticlesWorkspace::fileSaveActions() const {
    return {saveAction_, saveAsAction_};
}

QList<QAction*> ParticlesWorkspace::editActions() const {
    return {copyShareAction_, pasteShareAction_};
}

QWidget* ParticlesWorkspace::plotsOf(QWidget*) const {
    return plots_->content();
}

void ParticlesWorkspace::setActive(bool active) {
    Workspace::setActive(active);
    // The text goes with the workspace, the visibility stays the status bar's: it hides the line under a
    // message and shows it again after (showing it here drew it over the message at startup).
    sceneLabel_->setText(active ? sceneLine_ : QString());
    backendNote_->setVisible(active && !backendNote_->text().isEmpty());
    // The display's shortcuts (H) and options belong to this workspace's pages only.
    // (updateControls() then enables the parking and hardmax layers only where the scene has them.)
    for (QAction* a : {maxSpeedAction_, hudAction_, discAction_, axesAction_}) a->setEnabled(active);
    for (QAction* a : layerActions_) a->setEnabled(active);
    for (QActionGroup* g : {colorGroup_, projectionGroup_}) g->setEnabled(active);
    controlsState_.reset();
    updateControls();
    if (active) onSnapshot(); // the cone shows the covariance only while it is visible
}

void ParticlesWorkspace::saveSettings(QSettings& s) const {
    s.setValue(QStringLiteral("view/colorBy"), int(view_->colorBy()));
    for (int k = 0; k < ParticlePicture::kLayerCount; ++k)
        s.setValue(kLayerKeys[std::size_t(k)], view_->layer(ParticleView::Layer(k)));
    s.setValue(QStringLiteral("view/disc"), discAction_->isChecked());
    s.setValue(QStringLiteral("run/stepsPerSecond"), rate_);
    s.setValue(QStringLiteral("run/backend"), backend());
    s.setValue(QStringLiteral("files/recent"), recent_);
    if (document_.hasScene()) {
        s.setValue(QStringLiteral("scene/json"), QString::fromStdString(sceneToJson(document_.scene())));
        s.setValue(QStringLiteral("scene/path"), document_.path());
    }
}

void ParticlesWorkspace::restoreSettings(QSettings& s) {
    const int color = std::clamp(s.value(QStringLiteral("view/colorBy"), 0).toInt(), 0, 3);
    colorGroup_->actions().value(color)->setChecked(true);
    view_->setColorBy(ColorBy(color));
    for (int k = 0; k < ParticlePicture::kLayerCount; ++k) {
        QAction* a = layerActions_[std::size_t(k)];
        a->setChecked(s.value(kLayerKeys[std::size_t(k)], a->isChecked()).toBool());
    }
    discAction_->setChecked(s.value(QStringLiteral("view/disc"), false).toBool());
    setStepsPerSecond(
        s.value(QStringLiteral("run/stepsPerSecond"), WorkerLoop::kDefaultStepsPerSecond).toDouble());
    recent_ = s.value(QStringLiteral("files/recent")).toStringList();
    rebuildRecentMenu();
    setBackend(s.value(QStringLiteral("run/backend")).toString()); // none saved: the first, the CPU
    savedSceneJson_ = s.value(QStringLiteral("scene/json")).toString();
    savedScenePath_ = s.value(QStringLiteral("scene/path")).toString();
}

std::optional<std::pair<Scene, QString>> ParticlesWorkspace::savedScene() const {
    if (savedSceneJson_.isEmpty()) return std::nullopt;
    try {
        return std::pair(sceneFromJson(savedSceneJson_.toStdString()), savedScenePath_);
    } catch (const std::exception&) {
        return std::nullopt; // a stale or damaged entry: the app starts from the default scene instead
    }
}

// --- Exports: the dialogs and the files, of the scene as it runs now ---

void ParticlesWorkspace::exportDialog(ExportKind kind) {
    const bool moments = kind == ExportKind::Moments;
    const QString title = moments ? tr("Export moment trajectories") : tr("Export trajectory");
    const QString path =
        askSavePathOfKind(host(), title, moments ? QStringLiteral("moments") : QStringLiteral("trajectory"),
                          tr("NumPy arrays (*.npy)"), {QStringLiteral(".npy")});
    if (path.isEmpty()) return;
    const auto status = [this](const QString& text, int ms) { emit statusMessage(text, ms); };
    const auto done = [&path](double) { return tr("Exported %1").arg(QDir::toNativeSeparators(path)); };
    if (!moments) {
        if (exportTrajectory(path))
            status(done(0), 5000);
        else
            QMessageBox::warning(host(), title, lastError());
        return;
    }
    runExport(
        host(), title, 1000, [](long, long) { return tr("Solving the moment equations..."); },
        [this, &path](const ExportProgress& progress) { return reported(momentsResult(path, progress)); },
        status, done);
}

bool ParticlesWorkspace::exportTrajectory(const QString& path, bool asFloat32) {
    const auto live = runner().snapshot();
    return report(flowscope::exportTrajectory(live ? live->history.get() : nullptr, path, asFloat32));
}

bool ParticlesWorkspace::exportMoments(const QString& path, const ExportProgress& progress) {
    return report(momentsResult(path, progress));
}

bool ParticlesWorkspace::exportAnimation(const AnimationOptions& options, const QString& path,
                                         const ExportProgress& progress) {
    return report(animationResult(options, path, progress));
}

// The scene as it runs now (live edits included).
ExportResult ParticlesWorkspace::momentsResult(const QString& path, const ExportProgress& progress) const {
    if (!document_.hasScene()) return ExportResult::failed(tr("There is no scene to export."));
    return flowscope::exportMoments(document_.scene(), path, progress);
}

// The scene as it runs now; the export runs a simulation of its own from t = 0.
ExportResult ParticlesWorkspace::animationResult(const AnimationOptions& options, const QString& path,
                                                 const ExportProgress& progress) const {
    if (!document_.hasScene()) return ExportResult::failed(tr("There is no scene to export."));
    return exportSceneAnimation(document_.scene(), options, path, progress);
}

} // namespace flowscope
