// Flowscope engine: trains generative flows in a worker thread and publishes immutable snapshots for the GUI.
//
// The same shape as SimulationRunner (DESIGN.md, "Threads"): a WorkerLoop advances a Steppable, one
// FlowTrainer::step() per advance(); the UI thread sends commands and reads the latest TrainingSnapshot,
// which the worker publishes by swapping a shared_ptr under a mutex.
//
// What a snapshot holds, and how often it changes:
//  * every publication: the iteration, the rate, the curves (one TrainRecord per iteration, the held-out
//    evaluations) and the last events (rejected steps);
//  * at most every TrainingOptions::pictureSeconds of wall time while playing (at once after a single step,
//    a reset or a pause): the picture, i.e. generated samples of fixed base draws z, a few of their
//    trajectories through the layers, data points and a density grid. Generating costs O(N²) per layer with
//    the RWPO layer, so the interval also grows to keep the picture under ~20 % of the worker's time.
//  * held-out metrics (FlowTrainer::evaluate(), seconds with the RWPO layer) every evaluateEvery iterations
//    and on demand (evaluateNow()).
//
// Side by side: two trainers on the same data stream and seed, one with the RWPO layer and one without (the
// plain OT-Flow baseline), each advance() steps both, and the snapshot carries both.
#pragma once

#include "engine/core/Types.h"
#include "engine/flows/Trainer.h"
#include "engine/runner/SimulationRunner.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace flowscope {

struct TrainingOptions {
    int samples = 1000;            // generated samples and data points in a picture
    int trajectorySamples = 256;   // of those, how many carry their trajectory x^0 .. x^M
    int gridSize = 64;             // density grid cells per side
    double gridExtent = 4.0;       // the grid covers [-extent, extent]²
    double pictureSeconds = 0.7;   // the least wall time between two pictures while playing
    int evaluateEvery = 200;       // held-out metrics every this many iterations; 0: only on demand
    std::size_t maxEvents = 8;     // the last events a snapshot keeps
    std::uint64_t pictureSeed = 1; // the base draws z and the shown data points
};

// What one trainer looks like at a given iteration; immutable once published, shared by readers.
struct TrainingPicture {
    long iteration = 0;
    Mat samples;                   // samples x d: generate(z) for fixed z
    std::vector<Mat> trajectories; // x^0 .. x^M (M + 1 entries), each trajectorySamples x d
    Mat data;                      // samples x d: points of the training law
    // Density on the grid (d = 2 only): density(i, j) at x = cellCenter(i), y = cellCenter(j), in units of
    // probability per unit area. Without the RWPO layer it is the model's exp(log ρ(x)) by (24); with it a
    // 2-D histogram of the generated samples (the layer's keys are its queries, so a lone grid point does not
    // see the model's density), and densityFromSamples says so.
    Mat density;
    bool densityFromSamples = false;
    double gridExtent = 4.0;

    int gridSize() const { return int(density.rows()); }
    double cellCenter(int i) const { return -gridExtent + (i + 0.5) * 2.0 * gridExtent / gridSize(); }
};

// One trainer's state in a snapshot.
struct TrainerState {
    std::string label; // "with RWPO" or "without RWPO"
    bool rwpo = false;
    long iteration = 0;
    double learningRate = 0.0;
    std::vector<flows::TrainRecord> history; // one per iteration (loss, NLL, transport, HJB, λ, β, ...)
    std::vector<flows::Evaluation> evaluations;
    std::vector<flows::TrainEvent> events; // the last TrainingOptions::maxEvents
    bool stopped = false;                  // twenty rejections in a row: the trainer refuses further steps
    std::shared_ptr<const TrainingPicture> picture; // null until the worker made the first one
    // The parameters and config at this iteration (copies: saving or sampling them never touches the
    // worker's trainer). saveTrainedFlow() writes them with the record flowscope-cli train writes.
    std::shared_ptr<const flows::FlowModel<float>> model;
    std::shared_ptr<const flows::TrainerConfig> config;
};

