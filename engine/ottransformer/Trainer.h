// Flowscope engine: training a continuous-time Transformer on tasks A and B (docs/math/transformers.md),
// shared by the GUI's live training and flowscope-cli train-transformer.
//
// One iteration draws a fresh batch of sets from the task's seeded stream, records objective (8) on a tape
// (double precision: the models have 10²–10⁴ parameters), and takes an Adam step. Non-finite losses and
// gradients are rejected by the same StepGuard as the flow trainer (halve the rate, restore a checkpoint
// every third rejection in a row, stop at the twentieth); the count is a diagnostic (the paper's
// unregularized models "diverge").
//
// evaluate() measures, on `evalSets` held-out sets drawn from their own stream (the same sets every call):
// the task loss and transport cost, accuracy (task B), the straightness and speed CV of the token paths, the
// distance to the closed-form optimum (task A), and the empirical Lipschitz ratio of the learned map next to
// Theorem 2's bound.
//
// Iterate averaging: with fresh batches every step the parameters keep jittering around the optimum (SGD
// noise, about ∝ the learning rate); their running average sits much closer. After the k-th accepted step the
// average a moves towards the parameters θ by 1/τ_k, a ← a + (θ - a) / τ_k, τ_k = min(averageIterations,
// (k + 9) / 10): an exponential moving average whose window grows with the run (about its last tenth, so
// it does not lag behind a fast early descent) up to averageIterations, so it forgets the early iterates and
// follows a run of any length. The average never feeds back into training; evaluate(), the saved model and
// the GUI's pictures use it (evaluatedModel()).
#pragma once

#include "engine/flows/Adam.h"
#include "engine/flows/StepGuard.h"
#include "engine/ottransformer/Tasks.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace flowscope::ot {

struct OtTrainerConfig {
    Task task = Task::A;
    TransformerConfig model = taskModel(Task::A);
    int batch = 64; // sets per iteration, drawn fresh every iteration
    flows::AdamOptions adam = {.lr = 1e-2};
    std::uint64_t dataSeed = 0;
    int evalSets = 1000;
    // Time constant of the iterate average, in iterations (see above); 0 = off: evaluate the raw parameters.
    // 100–250 were best on task A (longer lags behind the still-improving parameters; the task A runs in
    // README); 200 leaves a 1000-iteration run most of its length to forget the early iterates.
    long averageIterations = 200;
    // Parameters to start from instead of model.seed's initialization (a loaded model: training continues
    // from them, with a fresh optimizer); their shapes must match `model`. Shared, so configs copy cheaply.
    std::shared_ptr<const TransformerParams> initialParams;
};

// The tasks' settings (docs/math/transformers.md#tasks): A — batch 64, lr 1e-2, M = 10, λ = 0; B — batch 32,
// lr 1e-3, M = 8, λ = 0.
OtTrainerConfig defaultTrainerConfig(Task t);
// Throws std::invalid_argument naming the first bad field ("batch", "adam.lr", "model.width", ...).
void validate(const OtTrainerConfig& c);

struct OtRecord {
    long iteration = 0; // 1-based
    LossTerms terms;    // on the batch, before the update
    double learningRate = 0, gradientNorm = 0, seconds = 0;
    bool rejected = false;
};

struct OtEvaluation {
    long iteration = 0;
    LossTerms terms; // on the held-out sets (accuracy: task B)
    double straightness = 1, speedCv = 0;
    double closedFormError = kNaN;   // A: mean ‖ỹ - ỹ*‖ / mean ‖ỹ*‖ over the sets
    double displacementError = kNaN; // A (λ > 0): ‖(X_end - X_0) - (X* - X_0)‖_F / ‖X* - X_0‖_F
    double optimalLoss = kNaN;       // A: objective (8) of the closed-form optimum on the same sets
    double lipschitzRatio = 0;       // max over the sets of ‖ỹ_1 - ỹ_2‖ / ‖X_1(0) - X_2(0)‖_F
    double lipschitzBound = 0, lipschitzBoundFrobenius = 0; // Theorem 2 (+inf at or below the threshold)
    double threshold = 0, thresholdFrobenius = 0;           // T L², in the configured λ convention
    long nonFiniteSteps = 0;                                // rejected steps so far
    double seconds = 0;
};

class OtTrainer {
  public:
    explicit OtTrainer(const OtTrainerConfig& config); // validates; throws std::invalid_argument
    OtTrainer(const OtTrainer&) = delete;
    OtTrainer& operator=(const OtTrainer&) = delete;

    // One iteration. Returns false once training has stopped (twenty rejections in a row).
    bool step();
    bool stopped() const { return stopped_; }

    OtEvaluation evaluate(); // appended to evaluations()
    // Task B: held-out accuracy with each drop rate applied to the same evalSets shapes.
    std::vector<double> accuracyAtDropRates(const std::vector<double>& rates) const;
    // The held-out sets (the same every call), optionally with points dropped (task B).
    Batch heldOut(double dropRate = 0.0) const;

    long iteration() const { return iteration_; }
    const OtTrainerConfig& config() const { return config_; }
    const TransformerModel& model() const { return model_; }
    TransformerModel& model() { return model_; }
    // What evaluate(), accuracyAtDropRates() and saved files use: the iterate average once a step has been
    // accepted with averaging on, else model() (so parameters set on a fresh trainer are evaluated as set).
    const TransformerModel& evaluatedModel() const { return averagedSteps_ > 0 ? averaged_ : model_; }
    const Batch& batch() const { return batch_; }
    const std::vector<OtRecord>& history() const { return history_; }
    const std::vector<OtEvaluation>& evaluations() const { return evaluations_; }
    const std::vector<flows::TrainEvent>& events() const { return events_; }
    double learningRate() const { return adam_.learningRate(); }

  private:
    Batch sample(int sets, flows::Rng& rng, double dropRate = 0.0) const;
    LossTerms lossAndGradient(); // of batch_, into grads_

    OtTrainerConfig config_;
    TransformerModel model_, averaged_;
    TransformerParams grads_, grads2_, checkpoint_;
    flows::Adam<double> adam_;
    flows::StepGuard guard_;
    Tape tape_, tape2_;
    flows::Rng rng_;
    Batch batch_;
    long iteration_ = 0, rejected_ = 0, averagedSteps_ = 0;
    bool stopped_ = false;
    std::vector<OtRecord> history_;
    std::vector<OtEvaluation> evaluations_;
    std::vector<flows::TrainEvent> events_;
};

} // namespace flowscope::ot
