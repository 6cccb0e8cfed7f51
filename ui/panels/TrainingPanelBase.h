// Flowscope UI: what the live-training panels (Training for flows, Transformer) share: the run controls
// (ui/panels/RunControls.h: Start, Play, Step, Reset, Evaluate and the status lines) under the panel's own
// settings, the requests they emit, and the state a workspace tells them (started, a failed start). Each
// panel adds its settings form, its typed startRequested(config, comparison, play) and its status lines.
#pragma once

#include "ui/panels/RunControls.h"

#include <QString>
#include <QStringList>
#include <QWidget>

// The controls the training panels are made of.
class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSpinBox;
class QFormLayout;
class QVBoxLayout;

namespace flowscope {

class TrainingPanelBase : public QWidget {
    Q_OBJECT
  public:
    // The workspace tells the panel what runs: a run started from the current controls (clears the "edited"
    // state), or a start that failed (shown in the warning line until the next start).
    void setStarted();
    void setStartError(const QString& message);

    QString statusText() const;
    QString warningText() const;
    bool edited() const; // controls changed since the last start

  signals:
    void playRequested(bool play); // resume (true) or pause (false) the current run
    void stepRequested();
    void resetRequested();
    void evaluateRequested();

  protected:
    explicit TrainingPanelBase(QWidget* parent) : QWidget(parent) {}
    // Adds the run controls at the end of `layout`, then a stretch.
    void addRunControls(QVBoxLayout* layout, const RunControls::Tips& tips);
    // Start was pressed: the panel emits its startRequested with the controls' config.
    virtual void requestStart(bool play) = 0;
    // Shows the last snapshot again with the controls' play state (after a failed start).
    virtual void restate() = 0;
    void markEdited();
    // The status lines every run starts with: "Not started.", or the iteration, the rate and the play state;
    // the controls show the play state. S is a snapshot (null before the first start).
    template <class S> QStringList beginStatus(const S* snapshot, bool playing) {
        controls_->setPlaying(playing);
        return runLines(snapshot != nullptr, snapshot ? snapshot->iteration() : 0,
                        snapshot ? snapshot->iterationsPerSecond : 0.0, playing);
    }
    static QStringList runLines(bool started, long iteration, double iterationsPerSecond, bool playing);
    // The "loaded" note, a form row that says what Start trains on after File ▸ Open trained model (hidden
    // until a model is loaded); `tooltip` says when the panel starts afresh instead.
    void addLoadedNote(QWidget* parent, QFormLayout* form, const QString& tooltip);
    // The note shows `text`, or is hidden when no parameters are loaded.
    void showLoaded(const QString& text, bool loaded);

    RunControls* controls_ = nullptr;
    QLabel* loaded_ = nullptr;
};

} // namespace flowscope
