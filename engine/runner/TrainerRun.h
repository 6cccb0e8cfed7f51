// Flowscope engine: live training, for every kind of trainer (generative flows, continuous-time
// Transformers).
//
// A TrainerRun<Kind> is a LiveRun (LiveRun.h): the worker steps one trainer, or two in comparison mode (a
// baseline trained beside the run from the same seed and data stream), one optimizer step each per advance(),
// and publishes a snapshot with each trainer's curves, events, parameters and latest picture. What differs
// between kinds is said by Kind:
//
//   Kind::Trainer, Config, Model      the trainer (step(), evaluate(), iteration(), stopped(), events(),
//   ...),
//                                     its config and its model type
//   Kind::State                       one trainer in a snapshot (fields of TrainerSteps.h's fillTrainerState,
//                                     plus `picture`, `model`, `config`)
//   Kind::Picture, Kind::Options      what a picture holds; the run's options (pictureSeconds, evaluateEvery,
//                                     maxEvents, and the kind's own)
//   Kind::Snapshot                    derives from TrainerRunSnapshot<State>
//   Kind::configs(config, comparison) the configs a start() trains, the configured one first
//   Kind::label(config)               how a trainer is named in messages ("with RWPO", "λ_OT = 0.5")
//   Kind::state(trainer, maxEvents, config)  a trainer's State, without its picture
//   Kind::fromModel(model, config)    `config` training on from a trained model's architecture and parameters
//   Kind::save(path, state)           a snapshot's trainer written as the CLI's training command writes it
//   Kind::Pictures                    made once per start() on the caller's thread from the options and the
//                                     first trainer: make(trainer) draws a picture (seconds, with the RWPO
//                                     layer), describe(snapshot, firstTrainer) fills the kind's own fields
//
// Pictures are made at most every Options::pictureSeconds of wall time while playing, at once after a single
// step, a reset or a pause, and never more than ~20 % of the worker's time (the interval grows with their
// cost). Held-out metrics run every evaluateEvery iterations and on demand (evaluateNow()).
#pragma once

#include "engine/runner/LiveRun.h"
#include "engine/runner/TrainerSteps.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace flowscope {

template <class State> struct TrainerRunSnapshot {
    std::uint64_t generation = 0; // grows with every start(): tells runs apart
    bool playing = false;
    bool comparison = false;          // a baseline trains beside the configured run (trainers.size() == 2)
    double iterationsPerSecond = 0.0; // advances per second (each steps every trainer once)
    std::vector<State> trainers;      // the configured run first, then the baseline
    std::string error;                // why training stopped or failed; empty while it can go on

    long iteration() const { return trainers.empty() ? 0 : trainers.front().iteration; }
};

// One trainer of a run and its latest picture.
template <class Kind> struct TrainerSlot {
    std::unique_ptr<typename Kind::Trainer> trainer;
    std::shared_ptr<const typename Kind::Config>
        config; // the trainer's, fixed for its life: shared by snapshots
    std::shared_ptr<const typename Kind::Picture> picture;
};

// The snapshot of a run's trainers (any thread): their curves and events (the last maxEvents), pictures, the
// kind's own fields, and the last event of a stopped trainer as the error unless `failure` says more. The
// runner's worker publishes these; so does anything that trains the same trainers on its own thread (the
// training animation).
template <class Kind>
std::shared_ptr<typename Kind::Snapshot> trainerSnapshot(const std::vector<TrainerSlot<Kind>>& trainers,
                                                         const typename Kind::Pictures& pictures,
                                                         std::uint64_t generation, bool playing, double rate,
                                                         std::size_t maxEvents, const std::string& failure) {
    auto s = std::make_shared<typename Kind::Snapshot>();
    s->generation = generation;
    s->playing = playing;
    s->comparison = trainers.size() == 2;
    s->iterationsPerSecond = rate;
    for (const TrainerSlot<Kind>& slot : trainers) {
        s->trainers.push_back(Kind::state(*slot.trainer, maxEvents, slot.config));
        s->trainers.back().picture = slot.picture;
    }
    if (!trainers.empty()) pictures.describe(*s, *trainers.front().trainer);
    s->error = failure;
    for (const TrainerSlot<Kind>& slot : trainers) {
        const auto& t = *slot.trainer;
        if (s->error.empty() && t.stopped() && !t.events().empty())
            s->error =
                (s->comparison ? Kind::label(t.config()) + ": " : std::string()) + t.events().back().message;
    }
    return s;
}

// The slots of freshly built trainers, each sharing a copy of its config.
template <class Kind>
std::vector<TrainerSlot<Kind>> trainerSlots(std::vector<std::unique_ptr<typename Kind::Trainer>> trainers) {
    std::vector<TrainerSlot<Kind>> seats;
    for (auto& t : trainers) {
        TrainerSlot<Kind> slot;
        slot.config = std::make_shared<const typename Kind::Config>(t->config());
        slot.trainer = std::move(t);
        seats.push_back(std::move(slot));
    }
    return seats;
}

