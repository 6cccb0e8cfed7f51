// Flowscope UI: a workspace, one kind of work the app does (Particles, Flows, Transformers, Inverse, Sweeps,
// Models).
//
// A workspace owns everything of its kind: its run, its pages (the tabs it shows), its docks, tool bars and
// menus, its File ▸ Export entries, its settings and its status messages. The shell (MainWindow) only places
// them: it adds the pages to the tab bar, the docks to the dock areas and the menus to the menu bar, and when
// the shown tab changes it shows the controls of the workspace that owns it and hides the others, so that no
// control of one kind of run appears beside another's picture.
//
// A workspace also declares what it opens, and the shell asks rather than names it: its File and Edit menu
// entries, the .safetensors model files it opens (by their metadata key: File ▸ Open trained model and the
// command line's --model), the share strings it opens (the command line's scene argument), its command
// palette entries and its guided starts (the welcome pane). Adding a workspace is writing one Workspace and
// one line in makeWorkspaces() (ui/workspaces/Workspaces.cpp); no shell file changes.
//
// Every operation a user or a test can ask for returns false on failure with the message in lastError() (and
// in the errorReported signal, which the shell's lastError() follows); none opens a dialog. Only the *Dialog
// paths, reached from menus and buttons, ask questions and show messages.
#pragma once

#include <QKeySequence>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <functional>

class QAction;
class QDockWidget;
class QMenu;
class QSettings;
class QToolBar;

namespace flowscope {

enum class ThemeKind;

struct WorkspacePage {
    QWidget* widget = nullptr;
    QString title;
    QString toolTip;
    QKeySequence shortcut; // View ▸ <title>
    QString shortTitle;    // the tab's text where the full titles do not fit side by side (empty: title)
};

struct WorkspaceDock {
    QDockWidget* dock = nullptr;
    int area = 0; // a Qt::DockWidgetArea; docks of one area are tabbed together, the first raised
};

// A command of the palette (Help ▸ Command palette): what the filter matches and the list shows, the
// shortcut shown beside it, what it does.
struct WorkspaceCommand {
    QString name;
    QString shortcut;
    std::function<void()> run;
};

// A guided start (ui/shell/GuidedStarts.h): the action's object name, its title, the sentence that says what
// to look at, and what it does (false: it could not, lastError() says why).
struct WorkspaceStart {
    QString id;
    QString title, look;
    std::function<bool()> run;
};

class Workspace : public QObject {
    Q_OBJECT
  public:
    // `host`: the main window, parent of the workspace's docks, tool bars and dialogs.
    explicit Workspace(QWidget* host) : QObject(host), host_(host) {}

    // The settings group ("particles") and the pages in tab order.
    virtual QString id() const = 0;
    virtual QList<WorkspacePage> pages() const = 0;
    virtual QList<WorkspaceDock> docks() const { return {}; }
    virtual QList<QToolBar*> toolBars() const { return {}; } // placed by the workspace (addToolBar)
    virtual QList<QMenu*> menus() const { return {}; }       // after Edit, shown while active
    // File ▸ Export entries, after the shell's own (the shown page as PNG, the plots as SVG/PNG).
    virtual QList<QAction*> exportActions() const { return {}; }
    // What Export ▸ Plots writes while `page` is shown.
    virtual QWidget* plotsOf(QWidget* page) const = 0;

    // The shell shows the workspace's controls while one of its pages is shown. Shortcuts of an inactive
    // workspace do nothing.
    virtual void setActive(bool active) { active_ = active; }
    bool active() const { return active_; }
    virtual void setTheme(ThemeKind) {}
    // Work that quitting would lose, in a line ("Flows: 801 iterations of training, not exported"),
    // or
    // "". saveUnsavedWork() offers to save it (its own save dialog): false when the user cancelled or it
    // failed.
    virtual QString unsavedWork() const { return {}; }
    // What the window title names while one of the workspace's pages is shown ("NAME — Flowscope"): the
    // document it shows, e.g. the scene; "" for none ("Flowscope"). documentNameChanged() says it changed.
    virtual QString documentName() const { return {}; }
    virtual bool saveUnsavedWork() { return true; }
    virtual void saveSettings(QSettings&) const {}
    virtual void restoreSettings(QSettings&) {}

    // What it opens. File menu entries: its Open entries (the workspaces' in tab order; the shell's Open
    // trained model goes before those of the first workspace with model kinds), then its Save entries; Edit
    // menu entries.
    virtual QList<QAction*> fileOpenActions() const { return {}; }
    virtual QList<QAction*> fileSaveActions() const { return {}; }
    virtual QList<QAction*> editActions() const { return {}; }
    // The .safetensors model files it opens: the metadata keys that mark them ("flowscope_flow"). The shell
    // gives a file to the first workspace, in tab order, one of whose keys the file's metadata holds, and
    // File ▸ Open trained model's dialog starts in the first non-empty modelDir(), where a model was last
    // opened or exported.
    virtual QStringList modelKinds() const { return {}; }
    virtual bool openModel(const QString& path) {
        return fail(tr("%1 is not a model this workspace opens").arg(path));
    }
    virtual QString modelDir() const { return {}; }
    // Share strings (engine/io/ShareString.h): whether `text` looks like one it opens, and opening it.
    virtual bool takesShareString(const QString&) const { return false; }
    virtual bool openShareString(const QString& text) {
        return fail(tr("Not a share string this workspace opens: %1").arg(text.left(40)));
    }
    // Entries of the command palette besides the window's actions (e.g. the presets), and guided starts.
    virtual QList<WorkspaceCommand> paletteCommands() { return {}; }
    virtual QList<WorkspaceStart> guidedStarts() { return {}; }

    QString lastError() const { return lastError_; }

  signals:
    void statusMessage(const QString& text, int milliseconds);
    void errorReported(const QString& message); // also for a success: empty
    void showPageRequested(QWidget* page);      // e.g. after opening a model: bring its tab to the front
    void documentNameChanged();

  protected:
    bool fail(const QString& message) {
        lastError_ = message;
        emit errorReported(message);
        return false;
    }
    bool succeed() {
        lastError_.clear();
        emit errorReported(QString());
        return true;
    }
    // An export's result (ExportService.h) as the operation's success, or its failure with the message.
    template <class Result> bool report(const Result& r) { return r.ok() ? succeed() : fail(r.message); }
    // The same, passing the result on (to an export dialog, which tells a cancel from a failure).
    template <class Result> Result reported(Result r) {
        report(r);
        return r;
    }
    QWidget* host() const { return host_; }

  private:
    QWidget* host_;
    QString lastError_;
    bool active_ = false;
};

} // namespace flowscope
