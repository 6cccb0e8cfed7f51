#include "ui/workspaces/particles/ParticlesWorkspace.h"

#include "engine/backend/Registry.h"
#include "engine/scene/SceneShareString.h"
#include "ui/export/AnimationExporter.h"
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
// SceneError's what() is "pointer: message"; an error about the whole file has an empty pointer.
QString describe(const std::exception& e) {
    if (const auto* se = dynamic_cast<const SceneError*>(&e); se && se->pointer.empty()) {
        QString text = QString::fromStdString(se->what());
        if (text.startsWith(QStringLiteral(": "))) text.remove(0, 2);
        return text;
    }
    return QString::fromStdString(e.what());
}

constexpr int kMaxRecent = 8;
// The speed slider is logarithmic: position p in [0, 1000] is 10^(p/1000 * log10(kMaxRate)) steps/s.
constexpr double kMaxRate = 2000.0;
int rateToSlider(double rate) {
    return int(std::lround(1000.0 * std::log10(std::clamp(rate, 1.0, kMaxRate)) / std::log10(kMaxRate)));
}
double sliderToRate(int v) {
    return std::pow(10.0, v / 1000.0 * std::log10(kMaxRate));
}

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

void ParticlesWorkspace::syncRateControls() {
    const bool maxSpeed = maxSpeedAction_->isChecked();
    runner_.setMaxStepsPerSecond(maxSpeed ? 0.0 : rate_);
    speed_->setEnabled(!maxSpeed);
    speedLabel_->setText(maxSpeed ? tr("max") : tr("%1 steps/s").arg(rate_, 0, 'f', rate_ < 10 ? 1 : 0));
    view_->setRate(rate_, maxSpeed);
}

void ParticlesWorkspace::setStepsPerSecond(double rate) {
    rate_ = std::clamp(rate, 1.0, kMaxRate);
    const QSignalBlocker block(speed_);
    speed_->setValue(rateToSlider(rate_));
    syncRateControls();
}

void ParticlesWorkspace::setPresetDirectory(const QString& dir) {
    presetCombo_->clear();
    const QFileInfoList files =
        QDir(dir).entryInfoList({QStringLiteral("*.json")}, QDir::Files | QDir::Readable, QDir::Name);
    for (const QFileInfo& f : files) presetCombo_->addItem(f.completeBaseName(), f.absoluteFilePath());
    presetCombo_->setEnabled(!files.isEmpty());
    presetCombo_->setPlaceholderText(files.isEmpty() ? tr("(no presets)") : tr("(none)"));
    presets_->setDirectory(dir);
    presetDir_ = QFileInfo(dir).absoluteFilePath();
    selectPresetFor(scenePath_);
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
        return fail(tr("Cannot open %1:\n%2").arg(QFileInfo(path).fileName(), describe(e)));
    }
    if (!setScene(scene, path)) return false;
    addRecent(QFileInfo(path).absoluteFilePath());
    return true;
}

bool ParticlesWorkspace::setScene(const Scene& scene, const QString& sourcePath) {
    try {
        runner_.setScene(scene);
    } catch (const std::exception& e) {
        const QString what = sourcePath.isEmpty() ? tr("the scene") : QFileInfo(sourcePath).fileName();
        return fail(tr("Cannot run %1:\n%2").arg(what, describe(e)));
    }
    scene_ = scene;
    baseHeads_ = scene.attention.heads;
    scenePath_ = sourcePath;
    scrubIndex_.reset();
    view_->setPreview(nullptr);
    view_->setScene(scene);
    cone_->setScene(scene);
    scenePanel_->setScene(scene);
    matrixEditor_->setScene(scene);
    plots_->clear();
    plots_->setRankTolerance(scene.output.rankTol);
    // A 3-D default camera for d >= 3 (axes for d = 3, principal components beyond).
    const int projection = scene.d >= 3 ? (scene.d > 3 ? 3 : 2) : 0;
    if (QAction* a = projectionGroup_->actions().value(projection)) a->setChecked(true);

    const QString name = !scene.name.empty()     ? QString::fromStdString(scene.name)
                         : !sourcePath.isEmpty() ? QFileInfo(sourcePath).completeBaseName()
                                                 : tr("untitled");
    emit titleChanged(name);
    QString label = name;
    if (!scene.figure.empty()) label += tr(" (%1)").arg(QString::fromStdString(scene.figure));
    if (!scene.description.empty()) label += tr(" — %1").arg(QString::fromStdString(scene.description));
    sceneLabel_->setText(label);
    selectPresetFor(sourcePath);
    updateControls();
    return succeed();
}

