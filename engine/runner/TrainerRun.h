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
//                                     first trainer: capture(trainer) takes what a picture of the trainer
//                                     needs (a copy of its model) into a PictureTask that draws it on any
//                                     thread; describe(snapshot, firstTrainer) fills the kind's own fields;
//                                     hasDrafts() (optional) says that task(true) draws a cheap draft
//
// Pictures are drawn on their own thread (the painter), never on the trainers': a picture of a flow with the
// RWPO layer takes seconds, and training must not wait for it. The worker hands the painter one batch (a
// task per trainer whose picture is stale) at a time, at most every Options::pictureSeconds while playing, at
// once after a single step, a reset or a pause; the painter runs it with parallelFor inline (the trainers
// keep the thread pool) and wakes the worker, which shows the pictures in its next snapshot. A kind with
// drafts draws one first, and drafts while playing when a full picture would cost more than
// kFullPictureBudget; it draws the full picture of the same iteration once the run pauses or stops. Held-out
// metrics run every evaluateEvery iterations and on demand (evaluateNow()).
#pragma once

#include "engine/core/Parallel.h"
#include "engine/runner/LiveRun.h"
#include "engine/runner/TrainerRunSnapshot.h"
#include "engine/runner/TrainerSteps.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace flowscope {

// A picture of one trainer at one iteration, drawn later on any thread: task(draft).
template <class Picture> using PictureTask = std::function<std::shared_ptr<const Picture>(bool draft)>;

// While playing, drafts are drawn instead of full pictures that would take longer than this (seconds): a
// picture must follow training at least twice a second.
constexpr double kFullPictureBudget = 0.4;

