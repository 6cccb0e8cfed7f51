#include "ui/MainWindow.h"

#if FLOWSCOPE_HAVE_GPU
#include "engine/gaussian/MomentField.h"
#include "engine/gaussian/MomentFiles.h"
#include "engine/gpu/Backend.h"
#endif

#include "engine/io/Npy.h"
#include "engine/io/ShareString.h"
#include "engine/io/Trajectory.h"
#include "engine/media/FrameSink.h"
#include "engine/media/Mp4Writer.h"
#include "engine/scene/RunBudget.h"
#include "ui/AnimationExportDialog.h"
#include "ui/AnimationExporter.h"
#include "ui/ConeView.h"
#include "ui/ElidedLabel.h"
#include "ui/Icons.h"
#include "ui/MatrixEditor.h"
#include "ui/OffThread.h"
#include "ui/ParticleView.h"
#include "ui/PlotsPanel.h"
#include "ui/PresetBrowser.h"
#include "ui/ScenePanel.h"
#include "ui/SharedGlBackend.h"
#include "ui/TrainingAnimator.h"
#include "ui/TrainingPanel.h"
#include "ui/TrainingView.h"
#include "ui/TransformerPanel.h"
#include "ui/TransformerView.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QOffscreenSurface>
#include <QOpenGLContext>
#include <QOpenGLWidget>
#include <QPainter>
#include <QPointer>
#include <QProgressDialog>
#include <QRegularExpression>
#include <QSaveFile>
#include <QSettings>
#include <QSlider>
#include <QStatusBar>
#include <QSvgGenerator>
#include <QTabWidget>
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

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(QStringLiteral("Flowscope"));
    setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks |
                   QMainWindow::AllowNestedDocks);
    view_ = new ParticleView(this);
    view_->setSource([this] { return runner_.snapshot(); });
    cone_ = new ConeView(this);
    tabs_ = new QTabWidget(this);
    tabs_->setDocumentMode(true);
    tabs_->addTab(view_, tr("Particles"));
    tabs_->addTab(cone_, tr("Covariance cone"));
    trainingView_ = new TrainingView(this);
    trainingView_->setSource([this] { return training_.snapshot(); });
    tabs_->addTab(trainingView_, tr("Flows"));
    transformerView_ = new TransformerView(this);
    transformerView_->setSource([this] { return transformers_.snapshot(); });
    tabs_->addTab(transformerView_, tr("Transformers"));
    tabs_->setTabToolTip(0, tr("The tokens x_i(t) of dx_i/dt = Σ_j P_ij V x_j"));
    tabs_->setTabToolTip(1, tr("2×2 covariances Σ = [[a, c], [c, b]] as points (a − b, 2c, a + b) of the PSD "
                               "cone; its boundary is the rank-1 matrices"));
    tabs_->setTabToolTip(2, tr("A generative flow trained live on a toy dataset (Training panel), with or "
                               "without the RWPO layer"));
    tabs_->setTabToolTip(3,
                         tr("A continuous-time Transformer trained live (Transformer panel): tokens moving "
                            "through depth, straight when λ_OT is large enough"));
    setCentralWidget(tabs_);
    connect(view_, &ParticleView::snapshotChanged, this, &MainWindow::onSnapshot);
    connect(tabs_, &QTabWidget::currentChanged, this, &MainWindow::onSnapshot);
    // Charts re-lay out all their series on every change: 4 Hz, and only while the Plots panel is shown.
    auto* plotTimer = new QTimer(this);
    connect(plotTimer, &QTimer::timeout, this, &MainWindow::updatePlots);
    plotTimer->start(250);

    buildActions();
    buildDocks();
    buildMenus();
    buildToolBars();
    sceneLabel_ = new ElidedLabel(this);
    sceneLabel_->setText(tr("No scene"));
    statusBar()->addWidget(sceneLabel_, 1);
    backendNote_ = new QLabel(this);
    backendNote_->setObjectName(QStringLiteral("backendNote"));
    backendNote_->setVisible(false);
    statusBar()->addPermanentWidget(backendNote_);

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
    updateControls();
    view_->setFocus();
}

// The views are children, deleted by ~QWidget after our members (the runner) are gone: cut their link first.
MainWindow::~MainWindow() {
    view_->setSource({});
    trainingView_->setSource({});
    transformerView_->setSource({});
}

void MainWindow::buildActions() {
    const QColor ink = palette().color(QPalette::ButtonText);
    openAction_ = new QAction(makeIcon(IconKind::Open, ink), tr("&Open scene..."), this);
    openAction_->setShortcut(QKeySequence::Open);
    connect(openAction_, &QAction::triggered, this, &MainWindow::openSceneDialog);

    saveAction_ = new QAction(tr("&Save scene"), this);
    saveAction_->setShortcut(QKeySequence::Save);
    saveAction_->setToolTip(tr("Save the scene as it runs now (live edits and view included)"));
    connect(saveAction_, &QAction::triggered, this, [this] {
        // Presets are not overwritten by Save: it asks where to put the copy.
        const bool preset = !presetDir_.isEmpty() && QFileInfo(scenePath_).absolutePath() == presetDir_;
        if (scenePath_.isEmpty() || preset) return saveSceneDialog();
        if (!saveSceneFile(scenePath_)) QMessageBox::warning(this, tr("Save scene"), lastError_);
    });
    saveAsAction_ = new QAction(tr("Save scene &as..."), this);
    saveAsAction_->setShortcut(QKeySequence::SaveAs);
    connect(saveAsAction_, &QAction::triggered, this, &MainWindow::saveSceneDialog);

    quitAction_ = new QAction(tr("&Quit"), this);
    quitAction_->setShortcut(QKeySequence::Quit);
    connect(quitAction_, &QAction::triggered, this, &QWidget::close);

    playAction_ = new QAction(makeIcon(IconKind::Play, ink), tr("Play"), this);
    playAction_->setShortcut(Qt::Key_Space);
    playAction_->setToolTip(tr("Play / pause (Space)"));
    connect(playAction_, &QAction::triggered, this, &MainWindow::togglePlay);

    stepAction_ = new QAction(makeIcon(IconKind::Step, ink), tr("Step"), this);
    stepAction_->setShortcut(Qt::Key_S);
    stepAction_->setToolTip(tr("Advance one step h = T/M (S)"));
    connect(stepAction_, &QAction::triggered, this, &MainWindow::stepOnce);

    resetAction_ = new QAction(makeIcon(IconKind::Reset, ink), tr("Reset"), this);
    resetAction_->setShortcut(Qt::Key_R);
    resetAction_->setToolTip(tr("Back to the initial tokens (R)"));
    connect(resetAction_, &QAction::triggered, this, &MainWindow::reset);

    frameAction_ = new QAction(makeIcon(IconKind::Frame, ink), tr("Frame all"), this);
    frameAction_->setShortcut(Qt::Key_F);
    frameAction_->setToolTip(tr("Fit all tokens in the view (F, or double-click)"));
    connect(frameAction_, &QAction::triggered, this, &MainWindow::frameAll);

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
            this, tr("Choose axes"),
            tr("Two or three coordinate indices (0 to %1):").arg(scene_ ? scene_->d - 1 : 1),
            QLineEdit::Normal, QStringLiteral("0, 1"), &ok);
        if (!ok) return;
        QString why;
        if (const auto p = parseAxes(text, scene_ ? scene_->d : 2, &why)) {
            view_->setProjection(*p);
            for (QAction* a : projectionGroup_->actions()) a->setChecked(false);
        } else {
            QMessageBox::warning(this, tr("Choose axes"), why);
        }
    });

    themeGroup_ = new QActionGroup(this);
    for (auto [name, kind] :
         {std::pair{tr("Dark theme"), ThemeKind::Dark}, {tr("Light theme"), ThemeKind::Light}}) {
        QAction* a = themeGroup_->addAction(name);
        a->setCheckable(true);
        a->setData(int(kind));
        a->setChecked(kind == theme_);
    }
    connect(themeGroup_, &QActionGroup::triggered, this,
            [this](QAction* a) { setTheme(ThemeKind(a->data().toInt())); });
}

