#include "ui/panels/TrainingPanelBase.h"

#include "ui/widgets/FormWidgets.h"

#include <QCheckBox>
#include <QFormLayout>
#include <QLabel>

#include <QVBoxLayout>

#include <string>

namespace flowscope {

void TrainingPanelBase::addRunControls(QVBoxLayout* layout, const RunControls::Tips& tips) {
    controls_ = new RunControls(tips, this);
    layout->addWidget(controls_);
    layout->addStretch();
    connect(controls_, &RunControls::startRequested, this, [this](bool play) { requestStart(play); });
    connect(controls_, &RunControls::playRequested, this, &TrainingPanelBase::playRequested);
    connect(controls_, &RunControls::stepRequested, this, &TrainingPanelBase::stepRequested);
    connect(controls_, &RunControls::resetRequested, this, &TrainingPanelBase::resetRequested);
    connect(controls_, &RunControls::evaluateRequested, this, &TrainingPanelBase::evaluateRequested);
}

void TrainingPanelBase::setStarted() {
    controls_->setStarted();
}

void TrainingPanelBase::setStartError(const QString& message) {
    controls_->setStartError(message);
    restate();
}

void TrainingPanelBase::markEdited() {
    controls_->markEdited();
}

bool TrainingPanelBase::edited() const {
    return controls_->edited();
}

QString TrainingPanelBase::statusText() const {
    return controls_->statusText();
}

QStringList TrainingPanelBase::runLines(bool started, long iteration, double iterationsPerSecond,
                                        bool playing) {
    if (!started) return {tr("Not started.")};
    return {tr("iteration %1 · %2 it/s%3")
                .arg(iteration)
                .arg(iterationsPerSecond, 0, 'f', 1)
                .arg(playing ? QString() : tr(" · paused"))};
}

QString TrainingPanelBase::warningText() const {
    return controls_->warningText();
}

void TrainingPanelBase::addLoadedNote(QWidget* parent, QFormLayout* form, const QString& tooltip) {
    loaded_ = new QLabel(parent);
    loaded_->setObjectName(QStringLiteral("loaded"));
    loaded_->setWordWrap(true);
    loaded_->setToolTip(tooltip);
    loaded_->hide();
    form->addRow(loaded_);
}

void TrainingPanelBase::showLoaded(const QString& text, bool loaded) {
    loaded_->setText(text);
    loaded_->setVisible(loaded);
}

void TrainingPanelBase::addRwpoRows(QWidget* parent, QFormLayout* form, const char* prefix,
                                    const QString& sideBySideText) {
    const std::string key = prefix;
    rwpo_ = form::named(new QCheckBox(tr("RWPO layer"), parent), (key + ".rwpo").c_str());
    sideBySide_ = form::named(new QCheckBox(sideBySideText, parent), (key + ".side_by_side").c_str());
    form->addRow(rwpo_);
    form->addRow(sideBySide_);
    connect(rwpo_, &QCheckBox::toggled, this, &TrainingPanelBase::markEdited);
    connect(sideBySide_, &QCheckBox::toggled, this, [this](bool on) {
        rwpo_->setEnabled(!on); // side by side trains both
        markEdited();
    });
}

void TrainingPanelBase::showRwpo(bool rwpo, bool sideBySide) {
    rwpo_->setChecked(rwpo);
    sideBySide_->setChecked(sideBySide);
    rwpo_->setEnabled(!sideBySide);
}

} // namespace flowscope