// Whether a picture is a draft (pictures without a `draft` field never are).
template <class Picture> bool isDraft(const Picture& p) {
    if constexpr (requires { p.draft; })
        return p.draft;
    else
        return false;
}

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
    using Slot = TrainerSlot<Kind>;

    explicit TrainerJob(const Options& options)
        : options_(options), painter_(std::make_unique<WorkerLoop>(painterTarget_)) {}

    // `wake` runs on the painter after each batch: it makes the worker publish (TrainerRun posts a no-op).
    void setWake(std::function<void()> wake) { wake_ = std::move(wake); }

    // Replaces the run with the trainers start() built and validated.
    void install(std::vector<Slot> trainers, std::shared_ptr<const Pictures> pictures,
                 std::uint64_t generation) {
        generation_ = generation;
        slots_ = std::move(trainers);
        pictures_ = std::move(pictures);
        failure_.clear();
        paintingFailed_ = false;
        ++epoch_;
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
        paintingFailed_ = false;
        ++epoch_;
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

    // The painter stops (its batch in flight finishes) while the worker, which it wakes, still runs.
    void finish() override { painter_.reset(); }

  private:
    using Clock = std::chrono::steady_clock;

    // One batch for the painter: a task per trainer (empty: that trainer's picture is kept), and what came
    // of them. The worker reads the results only after `painting_` fell back to false.
    struct PictureBatch {
        std::uint64_t epoch = 0;
        bool draft = false;
        std::shared_ptr<const Pictures> pictures; // keeps what the tasks point into alive
        std::vector<PictureTask<typename Kind::Picture>> tasks;
        std::vector<std::shared_ptr<const typename Kind::Picture>> made;
        std::string error;
        double seconds = 0;
    };
    struct Idle : Steppable { // the painter's loop only runs posted batches
        bool advance() override { return false; }
        void publish(double, bool) override {}
    };

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

    // Takes the painter's finished batch, then hands it the next one if a picture is stale (or a draft
    // while the run is settled).
    void refreshPictures(bool playing) {
        if (painting_.load(std::memory_order_acquire)) return;
        if (batch_) collect();
        if (paintingFailed_) return; // the failure is shown; drawing again would fail again
        bool anyStale = false, anyMissing = false;
        std::vector<char> stale(slots_.size()), rough(slots_.size());
        for (std::size_t i = 0; i < slots_.size(); ++i) {
            const auto& picture = slots_[i].picture;
            stale[i] = !picture || picture->iteration != slots_[i].trainer->iteration();
            rough[i] = picture && isDraft(*picture);
            anyStale = anyStale || stale[i];
            anyMissing = anyMissing || !picture;
        }
        const auto now = Clock::now();
        if (anyStale && playing && !anyMissing &&
            std::chrono::duration<double>(now - lastBatch_).count() < options_.pictureSeconds)
            return;
        bool drafts = false;
        if constexpr (requires { pictures_->hasDrafts(); }) drafts = pictures_->hasDrafts();
        // A full picture's cost, until one was drawn: four drafts (a draft draws a quarter of the samples).
        const double fullCost = fullCost_ >= 0 ? fullCost_ : 4.0 * draftCost_;
        const bool draft = drafts && anyStale && (anyMissing || (playing && fullCost > kFullPictureBudget));
        auto batch = std::make_shared<PictureBatch>();
        batch->epoch = epoch_;
        batch->draft = draft;
        batch->pictures = pictures_;
        bool any = false;
        for (std::size_t i = 0; i < slots_.size(); ++i) {
            const bool wanted = stale[i] || (rough[i] && !draft && !playing);
            batch->tasks.push_back(wanted ? pictures_->capture(*slots_[i].trainer) : nullptr);
            any = any || wanted;
        }
        if (!any) return;
        batch->made.resize(slots_.size());
        batch_ = batch;
        lastBatch_ = now;
        painting_.store(true, std::memory_order_release);
        painter_->post([this, batch] {
            const InlineParallelFor inlined; // the trainers keep the thread pool
            const auto start = Clock::now();
            for (std::size_t i = 0; i < batch->tasks.size(); ++i) {
                if (!batch->tasks[i]) continue;
                try {
                    batch->made[i] = batch->tasks[i](batch->draft);
                } catch (const std::exception& e) {
                    batch->error = e.what();
                }
            }
            batch->tasks.clear(); // the model copies go here, not on the worker
            batch->seconds = std::chrono::duration<double>(Clock::now() - start).count();
            painting_.store(false, std::memory_order_release);
            if (wake_) wake_();
        });
    }

    // The finished batch's pictures, unless the trainers they show were replaced or reset since.
    void collect() {
        const auto batch = std::move(batch_);
        if (batch->epoch != epoch_) return;
        for (std::size_t i = 0; i < slots_.size() && i < batch->made.size(); ++i)
            if (batch->made[i]) slots_[i].picture = batch->made[i];
        if (!batch->error.empty()) {
            if (failure_.empty()) failure_ = batch->error;
            paintingFailed_ = true;
        }
        (batch->draft ? draftCost_ : fullCost_) = batch->seconds;
    }

    const Options options_;
    std::vector<Slot> slots_;
    std::shared_ptr<const Pictures> pictures_;
    std::uint64_t generation_ = 0;
    std::string failure_;     // an exception from a trainer; cleared by reset and start
    std::uint64_t epoch_ = 0; // grows at install and reset: pictures of trainers replaced since are dropped
    std::shared_ptr<PictureBatch> batch_; // handed to the painter, until collected
    std::atomic<bool> painting_{false};
    bool paintingFailed_ = false; // a picture threw: no more until a start or a reset
    Clock::time_point lastBatch_{};
    double draftCost_ = 0.0, fullCost_ = -1.0; // seconds the last batch of each kind took; -1: none yet
    std::function<void()> wake_;
    Idle painterTarget_;
    std::unique_ptr<WorkerLoop> painter_; // last: its batch in flight may use every member above
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
        // A finished picture makes the worker publish, even while paused. The loop outlives the painter,
        // which the worker stops before it exits (TrainerJob::finish).
        this->template post<Job>(
            [&loop = this->loop()](Job& job) { job.setWake([&loop] { loop.post([] {}); }); });
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
