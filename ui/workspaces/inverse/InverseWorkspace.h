// Flowscope UI: the Inverse workspace: a posterior flow (engine/inverse, with or without the RWPO layer)
// trained live on a shipped Bayesian inverse problem (assets/problems: linear-gaussian, lorenz63, elliptic,
// eit), or two side by side. One page (the Inverse view: the posterior samples, the data and its fit, the
// loss, misfit and error curves), one dock (the Inverse panel); export: the trained posterior as
// flowscope-cli infer writes it.
#pragma once

#include "engine/runner/PosteriorRunner.h"
#include "engine/runner/ReferenceChain.h"
#include "ui/panels/InversePanel.h"
#include "ui/views/InverseView.h"
#include "ui/workspaces/TrainingWorkspace.h"

#include <QTimer>

#include <map>
#include <memory>
#include <string>

namespace flowscope {

class InverseWorkspace : public TrainingWorkspace<PosteriorTraining, InversePanel, InverseView> {
  public:
    explicit InverseWorkspace(QMainWindow* host);

  protected:
    // A saved posterior (flowscope-cli infer's, or this workspace's export; metadata key
    // inverse::kPosteriorMetadataKey): its own problem, frame and parameters.
    PosteriorRunConfig configOfModel(const QString& path, QString& note) override;
    // The run's config with its frame (framed), and the reference chain in that frame started.
    PosteriorRunConfig prepare(const PosteriorRunConfig& config) override;

  private:
    // The run's frame (x = c + L u), made once per problem and frame kind on a thread of its own (the
    // Laplace frame's MAP search takes seconds on EIT) while the window keeps answering.
    PosteriorRunConfig framed(const PosteriorRunConfig& config);
    // Starts the Metropolis reference of a run's problem in its frame (d ≤ 3, where the corner plot draws
    // it), unless it is the one already shown or computing; the view gets it when it is done.
    void startReference(const PosteriorRunConfig& config);
    void pollReference();

    std::map<std::string, std::shared_ptr<const inverse::Frame>> frames_; // by problem and frame kind
    bool preparing_ = false;
    ReferenceChain reference_;
    std::string referenceKey_; // the problem and frame of the reference shown or computing
    QTimer referencePoll_;
};

} // namespace flowscope
