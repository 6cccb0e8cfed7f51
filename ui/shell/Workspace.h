// Flowscope UI: a workspace, one kind of work the app does (Particles, Flows, Transformers, Inverse, Sweeps).
//
// A workspace owns everything of its kind: its run, its pages (the tabs it shows), its docks, tool bars and
// menus, its File ▸ Export entries, its settings and its status messages. The shell (MainWindow) only places
// them: it adds the pages to the tab bar, the docks to the dock areas and the menus to the menu bar, and when
// the shown tab changes it shows the controls of the workspace that owns it and hides the others, so that no
// control of one kind of run appears beside another's picture. Adding a fifth kind of work is writing one
// Workspace and registering it in MainWindow's constructor.
//
// Every operation a user or a test can ask for returns false on failure with the message in lastError() (and
// in the errorReported signal, which the shell's lastError() follows); none opens a dialog. Only the *Dialog
// paths, reached from menus and buttons, ask questions and show messages.
#pragma once

#include <QKeySequence>
#include <QList>
#include <QObject>
#include <QString>
#include <QWidget>

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