void MainWindow::buildDocks() {
    auto dock = [this](QWidget* w, const QString& title, const QString& name, Qt::DockWidgetArea area) {
        auto* d = new QDockWidget(title, this);
        d->setObjectName(name);
        d->setWidget(w);
        d->setAllowedAreas(Qt::AllDockWidgetAreas);
        addDockWidget(area, d);
        return d;
    };
    presets_ = new PresetBrowser(this);
    scenePanel_ = new ScenePanel(this);
    matrixEditor_ = new MatrixEditor(this);
    plots_ = new PlotsPanel(this);
    trainingPanel_ = new TrainingPanel(this);
    transformerPanel_ = new TransformerPanel(this);
    QDockWidget* presetDock =
        dock(presets_, tr("Presets"), QStringLiteral("presetsDock"), Qt::LeftDockWidgetArea);
    QDockWidget* sceneDock =
        dock(scenePanel_, tr("Scene"), QStringLiteral("sceneDock"), Qt::LeftDockWidgetArea);
    QDockWidget* matrixDock =
        dock(matrixEditor_, tr("Matrices"), QStringLiteral("matrixDock"), Qt::RightDockWidgetArea);
    QDockWidget* plotsDock = dock(plots_, tr("Plots"), QStringLiteral("plotsDock"), Qt::RightDockWidgetArea);
    trainingDock_ =
        dock(trainingPanel_, tr("Training"), QStringLiteral("trainingDock"), Qt::LeftDockWidgetArea);
    tabifyDockWidget(sceneDock, presetDock);
    transformerDock_ =
        dock(transformerPanel_, tr("Transformer"), QStringLiteral("transformerDock"), Qt::LeftDockWidgetArea);
    tabifyDockWidget(sceneDock, trainingDock_);
    tabifyDockWidget(sceneDock, transformerDock_);
    sceneDock->raise();
    tabifyDockWidget(matrixDock, plotsDock);
    matrixDock->raise();
    resizeDocks({sceneDock, matrixDock}, {330, 380}, Qt::Horizontal);
    panelsMenu_ = new QMenu(tr("&Panels"), this);
    for (QDockWidget* d : {sceneDock, presetDock, matrixDock, plotsDock, trainingDock_, transformerDock_})
        panelsMenu_->addAction(d->toggleViewAction());

    // Training: the panel asks, the runner trains, the view's snapshots come back to the panel's status.
    connect(trainingPanel_, &TrainingPanel::startRequested, this,
            [this](const flows::TrainerConfig& config, bool sideBySide, bool play) {
                startTraining(config, sideBySide, play);
            });
    connect(trainingPanel_, &TrainingPanel::playRequested, this, [this](bool play) {
        if (play)
            training_.play();
        else
            training_.pause();
        trainingPanel_->setSnapshot(trainingView_->displayedSnapshot(), training_.playing());
    });
    connect(trainingPanel_, &TrainingPanel::stepRequested, this, [this] { training_.stepOnce(); });
    connect(trainingPanel_, &TrainingPanel::resetRequested, this, [this] { training_.reset(); });
    connect(trainingPanel_, &TrainingPanel::evaluateRequested, this, [this] { training_.evaluateNow(); });
    connect(trainingView_, &TrainingView::snapshotChanged, this,
            [this] { trainingPanel_->setSnapshot(trainingView_->displayedSnapshot(), training_.playing()); });
    // Transformers: the same, with their own runner.
    connect(transformerPanel_, &TransformerPanel::startRequested, this,
            [this](const ot::OtTrainerConfig& config, bool comparison, bool play) {
                startTransformer(config, comparison, play);
            });
    connect(transformerPanel_, &TransformerPanel::playRequested, this, [this](bool play) {
        if (play)
            transformers_.play();
        else
            transformers_.pause();
        transformerPanel_->setSnapshot(transformerView_->displayedSnapshot(), transformers_.playing());
    });
    connect(transformerPanel_, &TransformerPanel::stepRequested, this, [this] { transformers_.stepOnce(); });
    connect(transformerPanel_, &TransformerPanel::resetRequested, this, [this] { transformers_.reset(); });
    connect(transformerPanel_, &TransformerPanel::evaluateRequested, this,
            [this] { transformers_.evaluateNow(); });
    connect(transformerView_, &TransformerView::snapshotChanged, this, [this] {
        transformerPanel_->setSnapshot(transformerView_->displayedSnapshot(), transformers_.playing());
    });
    // The Flows and Transformers tabs bring their panels to the front.
    connect(tabs_, &QTabWidget::currentChanged, this, [this] {
        if (tabs_->currentWidget() == trainingView_) trainingDock_->raise();
        if (tabs_->currentWidget() == transformerView_) transformerDock_->raise();
    });

    connect(presets_, &PresetBrowser::presetActivated, this, [this](const QString& path) {
        if (!openSceneFile(path)) QMessageBox::warning(this, tr("Open preset"), lastError_);
    });
    connect(scenePanel_, &ScenePanel::attentionEdited, this,
            [this](const AttentionSpec& spec) { applyAttention(spec, scenePanel_); });
    connect(matrixEditor_, &MatrixEditor::attentionEdited, this,
            [this](const AttentionSpec& spec) { applyAttention(spec, matrixEditor_); });
    connect(scenePanel_, &ScenePanel::integratorEdited, this, &MainWindow::applyIntegrator);
    connect(scenePanel_, &ScenePanel::sceneEdited, this, [this](const Scene& scene) {
        view_->setDrawing(false);
        if (!setScene(scene, scenePath_)) QMessageBox::warning(this, tr("Apply scene"), lastError_);
    });
    // Drawing initial tokens: the run pauses so the points are drawn over a still picture.
    connect(scenePanel_, &ScenePanel::drawRequested, this, [this](bool on) {
        if (on) {
            runner_.pause();
            updateControls();
            showParticleView();
        }
        view_->setDrawing(on);
    });
    connect(scenePanel_, &ScenePanel::drawClearRequested, view_, &ParticleView::clearDrawnPoints);
    connect(view_, &ParticleView::pointsDrawn, scenePanel_, &ScenePanel::setDrawnPoints);
    connect(view_, &ParticleView::drawingChanged, scenePanel_, &ScenePanel::setDrawing);
}