// The worker's side: the trainers as a Steppable. Worker thread unless said.
template <class Kind> class TrainerJob : public LiveJob<typename Kind::Snapshot> {
  public:
    using Trainer = typename Kind::Trainer;
    using Pictures = typename Kind::Pictures;
    using Options = typename Kind::Options;

    explicit TrainerJob(const Options& options) : options_(options) {}

    using Slot = TrainerSlot<Kind>;

    // Replaces the run with the trainers start() built and validated.
    void install(std::vector<Slot> trainers, std::shared_ptr<const Pictures> pictures,
                 std::uint64_t generation) {
        generation_ = generation;
        slots_ = std::move(trainers);
        pictures_ = std::move(pictures);
        failure_.clear();
    }

    // The same configs afresh: iteration 0, the initial parameters, the same batches.
    void reset() {
        guarded([this] {
            for (Slot& slot : slots_) {
                slot.trainer = std::make_unique<Trainer>(*slot.config);
                slot.picture.reset();
            }
            failure_.clear();
        });
    }

    void evaluate() {
        guarded([this] {
            for (Slot& slot : slots_) slot.trainer->evaluate();
        });
    }

    bool advance() override {
        if (slots_.empty() || !failure_.empty()) return false;
        bool more = false;
        // A failed step may leave the parameters half-updated: no more steps until a reset or a start.
        const bool ok = guarded([&] {
            for (Slot& slot : slots_) more = stepTrainer(*slot.trainer, options_.evaluateEvery) || more;
        });
        return ok && more;
    }

    void publish(double stepsPerSecond, bool playing) override {
        if (generation_ == 0) return; // nothing started yet: snapshot() stays null
        refreshPictures(playing);
        this->store(trainerSnapshot<Kind>(slots_, *pictures_, generation_, playing, stepsPerSecond,
                                          options_.maxEvents, failure_));
    }

  private:
    using Clock = std::chrono::steady_clock;

    // Runs f; an exception becomes the run's failure (shown in the snapshot). Returns whether f finished.
    template <class F> bool guarded(F&& f) {
        try {
            f();
            return true;
        } catch (const std::exception& e) {
            failure_ = e.what();
            return false;
        }
    }

    // New pictures for trainers whose picture is older than their iteration.
    void refreshPictures(bool playing) {
        const auto now = Clock::now();
        const double interval = std::max(options_.pictureSeconds, 4.0 * pictureCost_);
        const bool timeForOne =
            !playing || std::chrono::duration<double>(now - lastPicture_).count() >= interval;
        bool made = false;
        for (Slot& slot : slots_) {
            const bool stale = !slot.picture || slot.picture->iteration != slot.trainer->iteration();
            if (!stale || (slot.picture && !timeForOne)) continue;
            made = guarded([&] { slot.picture = pictures_->make(*slot.trainer); }) || made;
        }
        if (!made) return;
        lastPicture_ = Clock::now();
        pictureCost_ = std::chrono::duration<double>(lastPicture_ - now).count();
    }

    const Options options_;
    std::vector<Slot> slots_;
    std::shared_ptr<const Pictures> pictures_;
    std::uint64_t generation_ = 0;
    std::string failure_; // an exception from a trainer; cleared by reset and start
    Clock::time_point lastPicture_{};
    double pictureCost_ = 0.0; // seconds the last pictures took
};

template <class Kind> class TrainerRun : public LiveRun<typename Kind::Snapshot> {
    using Job = TrainerJob<Kind>;

  public:
    using Trainer = typename Kind::Trainer;
    using Config = typename Kind::Config;
    using Model = typename Kind::Model;
    using Options = typename Kind::Options;
    using Snapshot = typename Kind::Snapshot;

    explicit TrainerRun(Options options = {})
        : LiveRun<Snapshot>(std::make_unique<Job>(options)), options_(options) {
        this->setMaxStepsPerSecond(0.0); // one iteration after another: training is never too fast to watch
    }

    // Builds the trainer(s) on the calling thread, so that a bad config throws std::invalid_argument here
    // (naming the field) and leaves the current run untouched; then hands them to the worker, replacing the
    // current run. `comparison` trains the kind's baseline beside it. The play state is kept.
    void start(const Config& config, bool comparison = false) {
        std::vector<std::unique_ptr<Trainer>> trainers;
        for (const Config& c : Kind::configs(config, comparison))
            trainers.push_back(std::make_unique<Trainer>(c));
        auto pictures = std::make_shared<const typename Kind::Pictures>(options_, *trainers.front());
        auto seats =
            std::make_shared<std::vector<TrainerSlot<Kind>>>(trainerSlots<Kind>(std::move(trainers)));
        const std::uint64_t generation = this->nextGeneration();
        this->show(trainerSnapshot<Kind>(*seats, *pictures, generation, this->playing(), 0.0, 0, {}));
        this->template post<Job>([seats, pictures, generation](Job& job) {
            job.install(std::move(*seats), pictures, generation);
        });
    }
    // start() from a trained model (e.g. a loaded .safetensors): its architecture and parameters, the data
    // and optimizer of `config`. The run shows the model as it is at iteration 0; play or step trains it on.
    void startFrom(const Model& model, Config config) {
        start(Kind::fromModel(model, std::move(config)), false);
    }

    void reset() {
        this->template post<Job>([](Job& job) { job.reset(); });
    }
    // Held-out metrics of the current parameters (appended to the evaluations).
    void evaluateNow() {
        this->template post<Job>([](Job& job) { job.evaluate(); });
    }

  private:
    const Options options_;
};

} // namespace flowscope
