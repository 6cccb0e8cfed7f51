// Flowscope engine: the training loop of a generative flow (Algorithm 1; docs/math/flows.md#loss, #training),
// shared by the GUI's live training, flowscope-cli train and the benchmarks.
//
// One iteration: loss (16) and its gradient on the current batch (float32; in parts, one per thread of the
// pool, on reused tapes at once: BatchSplit.h), then an Adam step. A run is the same bit for bit for the same
// seeds and the same thread count; another thread count sums the parts differently (float rounding). The
// batch is redrawn every `resampleEvery` iterations from the dataset's seeded stream. Nothing bad passes
// silently:
//  * a non-finite loss or gradient rejects the step (the parameters stay), halves the learning rate and
//    records an event the user sees; accepted steps bring the rate back to its schedule over 50 steps;
//  * three rejections in a row restore the parameters of the last checkpoint (taken every 25 iterations
//    when the step before was accepted);
//  * twenty in a row stop the training (step() returns false) with a message.
// Held-out metrics (evaluate()) use a fixed held-out set drawn from its own stream: NLL by the log-density
// recursion (24), MMD² between `evalSamples` generated samples and as many held-out points (kernel
// exp(-‖x - y‖²)), KL = NLL - H where the entropy is known, the round trip (docs/math/flows.md#sampling), and
// the folding of the RWPO sub-steps along the generated trajectory (docs/math/flows.md#folding).
#pragma once

#include "engine/autodiff/Tape.h"
#include "engine/core/Types.h"
#include "engine/flows/Adam.h"
#include "engine/flows/Datasets.h"
#include "engine/flows/Flow.h"
#include "engine/flows/StepGuard.h"

#include <chrono>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace flowscope::flows {

struct TrainerConfig {
    FlowConfig flow;                    // flow.seed initializes the parameters
    std::string dataset = "8gaussians"; // a datasetNames() entry, or "" to train on `points`
    Mat points;                         // the user's points (n x d, one per row) when dataset is ""
    double pointJitter = 0.0;           // N(0, jitter² I) added to every drawn point
    int batch = 1024;
    // Iterations per batch; 0: the model's default, a fresh batch every iteration with the RWPO layer and
    // OT-Flow's sample_freq of 25 without (FlowTrainer::config() holds the value used). With the layer a
    // batch reused 25 times had the flow fit that batch's own keys: the loss jumped at every resample
    // (pinwheel: 2.6 -> 12 at iteration 2351) and the held-out NLL ended at 2.75 against 2.54 with fresh
    // batches (data seed 0, 3000 iterations). The plain flow prefers the reuse: checkerboard's KL 0.136
    // with 25, 0.158 with fresh batches (pinwheel: NLL 2.359 against 2.363).
    int resampleEvery = 0;
    // OT-Flow's lr 0.1, decaying to 1e-2 over 3000 steps, after a linear warm-up over the first 20: without
    // it the first full-rate Adam steps can settle moons in a poor optimum (held-out MMD² 8.2e-3 at 2000
    // iterations on seeds 0-2); 100 was too long (swissroll and 2spirals then missed MMD² < 2e-3). The
    // final rate stays high because the averaged parameters (averageIterations) smooth out its noise:
    // checkerboard's KL went from 0.288 (last iterate, decay to 1e-3 over 2000) to 0.131.
    //
    // The gradient's norm is capped at 5 times its median over the last 64 steps: with the RWPO layer a
    // batch on which the map folds gives a loss spike with a gradient 10⁴ times the usual (pinwheel, data
    // seed 0: loss 1.3·10⁴ at iteration 226), and one such step steered Adam's moments for dozens of steps,
    // β to 3 and the held-out NLL to 12 for good; capped, the same run ends at NLL 2.7.
    AdamOptions adam = {.lr = 0.1,
                        .clipNorm = 0.0,
                        .clipToMedian = 5.0,
                        .lrFinal = 1e-2,
                        .decaySteps = 3000,
                        .warmupSteps = 20};
    // Evaluation, pictures and saved models use an average of the parameters over the last steps, not the
    // last iterate: a ← a + (θ - a)/τ after each accepted step, τ = min(averageIterations, (k + 9)/10) at
    // step k (about the last tenth of a short run, then an exponential average with this time constant).
    // Training itself is unchanged. 0: the last iterate.
    long averageIterations = 200;
    // The RWPO model's reference (FlowModel::setReference): referenceDraws draws of referenceSize points of
    // the training law (0: the batch size, the keys a training query sees). The model's density is the mean
    // of the draws' frozen-key densities; one draw's is rough where few keys lie within the kernel's width.
    int referenceDraws = 8;
    int referenceSize = 0;
    int evalSamples = 2000;     // held-out points, generated samples (MMD²) and NLL queries
    std::uint64_t dataSeed = 0; // the batches' stream; the held-out set uses a stream derived from it
    // Parameters to start from instead of flow.seed's initialization (a loaded model: training continues
    // from them, with a fresh optimizer); their shapes must match `flow`. Shared, so configs copy cheaply.
    std::shared_ptr<const FlowParams<float>> initialParams;
};