bool ParticlesWorkspace::saveSceneFile(const QString& path) {
    if (!scene_) return fail(tr("There is no scene to save."));
    try {
        saveScene(*scene_, QFile::encodeName(path).toStdString()); // atomic: written aside, then renamed
    } catch (const std::exception& e) {
        return fail(tr("Cannot save %1:\n%2").arg(QFileInfo(path).fileName(), describe(e)));
    }
    scenePath_ = path;
    addRecent(QFileInfo(path).absoluteFilePath());
    return succeed();
}

void ParticlesWorkspace::applyAttention(const AttentionSpec& spec, QObject* from) {
    if (!scene_) return;
    scene_->attention = spec;
    runner_.setAttention(spec);
    view_->setAttention(spec);
    cone_->setScene(*scene_);
    if (from != scenePanel_) scenePanel_->setAttention(spec);
    if (from != matrixEditor_) matrixEditor_->setAttention(spec);
    if (from != view_) {
        baseHeads_ = spec.heads; // the V-scale slider restarts from the matrices as edited
        view_->resetValueScale();
    }
}

void ParticlesWorkspace::applyIntegrator(const IntegratorSpec& spec) {
    if (!scene_) return;
    scene_->integrator = spec;
    runner_.setIntegrator(spec);
    view_->setIntegrator(spec);
}

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
    const QString start = scenePath_.isEmpty() ? QString() : QFileInfo(scenePath_).absolutePath();
    const QString path =
        QFileDialog::getOpenFileName(host(), tr("Open scene"), start, tr("Scenes (*.json);;All files (*)"));
    if (path.isEmpty()) return;
    if (!openSceneFile(path)) QMessageBox::warning(host(), tr("Open scene"), lastError());
}

void ParticlesWorkspace::saveSceneDialog() {
    const QString start = scenePath_.isEmpty() ? QDir::homePath() : QFileInfo(scenePath_).absolutePath();
    QString path = QFileDialog::getSaveFileName(host(), tr("Save scene"), start, tr("Scenes (*.json)"));
    if (path.isEmpty()) return;
    if (!path.endsWith(QStringLiteral(".json"))) path += QStringLiteral(".json");
    if (!saveSceneFile(path)) QMessageBox::warning(host(), tr("Save scene"), lastError());
}

QString ParticlesWorkspace::shareString(QString* why) const {
    if (!scene_) {
        if (why) *why = tr("There is no scene to share.");
        return {};
    }
    try {
        return QString::fromStdString(encodeShareString(*scene_)); // what Save would write, as one line
    } catch (const std::exception& e) {
        if (why) *why = tr("Cannot make the share string:\n%1").arg(QString::fromStdString(e.what()));
        return {};
    }
}

bool ParticlesWorkspace::openShareString(const QString& text) {
    Scene scene;
    try {
        scene = decodeShareString(text.trimmed().toStdString());
    } catch (const std::exception& e) {
        return fail(tr("Cannot open the share string:\n%1").arg(describe(e)));
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
        selectPresetFor(scenePath_); // the combo shows the scene that is actually running
    }
}

void ParticlesWorkspace::continueFromScrub() {
    if (!scrubIndex_) return;
    if (auto s = runner_.snapshot(); s && s->history && std::size_t(*scrubIndex_) < s->history->size())
        runner_.seek(s->history->at(std::size_t(*scrubIndex_)).t);
    scrubIndex_.reset();
    view_->setPreview(nullptr);
}

void ParticlesWorkspace::togglePlay() {
    if (runner_.playing())
        runner_.pause();
    else
        play();
    updateControls();
}

void ParticlesWorkspace::play() {
    continueFromScrub();
    // Play at the end of a run (or after an event) starts it again from the beginning.
    if (auto s = runner_.snapshot(); s && s->finished && !scrubIndex_) runner_.reset();
    runner_.play();
    updateControls();
}

void ParticlesWorkspace::stepOnce() {
    continueFromScrub();
    runner_.stepOnce();
    updateControls();
}

void ParticlesWorkspace::reset() {
    scrubIndex_.reset();
    view_->setPreview(nullptr);
    runner_.reset();
}

void ParticlesWorkspace::frameAll() {
    view_->frameAll();
}

void ParticlesWorkspace::setMaxSpeed(bool on) {
    maxSpeedAction_->setChecked(on);
}

