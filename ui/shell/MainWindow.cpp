#include "ui/shell/MainWindow.h"

#include "engine/io/Safetensors.h"
#include "ui/export/ExportDialogs.h"
#include "ui/shell/CommandPalette.h"
#include "ui/shell/GuidedStarts.h"
#include "ui/shell/Workspace.h"
#include "ui/workspaces/Workspaces.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenuBar>
#include <QMessageBox>
#include <QOpenGLWidget>
#include <QPainter>
#include <QPointer>
#include <QSettings>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>

#include <utility>

namespace flowscope {

// --- Construction, workspaces, docks and menus ---

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(QStringLiteral("Flowscope"));
    setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks |
                   QMainWindow::AllowNestedDocks);
    tabs_ = new QTabWidget(this);
    tabs_->setDocumentMode(true);
    setCentralWidget(tabs_);

    for (Workspace* w : makeWorkspaces(this)) addWorkspace(w);
    placeDocks();
    buildMenus();
    connect(tabs_, &QTabWidget::currentChanged, this, &MainWindow::onPageChanged);
    tabs_->installEventFilter(this);
    onPageChanged();
    if (QWidget* first = tabs_->currentWidget()) first->setFocus();
}

// The workspaces go first, while the views they feed are still there (each cuts its view's link to its run).
MainWindow::~MainWindow() {
    for (Workspace* w : workspaces_) delete w;
}

void MainWindow::addWorkspace(Workspace* w) {
    workspaces_.push_back(w);
    for (const WorkspacePage& page : w->pages()) {
        const int index = tabs_->addTab(page.widget, page.title);
        tabs_->setTabToolTip(index, page.toolTip);
        tabTitles_.append({page.title, page.shortTitle.isEmpty() ? page.title : page.shortTitle});
        owner_.insert(page.widget, w);
    }
    connect(w, &Workspace::statusMessage, this,
            [this](const QString& text, int ms) { statusBar()->showMessage(text, ms); });
    connect(w, &Workspace::errorReported, this, [this](const QString& message) { lastError_ = message; });
    connect(w, &Workspace::showPageRequested, this, &MainWindow::showPage);
    connect(w, &Workspace::documentNameChanged, this, [this, w] {
        if (w == activeWorkspace()) updateWindowTitle();
    });
    w->setTheme(theme_);
}

// Each area holds its docks as tabs, the first of each workspace in front; only the shown workspace's are
// visible at a time.
void MainWindow::placeDocks() {
    QHash<int, QDockWidget*> first;
    for (Workspace* w : workspaces_)
        for (const WorkspaceDock& d : w->docks()) {
            addDockWidget(Qt::DockWidgetArea(d.area), d.dock);
            if (QDockWidget* front = first.value(d.area))
                tabifyDockWidget(front, d.dock);
            else
                first.insert(d.area, d.dock);
        }
    for (QDockWidget* d : first) d->raise();
    sideDocks_ = {first.value(Qt::LeftDockWidgetArea), first.value(Qt::RightDockWidgetArea)};
}

// File: the workspaces' Open entries in tab order, the shell's Open trained model before those of the first
// workspace that opens models, then their Save entries; Edit: theirs.
void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->setToolTipsVisible(true);
    QAction* openModel = new QAction(tr("Open trained &model..."), this);
    connect(openModel, &QAction::triggered, this, &MainWindow::openModelDialog);
    openModel->setToolTip(
        tr("A flow, continuous-time Transformer or posterior flow saved as .safetensors (flowscope-cli "
           "train, train-transformer, infer or Export ▸ Trained model), shown in its tab, paused"));
    openModel->setStatusTip(openModel->toolTip());
    bool modelPlaced = false;
    for (Workspace* w : workspaces_) {
        if (!modelPlaced && !w->modelKinds().isEmpty()) {
            file->addAction(openModel);
            modelPlaced = true;
        }
        file->addActions(w->fileOpenActions());
    }
    if (!modelPlaced) file->addAction(openModel);
    for (Workspace* w : workspaces_) file->addActions(w->fileSaveActions());
    file->addSeparator();
    exportMenu_ = file->addMenu(tr("&Export"));
    exportMenu_->setToolTipsVisible(true);
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    edit->setToolTipsVisible(true);
    for (Workspace* w : workspaces_) edit->addActions(w->editActions());

    for (Workspace* w : workspaces_)
        for (QMenu* m : w->menus()) menuBar()->addMenu(m);

    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (Workspace* w : workspaces_)
        for (const WorkspacePage& page : w->pages())
            view->addAction(page.title, page.shortcut, this,
                            [this, widget = page.widget] { showPage(widget); });
    view->addSeparator();
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
    view->addActions(themeGroup_->actions());
    panelsMenu_ = menuBar()->addMenu(tr("&Panels"));
    buildHelpMenu();
}