void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(openAction_);
    recentMenu_ = file->addMenu(tr("Open &recent"));
    QAction* openModel = file->addAction(tr("Open trained &model..."), this, &MainWindow::openModelDialog);
    openModel->setToolTip(
        tr("A flow or continuous-time Transformer saved as .safetensors (flowscope-cli train, "
           "train-transformer or Export ▸ Trained model), shown in its tab, paused"));
    openModel->setStatusTip(openModel->toolTip());
    file->setToolTipsVisible(true);
    file->addAction(saveAction_);
    file->addAction(saveAsAction_);
    file->addSeparator();
    QMenu* exports = file->addMenu(tr("&Export"));
    QAction* viewPng =
        exports->addAction(tr("&View as PNG..."), this, [this] { exportDialog(ExportKind::ViewPng); });
    viewPng->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    viewPng->setToolTip(tr("The shown tab as a PNG, at the screen's resolution"));
    QAction* trajectory = exports->addAction(tr("&Trajectory as .npy..."), this,
                                             [this] { exportDialog(ExportKind::Trajectory); });
    trajectory->setToolTip(tr("Every recorded frame as one (frames, N, d) float64 array, and the frames' "
                              "times in <name>_times.npy"));
    QAction* moments = exports->addAction(tr("&Moment trajectories as .npy..."), this,
                                          [this] { exportDialog(ExportKind::Moments); });
    moments->setToolTip(tr("Gaussian mode: the mean and covariance ODE solutions of the scene's initial "
                           "Gaussians (the cone's trajectories) as (R, K, d, d) covariances, with "
                           "<name>_means.npy (R, K, d) and <name>_times.npy (R, K), NaN after a trajectory "
                           "ends: the bytes of flowscope-cli moments --out x.npy"));
    QAction* plots =
        exports->addAction(tr("&Plots as SVG or PNG..."), this, [this] { exportDialog(ExportKind::Plots); });
    plots->setToolTip(tr("The plots of the shown tab as vector graphics (.svg) or an image (.png): the Plots "
                         "panel beside the particles and the cone, the whole Flows or Transformers view"));
    QAction* animation = exports->addAction(tr("&Animation..."), this, &MainWindow::exportAnimationDialog);
    animation->setToolTip(tr("The particles, cone or disc view as MP4, GIF or numbered PNGs, rendered "
                             "offscreen from t = 0 at a chosen size, frame rate and time per frame"));
    exports->addSeparator();
    QAction* model = exports->addAction(tr("Trained &model..."), this, &MainWindow::exportModelDialog);
    model->setToolTip(tr("The shown training tab's model as .safetensors with its record (.json) beside it, "
                         "as flowscope-cli train writes them"));
    QAction* samples =
        exports->addAction(tr("&Samples as .npy..."), this, [this] { exportFlowDataDialog(false); });
    samples->setToolTip(tr("n samples of the Flows tab's model from a seed, as an (n, d) float32 array: the "
                           "bytes of flowscope-cli sample --n --seed"));
    QAction* density =
        exports->addAction(tr("&Density as .npy..."), this, [this] { exportFlowDataDialog(true); });
    density->setToolTip(tr("The Flows tab's model density on a grid over [-extent, extent]² (row = y, column "
                           "= x), float64: the bytes of flowscope-cli density --grid --half-width"));
    for (QAction* a : {model, samples, density}) a->setStatusTip(a->toolTip());
    exports->setToolTipsVisible(true);
    file->addSeparator();
    file->addAction(quitAction_);
    rebuildRecentMenu();

    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    QAction* copyShare =
        edit->addAction(tr("&Copy scene as share string"), this, &MainWindow::copyShareString);
    copyShare->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C));
    copyShare->setToolTip(tr("The whole scene as it runs now (live edits included) as one line, to paste "
                             "here or pass to flowscope or flowscope-cli in place of a scene file"));
    QAction* pasteShare =
        edit->addAction(tr("&Paste scene from share string"), this, &MainWindow::pasteShareString);
    pasteShare->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_V));
    pasteShare->setToolTip(tr("Open the scene whose share string is on the clipboard"));
    edit->setToolTipsVisible(true);

    QMenu* sim = menuBar()->addMenu(tr("&Simulation"));
    sim->addAction(playAction_);
    sim->addAction(stepAction_);
    sim->addAction(resetAction_);
    sim->addSeparator();
    sim->addAction(maxSpeedAction_);

    QMenu* view = menuBar()->addMenu(tr("&View"));
    view->addAction(frameAction_);
    view->addAction(tr("Particles"), QKeySequence(Qt::Key_1), this, &MainWindow::showParticleView);
    view->addAction(tr("Covariance cone"), QKeySequence(Qt::Key_2), this, &MainWindow::showConeView);
    view->addAction(tr("Flows"), QKeySequence(Qt::Key_3), this, &MainWindow::showFlowsView);
    view->addAction(tr("Transformers"), QKeySequence(Qt::Key_4), this, &MainWindow::showTransformersView);
    view->addSeparator();
    view->addAction(hudAction_);
    view->addAction(overlayAction_);
    view->addAction(trailsAction_);
    view->addActions(colorGroup_->actions());
    view->addSeparator();
    view->addActions(projectionGroup_->actions());
    view->addAction(axesAction_);
    view->addSeparator();
    view->addAction(discAction_);
    view->addSeparator();
    view->addActions(themeGroup_->actions());
    menuBar()->addMenu(panelsMenu_);
}

