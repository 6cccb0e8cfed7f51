// Flowscope engine: live training of posterior flows (TrainerRun.h, with PosteriorTraining as its Kind): the
// run of the app's Inverse workspace.
//
// A run trains one posterior flow on a problem (engine/inverse/Problem.h), or two side by side: with and
// without the RWPO layer, from the same seed and frame, the RWPO one first. A picture holds samples of the
// averaged parameters from fixed base draws, their summary (mean, sd, covariance, the relative L1 error of
// the mean against the truth) and F(mean); for EIT also the conductivity field's mean and standard deviation
// on a grid. The held-out evaluation (every Options::evaluateEvery iterations, and Evaluate) records the
// relative L1 error of the posterior mean over `evaluationSamples` samples.
#pragma once

#include "engine/inverse/PosteriorFlow.h"
#include "engine/inverse/Problem.h"
#include "engine/runner/PosteriorSnapshot.h"
#include "engine/runner/TrainerRun.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace flowscope {

// `config` with its frame made (makeFrame) when it has none.
PosteriorRunConfig withFrame(PosteriorRunConfig config);

// The run of a saved posterior (inverse::loadPosterior: a .safetensors of flowscope-cli infer or of the app's
// export): its problem, its flow's settings, its frame and its parameters as initialParams; problemId is
// `path`. Throws std::runtime_error naming the file and the field.
PosteriorRunConfig loadPosteriorRun(const std::string& path);

struct PosteriorRunOptions {
    int samples = 600;                  // samples in a picture
    int evaluateEvery = 25;             // the relative L1 error every this many iterations; 0: on demand
    int fieldGrid = 40;                 // EIT: the conductivity field's grid cells per side
    double pictureSeconds = 0.5;        // the least wall time between two pictures while playing
    std::size_t maxEvents = 8;          // the last events a snapshot keeps
    std::uint64_t pictureSeed = 0x5eed; // the pictures' base draws
};

// One trainer: a PosteriorFlow with its iteration budget and held-out evaluations.
class PosteriorTrainer {
  public:
    using Config = PosteriorRunConfig;
    // Throws std::invalid_argument (naming the field) for an invalid config. Makes the frame when the config
    // has none.
    explicit PosteriorTrainer(const Config& config);

    // One step; false once the flow has stopped (StepGuard) or reached config().flow.iterations. The first
    // step of a problem with at most 3 unknowns evaluates the starting point (iteration 0) before it.
    bool step();
    bool stopped() const { return flow_->stopped(); }
    bool finished() const { return flow_->iteration() >= config_.flow.iterations; }
    long iteration() const { return flow_->iteration(); }
    // The relative L1 error of the posterior mean over config().evaluationSamples fresh samples (a fixed
    // seed: every evaluation of a run draws the same base points).
    void evaluate();

    double learningRate() const;
    const std::vector<inverse::PosteriorRecord>& history() const { return flow_->history(); }
    const std::vector<PosteriorEvaluation>& evaluations() const { return evaluations_; }
    const std::vector<flows::TrainEvent>& events() const { return flow_->events(); }
    const Config& config() const { return config_; }
    const inverse::PosteriorFlow& flow() const { return *flow_; }

  private:
    Config config_;
    std::unique_ptr<inverse::PosteriorFlow> flow_;
    std::vector<PosteriorEvaluation> evaluations_;
};

// Writes a snapshot's trainer as flowscope-cli infer does (inverse::savePosterior: .safetensors + .json).
// Throws std::runtime_error when the state has no parameters yet or the write fails.
void savePosteriorState(const std::string& path, const PosteriorState& state);

struct PosteriorTraining {
    using Trainer = PosteriorTrainer;
    using Config = PosteriorRunConfig;
    using Model = flows::FlowParams<double>;
    using State = PosteriorState;
    using Picture = PosteriorPicture;
    using Options = PosteriorRunOptions;
    using Snapshot = PosteriorSnapshot;

    // `config` (its frame made once), or with and without the RWPO layer (with it first), sharing the frame.
    static std::vector<Config> configs(const Config& config, bool comparison);
    static std::string label(const Config& config);
    static State state(const Trainer& t, std::size_t maxEvents, std::shared_ptr<const Config> config);
    static void save(const std::string& path, const State& state) { savePosteriorState(path, state); }

    class Pictures {
      public:
        Pictures(const Options& options, const Trainer& first);
        std::shared_ptr<const Picture> make(const Trainer& t) const;
        // Drawn at once, on the worker: sampling needs the trainer's flow, which cannot be copied (its
        // pictures take milliseconds to a few tenths of a second).
        PictureTask<Picture> capture(const Trainer& t) const {
            return [p = make(t)](bool) { return p; };
        }
        void describe(Snapshot& s, const Trainer&) const { s.scene = scene_; }

      private:
        Options options_;
        std::shared_ptr<const PosteriorScene> scene_;
        inverse::Matrix fieldBumps_; // EIT: Φ at the field grid's points (grid² x d)
        double kappa0_ = 1;
    };
};

using PosteriorRunner = TrainerRun<PosteriorTraining>;

} // namespace flowscope
