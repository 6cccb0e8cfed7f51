#include "ui/panels/InversePanel.h"

#include "ui/widgets/FormWidgets.h"
#include "ui/widgets/Tooltips.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include <cmath>
#include <filesystem>
#include <limits>

#ifndef FLOWSCOPE_PROBLEM_DIR
#define FLOWSCOPE_PROBLEM_DIR ""
#endif

namespace flowscope {

namespace {

using form::addRow;
using form::named;
using form::number;

} // namespace

InversePanel::InversePanel(QWidget* parent) : TrainingPanelBase(parent) {
    auto* layout = form::panelColumn(this, "inversePanel");

    auto [group, form] = form::group(tr("Posterior flow (applies on Start)"), this);
    problem_ = addRow(form, tr("Problem"), named(new QComboBox(group), "inverse.problem"));
    description_ = new QLabel(group);
    description_->setObjectName(QStringLiteral("problemDescription"));
    description_->setWordWrap(true);
    form->addRow(description_);
    addLoadedNote(group, form,
                  tr("Start and Reset train the parameters of the opened posterior (File ▸ Open trained "
                     "model) on its own problem; choosing a problem or toggling the RWPO layer starts "
                     "afresh instead"));
    addRwpoRows(group, form, "inverse", tr("With and without RWPO, side by side"));
    iterations_ = addRow(form, tr("Iterations"), form::startIntBox(group, "inverse.iterations", 1, 1000000));
    seed_ = addRow(form, tr("Seed"),
                   form::startIntBox(group, "inverse.seed", 0, std::numeric_limits<int>::max()));
    layout->addWidget(group);

    addRunControls(layout, {tr("One iteration: the reverse KL on a batch, its gradient, one Adam step"),
                            tr("Back to iteration 0 of this run: the initial parameters, the same draws"),
                            parameterTooltip("inverse.evaluate"), parameterTooltip("inverse.status")});

    connect(problem_, &QComboBox::currentIndexChanged, this, &InversePanel::problemChosen);
    connect(rwpo_, &QCheckBox::toggled, this, [this] {
        // The opened flow's parameters belong to its own RWPO choice: start afresh on its problem instead.
        if (loadedRun_) loadedRun_->initialParams.reset();
        showLoaded(QString(), false);
    });
    for (QSpinBox* box : {iterations_, seed_})
        connect(box, &QSpinBox::valueChanged, this, &InversePanel::markEdited);
    setProblemDirectory(QStringLiteral(FLOWSCOPE_PROBLEM_DIR));
    setSnapshot(nullptr, false);
}

void InversePanel::setProblemDirectory(const QString& dir) {
    dir_ = dir;
    problems_.clear();
    const QSignalBlocker block(problem_);
    problem_->clear();
    try {
        for (const std::string& name : inverse::problemNames(dir.toStdString()))
            problem_->addItem(QString::fromStdString(name));
    } catch (const std::exception&) {
        // No such directory: no problems to offer (the description says so).
    }
    // The linear-Gaussian problem first: its run takes seconds and its posterior is known in closed form.
    problem_->setCurrentIndex(std::max(0, problem_->findText(QStringLiteral("linear-gaussian"))));
    showProblem(problem(problem_->currentText().toStdString()));
}

std::shared_ptr<const inverse::Problem> InversePanel::problem(const std::string& name) const {
    if (name.empty()) {
        loadError_ = tr("No problems in %1").arg(dir_);
        return nullptr;
    }
    if (const auto it = problems_.find(name); it != problems_.end()) return it->second;
    try {
        auto p = std::make_shared<const inverse::Problem>(inverse::loadProblem(name, dir_.toStdString()));
        problems_[name] = p;
        return p;
    } catch (const std::exception& e) {
        loadError_ =
            tr("Cannot read %1: %2").arg(QString::fromStdString(name), QString::fromStdString(e.what()));
        return nullptr;
    }
}

// The problem's own settings in the controls, and what it is.
void InversePanel::showProblem(const std::shared_ptr<const inverse::Problem>& p) {
    if (p) {
        const QSignalBlocker blocks[] = {QSignalBlocker(iterations_), QSignalBlocker(rwpo_),
                                         QSignalBlocker(seed_)};
        iterations_->setValue(int(std::min<long>(p->flow.iterations, iterations_->maximum())));
        rwpo_->setChecked(p->flow.flow.rwpo);
        seed_->setValue(int(std::min<std::uint64_t>(p->flow.seed, std::uint64_t(seed_->maximum()))));
    }
    setProblemDescription(p);
}

void InversePanel::setProblemDescription(const std::shared_ptr<const inverse::Problem>& p) {
    if (!p) {
        description_->setText(loadError_);
        description_->setToolTip(QString());
        return;
    }
    const inverse::Posterior& post = *p->posterior;
    description_->setText(
        tr("%1: d = %2 unknowns, m = %3 observations, σ = %4, %5 prior")
            .arg(QString::fromStdString(p->name))
            .arg(post.dim())
            .arg(post.model->observations())
            .arg(number(post.noise))
            .arg(post.prior.kind == inverse::Prior::Kind::Gaussian ? tr("Gaussian") : tr("Laplace")));
    description_->setToolTip(QString::fromStdString(p->description));
}

// A new problem: its own defaults in the controls, and a new run of it at iteration 0.
void InversePanel::problemChosen() {
    if (loadedRun_ && problem_->currentIndex() == openedItem()) return; // the opened posterior, still shown
    forgetLoadedModel();
    showProblem(problem(problem_->currentText().toStdString()));
    emit startRequested(config(), comparison(), false);
}

PosteriorRunConfig InversePanel::config() const {
    if (loadedRun_) {
        PosteriorRunConfig c = *loadedRun_;
        c.flow.flow.rwpo = rwpo_->isChecked();
        c.flow.flow.seed = std::uint64_t(seed_->value()); // φ's initialization, when afresh
        c.flow.seed = c.flow.flow.seed;
        c.flow.iterations = iterations_->value();
        c.flow.adam.decaySteps = c.flow.iterations;
        return c;
    }
    PosteriorRunConfig c;
    c.problemId = problem_->currentText().toStdString();
    c.problem = problem(c.problemId);
    if (!c.problem) return c;
    c.flow = c.problem->flow;
    c.flow.flow.rwpo = rwpo_->isChecked();
    c.flow.iterations = iterations_->value();
    c.flow.adam.decaySteps = c.flow.iterations; // as flowscope-cli infer --iters
    c.flow.flow.seed = std::uint64_t(seed_->value());
    c.flow.seed = c.flow.flow.seed;
    return c;
}

bool InversePanel::comparison() const {
    return sideBySide_->isChecked();
}

bool InversePanel::selectProblem(const QString& name) {
    const int index = problem_->findText(name);
    if (index < 0) return false;
    if (index == problem_->currentIndex())
        problemChosen();
    else
        problem_->setCurrentIndex(index); // problemChosen
    return true;
}

void InversePanel::setConfig(const PosteriorRunConfig& c, bool comparison) {
    const QSignalBlocker blocks[] = {QSignalBlocker(problem_), QSignalBlocker(rwpo_),
                                     QSignalBlocker(sideBySide_), QSignalBlocker(iterations_),
                                     QSignalBlocker(seed_)};
    // An opened posterior (its parameters come with it): Start trains it on. The problem box shows its file
    // as one more entry until another problem is chosen.
    const bool opened = c.initialParams || (loadedRun_ && c.problemId == loadedRun_->problemId);
    loadedRun_ = opened ? std::optional<PosteriorRunConfig>(c) : std::nullopt;
    const QString file = QString::fromStdString(std::filesystem::path(c.problemId).filename().string());
    if (const int item = openedItem(); item >= 0) problem_->removeItem(item);
    if (loadedRun_) {
        problem_->addItem(tr("%1 (opened)").arg(file), QStringLiteral("opened"));
        problem_->setItemData(problem_->count() - 1, QString::fromStdString(c.problemId), Qt::ToolTipRole);
        problem_->setCurrentIndex(problem_->count() - 1);
    } else if (const int index = problem_->findText(QString::fromStdString(c.problemId)); index >= 0) {
        problem_->setCurrentIndex(index);
    }
    setProblemDescription(c.problem);
    showLoaded(
        tr("<b>Opened posterior</b> %1: d = %2, %3 layers, width %4, %5. Start trains these parameters on.")
            .arg(file)
            .arg(c.flow.flow.d)
            .arg(c.flow.flow.layers)
            .arg(c.flow.flow.width)
            .arg(c.flow.flow.rwpo ? tr("with RWPO") : tr("without RWPO")),
        loadedRun_ && loadedRun_->initialParams);
    showRwpo(c.flow.flow.rwpo, comparison);
    iterations_->setValue(int(std::min<long>(c.flow.iterations, iterations_->maximum())));
    seed_->setValue(int(std::min<std::uint64_t>(c.flow.seed, std::uint64_t(seed_->maximum()))));
}

void InversePanel::forgetLoadedModel() {
    loadedRun_.reset();
    showLoaded(QString(), false);
    if (const int item = openedItem(); item >= 0) {
        const QSignalBlocker block(problem_);
        problem_->removeItem(item); // the box keeps the chosen problem (the opened entry is the last)
    }
}

int InversePanel::openedItem() const {
    return problem_->findData(QStringLiteral("opened"));
}

void InversePanel::setSnapshot(const std::shared_ptr<const PosteriorSnapshot>& snapshot, bool playing) {
    snapshot_ = snapshot;
    QStringList lines = beginStatus(snapshot.get(), playing);
    QString warning;
    bool error = false;
    if (snapshot) {
        for (const PosteriorState& t : snapshot->trainers) {
            const QString prefix = trainerPrefix(snapshot->comparison, t.label, ": ");
            QStringList parts;
            if (!t.history.empty()) {
                const inverse::PosteriorRecord& r = t.history.back();
                parts << tr("loss %1").arg(number(r.terms.loss))
                      << tr("misfit %1").arg(number(r.terms.misfit));
            }
            if (!t.evaluations.empty() && std::isfinite(t.evaluations.back().relativeL1Error))
                parts << tr("rel. L1 error %1 (at %2)")
                             .arg(t.evaluations.back().relativeL1Error, 0, 'e', 2)
                             .arg(t.evaluations.back().iteration);
            if (!parts.isEmpty()) lines << prefix + parts.join(QStringLiteral(" · "));
        }
        if (!snapshot->error.empty()) {
            warning = QString::fromStdString(snapshot->error);
            error = true;
        }
        // The latest rejection of any trainer stays visible: the learning rate it halved is still in force.
        for (const PosteriorState& t : snapshot->trainers) {
            if (!warning.isEmpty() || t.events.empty()) continue;
            warning = eventText(trainerPrefix(snapshot->comparison, t.label, ", "), t.events.back());
        }
        if (warning.isEmpty() && !snapshot->trainers.empty()) {
            const PosteriorState& t = snapshot->trainers.front();
            if (t.iteration >= t.iterations)
                warning = tr("Finished: %1 iterations. Raise Iterations and press Start to train longer.")
                              .arg(t.iterations);
        }
    }
    controls_->setStatus(lines, warning, error);
}

} // namespace flowscope