void ParticlesWorkspace::scrubTo(int index) {
    const auto live = runner_.snapshot();
    if (!live || !live->history) return;
    const long count = long(live->history->size());
    if (index >= count - 1 || index < 0) { // the right end: follow the run again
        scrubIndex_.reset();
        view_->setPreview(nullptr);
        return;
    }
    runner_.pause();
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

void ParticlesWorkspace::updatePlots() {
    if (!plots_->isVisible()) return;
    plots_->setSnapshot(runner_.snapshot());
    if (const auto shown = view_->displayedSnapshot()) plots_->setCursorTime(shown->t);
}

void ParticlesWorkspace::onSnapshot() {
    updateControls();
    const auto shown = view_->displayedSnapshot();
    const auto live = runner_.snapshot();
    if (!shown) return;
    // The particles' covariance as a dot in the cone: O(N d^2), so only while the cone is shown (switching
    // tabs calls this again).
    if (cone_->isVisible()) {
        cone_->setTime(shown->t);
        if (shown->tokens.cols() == 2)
            cone_->setCurrentCovariance(tokenCovariance(shown->tokens));
        else
            cone_->setCurrentCovariance(std::nullopt);
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
    runner_.setBackend(backendOpener(backendCombo_->currentData().toString().toStdString(), computeSurface_));
}

QString ParticlesWorkspace::backend() const {
    return backendCombo_->currentData().toString();
}

void ParticlesWorkspace::updateControls() {
    // Called for every new snapshot (~60 Hz while running): touch the actions only when something changed.
    const bool playing = runner_.playing();
    const bool have = scene_.has_value();
    if (controlsState_ == std::pair(playing, have)) return;
    controlsState_ = std::pair(playing, have);
    playAction_->setText(playing ? tr("Pause") : tr("Play"));
    playAction_->setIcon(
        makeIcon(playing ? IconKind::Pause : IconKind::Play, host()->palette().color(QPalette::ButtonText)));
    for (QAction* a : {saveAction_, saveAsAction_}) a->setEnabled(have);
    // The run's shortcuts (Space, S, R, F) act only while this workspace's pages are shown.
    for (QAction* a : {playAction_, stepAction_, resetAction_, frameAction_}) a->setEnabled(have && active());
}

void ParticlesWorkspace::exportAnimationDialog() {
    if (!scene_) return;
    QWidget* shown = cone_->isVisible() ? static_cast<QWidget*>(cone_) : view_;
    std::optional<AnimationView> view;
    if (shown == cone_) view = discAction_->isChecked() ? AnimationView::Disc : AnimationView::Cone;
    animationExportDialog(
        host(), *scene_, shown->size() * shown->devicePixelRatioF(), view,
        [this](const AnimationOptions& o, const QString& path, const ExportProgress& progress) {
            const ExportResult r = exportSceneAnimation(*scene_, o, path, progress);
            report(r);
            return r;
        },
        [this](const QString& text, int ms) { emit statusMessage(text, ms); });
}

void ParticlesWorkspace::buildActions() {
    const QColor ink = host()->palette().color(QPalette::ButtonText);
    openAction_ = new QAction(makeIcon(IconKind::Open, ink), tr("&Open scene..."), this);
    openAction_->setShortcut(QKeySequence::Open);
    connect(openAction_, &QAction::triggered, this, &ParticlesWorkspace::openSceneDialog);

    saveAction_ = new QAction(tr("&Save scene"), this);
    saveAction_->setShortcut(QKeySequence::Save);
    saveAction_->setToolTip(tr("Save the scene as it runs now (live edits and view included)"));
    connect(saveAction_, &QAction::triggered, this, [this] {
        // Presets are not overwritten by Save: it asks where to put the copy.
        const bool preset = !presetDir_.isEmpty() && QFileInfo(scenePath_).absolutePath() == presetDir_;
        if (scenePath_.isEmpty() || preset) return saveSceneDialog();
        if (!saveSceneFile(scenePath_)) QMessageBox::warning(host(), tr("Save scene"), lastError());
    });
    saveAsAction_ = new QAction(tr("Save scene &as..."), this);
    saveAsAction_->setShortcut(QKeySequence::SaveAs);
    connect(saveAsAction_, &QAction::triggered, this, &ParticlesWorkspace::saveSceneDialog);

    playAction_ = new QAction(makeIcon(IconKind::Play, ink), tr("Play"), this);
    playAction_->setShortcut(Qt::Key_Space);
    playAction_->setToolTip(tr("Play / pause (Space)"));
    connect(playAction_, &QAction::triggered, this, &ParticlesWorkspace::togglePlay);

    stepAction_ = new QAction(makeIcon(IconKind::Step, ink), tr("Step"), this);
    stepAction_->setShortcut(Qt::Key_S);
    stepAction_->setToolTip(tr("Advance one step h = T/M (S)"));
    connect(stepAction_, &QAction::triggered, this, &ParticlesWorkspace::stepOnce);

    resetAction_ = new QAction(makeIcon(IconKind::Reset, ink), tr("Reset"), this);
    resetAction_->setShortcut(Qt::Key_R);
    resetAction_->setToolTip(tr("Back to the initial tokens (R)"));
    connect(resetAction_, &QAction::triggered, this, &ParticlesWorkspace::reset);

    frameAction_ = new QAction(makeIcon(IconKind::Frame, ink), tr("Frame all"), this);
    frameAction_->setShortcut(Qt::Key_F);
    frameAction_->setToolTip(tr("Fit all tokens in the view (F, or double-click)"));
    connect(frameAction_, &QAction::triggered, this, &ParticlesWorkspace::frameAll);

    maxSpeedAction_ = new QAction(tr("Max speed"), this);
    maxSpeedAction_->setCheckable(true);
    maxSpeedAction_->setToolTip(tr("Step as fast as the CPU allows instead of at the speed slider's rate"));
    connect(maxSpeedAction_, &QAction::toggled, this, [this](bool) { syncRateControls(); });

    overlayAction_ = new QAction(tr("Gaussian overlay"), this);
    overlayAction_->setCheckable(true);
    overlayAction_->setChecked(true);
    overlayAction_->setToolTip(tr("1σ and 2σ ellipses of N(α(t), Σ(t)) solving the moment ODE "
                                  "α' = b, Σ' = LΣ + ΣLᵀ from the initial Gaussian"));
    connect(overlayAction_, &QAction::toggled, view_, &ParticleView::setShowOverlay);

    hudAction_ = new QAction(tr("Heads-up display"), this);
    hudAction_->setCheckable(true);
    hudAction_->setChecked(true);
    hudAction_->setShortcut(Qt::Key_H);
    hudAction_->setToolTip(tr("Run statistics and quick sliders drawn in the particle view (H)"));
    connect(hudAction_, &QAction::toggled, view_, &ParticleView::setHudVisible);

    trailsAction_ = new QAction(tr("Trails"), this);
    trailsAction_->setCheckable(true);
    trailsAction_->setToolTip(tr("Fading paths over the last recorded frames"));
    connect(trailsAction_, &QAction::toggled, view_, &ParticleView::setShowTrails);

    discAction_ = new QAction(tr("Trace-1 disc"), this);
    discAction_->setCheckable(true);
    discAction_->setToolTip(tr("Show Σ / tr Σ in the unit disc instead of the 3-D cone (blow-up cases)"));
    connect(discAction_, &QAction::toggled, this,
            [this](bool on) { cone_->setMode(on ? ConeMode::Disc : ConeMode::Cone); });

    colorGroup_ = new QActionGroup(this);
    const std::pair<QString, ColorBy> colors[] = {
        {tr("Colour by token index"), ColorBy::Index},
        {tr("Colour by speed |dx/dt|"), ColorBy::Speed},
        {tr("Colour by cluster"), ColorBy::Cluster},
        {tr("Colour by attention entropy H_i / log N"), ColorBy::Entropy}};
    for (const auto& [name, c] : colors) {
        QAction* a = colorGroup_->addAction(name);
        a->setCheckable(true);
        a->setData(int(c));
        a->setChecked(c == ColorBy::Index);
    }
    connect(colorGroup_, &QActionGroup::triggered, this,
            [this](QAction* a) { view_->setColorBy(ColorBy(a->data().toInt())); });

    projectionGroup_ = new QActionGroup(this);
    const QString projections[] = {tr("Plane: axes x0, x1"), tr("Plane: principal components"),
                                   tr("3-D: axes x0, x1, x2"), tr("3-D: principal components")};
    for (int k = 0; k < 4; ++k) {
        QAction* a = projectionGroup_->addAction(projections[k]);
        a->setCheckable(true);
        a->setData(k);
    }
    connect(projectionGroup_, &QActionGroup::triggered, this, [this](QAction* a) {
        ProjectionSpec p;
        p.dims = a->data().toInt() >= 2 ? 3 : 2;
        p.pca = a->data().toInt() % 2 == 1;
        view_->setProjection(p);
    });

    axesAction_ = new QAction(tr("Choose axes..."), this);
    axesAction_->setToolTip(
        tr("Show any two coordinates (a plane) or three (3-D), e.g. \"3, 7\" or \"0, 4, 5\""));
    connect(axesAction_, &QAction::triggered, this, [this] {
        bool ok = false;
        const QString text = QInputDialog::getText(
            host(), tr("Choose axes"),
            tr("Two or three coordinate indices (0 to %1):").arg(scene_ ? scene_->d - 1 : 1),
            QLineEdit::Normal, QStringLiteral("0, 1"), &ok);
        if (!ok) return;
        QString why;
        if (const auto p = parseAxes(text, scene_ ? scene_->d : 2, &why)) {
            view_->setProjection(*p);
            for (QAction* a : projectionGroup_->actions()) a->setChecked(false);
        } else {
            QMessageBox::warning(host(), tr("Choose axes"), why);
        }
    });
}

void ParticlesWorkspace::buildToolBars() {
    runBar_ = window_->addToolBar(tr("Run"));
    QToolBar* bar = runBar_;
    bar->setObjectName(QStringLiteral("runToolBar"));
    bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    bar->addAction(openAction_);
    bar->addSeparator();
    bar->addAction(playAction_);
    bar->addAction(stepAction_);
    bar->addAction(resetAction_);
    bar->addSeparator();
    bar->addAction(frameAction_);
    bar->addSeparator();

    speed_ = new QSlider(Qt::Horizontal, bar);
    speed_->setRange(0, 1000);
    speed_->setValue(rateToSlider(rate_));
    speed_->setFixedWidth(120);
    speed_->setFocusPolicy(Qt::NoFocus);
    speed_->setToolTip(tr("Steps per second while playing (logarithmic, 1 to %1)").arg(kMaxRate));
    connect(speed_, &QSlider::valueChanged, this, [this](int v) {
        rate_ = sliderToRate(v);
        syncRateControls();
    });
    speedLabel_ = new QLabel(bar);
    speedLabel_->setMinimumWidth(
        speedLabel_->fontMetrics().horizontalAdvance(QStringLiteral("2000 steps/s ")));
    bar->addWidget(new QLabel(tr(" Speed "), bar));
    bar->addWidget(speed_);
    bar->addWidget(speedLabel_);
    bar->addAction(maxSpeedAction_);
    bar->addSeparator();
    bar->addWidget(new QLabel(tr(" Preset "), bar));

    presetCombo_ = new QComboBox(bar);
    presetCombo_->setMinimumContentsLength(18);
    presetCombo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    presetCombo_->setPlaceholderText(tr("(none)"));
    presetCombo_->setFocusPolicy(Qt::NoFocus); // Space and the letter shortcuts stay with the window
    presetCombo_->setEnabled(false);
    connect(presetCombo_, &QComboBox::activated, this, &ParticlesWorkspace::openPreset);
    bar->addWidget(presetCombo_);

    bar->addSeparator();
    bar->addWidget(new QLabel(tr(" Backend "), bar));
    backendCombo_ = new QComboBox(bar);
    backendCombo_->setObjectName(QStringLiteral("backend"));
    backendCombo_->setFocusPolicy(Qt::NoFocus);
    for (const BackendInfo& b : listBackends()) // the registry's, in its order: the CPU first
        if (b.available)
            backendCombo_->addItem(QString::fromStdString(b.label), QString::fromStdString(b.id));
    backendCombo_->setToolTip(tr(
        "<b>Backend</b> — where dx<sub>i</sub>/dt = Σ<sub>j</sub> P<sub>ij</sub> V x<sub>j</sub> is "
        "computed: "
        "the CPU (float32 SIMD or the float64 reference, as the scene says) or a GPU compute shader in "
        "float32 (OpenGL 4.3 or Vulkan). The run continues from its current state. Without a usable GPU the "
        "CPU runs and the status bar says why."));
    connect(backendCombo_, &QComboBox::activated, this,
            [this](int index) { setBackend(backendCombo_->itemData(index).toString()); });
    bar->addWidget(backendCombo_);

    // The time scrubber, under the views.
    timeBar_ = new QToolBar(tr("Time"), host());
    QToolBar* time = timeBar_;
    time->setObjectName(QStringLiteral("timeToolBar"));
    window_->addToolBar(Qt::BottomToolBarArea, time);
    time->addWidget(new QLabel(tr(" Recorded history "), time));
    scrubber_ = new QSlider(Qt::Horizontal, time);
    scrubber_->setRange(0, 0);
    scrubber_->setFocusPolicy(Qt::NoFocus);
    scrubber_->setToolTip(
        tr("Drag back through the recorded frames; Play or Step continues from the frame "
           "shown (the later frames are dropped). At the right end the view follows the run."));
    connect(scrubber_, &QSlider::sliderMoved, this, &ParticlesWorkspace::scrubTo);
    connect(scrubber_, &QSlider::actionTriggered, this,
            [this](int) { scrubTo(scrubber_->sliderPosition()); });
    time->addWidget(scrubber_);
    scrubLabel_ = new QLabel(time);
    scrubLabel_->setMinimumWidth(
        scrubLabel_->fontMetrics().horizontalAdvance(QStringLiteral("t = 0000.000 (live) ")));
    time->addWidget(scrubLabel_);
    syncRateControls();
}

ParticlesWorkspace::ParticlesWorkspace(QMainWindow* host) : Workspace(host), window_(host) {
    view_ = new ParticleView(host);
    view_->setSource([this] { return runner_.snapshot(); });
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
        {view_, tr("Particles"), tr("The tokens x_i(t) of dx_i/dt = Σ_j P_ij V x_j"),
         QKeySequence(Qt::Key_1)},
        {cone_, tr("Covariance cone"),
         tr("2×2 covariances Σ = [[a, c], [c, b]] as points (a − b, 2c, a + b) of the PSD cone; its boundary "
            "is the rank-1 matrices"),
         QKeySequence(Qt::Key_2)}};
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

QList<QAction*> ParticlesWorkspace::fileActions() const {
    return {openAction_, saveAction_, saveAsAction_};
}

QList<QAction*> ParticlesWorkspace::editActions() const {
    return {copyShareAction_, pasteShareAction_};
}

QWidget* ParticlesWorkspace::plotsOf(QWidget*) const {
    return plots_;
}

void ParticlesWorkspace::setActive(bool active) {
    Workspace::setActive(active);
    sceneLabel_->setVisible(active);
    backendNote_->setVisible(active && !backendNote_->text().isEmpty());
    // The display's shortcuts (H) and options belong to this workspace's pages only.
    for (QAction* a : {maxSpeedAction_, overlayAction_, hudAction_, trailsAction_, discAction_, axesAction_})
        a->setEnabled(active);
    for (QActionGroup* g : {colorGroup_, projectionGroup_}) g->setEnabled(active);
    controlsState_.reset();
    updateControls();
    if (active) onSnapshot(); // the cone shows the covariance only while it is visible
}

void ParticlesWorkspace::setTheme(ThemeKind kind) {
    view_->setPlotStyle(plotStyle(kind));
    // Icons are drawn in the text colour of the palette.
    const QColor ink = QApplication::palette().color(QPalette::ButtonText);
    openAction_->setIcon(makeIcon(IconKind::Open, ink));
    stepAction_->setIcon(makeIcon(IconKind::Step, ink));
    resetAction_->setIcon(makeIcon(IconKind::Reset, ink));
    frameAction_->setIcon(makeIcon(IconKind::Frame, ink));
    controlsState_.reset();
    updateControls();
}

void ParticlesWorkspace::saveSettings(QSettings& s) const {
    s.setValue(QStringLiteral("view/colorBy"), int(view_->colorBy()));
    s.setValue(QStringLiteral("view/overlay"), view_->showOverlay());
    s.setValue(QStringLiteral("view/trails"), view_->showTrails());
    s.setValue(QStringLiteral("view/disc"), discAction_->isChecked());
    s.setValue(QStringLiteral("run/stepsPerSecond"), rate_);
    s.setValue(QStringLiteral("run/backend"), backend());
    s.setValue(QStringLiteral("files/recent"), recent_);
    if (scene_) {
        s.setValue(QStringLiteral("scene/json"), QString::fromStdString(sceneToJson(*scene_)));
        s.setValue(QStringLiteral("scene/path"), scenePath_);
    }
}

void ParticlesWorkspace::restoreSettings(QSettings& s) {
    const int color = std::clamp(s.value(QStringLiteral("view/colorBy"), 0).toInt(), 0, 3);
    colorGroup_->actions().value(color)->setChecked(true);
    view_->setColorBy(ColorBy(color));
    overlayAction_->setChecked(s.value(QStringLiteral("view/overlay"), true).toBool());
    trailsAction_->setChecked(s.value(QStringLiteral("view/trails"), false).toBool());
    discAction_->setChecked(s.value(QStringLiteral("view/disc"), false).toBool());
    setStepsPerSecond(
        s.value(QStringLiteral("run/stepsPerSecond"), WorkerLoop::kDefaultStepsPerSecond).toDouble());
    recent_ = s.value(QStringLiteral("files/recent")).toStringList();
    rebuildRecentMenu();
    setBackend(s.value(QStringLiteral("run/backend")).toString()); // none saved: the first, the CPU
    savedScene_.reset();
    const QString json = s.value(QStringLiteral("scene/json")).toString();
    if (json.isEmpty()) return;
    try {
        savedScene_ =
            std::pair(sceneFromJson(json.toStdString()), s.value(QStringLiteral("scene/path")).toString());
    } catch (const std::exception&) {
        // A stale or damaged entry: the app starts from the default scene instead.
    }
}

void ParticlesWorkspace::buildDocks() {
    auto dock = [this](QWidget* w, const QString& title, const QString& name, Qt::DockWidgetArea area) {
        auto* d = new QDockWidget(title, host());
        d->setObjectName(name);
        d->setWidget(w);
        d->setAllowedAreas(Qt::AllDockWidgetAreas);
        docks_.push_back({d, area});
    };
    presets_ = new PresetBrowser(host());
    scenePanel_ = new ScenePanel(host());
    matrixEditor_ = new MatrixEditor(host());
    plots_ = new PlotsPanel(host());
    dock(scenePanel_, tr("Scene"), QStringLiteral("sceneDock"), Qt::LeftDockWidgetArea);
    dock(presets_, tr("Presets"), QStringLiteral("presetsDock"), Qt::LeftDockWidgetArea);
    dock(matrixEditor_, tr("Matrices"), QStringLiteral("matrixDock"), Qt::RightDockWidgetArea);
    dock(plots_, tr("Plots"), QStringLiteral("plotsDock"), Qt::RightDockWidgetArea);
}

void ParticlesWorkspace::buildMenus() {
    recentMenu_ = new QMenu(tr("Open &recent"), host());
    rebuildRecentMenu();

    simulationMenu_ = new QMenu(tr("&Simulation"), host());
    simulationMenu_->addAction(playAction_);
    simulationMenu_->addAction(stepAction_);
    simulationMenu_->addAction(resetAction_);
    simulationMenu_->addSeparator();
    simulationMenu_->addAction(maxSpeedAction_);

    displayMenu_ = new QMenu(tr("&Display"), host());
    displayMenu_->addAction(frameAction_);
    displayMenu_->addSeparator();
    displayMenu_->addAction(hudAction_);
    displayMenu_->addAction(overlayAction_);
    displayMenu_->addAction(trailsAction_);
    displayMenu_->addActions(colorGroup_->actions());
    displayMenu_->addSeparator();
    displayMenu_->addActions(projectionGroup_->actions());
    displayMenu_->addAction(axesAction_);
    displayMenu_->addSeparator();
    displayMenu_->addAction(discAction_);

    copyShareAction_ = new QAction(tr("&Copy scene as share string"), this);
    copyShareAction_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C));
    copyShareAction_->setToolTip(
        tr("The whole scene as it runs now (live edits included) as one line, to "
           "paste here or pass to flowscope or flowscope-cli in place of a scene file"));
    connect(copyShareAction_, &QAction::triggered, this, &ParticlesWorkspace::copyShareString);
    pasteShareAction_ = new QAction(tr("&Paste scene from share string"), this);
    pasteShareAction_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_V));
    pasteShareAction_->setToolTip(tr("Open the scene whose share string is on the clipboard"));
    connect(pasteShareAction_, &QAction::triggered, this, &ParticlesWorkspace::pasteShareString);

    trajectoryExport_ = new QAction(tr("&Trajectory as .npy..."), this);
    trajectoryExport_->setToolTip(
        tr("Every recorded frame as one (frames, N, d) float64 array, and the frames' "
           "times in <name>_times.npy"));
    connect(trajectoryExport_, &QAction::triggered, this, [this] { exportDialog(ExportKind::Trajectory); });
    momentsExport_ = new QAction(tr("&Moment trajectories as .npy..."), this);
    momentsExport_->setToolTip(
        tr("Gaussian mode: the mean and covariance ODE solutions of the scene's initial "
           "Gaussians (the cone's trajectories) as (R, K, d, d) covariances, with "
           "<name>_means.npy (R, K, d) and <name>_times.npy (R, K), NaN after a "
           "trajectory ends: the bytes of flowscope-cli moments --out x.npy"));
    connect(momentsExport_, &QAction::triggered, this, [this] { exportDialog(ExportKind::Moments); });
    animationExport_ = new QAction(tr("&Animation..."), this);
    animationExport_->setToolTip(tr("The particles, cone or disc view as MP4, GIF or numbered PNGs, rendered "
                                    "offscreen from t = 0 at a chosen size, frame rate and time per frame"));
    connect(animationExport_, &QAction::triggered, this, &ParticlesWorkspace::exportAnimationDialog);
}

