// Flowscope engine: a posterior flow (docs/math/inverse.md#flow): the generative flow of flows/Flow.h (the
// OT-Flow potential φ, optionally with the RWPO sparse sub-step) run FORWARD in time from a Gaussian base and
// trained by reverse KL against an unnormalised posterior p(x | y) (RWPO paper §4.2; Posterior.h).
//
// Layer k = 0..M−1 (h = T/M, t_k = k h), in the frame's coordinates u (x = c + L u, Posterior.h):
//     u^{k+1/2} = u^k + h ∇φ(u^k, t_k)                        log ρ −= log det(I + h ∇²φ)   (exact, d ≤ 3)
//                                                                        or h Δφ           (first order)
//     u^{k+1}   = u^{k+1/2} + ½ (S_{λh}(u^{k+1/2}) − m(u^{k+1/2}))   (RWPO, keys: see below)
//                                                             log ρ −= log det J_F          (exact, d = 2)
//                                                                        or ½ ∇·G          (first order)
// from u^0 = z ~ N(0, I), log ρ_0 = log N(z; 0, I). The loss on a batch of N base draws is
//     J = (1/N) Σ_j [log ρ_T(x_j) + ½‖y − F(x_j)‖²/σ² − log p(x_j)]  +  w_T · transport  +  c · HJB,
// x_j = c + L u_j^M and log ρ_T(x) = log ρ^M(u) − log|det L|: the reverse KL D(ρ_T ‖ p(·|y)) minus the log
// evidence. transport and HJB are those of the generative flow (loss (16)), taken at u^k and t_k. The data
// misfit is a tape node whose gradient comes from the forward model's pullback (ad::columnFunction): one
// forward run and one reverse sweep or adjoint solve per sample, on the thread pool.
//
// The RWPO sub-step's keys. If the samples were one another's keys, each sample's map would depend on all the
// others, and log ρ of the frozen-key formula would not be any sample's density: on Lorenz-63 such a flow
// came out 15–27 % narrow with first-order log-dets, and 4.8 nats worse in the loss than the plain flow with
// exact ones. So a second set of base draws, the keys (d x keys), is pushed forward beside the samples, each
// key attending to the keys; a sample attends to the keys of its layer and never to other samples. Given the
// keys, every sample's map is its own and log ρ its exact density (with the exact log-dets). Training draws
// fresh keys each step, so it minimizes the mean over key draws of KL(ρ_keys ‖ p(·|y)), an upper bound of
// the KL of the mixture over keys (convexity); the sampler uses one fixed draw of keys (the model's
// reference keys, from `seed`), so its samples follow exactly the density it reports.
//
// Which log-dets: the drift's and the RWPO sub-step's exact ones up to d = 3 (Flow.h driftLogDet,
// RwpoOptions::exactLogDet); beyond, the first-order traces the paper prints (eq. (24)), whose error per
// layer is O(h²) for the drift but O(1) for the RWPO sub-step (docs/math/inverse.md#log-det).
//
// The paper's flow is conditional (φ_y, amortised over y, with a supervised term on training pairs); this
// one is trained for the one y of a problem, where there are no training pairs, so it has no supervised term.
#pragma once

#include "engine/flows/Adam.h"
#include "engine/flows/Datasets.h"
#include "engine/flows/Flow.h"
#include "engine/flows/StepGuard.h"
#include "engine/inverse/Posterior.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace flowscope::inverse {

struct PosteriorFlowConfig {
    // d is the problem's; the defaults of a posterior flow: width 32, 8 layers, T = 1, RWPO on, λ frozen at
    // 0.05, β learned from 1, transport weight 1/30, HJB weight 0 with the layer (as the generative flow).
    flows::FlowConfig flow;
    FrameKind frame = FrameKind::Laplace;
    int batch = 256;
    int keys = 0; // the RWPO sub-step's key draws per step; 0: the batch size
    long iterations = 1500;
    flows::AdamOptions adam = {.lr = 0.02,
                               .clipNorm = 0.0,
                               .clipToMedian = 5.0,
                               .lrFinal = 2e-3,
                               .decaySteps = 1500,
                               .warmupSteps = 20};
    long averageIterations = 100; // as TrainerConfig::averageIterations
    std::uint64_t seed = 0;       // the base draws' stream (flow.seed initializes φ)
};

