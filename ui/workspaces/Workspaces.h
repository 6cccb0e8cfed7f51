// Flowscope UI: the workspaces the app has, the one list of them. MainWindow (ui/shell) places whatever this
// list holds and names none of them; adding a workspace is one line in makeWorkspaces().
#pragma once

#include <QList>

class QMainWindow;

namespace flowscope {

class Workspace;

// The app's workspaces in tab order, made for `host` (their parent): Particles, Flows, Transformers, Inverse,
// Sweeps, Models.
QList<Workspace*> makeWorkspaces(QMainWindow* host);

} // namespace flowscope
