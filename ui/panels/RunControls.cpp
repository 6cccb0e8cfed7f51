#include "ui/panels/RunControls.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include <algorithm>

namespace flowscope {

namespace {

QPushButton* button(QWidget* parent, const QString& text, const char* name, const QString& tip) {
    auto* b = new QPushButton(text, parent);
    b->setObjectName(QString::fromLatin1(name));
    b->setToolTip(tip);
    b->setFocusPolicy(Qt::TabFocus);
    return b;
}

QLabel* readOut(QWidget* parent, const char* name) {
    auto* l = new QLabel(parent);
    l->setObjectName(QString::fromLatin1(name));
    l->setWordWrap(true);
    l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return l;
}

} // namespace

RunControls::RunControls(const Tips& tips, QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* buttons = new QHBoxLayout;
    start_ =
        button(this, tr("Start"), "start", tr("Start a new run with these settings; then pause / resume it"));
    step_ = button(this, tr("Step"), "step", tips.step);
    reset_ = button(this, tr("Reset"), "reset", tips.reset);
    evaluate_ = button(this, tr("Evaluate"), "evaluate", tips.evaluate);
    // The style gives a push button at least 80 px, so four did not fit a dock narrower than about 340 px
    // (the Transformer panel at 1024 px scrolled sideways): each may shrink to the longest text it shows,
    // padded.
    const QFontMetrics fm(start_->font());
    int longest = 0;
    for (const QString& text :
         {tr("Start"), tr("Pause"), tr("Resume"), tr("Step"), tr("Reset"), tr("Evaluate")})
        longest = std::max(longest, fm.horizontalAdvance(text));
    for (QPushButton* b : {start_, step_, reset_, evaluate_}) {
        b->setMinimumWidth(longest + 2 * fm.averageCharWidth());
        buttons->addWidget(b);
    }
    layout->addLayout(buttons);
    status_ = readOut(this, "status");
    status_->setToolTip(tips.status);
    warning_ = readOut(this, "warning");
    layout->addWidget(status_);
    layout->addWidget(warning_);

    connect(start_, &QPushButton::clicked, this, &RunControls::onStart);
    connect(step_, &QPushButton::clicked, this, &RunControls::onStep);
    connect(reset_, &QPushButton::clicked, this, &RunControls::resetRequested);
    connect(evaluate_, &QPushButton::clicked, this, &RunControls::evaluateRequested);
    updateButtons();
}

void RunControls::setStarted() {
    started_ = true;
    edited_ = false;
    startError_.clear();
    updateButtons();
    render();
}

void RunControls::setStartError(const QString& message) {
    startError_ = message;
}

void RunControls::markEdited() {
    edited_ = true;
    updateButtons();
    render(); // says at once how to apply the edit, also while no snapshot arrives (paused)
}

void RunControls::setPlaying(bool playing) {
    playing_ = playing;
    updateButtons();
}

void RunControls::onStart() {
    if (!started_ || (edited_ && !playing_)) {
        emit startRequested(true);
        return;
    }
    emit playRequested(!playing_);
}

void RunControls::onStep() {
    if (!started_ || edited_) emit startRequested(false);
    if (started_ && !edited_) emit stepRequested(); // not when the start failed
}

void RunControls::updateButtons() {
    if (playing_)
        start_->setText(tr("Pause"));
    else
        start_->setText(!started_ || edited_ ? tr("Start") : tr("Resume"));
    reset_->setEnabled(started_);
    evaluate_->setEnabled(started_);
}

void RunControls::setStatus(QStringList lines, QString warning, bool error) {
    lines_ = std::move(lines);
    warningLine_ = std::move(warning);
    error_ = error;
    render();
}

void RunControls::render() {
    QStringList lines = lines_;
    QString warning = warningLine_;
    bool error = error_;
    if (!startError_.isEmpty()) {
        warning = startError_;
        error = true;
    }
    if (edited_ && started_)
        lines << (playing_ ? tr("Settings edited: Pause, then Start applies them.")
                           : tr("Settings edited: Start applies them."));
    status_->setText(lines.join(QLatin1Char('\n')));
    const bool dark = palette().color(QPalette::Window).lightness() < 128;
    const QString color = error ? (dark ? QStringLiteral("#ff6b6b") : QStringLiteral("#c62828"))
                                : (dark ? QStringLiteral("#ffb74d") : QStringLiteral("#a85d00"));
    warning_->setStyleSheet(QStringLiteral("color: %1;").arg(color));
    warning_->setText(warning);
    warning_->setVisible(!warning.isEmpty());
}

QString eventText(const QString& prefix, const flows::TrainEvent& e) {
    return RunControls::tr("%1iteration %2: %3")
        .arg(prefix)
        .arg(e.iteration)
        .arg(QString::fromStdString(e.message));
}

QString RunControls::statusText() const {
    return status_->text();
}

QString RunControls::warningText() const {
    return warning_->text();
}

} // namespace flowscope