void MainWindow::buildHelpMenu() {
    starts_ = makeGuidedStarts(*this);
    welcome_ = new WelcomePane(this, starts_);
    connect(welcome_, &WelcomePane::dismissed, this, [this] {
        QSettings().setValue(QStringLiteral("welcome/dismissed"), true);
        if (const auto run = std::exchange(afterWelcome_, {}); run && activeWorkspace() == afterWelcomeOf_)
            run();
    });
    shortcuts_ = new ShortcutsDialog(this);
    palette_ = new CommandPalette(this);

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->setToolTipsVisible(true);
    help->addAction(tr("&Welcome"), this, &MainWindow::showWelcome);
    help->addSeparator();
    help->addActions(starts_);
    help->addSeparator();
    paletteAction_ = help->addAction(tr("&Command palette..."), this, &MainWindow::showCommandPalette);
    paletteAction_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_K));
    QAction* keys = help->addAction(tr("&Keyboard shortcuts..."), this, &MainWindow::showShortcuts);
    keys->setShortcut(QKeySequence::HelpContents);
}

// --- Help: welcome, shortcuts, command palette ---

void MainWindow::showWelcome() {
    afterWelcome_ = {};
    welcome_->present();
}

void MainWindow::whenSeen(Workspace& w, std::function<void()> run) {
    afterWelcome_ = {};
    if (!welcome_->isVisible()) return run();
    afterWelcome_ = std::move(run);
    afterWelcomeOf_ = &w;
}

void MainWindow::showShortcuts() {
    shortcuts_->refresh();
    shortcuts_->show();
    shortcuts_->raise();
}

// Every action a user can run now (enabled, in a shown menu or none), then the workspaces' own entries (the
// presets).
void MainWindow::showCommandPalette() {
    const auto runsNow = [](const QAction* a) {
        if (!a->isEnabled() || !a->isVisible()) return false;
        bool inMenu = false, inShownMenu = false;
        for (QObject* o : a->associatedObjects())
            if (const auto* m = qobject_cast<const QMenu*>(o)) {
                inMenu = true;
                inShownMenu = inShownMenu || m->menuAction()->isVisible();
            }
        return !inMenu || inShownMenu;
    };
    QList<CommandPalette::Command> commands;
    for (const ActionEntry& e : windowActions(*this))
        if (e.action != paletteAction_ && runsNow(e.action))
            commands.push_back({e.path, e.action->shortcut().toString(QKeySequence::NativeText),
                                [a = QPointer<QAction>(e.action)] {
                                    if (a) a->trigger();
                                }});
    for (Workspace* w : workspaces_) commands += w->paletteCommands();
    palette_->present(commands);
}

// --- The shown workspace and the window title ---

Workspace* MainWindow::activeWorkspace() const {
    return owner_.value(tabs_->currentWidget());
}

// The shown page's workspace shows its controls, every other hides them; the Export and Panels menus list
// the shown workspace's entries.
void MainWindow::onPageChanged() {
    // A status message is about the page it was shown on: it goes with it. (Left up, it covered the scene's
    // line of the Particles tab, which the workspace shows again here, and spoke of the particles on Flows.)
    statusBar()->clearMessage();
    Workspace* active = activeWorkspace();
    for (Workspace* w : workspaces_)
        if (w != active) showWorkspace(w, false);
    if (active) showWorkspace(active, true);
    updateWindowTitle();

    exportMenu_->clear();
    QAction* png = exportMenu_->addAction(tr("&View as PNG..."), this, [this] { exportShownDialog(false); });
    png->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    png->setToolTip(tr("The shown tab as a PNG, at the screen's resolution"));
    QAction* plots =
        exportMenu_->addAction(tr("&Plots as SVG or PNG..."), this, [this] { exportShownDialog(true); });
    plots->setToolTip(tr("The plots of the shown tab as vector graphics (.svg) or an image (.png): the Plots "
                         "panel beside the particles and the cone, the whole Flows or Transformers view"));
    if (active) {
        exportMenu_->addSeparator();
        exportMenu_->addActions(active->exportActions());
    }
    panelsMenu_->clear();
    if (active)
        for (const WorkspaceDock& d : active->docks()) panelsMenu_->addAction(d.dock->toggleViewAction());
}

// The shown workspace's document ("cone-fig3a-blowup — Flowscope"): a scene's name is not the title of the
// Flows tab.
void MainWindow::updateWindowTitle() {
    const Workspace* active = activeWorkspace();
    const QString name = active ? active->documentName() : QString();
    setWindowTitle(name.isEmpty() ? QStringLiteral("Flowscope") : tr("%1 — Flowscope").arg(name));
}

