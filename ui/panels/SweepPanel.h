// Flowscope UI: the Sweeps panel: which sweep (a shipped one or a SWEEP.json), how many threads, Run and
// Cancel with the progress and the time left, what the picture shows (x, y, measure), the readout of the cell
// under the mouse, and Save table. It only asks; the Sweeps workspace runs the sweep and feeds it back.
#pragma once

#include "engine/runner/LocalSweep.h"

#include <QWidget>

class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace flowscope {

class SweepPanel : public QWidget {
    Q_OBJECT
  public:
    explicit SweepPanel(QWidget* parent = nullptr);

    // The sweeps offered: the shipped ones of `dir` (by name), and the files opened (by path).
    void setSweepDirectory(const QString& dir);
    void addSweepFile(const QString& path); // listed and chosen
    QString chosenPath() const;
    // The sweep now shown: its description, and its axes and measures in the plot's combo boxes (x, y: the
    // first two axes; a single axis: histograms).
    void setSweep(const SweepSpec* spec);
    // The plot's choice; y empty: histograms.
    std::string x() const;
    std::string y() const;
    std::string measure() const;
    void setSelection(const std::string& x, const std::string& y, const std::string& measure);

    int threads() const;
    void setThreads(int threads);
    // The backend the runs compute on: a registry id (engine/backend/Registry.h); the available ones are
    // offered, the CPU first. setBackend ignores an id not offered.
    std::string backend() const;
    void setBackend(const std::string& id);
    QComboBox* backendBox() const { return backend_; }
    void setProgress(const LocalSweepProgress& progress);
    void setReadout(const QString& text);
    // A message in place of the progress line (why a sweep could not be opened or run).
    void setMessage(const QString& text);

    QComboBox* sweepBox() const { return sweep_; }
    QPushButton* runButton() const { return run_; }
    QPushButton* cancelButton() const { return cancel_; }
    QProgressBar* progressBar() const { return progress_; }
    QLabel* progressLabel() const { return eta_; }
    QLabel* readout() const { return readout_; }
    QPushButton* saveButton() const { return save_; }

  signals:
    void sweepChosen(const QString& path);
    void openRequested();
    void runRequested(int threads);
    void cancelRequested();
    void selectionChanged();
    void saveRequested();

  private:
    void fillAxisBox(QComboBox* box, const SweepSpec* spec, bool none);

    QComboBox* sweep_ = nullptr;
    QPushButton* open_ = nullptr;
    QLabel* description_ = nullptr;
    QSpinBox* threads_ = nullptr;
    QComboBox* backend_ = nullptr;
    QPushButton *run_ = nullptr, *cancel_ = nullptr, *save_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QLabel* eta_ = nullptr;
    QComboBox *x_ = nullptr, *y_ = nullptr, *measure_ = nullptr;
    QLabel* readout_ = nullptr;
    bool filling_ = false; // combo boxes being refilled: no selectionChanged
};

} // namespace flowscope
