#include "ui/workspaces/inverse/InverseWorkspace.h"

#include "engine/inverse/PosteriorIo.h"
#include "ui/widgets/OffThread.h"

#include <stdexcept>

namespace flowscope {

InverseWorkspace::InverseWorkspace(QMainWindow* host)
    : TrainingWorkspace(
          host, {QStringLiteral("inverse"), tr("Inverse"),
                 tr("A posterior flow trained live on a Bayesian inverse problem (Inverse panel), with "
                    "or without the RWPO layer"),
                 QKeySequence(Qt::Key_5), tr("Inverse"), QStringLiteral("inverseDock"),
                 tr("No posterior to export: start training in the Inverse tab."),
                 tr("The Inverse tab's posterior flow as .safetensors with its record (.json) beside "
                    "it, as flowscope-cli infer writes them"),
                 inverse::kPosteriorMetadataKey}) {
    referencePoll_.setInterval(50);
    connect(&referencePoll_, &QTimer::timeout, this, [this] { pollReference(); });
}

namespace {

// A run's problem and frame kind: what a frame (and the reference chain in it) is made once for.
std::string frameKey(const PosteriorRunConfig& config) {
    return config.problemId + (config.flow.frame == inverse::FrameKind::Laplace ? "/laplace" : "/prior");
}

} // namespace

void InverseWorkspace::startReference(const PosteriorRunConfig& config) {
    const bool corner =
        config.problem && config.problem->posterior && config.frame && config.frame->center.size() <= 3;
    const std::string key = corner ? frameKey(config) : std::string();
    if (key == referenceKey_) return; // the same problem and frame: the reference stays
    referenceKey_ = key;
    reference_.cancel();
    view()->setReference(nullptr);
    referencePoll_.stop();
    if (!corner) return;
    reference_.start(config.problem->posterior, config.frame);
    referencePoll_.start();
}

void InverseWorkspace::pollReference() {
    if (reference_.running()) return;
    referencePoll_.stop();
    if (const auto r = reference_.result()) {
        view()->setReference(r);
    } else if (const std::string why = reference_.error(); !why.empty()) {
        emit statusMessage(tr("No Metropolis reference: %1").arg(QString::fromStdString(why)), 8000);
    }
}

PosteriorRunConfig InverseWorkspace::configOfModel(const QString& path, QString&) {
    return loadPosteriorRun(path.toStdString());
}

PosteriorRunConfig InverseWorkspace::prepare(const PosteriorRunConfig& config) {
    PosteriorRunConfig c = framed(config);
    startReference(c);
    return c;
}

PosteriorRunConfig InverseWorkspace::framed(const PosteriorRunConfig& config) {
    if (!config.problem)
        throw std::invalid_argument(
            panel_->problemDirectory().isEmpty() ? "no problem chosen" : "the chosen problem cannot be read");
    if (config.frame) return config;
    const std::string key = frameKey(config);
    PosteriorRunConfig c = config;
    if (const auto it = frames_.find(key); it != frames_.end()) {
        c.frame = it->second;
        return c;
    }
    if (preparing_) throw std::runtime_error("still preparing the previous problem: try again in a moment");
    preparing_ = true;
    emit statusMessage(tr("%1: finding the posterior's frame (MAP point and Laplace approximation)...")
                           .arg(QString::fromStdString(config.problem->name)),
                       0);
    try {
        runOffThread([&c](const JobProgress&) { c = withFrame(c); }, nullptr);
    } catch (...) {
        preparing_ = false;
        emit statusMessage(QString(), 0);
        throw;
    }
    preparing_ = false;
    emit statusMessage(QString(), 0);
    frames_[key] = c.frame;
    return c;
}

} // namespace flowscope
