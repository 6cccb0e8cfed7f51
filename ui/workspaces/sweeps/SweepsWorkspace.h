// Flowscope UI: the Sweeps workspace: a sweep (docs/sweeps.md) run on this machine's threads in the
// background (engine/runner/LocalSweep.h), its phase diagram or histograms filling in as runs finish. One
// page (the Sweeps view), one dock (the Sweeps panel); File ▸ Export ▸ Sweep table writes the table as
// flowscope-cli sweep does. A click on a cell opens that cell's scene (its first run's, as `flowscope-cli
// sweep SPEC --print-scene R` prints it) in the Particles workspace: the cone view for a 2-D Gaussian-mode
// scene, the particle view otherwise.
#pragma once

#include "engine/runner/LocalSweep.h"
#include "ui/shell/Workspace.h"

#include <QTimer>

#include <memory>

class QDockWidget;
class QMainWindow;

namespace flowscope {

class ParticlesWorkspace;
class SweepPanel;
class SweepView;

class SweepsWorkspace : public Workspace {
    Q_OBJECT
  public:
    // `particles`: where a cell's scene opens.
    SweepsWorkspace(QMainWindow* host, ParticlesWorkspace* particles);
    ~SweepsWorkspace() override; // cancels the sweep and waits for its runs in flight

    QString id() const override { return QStringLiteral("sweeps"); }
    QList<WorkspacePage> pages() const override;
    QList<WorkspaceDock> docks() const override;
    QList<QAction*> exportActions() const override { return {tableExport_}; }
    QList<QAction*> fileOpenActions() const override { return {openAction_}; } // File ▸ Open sweep...
    QWidget* plotsOf(QWidget*) const override;
    void setActive(bool active) override;
    void setTheme(ThemeKind kind) override;
    void saveSettings(QSettings& s) const override;
    void restoreSettings(QSettings& s) override;
    QString documentName() const override;

    // Shows a sweep: a SWEEP.json, or the name of a shipped one (assets/sweeps/NAME.json). A sweep still
    // running is cancelled first. False (lastError()) when the spec is invalid; the shown sweep stays.
    bool openSweep(const QString& pathOrName);
    // Runs every run of the shown sweep on `threads` threads (0: the panel's choice) in the background.
    bool run(int threads = 0);
    // Hands out no more runs; returns at once (the runs in flight finish, then the panel says Cancelled).
    void cancel();
    bool running() const;
    // Reads the runner now (a timer does it while running): the picture, the progress and, at the end, the
    // status message.
    void poll();
    // The picture's choice (y empty: histograms).
    void setSelection(const std::string& x, const std::string& y, const std::string& measure);
    // Opens run `run`'s scene in the Particles workspace and shows its page.
    bool openRun(long run);
    // The finished sweep's table in folder `dir` (created when missing): results.csv, results.json, a .npy
    // per column, as flowscope-cli sweep writes them.
    bool saveTable(const QString& dir);

    std::shared_ptr<const SweepSpec> spec() const { return spec_; }
    LocalSweep& runner() { return run_; }
    SweepView* view() const { return view_; }
    SweepPanel* panel() const { return panel_; }
    QDockWidget* dock() const { return dock_; }

    // File ▸ Open sweep… and the panel's Open…: a SWEEP.json chosen in a file dialog, shown on the Sweeps
    // page.
    void openSweepDialog();

  private:
    void saveTableDialog();
    void showProgress();

    ParticlesWorkspace* particles_;
    std::shared_ptr<const SweepSpec> spec_;
    QString specPath_;
    LocalSweep run_;
    std::string runBackend_ = "cpu"; // the backend id the last run computed on (its table's record)
    long shownVersion_ = -1;
    bool reported_ = true; // the end of the last run has been reported
    QTimer poll_;
    SweepView* view_ = nullptr;
    SweepPanel* panel_ = nullptr;
    QDockWidget* dock_ = nullptr;
    QAction* tableExport_ = nullptr;
    QAction* openAction_ = nullptr;
    QString sweepDir_, tableDir_;
};

} // namespace flowscope
