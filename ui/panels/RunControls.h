// Flowscope UI: the run controls of a training panel (Flows, Transformers): Start / Step / Reset / Evaluate
// and two read-outs, a status line and a warning line.
//
// Start begins a new run (and plays), then the button pauses and resumes that run; after the panel's
// settings are edited (markEdited) it reads Start again. Step advances one iteration, starting a paused run
// first when needed. The controls only emit requests; the panel owning them turns startRequested into a
// request carrying its settings, and the main window reports back what runs (setStarted, setStartError,
// setPlaying) and the status the panel composes from each snapshot (setStatus).
//
// The buttons' objectNames are "start", "step", "reset" and "evaluate", the labels' "status" and "warning".
#pragma once

#include "engine/flows/StepGuard.h"

#include <QString>
#include <QStringList>
#include <QWidget>

class QLabel;
class QPushButton;

namespace flowscope {

class RunControls : public QWidget {
    Q_OBJECT
  public:
    struct Tips {
        QString step, reset, evaluate, status;
    };
    RunControls(const Tips& tips, QWidget* parent = nullptr);

    void setStarted();                          // a run started from the current settings
    void setStartError(const QString& message); // a start that failed; shown until the next start
    void markEdited();                          // the settings changed since the last start
    void setPlaying(bool playing);

    // The status lines and a warning (red when `error`, else amber). A start error replaces the warning;
    // an edit since the last start adds a line saying how to apply it.
    void setStatus(QStringList lines, QString warning, bool error);

    bool started() const { return started_; }
    bool edited() const { return edited_; }
    bool playing() const { return playing_; }
    QString statusText() const;
    QString warningText() const;

  signals:
    void startRequested(bool play);
    void playRequested(bool play); // resume (true) or pause (false) the current run
    void stepRequested();
    void resetRequested();
    void evaluateRequested();

  private:
    void onStart();
    void onStep();
    void updateButtons();
    void render(); // the last status with the current state

    QStringList lines_;
    QString warningLine_;
    bool error_ = false;

    QPushButton* start_ = nullptr;
    QPushButton* step_ = nullptr;
    QPushButton* reset_ = nullptr;
    QPushButton* evaluate_ = nullptr;
    QLabel* status_ = nullptr;
    QLabel* warning_ = nullptr;
    bool started_ = false;
    bool edited_ = false;
    bool playing_ = false;
    QString startError_;
};

// "iteration K: message" of a trainer's event (a rejected step, a stop), after `prefix` (the trainer's label
// when two train side by side).
QString eventText(const QString& prefix, const flows::TrainEvent& e);

} // namespace flowscope
