// Flowscope UI: what the Help menu lists of the window's actions: the keyboard shortcuts and the command
// palette. Both read the actions themselves (windowActions()), so that a new action with a shortcut is
// listed without anyone writing it down.
//
// The palette (Ctrl+K) lists commands (every enabled action, and a command per preset) under a filter line:
// typing keeps the commands whose name matches (commandMatches()), Up/Down choose, Enter runs the chosen one
// and closes the palette, Esc closes it. Object names: "commandPalette", "palette.filter", "palette.list";
// the shortcuts dialog "shortcuts" with its table "shortcuts.table".
#pragma once

#include "ui/shell/Workspace.h"

#include <QDialog>
#include <QList>
#include <QString>

#include <functional>

class QAction;
class QLineEdit;
class QTreeWidget;

namespace flowscope {

// An action a user can name: its text (without '&'), where it sits ("Simulation ▸ Play"; a menu, else a tool
// bar), its shortcut.
struct ActionEntry {
    QAction* action = nullptr;
    QString path;
};
// The actions of `window` (and of its children) that are in a menu or a tool bar, or have a shortcut: each
// once, sorted by path. Separators, submenus' own actions and actions without text are left out.
QList<ActionEntry> windowActions(const QWidget& window);

// Whether a command named `name` matches what was typed: the query's letters and digits, in order and
// adjacent, in the name's letters and digits, case ignored ("fig 2" matches "Fig 2(d)" and "cone-fig2d",
// not "Fig 1 (2025)").
bool commandMatches(const QString& query, const QString& name);

// How well `name` matches `query`, best first: 0 when the command's own name (the part after the last "▸")
// holds the query as whole words ("play" in "Simulation ▸ Play"), 1 when a word of it starts with the query,
// 2 when any word of the whole name is the query, 3 for any other match (commandMatches: "Display" holds
// "play"), -1 for none. The palette shows matches in this order, the menus' order among equals.
int commandRank(const QString& query, const QString& name);

class ShortcutsDialog : public QDialog {
    Q_OBJECT
  public:
    explicit ShortcutsDialog(QWidget* window);
    // Lists the window's actions with a shortcut again (the shown workspace's export entries change).
    void refresh();
    // The actions listed, in table order.
    QList<QAction*> listed() const { return listed_; }

  private:
    QWidget* window_;
    QTreeWidget* table_ = nullptr;
    QList<QAction*> listed_;
};

class CommandPalette : public QDialog {
    Q_OBJECT
  public:
    using Command = WorkspaceCommand; // name (what the filter matches), shortcut, run
    explicit CommandPalette(QWidget* window);

    // Shows `commands` under an empty filter, the first chosen.
    void present(QList<Command> commands);
    // The commands the filter keeps, in list order.
    QStringList shown() const;
    QLineEdit* filter() const { return filter_; }

  protected:
    bool eventFilter(QObject* watched, QEvent* event) override; // Up, Down, Enter in the filter line

  private:
    void applyFilter();
    void runCurrent();

    QLineEdit* filter_ = nullptr;
    QTreeWidget* list_ = nullptr;
    QList<Command> commands_;
};

} // namespace flowscope
