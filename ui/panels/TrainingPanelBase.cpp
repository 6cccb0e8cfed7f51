#include "ui/panels/TrainingPanelBase.h"

#include <QVBoxLayout>

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

QString TrainingPanelBase::warningText() const {
    return controls_->warningText();
}

} // namespace flowscope