void MainWindow::buildToolBars() {
    QToolBar* bar = addToolBar(tr("Run"));
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
    connect(presetCombo_, &QComboBox::activated, this, &MainWindow::openPreset);
    bar->addWidget(presetCombo_);

    bar->addSeparator();
    bar->addWidget(new QLabel(tr(" Backend "), bar));
    backendCombo_ = new QComboBox(bar);
    backendCombo_->setObjectName(QStringLiteral("backend"));
    backendCombo_->setFocusPolicy(Qt::NoFocus);
    backendCombo_->addItem(tr("CPU"), QStringLiteral("cpu"));
#if FLOWSCOPE_HAVE_GPU
    for (const std::string& kind : backendNames()) {
        if (kind == "gl") backendCombo_->addItem(tr("OpenGL compute"), QStringLiteral("gl"));
        if (kind == "vulkan") backendCombo_->addItem(tr("Vulkan compute"), QStringLiteral("vulkan"));
    }
#endif
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
    QToolBar* time = new QToolBar(tr("Time"), this);
    time->setObjectName(QStringLiteral("timeToolBar"));
    addToolBar(Qt::BottomToolBarArea, time);
    time->addWidget(new QLabel(tr(" Recorded history "), time));
    scrubber_ = new QSlider(Qt::Horizontal, time);
    scrubber_->setRange(0, 0);
    scrubber_->setFocusPolicy(Qt::NoFocus);
    scrubber_->setToolTip(
        tr("Drag back through the recorded frames; Play or Step continues from the frame "
           "shown (the later frames are dropped). At the right end the view follows the run."));
    connect(scrubber_, &QSlider::sliderMoved, this, &MainWindow::scrubTo);
    connect(scrubber_, &QSlider::actionTriggered, this,
            [this](int) { scrubTo(scrubber_->sliderPosition()); });
    time->addWidget(scrubber_);
    scrubLabel_ = new QLabel(time);
    scrubLabel_->setMinimumWidth(
        scrubLabel_->fontMetrics().horizontalAdvance(QStringLiteral("t = 0000.000 (live) ")));
    time->addWidget(scrubLabel_);
    syncRateControls();
}

void MainWindow::syncRateControls() {
    const bool maxSpeed = maxSpeedAction_->isChecked();
    runner_.setMaxStepsPerSecond(maxSpeed ? 0.0 : rate_);
    speed_->setEnabled(!maxSpeed);
    speedLabel_->setText(maxSpeed ? tr("max") : tr("%1 steps/s").arg(rate_, 0, 'f', rate_ < 10 ? 1 : 0));
    view_->setRate(rate_, maxSpeed);
}

void MainWindow::setStepsPerSecond(double rate) {
    rate_ = std::clamp(rate, 1.0, kMaxRate);
    const QSignalBlocker block(speed_);
    speed_->setValue(rateToSlider(rate_));
    syncRateControls();
}

