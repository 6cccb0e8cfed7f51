#include "ui/panels/SweepPanel.h"

#include "engine/backend/Registry.h"
#include "ui/widgets/FormWidgets.h"

#include <QDir>
#include <QFileInfo>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QProgressBar>
#include <QPushButton>
#include <QThread>

#include <cmath>

namespace flowscope {

namespace {

using form::addRow;
using form::duration;
using form::named;

// At most about three lines of the panel, cut at a word.
QString elided(const QString& text) {
    constexpr qsizetype kMost = 150;
    if (text.size() <= kMost) return text;
    const qsizetype space = text.lastIndexOf(QLatin1Char(' '), kMost);
    return text.left(space > 0 ? space : kMost) + QStringLiteral(" …");
}

// The first sentence of a description (the whole one is the tooltip): up to the first ". " that does not
// end an abbreviation ("et al.", "e.g.").
QString firstSentence(const std::string& text) {
    const QString t = QString::fromStdString(text);
    for (qsizetype end = t.indexOf(QStringLiteral(". ")); end >= 0;
         end = t.indexOf(QStringLiteral(". "), end + 1)) {
        const QString before = t.left(end);
        if (!before.endsWith(QStringLiteral(" al")) && !before.endsWith(QStringLiteral("e.g")) &&
            !before.endsWith(QStringLiteral("i.e")) && !before.endsWith(QStringLiteral("cf")))
            return elided(t.left(end + 1));
    }
    return elided(t);
}

std::string dataOf(const QComboBox* box) {
    return box->currentData().toString().toStdString();
}

} // namespace

SweepPanel::SweepPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = form::panelColumn(this, "sweepPanel");

    auto [group, form] = form::group(tr("Sweep"), this);
    sweep_ = named(new QComboBox(group), "sweeps.sweep");
    sweep_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    sweep_->setMinimumContentsLength(12);
    open_ = named(new QPushButton(tr("Open…"), group), "sweeps.sweep");
    open_->setObjectName(QStringLiteral("sweeps.open"));
    auto* sweepRow = new QHBoxLayout;
    sweepRow->addWidget(sweep_, 1);
    sweepRow->addWidget(open_);
    auto* sweepLabel = new QLabel(tr("Sweep"), group);
    sweepLabel->setToolTip(parameterTooltip("sweeps.sweep"));
    form->addRow(sweepLabel, sweepRow);
    description_ = new QLabel(group);
    description_->setObjectName(QStringLiteral("sweepDescription"));
    description_->setWordWrap(true);
    form->addRow(description_);
    threads_ = addRow(form, tr("Threads"), form::intBox(group, "sweeps.threads", 1, 256));
    threads_->setValue(std::max(1, QThread::idealThreadCount()));
    backend_ = addRow(form, tr("Backend"), named(new QComboBox(group), "sweeps.backend"));
    for (const BackendInfo& b : listBackends()) // the registry's order: the CPU first
        if (b.available) backend_->addItem(QString::fromStdString(b.label), QString::fromStdString(b.id));
    run_ = named(new QPushButton(tr("Run"), group), "sweeps.run");
    cancel_ = named(new QPushButton(tr("Cancel"), group), "sweeps.cancel");
    cancel_->setEnabled(false);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(run_);
    buttons->addWidget(cancel_);
    form->addRow(buttons);
    progress_ = new QProgressBar(group);
    progress_->setObjectName(QStringLiteral("sweeps.progress"));
    progress_->setRange(0, 1);
    progress_->setValue(0);
    progress_->setTextVisible(true);
    form->addRow(progress_);
    eta_ = new QLabel(group);
    eta_->setObjectName(QStringLiteral("sweeps.eta"));
    eta_->setWordWrap(true);
    form->addRow(eta_);
    save_ = named(new QPushButton(tr("Save table…"), group), "sweeps.save");
    save_->setEnabled(false);
    form->addRow(save_);
    layout->addWidget(group);

    auto [plot, plotForm] = form::group(tr("Picture"), this);
    x_ = addRow(plotForm, tr("X axis"), named(new QComboBox(plot), "sweeps.x"));
    y_ = addRow(plotForm, tr("Y axis"), named(new QComboBox(plot), "sweeps.y"));
    measure_ = addRow(plotForm, tr("Measure"), named(new QComboBox(plot), "sweeps.measure"));
    readout_ = named(new QLabel(plot), "sweeps.readout");
    readout_->setWordWrap(true);
    readout_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    readout_->setMinimumHeight(readout_->fontMetrics().height() * 5);
    readout_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    plotForm->addRow(readout_);
    layout->addWidget(plot);
    layout->addStretch(1);
    setReadout({});

    connect(sweep_, &QComboBox::activated, this,
            [this](int index) { emit sweepChosen(sweep_->itemData(index).toString()); });
    connect(open_, &QPushButton::clicked, this, &SweepPanel::openRequested);
    connect(run_, &QPushButton::clicked, this, [this] { emit runRequested(threads_->value()); });
    connect(cancel_, &QPushButton::clicked, this, &SweepPanel::cancelRequested);
    connect(save_, &QPushButton::clicked, this, &SweepPanel::saveRequested);
    for (QComboBox* box : {x_, y_, measure_})
        connect(box, &QComboBox::currentIndexChanged, this, [this] {
            if (!filling_) emit selectionChanged();
        });
}

void SweepPanel::setSweepDirectory(const QString& dir) {
    sweep_->clear();
    const QFileInfoList files =
        QDir(dir).entryInfoList({QStringLiteral("*.json")}, QDir::Files | QDir::Readable, QDir::Name);
    for (const QFileInfo& f : files) sweep_->addItem(f.completeBaseName(), f.absoluteFilePath());
    sweep_->setCurrentIndex(-1);
    sweep_->setPlaceholderText(files.isEmpty() ? tr("(no sweeps)") : tr("(choose one)"));
}