void MainWindow::showWorkspace(Workspace* w, bool shown) {
    for (const WorkspaceDock& d : w->docks()) {
        if (!shown && !d.dock->isHidden()) {
            hiddenByShell_.insert(d.dock);
            d.dock->hide();
        } else if (shown && hiddenByShell_.remove(d.dock)) {
            d.dock->show();
        }
    }
    for (QToolBar* bar : w->toolBars()) bar->setVisible(shown);
    for (QMenu* m : w->menus()) m->menuAction()->setVisible(shown);
    w->setActive(shown);
}

void MainWindow::showPage(QWidget* page) {
    if (page) tabs_->setCurrentWidget(page);
}

// --- Opening models and share strings ---

bool MainWindow::openModelFile(const QString& path) {
    const bool ok = openModelIn(path);
    if (ok) hideWelcome();
    return ok;
}

void MainWindow::hideWelcome() {
    welcome_->hide();
}

// The first workspace, in tab order, that declares a kind the file's metadata holds (the file is read and
// checked here once, up to the reader's 2 GiB bound; the workspace reads it again as its kind).
bool MainWindow::openModelIn(const QString& path) {
    QStringList kinds;
    try {
        const SafeTensors file = readSafetensors(path.toStdString());
        for (Workspace* w : workspaces_)
            for (const QString& kind : w->modelKinds()) {
                if (file.metadata.count(kind.toStdString())) return w->openModel(path);
                kinds << QStringLiteral("'%1'").arg(kind);
            }
    } catch (const std::exception& e) {
        lastError_ = tr("Cannot open the trained model:\n%1").arg(QString::fromStdString(e.what()));
        return false;
    }
    lastError_ = tr("Cannot open the trained model:\n%1: not a Flowscope model (no %2 metadata)")
                     .arg(path, kinds.join(tr(" or ")));
    return false;
}

bool MainWindow::openShareString(const QString& text) {
    for (Workspace* w : workspaces_)
        if (w->takesShareString(text)) return w->openShareString(text);
    lastError_ = tr("Not a share string (fs1.…): %1").arg(text.left(40));
    return false;
}

void MainWindow::openModelDialog() {
    // Where the last model was opened or exported, by any workspace that opens models.
    QString dir;
    for (Workspace* w : workspaces_)
        if (dir.isEmpty()) dir = w->modelDir();
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Open trained model"), dir.isEmpty() ? QDir::homePath() : dir,
                                     tr("Trained models (*.safetensors)"));
    if (path.isEmpty()) return;
    if (!openModelFile(path)) QMessageBox::warning(this, tr("Open trained model"), lastError_);
}

// --- Exports of the shown view ---

QWidget* MainWindow::shownPlots() const {
    Workspace* w = activeWorkspace();
    return w ? w->plotsOf(tabs_->currentWidget()) : nullptr;
}

bool MainWindow::exportViewPng(const QString& path) {
    const ExportResult r = exportWidgetPng(tabs_->currentWidget(), path);
    lastError_ = r.message;
    return r.ok();
}

bool MainWindow::exportPlots(const QString& path) {
    const ExportResult r = flowscope::exportPlots(shownPlots(), path, windowTitle());
    lastError_ = r.message;
    return r.ok();
}

void MainWindow::exportShownDialog(bool plots) {
    const QString title = plots ? tr("Export plots") : tr("Export view");
    const QString path =
        askSavePathOfKind(this, title, plots ? QStringLiteral("plots") : QStringLiteral("view"),
                          plots ? tr("SVG (*.svg);;PNG (*.png)") : tr("PNG (*.png)"),
                          plots ? QStringList{".svg", ".png"} : QStringList{".png"});
    if (path.isEmpty()) return;
    if (!(plots ? exportPlots(path) : exportViewPng(path)))
        QMessageBox::warning(this, tr("Export"), lastError_);
    else
        statusBar()->showMessage(tr("Exported %1").arg(QDir::toNativeSeparators(path)), 5000);
}

// --- Theme, settings and window events ---

void MainWindow::setTheme(ThemeKind kind) {
    theme_ = kind;
    if (auto* app = qobject_cast<QApplication*>(QCoreApplication::instance())) applyTheme(*app, kind);
    for (Workspace* w : workspaces_) w->setTheme(kind);
    for (QAction* a : themeGroup_->actions()) a->setChecked(ThemeKind(a->data().toInt()) == kind);
}

void MainWindow::saveSettings() {
    QSettings s;
    s.setValue(QStringLiteral("window/geometry"), saveGeometry());
    s.setValue(QStringLiteral("window/state"), saveState());
    QStringList hidden; // the docks shown again when their workspace is (saveState has them hidden)
    for (QDockWidget* d : hiddenByShell_) hidden << d->objectName();
    s.setValue(QStringLiteral("window/hiddenByShell"), hidden);
    s.setValue(QStringLiteral("window/tab"), tabs_->currentIndex());
    s.setValue(QStringLiteral("view/theme"), theme_ == ThemeKind::Light ? "light" : "dark");
    for (Workspace* w : workspaces_) w->saveSettings(s);
}

