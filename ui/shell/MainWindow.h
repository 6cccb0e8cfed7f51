// Flowscope UI: the application shell. It holds the workspaces (ui/shell/Workspace.h) that makeWorkspaces()
// lists (ui/workspaces/Workspaces.h), names none of them, and does only what is common to them:
//  * the tab bar of their pages, and on every tab change shows the controls (docks, tool bars, menus, export
//    entries) of the workspace that owns the shown page and hides the others';
//  * the menu bar (File, Edit, View, Panels, and each workspace's own menus), the dock areas and the status
//    bar;
//  * File ▸ Open trained model (a .safetensors, to the workspace that declares its kind) and the exports
//  every
//    page has (the page as a PNG, its plots as SVG or PNG);
//  * settings (window geometry and dock layout, theme, shown tab, and each workspace's own) and the theme.
#pragma once

#include "ui/widgets/Theme.h"

#include <QHash>
#include <QImage>
#include <QMainWindow>
#include <QSet>
#include <QString>

#include <functional>
#include <stdexcept>
#include <string>
#include <typeinfo>

class QAction;
class QActionGroup;
class QDockWidget;
class QMenu;
class QTabWidget;

namespace flowscope {

class CommandPalette;
class ShortcutsDialog;
class WelcomePane;
class Workspace;

class MainWindow : public QMainWindow {
    Q_OBJECT
  public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // The workspaces in tab order, and the one of type T (std::logic_error naming T when there is none).
    const QList<Workspace*>& workspaces() const { return workspaces_; }
    template <class T> T& workspace() const {
        for (Workspace* w : workspaces_)
            if (auto* t = dynamic_cast<T*>(w)) return *t;
        throw std::logic_error(std::string("MainWindow: no workspace of type ") + typeid(T).name());
    }
    // The workspace whose page is shown.
    Workspace* activeWorkspace() const;

    void showPage(QWidget* page);

    // File ▸ Open trained model: a .safetensors of flowscope-cli train, train-transformer or infer (or
    // Export ▸ Trained model), given to the workspace that declares its metadata's kind
    // (Workspace::modelKinds), opened paused there.
    bool openModelFile(const QString& path);
    // A share string (the command line's scene argument), opened by the workspace that takes it.
    bool openShareString(const QString& text);
    // File ▸ Export ▸ View as PNG (the shown page; GL views at their framebuffer's resolution) and Plots (the
    // shown workspace's plots, .svg or .png). Atomic.
    bool exportViewPng(const QString& path);
    bool exportPlots(const QString& path);
    QWidget* shownPlots() const;
    // The message of the last operation that failed, whichever workspace ran it; empty after a success.
    QString lastError() const { return lastError_; }

    // Settings (QSettings "Flowscope"): window geometry and dock layout, theme, the shown tab, and each
    // workspace's own (view options, run speed, backend, recent files, the last scene as JSON so that unsaved
    // edits survive).
    void saveSettings();
    void restoreSettings();
    void setTheme(ThemeKind kind);
    ThemeKind theme() const { return theme_; }

    // The whole window as shown, including the GL views (which a plain QWidget::grab may leave blank).
    QImage grabWindowImage();

    // Help (GuidedStarts.h, CommandPalette.h): the welcome pane with the guided starts (shown by
    // restoreSettings() until it is dismissed once; the settings remember that), the keyboard shortcuts
    // and the command palette (Ctrl+K: every enabled action and every preset).
    void showWelcome();
    // Hides the welcome pane without dismissing it: what the command line asked for (a model, a training)
    // is shown; the pane comes back on the next first launch.
    void hideWelcome();
    void showShortcuts();
    void showCommandPalette();
    WelcomePane* welcomePane() const { return welcome_; }
    // Runs `run` (e.g. plays a workspace's run) now, or, while the welcome pane covers the window, once the
    // pane is closed and only if a page of `w` is shown then (it would play unseen behind the pane). A guided
    // start starts its own run instead.
    void whenSeen(Workspace& w, std::function<void()> run);
    QList<QAction*> guidedStarts() const { return starts_; }
    ShortcutsDialog* shortcutsDialog() const { return shortcuts_; }
    CommandPalette* commandPalette() const { return palette_; }

  protected:
    void showEvent(QShowEvent* e) override;
    bool eventFilter(QObject* watched, QEvent* event) override; // the tabs' resizes: fitTabTitles
    void closeEvent(QCloseEvent* e) override;

  private:
    bool openModelIn(const QString& path); // openModelFile, but for the welcome pane
    void addWorkspace(Workspace* w);
    void placeDocks();
    void buildMenus();
    void buildHelpMenu();
    void onPageChanged();
    void showWorkspace(Workspace* w, bool shown);
    void updateWindowTitle();
    void exportShownDialog(bool plots);
    void openModelDialog();

    QTabWidget* tabs_ = nullptr;
    QList<QPair<QString, QString>> tabTitles_; // each tab's full and short title
    // The full titles when they fit the tab bar side by side, else the short ones (no scroll arrows).
    void fitTabTitles();
    QList<Workspace*> workspaces_;      // in tab order
    QHash<QWidget*, Workspace*> owner_; // page -> its workspace
    QSet<QDockWidget*> hiddenByShell_;  // docks of inactive workspaces the user had shown
    QList<QDockWidget*> sideDocks_;     // the first dock of the left and the right area
    bool docksSized_ = false;           // their widths were set (first show) or restored
    QMenu* exportMenu_ = nullptr;
    QMenu* panelsMenu_ = nullptr;
    QActionGroup* themeGroup_ = nullptr;
    QString lastError_;
    ThemeKind theme_ = ThemeKind::Dark;
    QList<QAction*> starts_;
    WelcomePane* welcome_ = nullptr;
    // What whenSeen() left for the pane's closing, and the workspace it needs shown.
    std::function<void()> afterWelcome_;
    Workspace* afterWelcomeOf_ = nullptr;
    ShortcutsDialog* shortcuts_ = nullptr;
    CommandPalette* palette_ = nullptr;
    QAction* paletteAction_ = nullptr;
};

} // namespace flowscope
