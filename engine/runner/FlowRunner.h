// Flowscope engine: live training of generative flows (TrainerRun.h, with FlowTraining as its Kind).
//
// A picture holds generated samples of fixed base draws z, a few of their trajectories through the layers,
// data points and a density grid. Generating costs O(N²) per layer with the RWPO layer, which is why pictures
// are rationed (TrainerRun.h). Comparison mode trains the flow with and without the RWPO layer (the plain
// OT-Flow baseline) on the same data stream and seed, the RWPO one first.
#pragma once

#include "engine/core/Types.h"
#include "engine/flows/Trainer.h"
#include "engine/runner/FlowSnapshot.h"
#include "engine/runner/TrainerRun.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace flowscope {

struct FlowRunOptions {
    int samples = 1000;            // generated samples and data points in a picture
    int trajectorySamples = 256;   // of those, how many carry their trajectory x^0 .. x^M
    int gridSize = 64;             // density grid cells per side
    double gridExtent = 4.0;       // the grid covers [-extent, extent]²
    double pictureSeconds = 0.4;   // the least wall time between two pictures while playing
    int evaluateEvery = 200;       // held-out metrics every this many iterations; 0: only on demand
    std::size_t maxEvents = 8;     // the last events a snapshot keeps
    std::uint64_t pictureSeed = 1; // the base draws z and the shown data points
};

// The pictures of a run, made by one code path wherever they are made: the runner's worker (at most every
// pictureSeconds) and flowscope-cli render --view training (one per frame, on its own thread). It holds the
// fixed base draws z of options.pictureSeed, so that successive pictures show where the same z's go as the
// flow learns. make() costs O(N²) per layer with the RWPO layer.
//
// A draft draws the same picture from the first kDraftSamples base draws (so its samples are the first rows
// of the full picture's) on a grid of at most kDraftGrid cells per side: about a quarter of the cost, drawn
// first and while training runs faster than full pictures can follow.
class FlowPictureMaker {
  public:
    static constexpr int kDraftSamples = 250;
    static constexpr int kDraftGrid = 32;

    FlowPictureMaker(const FlowRunOptions& options, int d);

    // The shown data points of a trainer: the same for every picture of a run.
    Mat data(const flows::FlowTrainer& t) const;
    // The picture of `model` (a trainer's evaluated model at `iteration`), showing `data`.
    std::shared_ptr<const FlowPicture> make(long iteration, const flows::FlowModel<float>& model,
                                            const Mat& data, bool draft = false) const;
    std::shared_ptr<const FlowPicture> make(const flows::FlowTrainer& t, const Mat& data) const {
        return make(t.iteration(), t.evaluatedModel(), data);
    }
    // Whether a draft draws less than the full picture.
    bool hasDrafts() const;

  private:
    Mat modelDensity(const flows::FlowTrainer::Model& model, int gridSize,
                     const flows::FlowTrainer::Model::FrozenKeys& keys) const;
    Mat sampleHistogram(const Mat& samples, int gridSize) const;

    FlowRunOptions options_;
    flows::FlowTrainer::Matrix base_; // d x samples
};

// The configs a start() trains: `config`, or in comparison with the RWPO layer on and off (with it first).
std::vector<flows::TrainerConfig> trainingConfigs(const flows::TrainerConfig& config, bool comparison);

// Writes a snapshot's trainer as flowscope-cli train does (flows::saveFlow: .safetensors + .json beside,
// atomic). Throws std::runtime_error when the state has no model yet or the write fails.
void saveTrainedFlow(const std::string& path, const FlowTrainerState& state);

// What TrainerRun needs to know of flows (TrainerRun.h says what each member is for).
struct FlowTraining {
    using Trainer = flows::FlowTrainer;
    using Config = flows::TrainerConfig;
    using Model = flows::FlowModel<float>;
    using State = FlowTrainerState;
    using Picture = FlowPicture;
    using Options = FlowRunOptions;
    using Snapshot = FlowSnapshot;

    static std::vector<Config> configs(const Config& config, bool comparison) {
        return trainingConfigs(config, comparison);
    }
    static std::string label(const Config& config);
    static State state(const Trainer& t, std::size_t maxEvents, std::shared_ptr<const Config> config);
    static Config fromModel(const Model& model, Config config);
    static void save(const std::string& path, const State& state) { saveTrainedFlow(path, state); }

    // The fixed base draws z and the shown data points of a run.
    class Pictures {
      public:
        Pictures(const Options& options, const Trainer& first);
        std::shared_ptr<const Picture> make(const Trainer& t) const { return maker_.make(t, data_); }
        // A copy of t's evaluated model, drawn later (on the painter's thread).
        PictureTask<Picture> capture(const Trainer& t) const;
        bool hasDrafts() const { return maker_.hasDrafts(); }
        void describe(Snapshot&, const Trainer&) const {}

      private:
        FlowPictureMaker maker_;
        Mat data_;
    };
};

using FlowRunner = TrainerRun<FlowTraining>;

} // namespace flowscope