// The views, the panels and the run: edits go to the run, the run's state comes back to the panels.
void ParticlesWorkspace::connectViews() {
    connect(view_, &ParticleView::quickBetaChanged, this, [this](double beta) {
        if (!scene_) return;
        AttentionSpec spec = scene_->attention;
        spec.beta = beta;
        applyAttention(spec, view_);
    });
    connect(view_, &ParticleView::quickValueScaleChanged, this, [this](double scale) {
        if (!scene_ || baseHeads_.size() != scene_->attention.heads.size()) return;
        AttentionSpec spec = scene_->attention;
        for (std::size_t h = 0; h < spec.heads.size(); ++h) spec.heads[h].V = scale * baseHeads_[h].V;
        applyAttention(spec, view_);
    });
    connect(view_, &ParticleView::quickRateChanged, this, [this](double rate, bool maxSpeed) {
        setStepsPerSecond(rate);
        setMaxSpeed(maxSpeed);
    });
    connect(presets_, &PresetBrowser::presetActivated, this, [this](const QString& path) {
        if (!openSceneFile(path)) QMessageBox::warning(host(), tr("Open preset"), lastError());
    });
    connect(scenePanel_, &ScenePanel::attentionEdited, this,
            [this](const AttentionSpec& spec) { applyAttention(spec, scenePanel_); });
    connect(matrixEditor_, &MatrixEditor::attentionEdited, this,
            [this](const AttentionSpec& spec) { applyAttention(spec, matrixEditor_); });
    connect(scenePanel_, &ScenePanel::integratorEdited, this, &ParticlesWorkspace::applyIntegrator);
    connect(scenePanel_, &ScenePanel::sceneEdited, this, [this](const Scene& scene) {
        view_->setDrawing(false);
        if (!setScene(scene, scenePath_)) QMessageBox::warning(host(), tr("Apply scene"), lastError());
    });
    // Drawing initial tokens: the run pauses so the points are drawn over a still picture.
    connect(scenePanel_, &ScenePanel::drawRequested, this, [this](bool on) {
        if (on) {
            runner_.pause();
            updateControls();
            emit showPageRequested(view_);
        }
        view_->setDrawing(on);
    });
    connect(scenePanel_, &ScenePanel::drawClearRequested, view_, &ParticleView::clearDrawnPoints);
    connect(view_, &ParticleView::pointsDrawn, scenePanel_, &ScenePanel::setDrawnPoints);
    connect(view_, &ParticleView::drawingChanged, scenePanel_, &ScenePanel::setDrawing);
}