// Throws std::invalid_argument naming the first bad field ("batch", "adam.lr", "dataset", ...).
void validate(const TrainerConfig& c);
// Whether every row of `points` (at least 2) is the same point: no density to learn, which validate refuses.
bool allOnePoint(const Mat& points);

struct TrainRecord {
    long iteration = 0; // 1-based: the record of the k-th step()
    LossTerms terms;    // on the batch, before the update
    double lambda = 0, beta = 0;
    double learningRate = 0; // the rate the update used
    double gradientNorm = 0;
    double seconds = 0; // wall time of this iteration
    bool rejected = false;
    bool clipped = false; // the gradient's norm was capped (AdamOptions::clipToMedian)
};

struct Evaluation {
    long iteration = 0;
    double nll = 0; // held-out, nats
    double kl =
        std::numeric_limits<double>::quiet_NaN(); // NLL - H(p) where H is known (8gaussians, checkerboard)
    double mmd2 = 0;                              // generated vs held-out
    double roundTrip = 0;                         // mean |encode(generate(z)) - z|
    double minDet = 0, foldedFraction = 0;        // worst RWPO layer along the generated trajectory
    double samplerResidual = 0;                   // the sampler's worst fixed-point change at exit
    // d = 2: the model density's mass on a 64² grid over the held-out points' box (its half-width x 1.25),
    // beside the model's reference batch (or, without one, the generated samples) as keys. About 1 for a
    // normalized density; well above 1 when the density formula overstates the map's expansion (the RWPO
    // layer's first-order log-det, or a map that folds, so that its images overlap): the NLL is then not a
    // likelihood. NaN for d != 2.
    double gridMass = std::numeric_limits<double>::quiet_NaN();
    double seconds = 0;
};

class FlowTrainer {
  public:
    using Model = FlowModel<float>;
    using Matrix = ad::Matrix<float>;

    explicit FlowTrainer(const TrainerConfig& config); // validates; throws std::invalid_argument
    FlowTrainer(const FlowTrainer&) = delete;
    FlowTrainer& operator=(const FlowTrainer&) = delete;

    // One iteration. Returns false once training has stopped (twenty rejections in a row).
    bool step();
    bool stopped() const { return stopped_; }

    // Held-out metrics of the current parameters, appended to evaluations().
    Evaluation evaluate();

    long iteration() const { return iteration_; }
    const TrainerConfig& config() const { return config_; }
    const Model& model() const { return model_; } // the iterate training updates
    Model& model() { return model_; }
    // What evaluate(), the pictures and saved files use: the averaged parameters (averageIterations), or
    // the iterate before the first averaged step and without averaging.
    const Model& evaluatedModel() const { return averagedSteps_ > 0 ? averaged_ : model_; }
    const std::vector<TrainRecord>& history() const { return history_; }
    const std::vector<Evaluation>& evaluations() const { return evaluations_; }
    const std::vector<TrainEvent>& events() const { return events_; }
    const Matrix& batch() const { return batch_; }     // d x batch, the current training batch
    const Matrix& heldOut() const { return heldOut_; } // d x evalSamples
    double learningRate() const { return adam_.learningRate(); }
    double learningRateScale() const { return adam_.learningRateScale(); } // 1 unless steps were rejected

    // n points of the training law (rows), from the stream `seed` (a different stream from the batches').
    Mat sampleData(int n, std::uint64_t seed) const;
    // The entropy of the dataset's law where it is known in closed form or by Monte Carlo (NaN otherwise).
    static double knownEntropy(const std::string& dataset);

  private:
    void resample();
    LossTerms lossAndGradient(); // of the current batch, into grads_
    void reject(const std::string& why, long iteration);

    TrainerConfig config_;
    Model model_, averaged_;
    long averagedSteps_ = 0;
    FlowParams<float> grads_, checkpoint_;
    std::vector<FlowParams<float>> partGrads_; // the gradients of batch parts 1.. (part 0's: grads_)
    Adam<float> adam_;
    std::deque<ad::Tape<float>> tapes_; // one per part of the batch, reused (a deque: they never move)
    Rng dataRng_;
    std::unique_ptr<PointSampler> sampler_;
    Matrix batch_, heldOut_;
    long iteration_ = 0;
    StepGuard guard_;
    bool stopped_ = false;
    std::vector<TrainRecord> history_;
    std::vector<Evaluation> evaluations_;
    std::vector<TrainEvent> events_;
};

// d x N samples (columns) of a row matrix, and back.
ad::Matrix<float> toColumns(const Mat& rows);
Mat toRows(const ad::Matrix<float>& columns);

} // namespace flowscope::flows
