// Flowscope UI: what the live-training panels (Training for flows, Transformer) share: the run controls
// (ui/panels/RunControls.h: Start, Play, Step, Reset, Evaluate and the status lines) under the panel's own
// settings, the requests they emit, and the state a workspace tells them (started, a failed start). Each
// panel adds its settings form, its typed startRequested(config, comparison, play) and its status lines.
#pragma once

#include "ui/panels/RunControls.h"

#include <QString>
#include <QStringList>
#include <QWidget>

#include <string>

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
    // What names a trainer at the start of its line in a side-by-side run (its label and `separator`), else
    // nothing.
    static QString trainerPrefix(bool comparison, const std::string& label, const char* separator) {
        return comparison ? QString::fromStdString(label) + QString::fromLatin1(separator) : QString();
    }
    // The last rejected step of each trainer that had one, a line each (S is a snapshot).
    template <class S> static QString lastEvents(const S& snapshot) {
        QString text;
        for (const auto& t : snapshot.trainers)
            if (!t.events.empty())
                text += (text.isEmpty() ? QString() : QStringLiteral("\n")) +
                        eventText(trainerPrefix(snapshot.comparison, t.label, ", "), t.events.back());
        return text;
    }
    // The "loaded" note, a form row that says what Start trains on after File ▸ Open trained model (hidden
    // until a model is loaded); `tooltip` says when the panel starts afresh instead.
    void addLoadedNote(QWidget* parent, QFormLayout* form, const QString& tooltip);
    // The note shows `text`, or is hidden when no parameters are loaded.
    void showLoaded(const QString& text, bool loaded);
    // The two rows of a flow's RWPO choice (Flows, Inverse), named `prefix`.rwpo and `prefix`.side_by_side:
    // the RWPO layer, and both side by side (with and without it), which disables the RWPO box. Both mark the
    // panel edited.
    void addRwpoRows(QWidget* parent, QFormLayout* form, const char* prefix, const QString& sideBySideText);
    // The boxes show `rwpo` and `sideBySide` (the caller blocks their signals).
    void showRwpo(bool rwpo, bool sideBySide);

    RunControls* controls_ = nullptr;
    QLabel* loaded_ = nullptr;
    QCheckBox* rwpo_ = nullptr;
    QCheckBox* sideBySide_ = nullptr;
};

} // namespace flowscope
