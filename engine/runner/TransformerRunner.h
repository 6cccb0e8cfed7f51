// Flowscope engine: trains continuous-time Transformers in a worker thread and publishes immutable snapshots
// for the GUI, like TrainingRunner does for flows (a WorkerLoop advancing the trainers, one OtTrainer::step()
// per advance; commands in, snapshots out).
//
// Comparison mode trains λ_OT = 0 beside the configured λ_OT > 0 from the same seed and data stream: with
// λ_OT = 0 the token paths zig-zag, with enough λ_OT they go straight (Theorem 1, Prop. 1).
//
// A picture shows one fixed held-out input set moving through depth under the learned dynamics: its states
// X_0 .. X_M (task A: the 6 tokens in R²; task B: the 64 points, embedded in R^d, projected on the two
// principal axes of the path), and for task A with λ_OT > 0 the closed-form end points X*(T). Pictures are
// made at most every `pictureSeconds` while playing (at once when paused); held-out evaluations every
// `evaluateEvery` iterations and on demand.
#pragma once

#include "engine/core/Types.h"
#include "engine/ottransformer/Trainer.h"
#include "engine/runner/SimulationRunner.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace flowscope {

struct TransformerRunOptions {
    double pictureSeconds = 0.25;
    int evaluateEvery = 250;   // 0: only on demand
    int evalSets = 200;        // held-out sets of the live evaluations
    std::size_t maxEvents = 8; // the last events a snapshot keeps
    std::uint64_t pictureSeed = 7;
};

struct TransformerPicture {
    long iteration = 0;
    std::vector<Mat> states; // X_0 .. X_M, each n x 2 (one row per token)
    Mat closedForm;          // task A, λ_OT > 0: X*(T), n x 2; else empty
    int label = -1;          // task B: the set's class
};

struct TransformerTrainerState {
    std::string label; // "λ_OT = 0.5"
    double lambdaOt = 0;
    long iteration = 0;
    double learningRate = 0;
    std::vector<ot::OtRecord> history;
    std::vector<ot::OtEvaluation> evaluations;
    std::vector<flows::TrainEvent> events; // the last maxEvents
    bool stopped = false;
    std::shared_ptr<const TransformerPicture> picture; // null until the first one
    // The evaluated parameters (OtTrainer::evaluatedModel(): the iterate average when averaging is on, as
    // the pictures and evaluations use) and the config at this iteration (copies: saving them never touches
    // the worker's trainer).
    std::shared_ptr<const ot::TransformerModel> model;
    std::shared_ptr<const ot::OtTrainerConfig> config;
};

struct TransformerSnapshot {
    std::uint64_t generation = 0;
    bool playing = false;
    bool comparison = false;
    ot::Task task = ot::Task::A;
    double threshold = 0; // Theorem 2's T L² at the start, in the run's λ convention
    double iterationsPerSecond = 0;
    std::vector<TransformerTrainerState> trainers; // the configured λ first, then λ = 0 in comparison mode
    std::string error;

    long iteration() const { return trainers.empty() ? 0 : trainers.front().iteration; }
};

// Writes a snapshot's trainer as flowscope-cli train-transformer does (ot::saveTransformer: .safetensors +
// .json beside, atomic). Throws std::runtime_error when the state has no model yet or the write fails.
void saveTrainedTransformer(const std::string& path, const TransformerTrainerState& state);

class TransformerRunner {
  public:
    explicit TransformerRunner(TransformerRunOptions options = {});
    ~TransformerRunner();
    TransformerRunner(const TransformerRunner&) = delete;
    TransformerRunner& operator=(const TransformerRunner&) = delete;

    // Builds the trainer(s) here (a bad config throws std::invalid_argument naming the field and leaves the
    // current run untouched), then hands them to the worker. The play state is kept.
    void start(const ot::OtTrainerConfig& config, bool comparison = false);
    // start() from a trained model (e.g. ot::loadTransformer): its architecture and parameters, the task,
    // data and optimizer of `config`. The run shows the model as it is at iteration 0; play or step trains
    // on.
    void startFrom(const ot::TransformerModel& model, ot::OtTrainerConfig config);
    void play();
    void pause();
    void stepOnce();
    void reset();
    void evaluateNow();
    bool playing() const;
    std::shared_ptr<const TransformerSnapshot> snapshot() const; // null before the first start()

  private:
    class Job;
    std::unique_ptr<Job> job_;
    std::unique_ptr<WorkerLoop> loop_;
    std::uint64_t generation_ = 0;
};

// The states of `set` (one batch set) projected to 2-D: the coordinates themselves when d = 2, else the two
// principal axes of all the states together (so the picture keeps the directions the set moves along).
std::vector<Mat> projectedStates(const std::vector<ot::Matrix>& states, int set, int setSize);

} // namespace flowscope
