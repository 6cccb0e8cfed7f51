#include "ui/MainWindow.h"

#include "ui/ElidedLabel.h"
#include "ui/Icons.h"
#include "ui/ParticleView.h"

#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPainter>
#include <QStatusBar>
#include <QToolBar>

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

} // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(QStringLiteral("Flowscope"));
    view_ = new ParticleView(this);
    view_->setSource([this] { return runner_.snapshot(); });
    setCentralWidget(view_);
    connect(view_, &ParticleView::snapshotChanged, this, &MainWindow::updateControls);

    buildActions();
    buildMenus();
    buildToolBar();
    sceneLabel_ = new ElidedLabel(this);
    sceneLabel_->setText(tr("No scene"));
    statusBar()->addWidget(sceneLabel_, 1);
    updateControls();
    view_->setFocus();
}

// The view is a child, deleted by ~QWidget after our members (the runner) are gone: cut its link first.
MainWindow::~MainWindow() {
    view_->setSource({});
}

void MainWindow::buildActions() {
    const QColor ink = palette().color(QPalette::ButtonText);
    openAction_ = new QAction(makeIcon(IconKind::Open, ink), tr("&Open scene..."), this);
    openAction_->setShortcut(QKeySequence::Open);
    connect(openAction_, &QAction::triggered, this, &MainWindow::openSceneDialog);

    quitAction_ = new QAction(tr("&Quit"), this);
    quitAction_->setShortcut(QKeySequence::Quit);
    connect(quitAction_, &QAction::triggered, this, &QWidget::close);

    playAction_ = new QAction(makeIcon(IconKind::Play, ink), tr("Play"), this);
    playAction_->setShortcut(Qt::Key_Space);
    playAction_->setToolTip(tr("Play / pause (Space)"));
    connect(playAction_, &QAction::triggered, this, &MainWindow::togglePlay);

    stepAction_ = new QAction(makeIcon(IconKind::Step, ink), tr("Step"), this);
    stepAction_->setShortcut(Qt::Key_S);
    stepAction_->setToolTip(tr("Advance one step (S)"));
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
    maxSpeedAction_->setToolTip(tr("Step as fast as the CPU allows instead of at most %1 steps/s")
                                    .arg(WorkerLoop::kDefaultStepsPerSecond));
    connect(maxSpeedAction_, &QAction::toggled, this,
            [this](bool on) { runner_.setMaxStepsPerSecond(on ? 0.0 : WorkerLoop::kDefaultStepsPerSecond); });
}

void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(openAction_);
    file->addSeparator();
    file->addAction(quitAction_);

    QMenu* sim = menuBar()->addMenu(tr("&Simulation"));
    sim->addAction(playAction_);
    sim->addAction(stepAction_);
    sim->addAction(resetAction_);
    sim->addSeparator();
    sim->addAction(maxSpeedAction_);

    QMenu* view = menuBar()->addMenu(tr("&View"));
    view->addAction(frameAction_);
}

void MainWindow::buildToolBar() {
    QToolBar* bar = addToolBar(tr("Run"));
    bar->setObjectName(QStringLiteral("runToolBar"));
    bar->setMovable(false);
    bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    bar->addAction(openAction_);
    bar->addSeparator();
    bar->addAction(playAction_);
    bar->addAction(stepAction_);
    bar->addAction(resetAction_);
    bar->addSeparator();
    bar->addAction(frameAction_);
    bar->addAction(maxSpeedAction_);
    bar->addSeparator();
    bar->addWidget(new QLabel(tr(" Preset "), bar));

    presets_ = new QComboBox(bar);
    presets_->setMinimumContentsLength(18);
    presets_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    presets_->setPlaceholderText(tr("(none)"));
    presets_->setFocusPolicy(Qt::NoFocus); // Space and the letter shortcuts stay with the window
    presets_->setEnabled(false);
    connect(presets_, &QComboBox::activated, this, &MainWindow::openPreset);
    bar->addWidget(presets_);
}

void MainWindow::setPresetDirectory(const QString& dir) {
    presets_->clear();
    const QFileInfoList files =
        QDir(dir).entryInfoList({QStringLiteral("*.json")}, QDir::Files | QDir::Readable, QDir::Name);
    for (const QFileInfo& f : files) presets_->addItem(f.completeBaseName(), f.absoluteFilePath());
    presets_->setEnabled(!files.isEmpty());
    presets_->setPlaceholderText(files.isEmpty() ? tr("(no presets)") : tr("(none)"));
    selectPresetFor(scenePath_);
}

void MainWindow::selectPresetFor(const QString& path) {
    const QString absolute = path.isEmpty() ? QString() : QFileInfo(path).absoluteFilePath();
    presets_->setCurrentIndex(absolute.isEmpty() ? -1 : presets_->findData(absolute));
}

bool MainWindow::openSceneFile(const QString& path) {
    Scene scene;
    try {
        scene = loadScene(QFile::encodeName(path).toStdString());
    } catch (const std::exception& e) {
        lastError_ = tr("Cannot open %1:\n%2").arg(QFileInfo(path).fileName(), describe(e));
        return false;
    }
    return setScene(scene, path);
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
    scenePath_ = sourcePath;
    lastError_.clear();

    const QString name = !scene.name.empty()     ? QString::fromStdString(scene.name)
                         : !sourcePath.isEmpty() ? QFileInfo(sourcePath).completeBaseName()
                                                 : tr("untitled");
    setWindowTitle(tr("%1 — Flowscope").arg(name));
    sceneLabel_->setText(scene.description.empty()
                             ? name
                             : tr("%1 — %2").arg(name, QString::fromStdString(scene.description)));
    selectPresetFor(sourcePath);
    updateControls();
    return true;
}

void MainWindow::openSceneDialog() {
    const QString start = scenePath_.isEmpty() ? QString() : QFileInfo(scenePath_).absolutePath();
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Open scene"), start, tr("Scenes (*.json);;All files (*)"));
    if (path.isEmpty()) return;
    if (!openSceneFile(path)) QMessageBox::warning(this, tr("Open scene"), lastError_);
}

void MainWindow::openPreset(int index) {
    const QString path = presets_->itemData(index).toString();
    if (path.isEmpty() || !openSceneFile(path)) {
        QMessageBox::warning(this, tr("Open preset"), lastError_);
        selectPresetFor(scenePath_); // the combo shows the scene that is actually running
    }
}

void MainWindow::togglePlay() {
    if (runner_.playing())
        runner_.pause();
    else
        play();
    updateControls();
}

void MainWindow::play() {
    // Play at the end of a run (or after an event) starts it again from the beginning.
    if (auto s = runner_.snapshot(); s && s->finished) runner_.reset();
    runner_.play();
    updateControls();
}

void MainWindow::stepOnce() {
    runner_.stepOnce();
    updateControls();
}

void MainWindow::reset() {
    runner_.reset();
}

void MainWindow::frameAll() {
    view_->frameAll();
}

void MainWindow::setMaxSpeed(bool on) {
    maxSpeedAction_->setChecked(on);
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
    for (QAction* a : {playAction_, stepAction_, resetAction_, frameAction_}) a->setEnabled(have);
}

QImage MainWindow::grabWindowImage() {
    QPixmap window = grab();
    // Paint the view's framebuffer over its place: grabbing a QOpenGLWidget through its parent is not
    // guaranteed to include the GL content on every platform.
    const QImage gl = view_->grabFramebuffer();
    QPainter p(&window);
    p.drawImage(QRectF(view_->mapTo(this, QPoint(0, 0)), view_->size()), gl);
    p.end();
    return window.toImage();
}

} // namespace flowscope
