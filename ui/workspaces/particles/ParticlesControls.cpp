// Flowscope UI: the Particles workspace's controls (ParticlesWorkspace.h): the actions, the Run and Time tool
// bars, the Simulation and Display menus, the docks, how the panels and views are wired to the run, and the
// command palette's presets and the guided starts it offers the shell.
#include "ui/workspaces/particles/ParticlesWorkspace.h"

#include "engine/backend/Registry.h"
#include "ui/panels/MatrixEditor.h"
#include "ui/panels/PlotsPanel.h"
#include "ui/panels/PresetBrowser.h"
#include "ui/panels/ScenePanel.h"
#include "ui/views/ConeView.h"
#include "ui/widgets/Icons.h"
#include "ui/widgets/Theme.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QEvent>
#include <QFileInfo>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMainWindow>
#include <QMenu>
#include <QMessageBox>
#include <QSlider>
#include <QToolBar>

#include <array>
#include <cmath>
#include <functional>
#include <utility>

namespace flowscope {

namespace {

// The speed slider is logarithmic: position p in [0, 1000] is 10^(p/1000 * log10(kMaxRate)) steps/s.
constexpr double kMaxRate = 2000.0;
int rateToSlider(double rate) {
    return int(std::lround(1000.0 * std::log10(std::clamp(rate, 1.0, kMaxRate)) / std::log10(kMaxRate)));
}
double sliderToRate(int v) {
    return std::pow(10.0, v / 1000.0 * std::log10(kMaxRate));
}

} // namespace

void ParticlesWorkspace::syncRateControls() {
    const bool maxSpeed = maxSpeedAction_->isChecked();
    runner().setMaxStepsPerSecond(maxSpeed ? 0.0 : rate_);
    speed_->setEnabled(!maxSpeed);
    speedLabel_->setText(maxSpeed ? tr("max") : tr("%1 steps/s").arg(rate_, 0, 'f', rate_ < 10 ? 1 : 0));
    view_->setRate(rate_, maxSpeed);
}

void ParticlesWorkspace::updateControls() {
    // Called for every new snapshot (~60 Hz while running): touch the actions only when something changed.
    const bool playing = runner().playing();
    const bool have = document_.hasScene();
    // Only a causal scene on the circle has parking leaders (a no-op when unchanged).
    layerAction(ParticleView::Layer::Parking)->setEnabled(active() && view_->parkingAvailable());
    layerAction(ParticleView::Layer::HardmaxCells)->setEnabled(active() && view_->hardmaxCellsAvailable());
    if (controlsState_ == std::pair(playing, have)) return;
    controlsState_ = std::pair(playing, have);
    // One state for both: the Play/Pause action and the particle view's HUD ("running"/"paused").
    view_->setRunState(playing);
    playAction_->setText(playing ? tr("Pause") : tr("Play"));
    // The application's palette, as setTheme() draws the other icons: the window's may not have the new theme
    // yet when setTheme() calls here (the light theme's Play was drawn in the dark theme's near-white).
    playAction_->setIcon(makeIcon(playing ? IconKind::Pause : IconKind::Play,
                                  QApplication::palette().color(QPalette::ButtonText)));
    for (QAction* a : {saveAction_, saveAsAction_}) a->setEnabled(have);
    // The run's shortcuts (Space, S, R, F, Shift+F) act only while this workspace's pages are shown.
    for (QAction* a : {playAction_, stepAction_, resetAction_, frameAction_, followAction_})
        a->setEnabled(have && active());
}

void ParticlesWorkspace::fitRunBar() {
    // The width the bar asks for with the text beside the icons, against the window's.
    runBar_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    if (runBar_->sizeHint().width() > window_->width()) runBar_->setToolButtonStyle(Qt::ToolButtonIconOnly);
}

bool ParticlesWorkspace::eventFilter(QObject* watched, QEvent* event) {
    if (watched == window_ && event->type() == QEvent::Resize) fitRunBar();
    return Workspace::eventFilter(watched, event);
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
        const bool preset = !presetDir_.isEmpty() && QFileInfo(document_.path()).absolutePath() == presetDir_;
        if (document_.path().isEmpty() || preset) return saveSceneDialog();
        if (!saveSceneFile(document_.path())) QMessageBox::warning(host(), tr("Save scene"), lastError());
    });
    saveAsAction_ = new QAction(tr("Save scene &as..."), this);
    saveAsAction_->setShortcut(QKeySequence::SaveAs);
    connect(saveAsAction_, &QAction::triggered, this, &ParticlesWorkspace::saveSceneDialog);

    // A Run tool bar button: its icon, name, key and tool tip, and what it does.
    const auto runAction = [&](IconKind icon, const QString& name, const QKeySequence& key,
                               const QString& tip, void (ParticlesWorkspace::*slot)()) {
        auto* a = new QAction(makeIcon(icon, ink), name, this);
        a->setShortcut(key);
        a->setToolTip(tip);
        connect(a, &QAction::triggered, this, slot);
        return a;
    };
    playAction_ = runAction(IconKind::Play, tr("Play"), Qt::Key_Space, tr("Play / pause (Space)"),
                            &ParticlesWorkspace::togglePlay);
    stepAction_ = runAction(IconKind::Step, tr("Step"), Qt::Key_S, tr("Advance one step h = T/M (S)"),
                            &ParticlesWorkspace::stepOnce);
    resetAction_ = runAction(IconKind::Reset, tr("Reset"), Qt::Key_R, tr("Back to the initial tokens (R)"),
                             &ParticlesWorkspace::reset);
    frameAction_ =
        runAction(IconKind::Frame, tr("Frame all"), Qt::Key_F,
                  tr("Fit all tokens in the view (F, or double-click)"), &ParticlesWorkspace::frameAll);

    followAction_ = new QAction(makeIcon(IconKind::Follow, ink), tr("Follow"), this);
    followAction_->setCheckable(true);
    followAction_->setChecked(view_->follow());
    followAction_->setShortcut(QKeySequence(Qt::SHIFT | Qt::Key_F));
    followAction_->setToolTip(tr("Keep the cloud in view as it moves or spreads, re-framing smoothly "
                                 "(Shift+F). Panning or zooming turns it off; then tokens outside the view "
                                 "are counted and pointed at."));
    connect(followAction_, &QAction::toggled, view_, &ParticleView::setFollow);
    connect(view_, &ParticleView::followChanged, followAction_, &QAction::setChecked);

    maxSpeedAction_ = new QAction(tr("Max speed"), this);
    maxSpeedAction_->setCheckable(true);
    maxSpeedAction_->setToolTip(tr("Step as fast as the CPU allows instead of at the speed slider's rate"));
    connect(maxSpeedAction_, &QAction::toggled, this, [this](bool) { syncRateControls(); });

    // A checkable option of the particle view: `show` sets it on the view.
    const auto viewOption = [this](const QString& text, bool checked, const QString& tip,
                                   const std::function<void(bool)>& show) {
        auto* a = new QAction(text, this);
        a->setCheckable(true);
        a->setChecked(checked);
        a->setToolTip(tip);
        connect(a, &QAction::toggled, view_, show);
        return a;
    };
    hudAction_ = viewOption(tr("Heads-up display"), true,
                            tr("Run statistics and quick sliders drawn in the particle view (H)"),
                            [view = view_](bool on) { view->setHudVisible(on); });
    hudAction_->setShortcut(Qt::Key_H);
    // The picture's line layers, in ParticlePicture::Layer's order; each starts as the picture has it.
    const std::array<std::pair<QString, QString>, ParticlePicture::kLayerCount> layers{{
        {tr("Gaussian overlay"),
         tr("1σ and 2σ ellipses of N(α(t), Σ(t)) solving the moment ODE α' = b, Σ' = LΣ + ΣLᵀ from the "
            "scene's initial Gaussian N(α₀, Σ₀), not from the sampled tokens. Where α₀ is an unstable fixed "
            "point (Fig 2(d): α₀ = 0, α' = V(I + ΣA)α) the ellipses stay at α₀ while the cloud's sample "
            "mean, off α₀ by about √(Σ₀/N) at t = 0, grows away from it: the picture is right, the two "
            "part.")},
        {tr("Rényi-parking centres"),
         tr("Causal attention on the circle (softmax, masked, post-LN, Q = K = V = I): the initial tokens "
            "that found a cluster, read in index order, each at least δ = 4/√β from every earlier one "
            "(rings, and their spots of ±δ/2 outside the circle). The clusters form at most of them; the "
            "others are pulled to earlier tokens (docs/math/theory.md#parking)")},
        {tr("Hardmax cells"),
         tr("Hardmax attention in the plane: the boundaries of the keys' cells. A query in a cell attends to "
            "that cell's key; each cell is a cone from the origin (docs/math/theory.md#hardmax)")},
        {tr("Trails"), tr("Fading paths over the last recorded frames")},
    }};
    for (int k = 0; k < ParticlePicture::kLayerCount; ++k) {
        const auto layer = ParticleView::Layer(k);
        layerActions_[std::size_t(k)] =
            viewOption(layers[std::size_t(k)].first, view_->layer(layer), layers[std::size_t(k)].second,
                       [view = view_, layer](bool on) { view->setLayer(layer, on); });
    }

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
            tr("Two or three coordinate indices (0 to %1):").arg(scene() ? scene()->d - 1 : 1),
            QLineEdit::Normal, QStringLiteral("0, 1"), &ok);
        if (!ok) return;
        QString why;
        if (const auto p = parseAxes(text, scene() ? scene()->d : 2, &why)) {
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
    bar->addAction(followAction_);
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
    window_->installEventFilter(this); // fitRunBar() at each resize

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

void ParticlesWorkspace::setTheme(ThemeKind kind) {
    view_->setPlotStyle(plotStyle(kind));
    // Icons are drawn in the text colour of the palette.
    const QColor ink = QApplication::palette().color(QPalette::ButtonText);
    openAction_->setIcon(makeIcon(IconKind::Open, ink));
    stepAction_->setIcon(makeIcon(IconKind::Step, ink));
    resetAction_->setIcon(makeIcon(IconKind::Reset, ink));
    frameAction_->setIcon(makeIcon(IconKind::Frame, ink));
    followAction_->setIcon(makeIcon(IconKind::Follow, ink));
    controlsState_.reset();
    updateControls();
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
    scenePanel_ = new ScenePanel(document_, host());
    matrixEditor_ = new MatrixEditor(document_, host());
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
    displayMenu_->addAction(followAction_);
    displayMenu_->addSeparator();
    displayMenu_->addAction(hudAction_);
    for (QAction* a : layerActions_) displayMenu_->addAction(a);
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

void ParticlesWorkspace::connectViews() {
    connect(view_, &ParticleView::quickBetaChanged, this, [this](double beta) {
        AttentionSpec spec = document_.editableAttention();
        spec.beta = beta;
        editAttention(spec);
    });
    connect(view_, &ParticleView::quickValueScaleChanged, this, [this](double scale) {
        AttentionSpec spec = document_.shown().attention;
        if (baseHeads_.size() != spec.heads.size()) return;
        for (std::size_t h = 0; h < spec.heads.size(); ++h) spec.heads[h].V = scale * baseHeads_[h].V;
        editAttention(spec);
    });
    connect(view_, &ParticleView::quickRateChanged, this, [this](double rate, bool maxSpeed) {
        setStepsPerSecond(rate);
        setMaxSpeed(maxSpeed);
    });
    connect(presets_, &PresetBrowser::presetActivated, this, [this](const QString& path) {
        if (!openSceneFile(path)) QMessageBox::warning(host(), tr("Open preset"), lastError());
    });
    connect(&document_, &ParticleDocument::opened, this, &ParticlesWorkspace::showOpened);
    connect(&document_, &ParticleDocument::edited, this, &ParticlesWorkspace::showEdited);
    connect(scenePanel_, &ScenePanel::sceneEdited, this, [this](const Scene& scene) {
        view_->setDrawing(false);
        if (!setScene(scene, document_.path())) QMessageBox::warning(host(), tr("Apply scene"), lastError());
    });
    // Drawing initial tokens: the run pauses so the points are drawn over a still picture.
    connect(scenePanel_, &ScenePanel::drawRequested, this, [this](bool on) {
        if (on) {
            runner().pause();
            updateControls();
            emit showPageRequested(view_);
        }
        view_->setDrawing(on);
    });
    connect(scenePanel_, &ScenePanel::drawClearRequested, view_, &ParticleView::clearDrawnPoints);
    connect(view_, &ParticleView::pointsDrawn, scenePanel_, &ScenePanel::setDrawnPoints);
    connect(view_, &ParticleView::drawingChanged, scenePanel_, &ScenePanel::setDrawing);
}

void ParticlesWorkspace::setStepsPerSecond(double rate) {
    rate_ = std::clamp(rate, 1.0, kMaxRate);
    const QSignalBlocker block(speed_);
    speed_->setValue(rateToSlider(rate_));
    syncRateControls();
}

// --- The command palette's presets and the guided starts ---

QList<WorkspaceCommand> ParticlesWorkspace::paletteCommands() {
    QList<WorkspaceCommand> commands;
    for (const QString& path : presets_->presetPaths()) {
        const QString figure = presets_->presetFigure(path);
        const QString name = tr("Preset: %1").arg(QFileInfo(path).completeBaseName());
        commands.push_back(
            {figure.isEmpty() ? name : tr("%1 — %2").arg(name, figure), QString(), [this, path] {
                 if (!openSceneFile(path))
                     QMessageBox::warning(host(), tr("Open preset"), lastError());
                 else if (!active())
                     emit showPageRequested(view_);
             }});
    }
    return commands;
}

bool ParticlesWorkspace::playPreset(const QString& file, QWidget* page) {
    if (!openSceneFile(QDir(presets_->directory()).filePath(file))) return false;
    emit showPageRequested(page);
    page->setFocus(); // the run's keys (Space, F, ...) go to it, not to a panel's first field
    play();
    return true;
}

QList<WorkspaceStart> ParticlesWorkspace::guidedStarts() {
    return {
        {QStringLiteral("start.clustering"), tr("Watch clustering"),
         tr("Tokens on the sphere attract one another: within a few time units the cloud gathers into a few "
            "tight clusters, which then merge, one by one, into a single point (colour by cluster: Display "
            "menu; drag the history bar back to see the clusters again)."),
         [this] { return playPreset(QStringLiteral("sphere-clustering.json"), view_); }},
        {QStringLiteral("start.blowup"), tr("See a blow-up"),
         tr("The covariance Σ(t) of a Gaussian cloud climbs the cone towards the boundary ray of its major "
            "axis and blows up in finite time, at t ≈ 2.27."),
         [this] { return playPreset(QStringLiteral("cone-fig1b-blowup.json"), cone_); }},
    };
}

} // namespace flowscope