void MainWindow::restoreSettings() {
    QSettings s;
    restoreGeometry(s.value(QStringLiteral("window/geometry")).toByteArray());
    if (restoreState(s.value(QStringLiteral("window/state")).toByteArray())) {
        docksSized_ = true;
        const QStringList hidden = s.value(QStringLiteral("window/hiddenByShell")).toStringList();
        hiddenByShell_.clear();
        for (Workspace* w : workspaces_)
            for (const WorkspaceDock& d : w->docks())
                if (hidden.contains(d.dock->objectName())) hiddenByShell_.insert(d.dock);
    }
    tabs_->setCurrentIndex(s.value(QStringLiteral("window/tab"), 0).toInt());
    onPageChanged(); // restoreState may have shown another workspace's docks
    setTheme(s.value(QStringLiteral("view/theme")).toString() == QStringLiteral("light") ? ThemeKind::Light
                                                                                         : ThemeKind::Dark);
    for (Workspace* w : workspaces_) w->restoreSettings(s);
    if (!s.value(QStringLiteral("welcome/dismissed"), false).toBool()) showWelcome(); // a first launch
}

// The side panels' widths, once the window has its size (before, the areas take the narrow size hints of
// the panels' scroll areas), unless the settings restored a layout.
bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
    if (watched == tabs_ && event->type() == QEvent::Resize) fitTabTitles();
    return QMainWindow::eventFilter(watched, event);
}

void MainWindow::fitTabTitles() {
    const auto use = [this](bool full) {
        for (int i = 0; i < tabTitles_.size(); ++i) {
            const QString& text = full ? tabTitles_[i].first : tabTitles_[i].second;
            if (tabs_->tabText(i) != text) tabs_->setTabText(i, text);
        }
    };
    use(true);
    if (tabs_->tabBar()->sizeHint().width() > tabs_->width()) use(false);
}

void MainWindow::showEvent(QShowEvent* e) {
    QMainWindow::showEvent(e);
    // A message shown before the window was (a restored sweep's, at startup) did not hide the status bar's
    // line, which was not visible yet; the show then showed it, and both were drawn over each other. Shown
    // again now, the message hides the line as it should.
    if (const QString message = statusBar()->currentMessage(); !message.isEmpty()) {
        statusBar()->clearMessage();
        statusBar()->showMessage(message, 5000);
    }
    if (docksSized_ || sideDocks_.contains(nullptr)) return;
    docksSized_ = true;
    // After the layout the show starts has run: a resize before it is lost.
    QTimer::singleShot(0, this, [this] { resizeDocks(sideDocks_, {330, 380}, Qt::Horizontal); });
}

void MainWindow::closeEvent(QCloseEvent* e) {
    // Trained models not exported: Save (each workspace's own dialog), Discard or Cancel, as editors ask.
    QStringList unsaved;
    QList<Workspace*> holding;
    for (Workspace* w : workspaces_)
        if (const QString line = w->unsavedWork(); !line.isEmpty()) {
            unsaved << line;
            holding << w;
        }
    if (!unsaved.isEmpty()) {
        QMessageBox ask(QMessageBox::Warning, tr("Quit Flowscope"),
                        tr("Quitting loses what was trained since the last export:"), QMessageBox::NoButton,
                        this);
        ask.setObjectName(QStringLiteral("unsavedWork"));
        ask.setInformativeText(QStringLiteral("• ") + unsaved.join(QStringLiteral("\n• ")));
        ask.setStandardButtons(QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel);
        ask.setDefaultButton(QMessageBox::Save);
        const int choice = ask.exec();
        bool close = choice == QMessageBox::Discard;
        if (choice == QMessageBox::Save) {
            close = true;
            for (Workspace* w : holding) close = close && w->saveUnsavedWork();
        }
        if (!close) {
            e->ignore();
            return;
        }
    }
    saveSettings();
    QMainWindow::closeEvent(e);
}

QImage MainWindow::grabWindowImage() {
    QPixmap window = grab();
    // Paint the shown GL views' framebuffers over their places: grabbing a QOpenGLWidget through its parent
    // is not guaranteed to include the GL content on every platform.
    QPainter p(&window);
    for (QOpenGLWidget* gl : findChildren<QOpenGLWidget*>())
        if (gl->isVisible())
            p.drawImage(QRectF(gl->mapTo(this, QPoint(0, 0)), gl->size()), gl->grabFramebuffer());
    p.end();
    return window.toImage();
}

} // namespace flowscope