void MainWindow::setPresetDirectory(const QString& dir) {
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

void MainWindow::selectPresetFor(const QString& path) {
    const QString absolute = path.isEmpty() ? QString() : QFileInfo(path).absoluteFilePath();
    presetCombo_->setCurrentIndex(absolute.isEmpty() ? -1 : presetCombo_->findData(absolute));
    presets_->select(absolute);
}

bool MainWindow::openSceneFile(const QString& path) {
    Scene scene;
    try {
        scene = loadScene(QFile::encodeName(path).toStdString());
    } catch (const std::exception& e) {
        lastError_ = tr("Cannot open %1:\n%2").arg(QFileInfo(path).fileName(), describe(e));
        return false;
    }
    if (!setScene(scene, path)) return false;
    addRecent(QFileInfo(path).absoluteFilePath());
    return true;
}

bool MainWindow::setScene(const Scene& scene, const QString& sourcePath) {
    try {
        runner_.setScene(scene);
    } catch (const std::exception& e) {
        const QString what = sourcePath.isEmpty() ? tr("the scene") : QFileInfo(sourcePath).fileName();
        lastError_ = tr("Cannot run %1:\n%2").arg(what, describe(e));
        return false;
    }
    scene_ = scene;
    baseHeads_ = scene.attention.heads;
    scenePath_ = sourcePath;
    lastError_.clear();
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
    setWindowTitle(tr("%1 — Flowscope").arg(name));
    QString label = name;
    if (!scene.figure.empty()) label += tr(" (%1)").arg(QString::fromStdString(scene.figure));
    if (!scene.description.empty()) label += tr(" — %1").arg(QString::fromStdString(scene.description));
    sceneLabel_->setText(label);
    selectPresetFor(sourcePath);
    updateControls();
    return true;
}

bool MainWindow::saveSceneFile(const QString& path) {
    if (!scene_) {
        lastError_ = tr("There is no scene to save.");
        return false;
    }
    try {
        saveScene(*scene_, QFile::encodeName(path).toStdString()); // atomic: written aside, then renamed
    } catch (const std::exception& e) {
        lastError_ = tr("Cannot save %1:\n%2").arg(QFileInfo(path).fileName(), describe(e));
        return false;
    }
    scenePath_ = path;
    addRecent(QFileInfo(path).absoluteFilePath());
    return true;
}

void MainWindow::applyAttention(const AttentionSpec& spec, QObject* from) {
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

void MainWindow::applyIntegrator(const IntegratorSpec& spec) {
    if (!scene_) return;
    scene_->integrator = spec;
    runner_.setIntegrator(spec);
    view_->setIntegrator(spec);
}

void MainWindow::addRecent(const QString& path) {
    recent_.removeAll(path);
    recent_.prepend(path);
    while (recent_.size() > kMaxRecent) recent_.removeLast();
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
    if (!recentMenu_) return;
    recentMenu_->clear();
    for (const QString& path : recent_) {
        QAction* a = recentMenu_->addAction(QFileInfo(path).fileName());
        a->setToolTip(path);
        connect(a, &QAction::triggered, this, [this, path] {
            if (!openSceneFile(path)) QMessageBox::warning(this, tr("Open recent"), lastError_);
        });
    }
    recentMenu_->setEnabled(!recent_.isEmpty());
}

void MainWindow::openSceneDialog() {
    const QString start = scenePath_.isEmpty() ? QString() : QFileInfo(scenePath_).absolutePath();
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Open scene"), start, tr("Scenes (*.json);;All files (*)"));
    if (path.isEmpty()) return;
    if (!openSceneFile(path)) QMessageBox::warning(this, tr("Open scene"), lastError_);
}

void MainWindow::saveSceneDialog() {
    const QString start = scenePath_.isEmpty() ? QDir::homePath() : QFileInfo(scenePath_).absolutePath();
    QString path = QFileDialog::getSaveFileName(this, tr("Save scene"), start, tr("Scenes (*.json)"));
    if (path.isEmpty()) return;
    if (!path.endsWith(QStringLiteral(".json"))) path += QStringLiteral(".json");
    if (!saveSceneFile(path)) QMessageBox::warning(this, tr("Save scene"), lastError_);
}

void MainWindow::exportDialog(ExportKind kind) {
    const QString start = scenePath_.isEmpty() ? QDir::homePath() : QFileInfo(scenePath_).absolutePath();
    const bool plots = kind == ExportKind::Plots, moments = kind == ExportKind::Moments;
    const bool trajectory = kind == ExportKind::Trajectory || moments; // .npy
    QString path = QFileDialog::getSaveFileName(this,
                                                moments      ? tr("Export moment trajectories")
                                                : trajectory ? tr("Export trajectory")
                                                : plots      ? tr("Export plots")
                                                             : tr("Export view"),
                                                start,
                                                trajectory ? tr("NumPy arrays (*.npy)")
                                                : plots    ? tr("SVG (*.svg);;PNG (*.png)")
                                                           : tr("PNG (*.png)"));
    if (path.isEmpty()) return;
    if (plots) {
        if (!path.endsWith(QStringLiteral(".svg")) && !path.endsWith(QStringLiteral(".png")))
            path += QStringLiteral(".svg");
    } else {
        const QString suffix = trajectory ? QStringLiteral(".npy") : QStringLiteral(".png");
        if (!path.endsWith(suffix)) path += suffix;
    }
    bool ok = false;
    if (kind == ExportKind::Moments) {
        QProgressDialog progress(tr("Solving the moment equations..."), tr("Cancel"), 0, 1000, this);
        progress.setWindowTitle(tr("Export moment trajectories"));
        progress.setWindowModality(Qt::WindowModal);
        progress.setMinimumDuration(300);
        ok = exportMoments(path, [&](long done, long) {
            progress.setValue(int(done));
            return !progress.wasCanceled();
        });
        progress.close();
        if (!ok && progress.wasCanceled()) {
            statusBar()->showMessage(lastError_, 5000);
            return;
        }
    } else {
        ok = trajectory ? exportTrajectory(path) : plots ? exportPlots(path) : exportViewPng(path);
    }
    if (!ok)
        QMessageBox::warning(this, tr("Export"), lastError_);
    else
        statusBar()->showMessage(tr("Exported %1").arg(QDir::toNativeSeparators(path)), 5000);
}

bool MainWindow::exportMoments(const QString& path, const std::function<bool(long, long)>& progress) {
    if (!scene_) {
        lastError_ = tr("There is no scene to export.");
        return false;
    }
    const Scene scene = *scene_; // as it runs now
    try {
        makeMomentField(scene);  // refuses attention without moment equations
        initialGaussians(scene); // and a non-Gaussian initial distribution
    } catch (const std::exception& e) {
        lastError_ = tr("This scene has no moment trajectories:\n%1").arg(QString::fromStdString(e.what()));
        return false;
    }
    try {
        const MomentSolveOptions options =
            boundedMomentOptions(scene, defaultMemoryLimit(), false, "half this machine's memory");
        std::vector<MomentTrajectory> trajectories;
        bool cancelled = false;
        runOffThread(
            [&](const JobProgress& p) {
                trajectories =
                    solveAllMoments(scene, options, [&p](int done, int total) { p(double(done) / total); });
            },
            [&](double f) { return !(cancelled = progress && !progress(long(f * 1000.0), 1000)); });
        if (cancelled) { // the solver cannot stop early: it finished, and nothing is written
            lastError_ = tr("Export cancelled; nothing was written.");
            return false;
        }
        writeMomentsNpy(QFile::encodeName(path).toStdString(), trajectories);
    } catch (const std::exception& e) {
        lastError_ = tr("Cannot export the moment trajectories:\n%1").arg(QString::fromStdString(e.what()));
        return false;
    }
    lastError_.clear();
    return true;
}

QWidget* MainWindow::shownPlots() const {
    QWidget* shown = tabs_->currentWidget();
    if (shown == trainingView_ || shown == transformerView_) return shown;
    return plots_;
}

bool MainWindow::exportPlots(const QString& path) {
    QWidget* plots = shownPlots();
    const bool svg = path.endsWith(QStringLiteral(".svg"), Qt::CaseInsensitive);
    if (!svg && !path.endsWith(QStringLiteral(".png"), Qt::CaseInsensitive)) {
        lastError_ = tr("Cannot write %1: plots are exported as .svg or .png").arg(path);
        return false;
    }
    if (plots->width() < 2 || plots->height() < 2) {
        lastError_ = tr("Nothing to export: the plots are hidden (show the Plots panel)");
        return false;
    }
    QSaveFile file(path); // atomic: a failed write leaves no partial file under the name
    bool ok = file.open(QIODevice::WriteOnly);
    if (ok && svg) {
        // Everything the plots draw goes through QPainter, so the SVG is vector graphics: text stays text.
        QSvgGenerator generator;
        generator.setOutputDevice(&file);
        generator.setSize(plots->size());
        generator.setViewBox(QRect(QPoint(0, 0), plots->size()));
        generator.setTitle(windowTitle());
        QPainter painter;
        ok = painter.begin(&generator);
        if (ok) {
            plots->render(&painter);
            ok = painter.end();
        }
    } else if (ok) {
        const QImage image = plots->grab().toImage(); // at the screen's device pixel ratio
        ok = !image.isNull() && image.save(&file, "PNG");
    }
    if (!ok || !file.commit()) {
        lastError_ = tr("Cannot write %1: %2").arg(path, file.errorString());
        return false;
    }
    lastError_.clear();
    return true;
}

bool MainWindow::exportViewPng(const QString& path) {
    QWidget* shown = tabs_->currentWidget();
    QImage image;
    if (auto* gl = qobject_cast<QOpenGLWidget*>(shown))
        image = gl->grabFramebuffer();
    else
        image = shown->grab().toImage();
    QSaveFile file(path); // atomic: a failed write leaves no partial file under the name
    if (image.isNull() || !file.open(QIODevice::WriteOnly) || !image.save(&file, "PNG") || !file.commit()) {
        lastError_ =
            tr("Cannot write %1: %2").arg(path, image.isNull() ? tr("nothing drawn") : file.errorString());
        return false;
    }
    lastError_.clear();
    return true;
}

bool MainWindow::exportTrajectory(const QString& path, bool asFloat32) {
    const auto live = runner_.snapshot();
    std::vector<RecordedFrame> frames;
    if (live && live->history) frames = live->history->since(0);
    std::vector<const Tokens*> tokens;
    std::vector<double> times;
    for (const RecordedFrame& f : frames)
        if (f.tokens) {
            tokens.push_back(f.tokens.get());
            times.push_back(f.t);
        }
    if (tokens.empty()) {
        lastError_ = tr("Nothing to export: the run has no recorded frame yet.");
        return false;
    }
    QString timesPath = path;
    timesPath.replace(QRegularExpression(QStringLiteral("\\.npy$")), QString());
    timesPath += QStringLiteral("_times.npy");
    try {
        writeTrajectoryNpy(path.toStdString(), tokens, asFloat32);
        writeNpy(timesPath.toStdString(), {std::int64_t(times.size())}, times.data(), false);
    } catch (const std::exception& e) {
        lastError_ = tr("Cannot export the trajectory:\n%1").arg(QString::fromStdString(e.what()));
        return false;
    }
    lastError_.clear();
    return true;
}

std::unique_ptr<FrameSink> MainWindow::openExportSink(const QString& path, const AnimationOptions& options) {
    VideoOptions video;
    video.width = options.width;
    video.height = options.height;
    video.fps = options.fps;
    try {
        return openFrameSink(QFile::encodeName(path).toStdString(), video);
    } catch (const std::exception& e) {
        lastError_ = tr("Cannot export to %1:\n%2")
                         .arg(QDir::toNativeSeparators(path), QString::fromStdString(e.what()));
        return nullptr;
    }
}

bool MainWindow::exportAnimation(const AnimationOptions& options, const QString& path,
                                 const ExportProgress& progress) {
    if (options.view == AnimationView::Training) return exportTrainingAnimation(options, path, progress);
    if (!scene_) {
        lastError_ = tr("There is no scene to export.");
        return false;
    }
    const Scene scene = *scene_; // as it runs now; the export runs a simulation of its own from t = 0
    if (const auto why = animationOptionsError(scene, options)) {
        lastError_ = tr("Cannot export the animation:\n%1").arg(QString::fromStdString(*why));
        return false;
    }
    // The output first: a path the sinks cannot take fails before any work. From here on a cancel or a
    // failure destroys the sink unfinished, which leaves nothing under the name.
    std::unique_ptr<FrameSink> sink = openExportSink(path, options);
    if (!sink) return false;

    // An OpenGL context of the export's own on an offscreen surface; the one current before (a view's) is
    // made current again at the end.
    const QPointer<QOpenGLContext> previous = QOpenGLContext::currentContext();
    QSurface* previousSurface = previous ? previous->surface() : nullptr;
    QSurfaceFormat format = QSurfaceFormat::defaultFormat();
    if (format.version() < qMakePair(3, 3)) {
        format.setVersion(3, 3);
        format.setProfile(QSurfaceFormat::CoreProfile);
    }
    QOffscreenSurface surface;
    surface.setFormat(format);
    surface.create();
    QOpenGLContext context;
    context.setFormat(format);
    const auto makeCurrent = [&context, &surface] { return context.makeCurrent(&surface); };
    QString error;
    bool cancelled = false;
    if (!surface.isValid() || !context.create() || !makeCurrent()) {
        error = tr("no OpenGL context for offscreen drawing");
    } else {
        GlApi gl;
        std::string why;
        const auto resolve = [&context](const char* name) {
            return GlApi::Proc(context.getProcAddress(name));
        };
        if (!gl.load(resolve, &why)) {
            error = QString::fromStdString(why);
        } else {
            // progress() may repaint the views (their contexts become current): ours is made current again.
            const auto report = [&](long done) {
                const bool go = !progress || progress(done, options.frames);
                makeCurrent();
                return go;
            };
            AnimationExporter exporter(scene, options);
            bool ok = false;
            try {
                ok = exporter.initialize(gl) && exporter.solve([&] { return !report(0); });
                makeCurrent();
                ok = ok && exporter.run(*sink, report);
                if (ok) sink->finish();
            } catch (const std::exception& e) {
                ok = false;
                error = QString::fromStdString(e.what());
            }
            if (!ok && error.isEmpty()) {
                const QString what = QString::fromStdString(exporter.error());
                switch (exporter.failure()) {
                case AnimationExporter::Failure::Cancelled:
                    cancelled = true;
                    break;
                case AnimationExporter::Failure::Size:
                    error = tr("Size: %1").arg(what);
                    break;
                case AnimationExporter::Failure::Hud:
                    error = tr("Heads-up display: %1").arg(what);
                    break;
                case AnimationExporter::Failure::View:
                    error = tr("View (%1): %2").arg(QString::fromLatin1(toString(options.view)), what);
                    break;
                default:
                    error = what;
                }
            }
            makeCurrent();
            exporter.release();
        }
        context.doneCurrent();
    }
    const bool written = error.isEmpty() && !cancelled;
    if (!written) sink.reset(); // unfinished: removes what it wrote aside
    if (previous && previousSurface) previous->makeCurrent(previousSurface);
    if (cancelled) {
        lastError_ = tr("Export cancelled; nothing was written.");
        return false;
    }
    if (!written) {
        lastError_ = tr("Cannot export the animation to %1:\n%2").arg(QDir::toNativeSeparators(path), error);
        return false;
    }
    lastError_.clear();
    return true;
}

bool MainWindow::exportTrainingAnimation(const AnimationOptions& options, const QString& path,
                                         const ExportProgress& progress) {
    if (const auto why = animationOptionsError(Scene(), options)) {
        lastError_ = tr("Cannot export the animation:\n%1").arg(QString::fromStdString(*why));
        return false;
    }
    // What the Flows tab trains now: its trainers' own configs (the user's points and a loaded model's
    // parameters included), or the panel's settings before the first start.
    std::vector<flows::TrainerConfig> configs;
    const auto running = training_.snapshot();
    if (running)
        for (const TrainerState& t : running->trainers)
            if (t.config) configs.push_back(*t.config);
    if (configs.empty()) configs = trainingConfigs(trainingPanel_->config(), trainingPanel_->sideBySide());
    const flows::TrainerConfig& first = configs.front();
    const std::string dataName = first.dataset.empty() ? std::string("your points") : first.dataset;
    std::unique_ptr<TrainingAnimator> animator;
    try {
        animator = std::make_unique<TrainingAnimator>(configs, options, dataName);
    } catch (const std::exception& e) {
        lastError_ = tr("Cannot export the animation:\n%1").arg(QString::fromStdString(e.what()));
        return false;
    }
    std::unique_ptr<FrameSink> sink = openExportSink(path, options);
    if (!sink) return false;
    // A cancel or a failure destroys the sink unfinished, which leaves nothing under the name.
    try {
        if (!animator->run(*sink, [&](long done) { return !progress || progress(done, options.frames); })) {
            lastError_ = tr("Export cancelled; nothing was written.");
            return false;
        }
        sink->finish();
    } catch (const std::exception& e) {
        lastError_ = tr("Cannot export the animation to %1:\n%2")
                         .arg(QDir::toNativeSeparators(path), QString::fromStdString(e.what()));
        return false;
    }
    lastError_.clear();
    return true;
}

void MainWindow::exportAnimationDialog() {
    if (!scene_) return;
    const bool training = tabs_->currentWidget() == trainingView_;
    QWidget* shown = tabs_->currentWidget() == cone_ ? static_cast<QWidget*>(cone_)
                     : training                      ? static_cast<QWidget*>(trainingView_)
                                                     : view_;
    const QSize pixels = shown->size() * shown->devicePixelRatioF();
    QSettings settings;
    QString path = settings.value(QStringLiteral("export/animationPath")).toString();
    if (path.isEmpty()) {
        const QString name =
            scene_->name.empty() ? QStringLiteral("animation") : QString::fromStdString(scene_->name);
        path = QDir::home().filePath(
            name + (Mp4Writer::available() ? QStringLiteral(".mp4") : QStringLiteral(".gif")));
    }
    AnimationExportDialog dialog(*scene_, pixels, QDir::toNativeSeparators(path), this);
    if (shown == cone_) dialog.setView(discAction_->isChecked() ? AnimationView::Disc : AnimationView::Cone);
    if (training) dialog.setView(AnimationView::Training);
    if (dialog.exec() != QDialog::Accepted) return;
    const AnimationOptions options = dialog.options();
    path = dialog.path();
    settings.setValue(QStringLiteral("export/animationPath"), path);

    QProgressDialog progress(tr("Preparing..."), tr("Cancel"), 0, int(options.frames), this);
    progress.setWindowTitle(tr("Export animation"));
    progress.setWindowModality(Qt::WindowModal);
    progress.setMinimumDuration(0);
    progress.setAutoClose(false);
    progress.setAutoReset(false);
    progress.setValue(0);
    QElapsedTimer clock;
    clock.start();
    const bool ok = exportAnimation(options, path, [&](long done, long total) {
        const bool cone = options.view == AnimationView::Cone || options.view == AnimationView::Disc;
        const long frame = std::min(done + 1, total);
        progress.setLabelText(done == 0 && cone ? tr("Solving the moment equations...")
                              : options.view == AnimationView::Training
                                  ? tr("Training and rendering frame %1 of %2 (iteration %3)")
                                        .arg(frame)
                                        .arg(total)
                                        .arg((frame - 1) * options.itersPerFrame)
                                  : tr("Rendering frame %1 of %2").arg(frame).arg(total));
        progress.setValue(int(done));
        QCoreApplication::processEvents();
        return !progress.wasCanceled();
    });
    const double seconds = double(clock.nsecsElapsed()) * 1e-9;
    progress.close();
    if (!ok) {
        if (progress.wasCanceled())
            statusBar()->showMessage(lastError_, 5000);
        else
            QMessageBox::warning(this, tr("Export animation"), lastError_);
        return;
    }
    // The size on disk: the file, or the PNG directory's frames.
    qint64 bytes = 0;
    const QFileInfo info(path);
    if (info.isDir()) {
        for (const QFileInfo& f : QDir(path).entryInfoList(QDir::Files)) bytes += f.size();
    } else {
        bytes = info.size();
    }
    const QString size = bytes >= (qint64(1) << 20)
                             ? tr("%1 MiB").arg(double(bytes) / double(1 << 20), 0, 'f', 1)
                             : tr("%1 KiB").arg(double(bytes) / 1024.0, 0, 'f', 0);
    statusBar()->showMessage(tr("Exported %1 (%2 frames, %3) in %4 s, %5 frames/s")
                                 .arg(QDir::toNativeSeparators(path))
                                 .arg(options.frames)
                                 .arg(size)
                                 .arg(seconds, 0, 'f', 1)
                                 .arg(double(options.frames) / std::max(seconds, 1e-9), 0, 'f', 1),
                             10000);
}

QString MainWindow::shareString(QString* why) const {
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

bool MainWindow::openShareString(const QString& text) {
    Scene scene;
    try {
        scene = decodeShareString(text.trimmed().toStdString());
    } catch (const std::exception& e) {
        lastError_ = tr("Cannot open the share string:\n%1").arg(describe(e));
        return false;
    }
    return setScene(scene);
}

void MainWindow::copyShareString() {
    QString why;
    const QString text = shareString(&why);
    if (text.isEmpty()) {
        QMessageBox::warning(this, tr("Copy scene as share string"), why);
        return;
    }
    QGuiApplication::clipboard()->setText(text);
    statusBar()->showMessage(tr("Copied the scene as a share string (%1 characters)").arg(text.size()), 5000);
}

void MainWindow::pasteShareString() {
    const QString text = QGuiApplication::clipboard()->text();
    if (text.trimmed().isEmpty()) {
        QMessageBox::warning(this, tr("Paste scene from share string"),
                             tr("The clipboard holds no text: copy a share string (fs1.…) first."));
        return;
    }
    if (!openShareString(text))
        QMessageBox::warning(this, tr("Paste scene from share string"), lastError_);
    else
        statusBar()->showMessage(tr("Opened the scene from the share string"), 5000);
}

void MainWindow::openPreset(int index) {
    const QString path = presetCombo_->itemData(index).toString();
    if (path.isEmpty() || !openSceneFile(path)) {
        QMessageBox::warning(this, tr("Open preset"), lastError_);
        selectPresetFor(scenePath_); // the combo shows the scene that is actually running
    }
}

void MainWindow::continueFromScrub() {
    if (!scrubIndex_) return;
    if (auto s = runner_.snapshot(); s && s->history && std::size_t(*scrubIndex_) < s->history->size())
        runner_.seek(s->history->at(std::size_t(*scrubIndex_)).t);
    scrubIndex_.reset();
    view_->setPreview(nullptr);
}

void MainWindow::togglePlay() {
    if (runner_.playing())
        runner_.pause();
    else
        play();
    updateControls();
}

void MainWindow::play() {
    continueFromScrub();
    // Play at the end of a run (or after an event) starts it again from the beginning.
    if (auto s = runner_.snapshot(); s && s->finished && !scrubIndex_) runner_.reset();
    runner_.play();
    updateControls();
}

void MainWindow::stepOnce() {
    continueFromScrub();
    runner_.stepOnce();
    updateControls();
}

void MainWindow::reset() {
    scrubIndex_.reset();
    view_->setPreview(nullptr);
    runner_.reset();
}

void MainWindow::frameAll() {
    view_->frameAll();
}

void MainWindow::setMaxSpeed(bool on) {
    maxSpeedAction_->setChecked(on);
}

void MainWindow::showConeView() {
    tabs_->setCurrentWidget(cone_);
}

void MainWindow::showParticleView() {
    tabs_->setCurrentWidget(view_);
}

void MainWindow::showFlowsView() {
    tabs_->setCurrentWidget(trainingView_);
}

void MainWindow::showTransformersView() {
    tabs_->setCurrentWidget(transformerView_);
}

bool MainWindow::startTransformer(const ot::OtTrainerConfig& config, bool comparison, bool play) {
    try {
        transformers_.start(config, comparison);
    } catch (const std::exception& e) {
        lastError_ = tr("Cannot start training:\n%1").arg(QString::fromStdString(e.what()));
        transformerPanel_->setStartError(lastError_);
        return false;
    }
    lastError_.clear();
    transformerPanel_->setConfig(config, comparison);
    transformerPanel_->setStarted();
    if (play)
        transformers_.play();
    else
        transformers_.pause();
    transformerView_->refresh(); // shows the new run's first snapshot
    transformerPanel_->setSnapshot(transformers_.snapshot(), transformers_.playing());
    return true;
}

bool MainWindow::startTraining(const flows::TrainerConfig& config, bool sideBySide, bool play) {
    try {
        training_.start(config, sideBySide);
    } catch (const std::exception& e) {
        lastError_ = tr("Cannot start training:\n%1").arg(QString::fromStdString(e.what()));
        trainingPanel_->setStartError(lastError_);
        return false;
    }
    lastError_.clear();
    trainingPanel_->setConfig(config, sideBySide);
    trainingPanel_->setStarted();
    if (play)
        training_.play();
    else
        training_.pause();
    trainingView_->refresh(); // shows the new run's first snapshot
    trainingPanel_->setSnapshot(training_.snapshot(), training_.playing());
    return true;
}

void MainWindow::scrubTo(int index) {
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

void MainWindow::updatePlots() {
    if (!plots_->isVisible()) return;
    plots_->setSnapshot(runner_.snapshot());
    if (const auto shown = view_->displayedSnapshot()) plots_->setCursorTime(shown->t);
}

void MainWindow::onSnapshot() {
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

void MainWindow::setBackend(const QString& kind) {
    const int index = backendCombo_->findData(kind);
    backendCombo_->setCurrentIndex(std::max(index, 0));
    const std::string name = backendCombo_->currentData().toString().toStdString();
    if (name == "cpu") {
        runner_.setBackend(nullptr);
        return;
    }
#if FLOWSCOPE_HAVE_GPU
    if (name == "gl") {
        // In the views' share group, so that the particle view draws the tokens from GPU memory.
        if (!computeSurface_) computeSurface_ = makeComputeSurface();
        runner_.setBackend(sharedGlBackendOpener(computeSurface_.get()));
        return;
    }
    runner_.setBackend([name] { return openBackend(name); });
#endif
}

QString MainWindow::backend() const {
    return backendCombo_->currentData().toString();
}

void MainWindow::updateControls() {
    // Called for every new snapshot (~60 Hz while running): touch the actions only when something changed.
    const bool playing = runner_.playing();
    const bool have = scene_.has_value();
    if (controlsState_ == std::pair(playing, have)) return;
    controlsState_ = std::pair(playing, have);
    playAction_->setText(playing ? tr("Pause") : tr("Play"));
    playAction_->setIcon(
        makeIcon(playing ? IconKind::Pause : IconKind::Play, palette().color(QPalette::ButtonText)));
    for (QAction* a : {playAction_, stepAction_, resetAction_, frameAction_, saveAction_, saveAsAction_})
        a->setEnabled(have);
}

void MainWindow::setTheme(ThemeKind kind) {
    theme_ = kind;
    if (auto* app = qobject_cast<QApplication*>(QCoreApplication::instance())) applyTheme(*app, kind);
    view_->setPlotStyle(plotStyle(kind));
    trainingView_->setPlotStyle(plotStyle(kind));
    transformerView_->setPlotStyle(plotStyle(kind));
    for (QAction* a : themeGroup_->actions()) a->setChecked(ThemeKind(a->data().toInt()) == kind);
    // Icons are drawn in the text colour of the palette.
    const QColor ink = QApplication::palette().color(QPalette::ButtonText);
    openAction_->setIcon(makeIcon(IconKind::Open, ink));
    stepAction_->setIcon(makeIcon(IconKind::Step, ink));
    resetAction_->setIcon(makeIcon(IconKind::Reset, ink));
    frameAction_->setIcon(makeIcon(IconKind::Frame, ink));
    controlsState_.reset();
    updateControls();
}

void MainWindow::saveSettings() {
    QSettings s;
    s.setValue(QStringLiteral("window/geometry"), saveGeometry());
    s.setValue(QStringLiteral("window/state"), saveState());
    s.setValue(QStringLiteral("window/tab"), tabs_->currentIndex());
    s.setValue(QStringLiteral("view/theme"), theme_ == ThemeKind::Light ? "light" : "dark");
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

std::optional<std::pair<Scene, QString>> MainWindow::restoreSettings() {
    QSettings s;
    restoreGeometry(s.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(s.value(QStringLiteral("window/state")).toByteArray());
    tabs_->setCurrentIndex(s.value(QStringLiteral("window/tab"), 0).toInt());
    setTheme(s.value(QStringLiteral("view/theme")).toString() == QStringLiteral("light") ? ThemeKind::Light
                                                                                         : ThemeKind::Dark);
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
    setBackend(s.value(QStringLiteral("run/backend"), QStringLiteral("cpu")).toString());
    const QString json = s.value(QStringLiteral("scene/json")).toString();
    if (json.isEmpty()) return std::nullopt;
    try {
        return std::pair(sceneFromJson(json.toStdString()), s.value(QStringLiteral("scene/path")).toString());
    } catch (const std::exception&) {
        return std::nullopt; // a stale or damaged entry: start from the default scene instead
    }
}

void MainWindow::closeEvent(QCloseEvent* e) {
    saveSettings();
    QMainWindow::closeEvent(e);
}

QImage MainWindow::grabWindowImage() {
    QPixmap window = grab();
    // Paint the views' framebuffers over their places: grabbing a QOpenGLWidget through its parent is not
    // guaranteed to include the GL content on every platform.
    QPainter p(&window);
    for (QOpenGLWidget* gl : {static_cast<QOpenGLWidget*>(view_), static_cast<QOpenGLWidget*>(cone_)})
        if (gl->isVisible())
            p.drawImage(QRectF(gl->mapTo(this, QPoint(0, 0)), gl->size()), gl->grabFramebuffer());
    p.end();
    return window.toImage();
}

} // namespace flowscope