void SweepPanel::addSweepFile(const QString& path) {
    const QString absolute = QFileInfo(path).absoluteFilePath();
    int index = sweep_->findData(absolute);
    if (index < 0) {
        sweep_->addItem(QFileInfo(path).fileName(), absolute);
        index = sweep_->count() - 1;
        sweep_->setItemData(index, QDir::toNativeSeparators(absolute), Qt::ToolTipRole);
    }
    sweep_->setCurrentIndex(index);
}

QString SweepPanel::chosenPath() const {
    return sweep_->currentData().toString();
}

void SweepPanel::fillAxisBox(QComboBox* box, const SweepSpec* spec, bool none) {
    box->clear();
    if (none) box->addItem(tr("(none: histograms)"), QString());
    if (spec)
        for (const SweepAxis& a : spec->axes)
            box->addItem(QString::fromStdString(a.name), QString::fromStdString(a.name));
}

void SweepPanel::setSweep(const SweepSpec* spec) {
    filling_ = true;
    fillAxisBox(x_, spec, true);
    fillAxisBox(y_, spec, true);
    x_->setItemText(0, tr("(none: all runs)"));
    measure_->clear();
    if (spec)
        for (const std::string& m : spec->measureColumns())
            measure_->addItem(QString::fromStdString(m), QString::fromStdString(m));
    const std::size_t axes = spec ? spec->axes.size() : 0;
    x_->setCurrentIndex(axes >= 1 ? 1 : 0);
    y_->setCurrentIndex(axes >= 2 ? 2 : 0);
    measure_->setCurrentIndex(0);
    filling_ = false;
    if (spec) {
        const QString mode = spec->mode == SweepMode::Moments     ? tr("Gaussian mode")
                             : spec->mode == SweepMode::Flow      ? tr("generative flows trained")
                             : spec->mode == SweepMode::Posterior ? tr("posterior flows trained")
                                                                  : tr("particles");
        const QString size = spec->replicates == 1
                                 ? tr("%1 cells, one run each (%2)").arg(spec->cells()).arg(mode)
                                 : tr("%1 cells × %2 replicates = %3 runs (%4)")
                                       .arg(spec->cells())
                                       .arg(spec->replicates)
                                       .arg(spec->runs())
                                       .arg(mode);
        const QString first = firstSentence(spec->description);
        description_->setText(first.isEmpty() ? size : first + QLatin1Char('\n') + size);
        description_->setToolTip(
            QStringLiteral("<p>%1</p>").arg(QString::fromStdString(spec->description).toHtmlEscaped()));
    } else {
        description_->clear();
        description_->setToolTip({});
    }
    emit selectionChanged();
}

std::string SweepPanel::x() const {
    return dataOf(x_);
}
std::string SweepPanel::y() const {
    return dataOf(y_);
}
std::string SweepPanel::measure() const {
    return dataOf(measure_);
}

void SweepPanel::setSelection(const std::string& x, const std::string& y, const std::string& measure) {
    filling_ = true;
    x_->setCurrentIndex(std::max(0, x_->findData(QString::fromStdString(x))));
    y_->setCurrentIndex(std::max(0, y_->findData(QString::fromStdString(y))));
    measure_->setCurrentIndex(std::max(0, measure_->findData(QString::fromStdString(measure))));
    filling_ = false;
    emit selectionChanged();
}

std::string SweepPanel::backend() const {
    return backend_->currentData().toString().toStdString();
}
void SweepPanel::setBackend(const std::string& id) {
    if (const int i = backend_->findData(QString::fromStdString(id)); i >= 0) backend_->setCurrentIndex(i);
}

int SweepPanel::threads() const {
    return threads_->value();
}
void SweepPanel::setThreads(int threads) {
    threads_->setValue(threads);
}

void SweepPanel::setProgress(const LocalSweepProgress& p) {
    using State = LocalSweepProgress::State;
    const bool busy = p.state == State::Running || p.state == State::Cancelling;
    run_->setEnabled(!busy);
    cancel_->setEnabled(p.state == State::Running);
    sweep_->setEnabled(!busy);
    open_->setEnabled(!busy);
    backend_->setEnabled(!busy);
    save_->setEnabled(p.ended() && p.done > 0); // a partial sweep saves its runs for the CLI to finish
    progress_->setRange(0, int(std::max<long>(p.total, 1)));
    progress_->setValue(int(p.done));
    progress_->setFormat(tr("%v / %m runs"));
    QString text;
    switch (p.state) {
    case State::Idle:
        text = tr("Not run yet.");
        break;
    case State::Running:
        text = tr("%1 elapsed, about %2 left").arg(duration(p.seconds), duration(p.secondsLeft));
        break;
    case State::Cancelling:
        text = tr("Cancelling: waiting for the runs in flight…");
        break;
    case State::Finished:
        text = tr("Done: %1 runs in %2.").arg(p.total).arg(duration(p.seconds));
        break;
    case State::Cancelled:
        text = tr("Cancelled after %1 of %2 runs (%3).").arg(p.done).arg(p.total).arg(duration(p.seconds));
        break;
    case State::Failed:
        text = tr("Failed: %1").arg(QString::fromStdString(p.error));
        break;
    }
    eta_->setText(text);
}

void SweepPanel::setMessage(const QString& text) {
    eta_->setText(text);
}

void SweepPanel::setReadout(const QString& text) {
    readout_->setText(text.isEmpty() ? tr("Hover a cell to read its values; click it to open its scene.")
                                     : text);
}

} // namespace flowscope
