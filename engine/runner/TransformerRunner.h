// Flowscope engine: live training of continuous-time Transformers (TrainerRun.h, with TransformerTraining as
// its Kind).
//
// Comparison mode trains λ_OT = 0 beside the configured λ_OT > 0 from the same seed and data stream: with
// λ_OT = 0 the token paths zig-zag, with enough λ_OT they go straight (Theorem 1, Prop. 1).
//
// A picture shows one fixed held-out input set moving through depth under the learned dynamics: its states
// X_0 .. X_M (task A: the 6 tokens in R²; task B: the 64 points, embedded in R^d, projected on the two
// principal axes of the path), and for task A with λ_OT > 0 the closed-form end points X*(T). Pictures are
// rationed as TrainerRun.h says; held-out evaluations every `evaluateEvery` iterations and on demand.
#pragma once

#include "engine/core/Types.h"
#include "engine/ottransformer/Trainer.h"
#include "engine/runner/TrainerRun.h"
#include "engine/runner/TransformerSnapshot.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace flowscope {

struct TransformerRunOptions {
    double pictureSeconds = 0.25;
    int evaluateEvery = 250;   // 0: only on demand
    std::size_t maxEvents = 8; // the last events a snapshot keeps
    std::uint64_t pictureSeed = 7;
};

// Writes a snapshot's trainer as flowscope-cli train-transformer does (ot::saveTransformer: .safetensors +
// .json beside, atomic). Throws std::runtime_error when the state has no model yet or the write fails.
void saveTrainedTransformer(const std::string& path, const TransformerTrainerState& state);

// What TrainerRun needs to know of continuous-time Transformers (TrainerRun.h says what each member is for).
// The baseline of comparison mode is λ_OT = 0.
struct TransformerTraining {
    using Trainer = ot::OtTrainer;
    using Config = ot::OtTrainerConfig;
    using Model = ot::TransformerModel;
    using State = TransformerTrainerState;
    using Picture = TransformerPicture;
    using Options = TransformerRunOptions;
    using Snapshot = TransformerSnapshot;

    static std::vector<Config> configs(const Config& config, bool comparison);
    static std::string label(const Config& config);
    static State state(const Trainer& t, std::size_t maxEvents, std::shared_ptr<const Config> config);
    static Config fromModel(const Model& model, Config config);
    static void save(const std::string& path, const State& state) { saveTrainedTransformer(path, state); }

    // One fixed input set, shown for the whole run.
    class Pictures {
      public:
        Pictures(const Options& options, const Trainer& first);
        // The picture of `model` (a trainer's evaluated model at `iteration`).
        std::shared_ptr<const Picture> make(long iteration, const Model& model) const;
        // A copy of t's evaluated model, drawn later (on the painter's thread).
        PictureTask<Picture> capture(const Trainer& t) const;
        // The task, and Theorem 2's threshold of the configured run.
        void describe(Snapshot& s, const Trainer& first) const;

      private:
        ot::Task task_ = ot::Task::A;
        ot::Batch shown_;
    };
};

using TransformerRunner = TrainerRun<TransformerTraining>;

// The states of `set` (one batch set) projected to 2-D: the coordinates themselves when d = 2, else the two
// principal axes of all the states together (so the picture keeps the directions the set moves along).
std::vector<Mat> projectedStates(const std::vector<ot::Matrix>& states, int set, int setSize);

} // namespace flowscope