struct TrainingSnapshot {
    std::uint64_t generation = 0; // grows with every start(): tells runs apart
    bool playing = false;
    bool sideBySide = false;
    double iterationsPerSecond = 0.0;   // advances per second (each steps every trainer once)
    std::vector<TrainerState> trainers; // one, or two side by side (with RWPO first)
    std::string error;                  // why training stopped or failed; empty while it can go on

    long iteration() const { return trainers.empty() ? 0 : trainers.front().iteration; }
};

// The pictures of a run, made by one code path wherever they are made: the runner's worker (at most every
// pictureSeconds) and flowscope-cli render --view training (one per frame, on its own thread). It holds the
// fixed base draws z of options.pictureSeed, so that successive pictures show where the same z's go as the
// flow learns. make() costs O(N²) per layer with the RWPO layer.
class TrainingPictureMaker {
  public:
    TrainingPictureMaker(const TrainingOptions& options, int d);

    // The shown data points of a trainer: the same for every picture of a run.
    Mat data(const flows::FlowTrainer& t) const;
    // t's picture at its current iteration, showing `data`.
    std::shared_ptr<const TrainingPicture> make(const flows::FlowTrainer& t, const Mat& data) const;

  private:
    Mat modelDensity(const flows::FlowTrainer::Model& model) const;
    Mat sampleHistogram(const Mat& samples) const;

    TrainingOptions options_;
    flows::FlowTrainer::Matrix base_; // d x samples
};

// The configs a start() trains: `config`, or side by side with the RWPO layer on and off (with it first).
std::vector<flows::TrainerConfig> trainingConfigs(const flows::TrainerConfig& config, bool sideBySide);
// One trainer's state as a snapshot holds it (label, curves, its last maxEvents events), without a picture.
TrainerState trainerState(const flows::FlowTrainer& t, std::size_t maxEvents);

// Writes a snapshot's trainer as flowscope-cli train does (flows::saveFlow: .safetensors + .json beside,
// atomic). Throws std::runtime_error when the state has no model yet or the write fails.
void saveTrainedFlow(const std::string& path, const TrainerState& state);

class TrainingRunner {
  public:
    explicit TrainingRunner(TrainingOptions options = {});
    ~TrainingRunner();
    TrainingRunner(const TrainingRunner&) = delete;
    TrainingRunner& operator=(const TrainingRunner&) = delete;

    // Builds the trainer(s) on the calling thread, so that a bad config throws std::invalid_argument here
    // (naming the field) and leaves the current run untouched; then hands them to the worker, replacing the
    // current run. sideBySide trains config with flow.rwpo on and off. The play state is kept.
    void start(const flows::TrainerConfig& config, bool sideBySide = false);
    // start() from a trained model (e.g. flows::loadFlow): its architecture and parameters, the data and
    // optimizer of `config`. The run shows the model as it is at iteration 0; play or step trains it on.
    void startFrom(const flows::FlowModel<float>& model, flows::TrainerConfig config);

    void play();
    void pause();
    void stepOnce();
    void reset();       // the trainers of the last start() afresh: iteration 0, the initial parameters
    void evaluateNow(); // held-out metrics of the current parameters (appended to the evaluations)
    void setMaxStepsPerSecond(double rate) { loop_->setMaxStepsPerSecond(rate); } // <= 0: no cap (default)

    bool playing() const { return loop_->playing(); }
    bool started() const { return generation_ > 0; }
    // The latest published state; never waits on a step. Null before the first start().
    std::shared_ptr<const TrainingSnapshot> snapshot() const;

  private:
    class Job;
    std::unique_ptr<Job> job_;
    std::unique_ptr<WorkerLoop> loop_; // declared after job_: destroyed (joined) before it
    std::uint64_t generation_ = 0;
};

} // namespace flowscope