// The terms of J on one batch (means over the batch). Samples outside the forward model's domain (EIT: κ ≤ 0
// somewhere) have no misfit: a training step holding one is rejected and counts them in `outside`; an
// evaluation (PosteriorFlow::evaluate) takes its means over the samples where every term is finite and
// counts the others (averaged in, they made the final loss NaN).
struct PosteriorTerms {
    double loss = 0;
    double logRho = 0;   // mean log ρ_T(x_j): minus the flow's entropy estimate
    double misfit = 0;   // mean ½‖y − F(x_j)‖²/σ²
    double logPrior = 0; // mean log p(x_j)
    double transport = 0, hjb = 0;
    long outside =
        0; // samples outside the domain: a step's (rejected), an evaluation's (left out of its means)
};

struct PosteriorRecord {
    long iteration = 0;
    PosteriorTerms terms;
    double lambda = 0, beta = 0, learningRate = 0, seconds = 0;
    bool rejected = false;
};

// Moments of a sample set, and its mean's error against the truth.
struct PosteriorSummary {
    Vector mean, sd;
    Matrix covariance;
    double misfit = 0;            // mean over the samples
    double relativeL1Error = NAN; // ‖mean − truth‖₁ / ‖truth‖₁ where the truth is known
    long outside = 0; // samples without a finite misfit, left out of its mean (not of the moments)
};
PosteriorSummary summarize(const Posterior& posterior, const Matrix& samples); // samples d x n

class PosteriorFlow {
  public:
    // Validates the posterior and the config (std::invalid_argument naming the field) and builds the frame,
    // or takes `frame` (a saved model's) when given.
    PosteriorFlow(std::shared_ptr<const Posterior> posterior, const PosteriorFlowConfig& config,
                  const Frame* frame = nullptr);
    PosteriorFlow(const PosteriorFlow&) = delete;
    PosteriorFlow& operator=(const PosteriorFlow&) = delete;

    // One Adam step on a fresh batch of base draws. false once training has stopped (StepGuard).
    bool step();
    bool stopped() const { return stopped_; }
    long iteration() const { return iteration_; }

    // n samples of the trained posterior (d x n, in x) from the averaged parameters, beside the reference
    // keys; the base draws come from `seed`. logDensity, when given, gets log ρ_T at each sample.
    Matrix sample(int n, std::uint64_t seed, Eigen::RowVectorXd* logDensity = nullptr) const;
    // The loss terms of the averaged parameters on n base draws from `seed` (no gradient).
    PosteriorTerms evaluate(int n, std::uint64_t seed) const;

    const Posterior& posterior() const { return *posterior_; }
    const PosteriorFlowConfig& config() const { return config_; }
    const Frame& frame() const { return frame_; }
    const flows::FlowParams<double>& params() const { return params_; }
    const flows::FlowParams<double>& averagedParams() const {
        return averagedSteps_ > 0 ? averaged_ : params_;
    }
    void setParams(const flows::FlowParams<double>& p); // a loaded model; also the averaged ones
    int keyCount() const { return config_.keys > 0 ? config_.keys : config_.batch; }
    const std::vector<PosteriorRecord>& history() const { return history_; }
    const std::vector<flows::TrainEvent>& events() const { return events_; }

  private:
    std::shared_ptr<const Posterior> posterior_;
    PosteriorFlowConfig config_;
    Frame frame_;
    ad::Matrix<double> referenceKeys_; // the sampler's key draws (d x keyCount(); RWPO only)
    flows::FlowParams<double> params_, grads_, averaged_, checkpoint_;
    long averagedSteps_ = 0;
    flows::Adam<double> adam_;
    flows::StepGuard guard_;
    flows::Rng rng_;
    ad::Tape<double> tape_;
    long iteration_ = 0;
    bool stopped_ = false;
    std::vector<PosteriorRecord> history_;
    std::vector<flows::TrainEvent> events_;
};

} // namespace flowscope::inverse