void ParticlesWorkspace::exportDialog(ExportKind kind) {
    const bool moments = kind == ExportKind::Moments;
    const QString title = moments ? tr("Export moment trajectories") : tr("Export trajectory");
    const QString dir = scenePath_.isEmpty() ? QString() : QFileInfo(scenePath_).absolutePath();
    const QString path =
        askSavePath(host(), title, dir, tr("NumPy arrays (*.npy)"), {QStringLiteral(".npy")});
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
        [this, &path](const ExportProgress& progress) {
            const ExportResult r = scene_ ? flowscope::exportMoments(*scene_, path, progress)
                                          : ExportResult::failed(tr("There is no scene to export."));
            report(r);
            return r;
        },
        status, done);
}

bool ParticlesWorkspace::exportTrajectory(const QString& path, bool asFloat32) {
    const auto live = runner_.snapshot();
    return report(flowscope::exportTrajectory(live ? live->history.get() : nullptr, path, asFloat32));
}

bool ParticlesWorkspace::exportMoments(const QString& path, const ExportProgress& progress) {
    if (!scene_) return fail(tr("There is no scene to export."));
    return report(flowscope::exportMoments(*scene_, path, progress)); // the scene as it runs now
}

bool ParticlesWorkspace::exportAnimation(const AnimationOptions& options, const QString& path,
                                         const ExportProgress& progress) {
    if (!scene_) return fail(tr("There is no scene to export."));
    // The scene as it runs now; the export runs a simulation of its own from t = 0.
    return report(exportSceneAnimation(*scene_, options, path, progress));
}

} // namespace flowscope
