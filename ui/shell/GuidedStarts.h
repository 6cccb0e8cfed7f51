// Flowscope UI: the guided first run.
//
// One-click starts, each an action of the window (Help menu, command palette, welcome pane): it opens the
// workspace and the preset (or training run) that shows one thing, starts it, and says in one sentence what
// to look at (the action's tooltip; the status bar shows it after the start). The workspaces declare them
// (Workspace::guidedStarts), listed in tab order; today three:
//  * "Watch clustering": tokens on the sphere gathering into clusters (preset sphere-clustering, Particles);
//  * "See a blow-up": a Gaussian's covariance blowing up in finite time (preset cone-fig1b-blowup, the cone);
//  * "Train a flow": a flow trained on eight Gaussians with and without the RWPO layer (Flows).
// The welcome pane offers them on a first launch (MainWindow::restoreSettings() shows it until dismissed)
// and under Help ▸ Welcome. Object names: the actions "start.clustering", "start.blowup", "start.flow"; the
// pane "welcome", its buttons the actions' names, and "welcome.close".
#pragma once

#include <QFrame>
#include <QList>

class QAction;

namespace flowscope {

class MainWindow;

// The workspaces' starts as actions of `window` (its children), in tab order.
QList<QAction*> makeGuidedStarts(MainWindow& window);

// The welcome pane: a panel over the middle of its window (a child of it, kept centred), a button and its
// sentence for each start, and Close. A start or Close hides it and emits dismissed(); Esc closes it too.
class WelcomePane : public QFrame {
    Q_OBJECT
  public:
    WelcomePane(QWidget* window, const QList<QAction*>& starts);

    // Shows it in the middle of its window, in front.
    void present();

  signals:
    void dismissed();

  protected:
    bool eventFilter(QObject* watched, QEvent* event) override; // the window's resizes
    void keyPressEvent(QKeyEvent* e) override;

  private:
    void place();
    void dismiss();
};

} // namespace flowscope
