#include "engine/runner/TrainingRunner.h"

#include "engine/flows/Sampling.h"

#include "engine/flows/FlowIo.h"
#include "engine/runner/LatestSnapshot.h"
#include "engine/runner/TrainerSteps.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <mutex>
#include <optional>

namespace flowscope {

namespace {

using Clock = std::chrono::steady_clock;
using flows::FlowTrainer;
using Matrix = FlowTrainer::Matrix;

// One trainer and what its pictures reuse.
struct Slot {
    std::unique_ptr<FlowTrainer> trainer;
    std::shared_ptr<const flows::TrainerConfig>
        config; // the trainer's, fixed for its life: shared by snapshots
    Mat data;   // the shown data points: the same for every picture of a run
    std::shared_ptr<const TrainingPicture> picture;
};

std::string labelFor(const flows::TrainerConfig& config) {
    return config.flow.rwpo ? "with RWPO" : "without RWPO";
}

// The configs a start() trains: the one given, or with the RWPO layer on and off.
std::vector<flows::TrainerConfig> configsFor(const flows::TrainerConfig& config, bool sideBySide) {
    if (!sideBySide) return {config};
    flows::TrainerConfig with = config, without = config;
    with.flow.rwpo = true;
    without.flow.rwpo = false;
    return {with, without};
}

// `config`: the trainer's config as the run shares it (a copy is made when null). The config never changes
// during a run but may hold the user's points, so publications share one copy rather than make one each.
TrainerState stateOf(const FlowTrainer& t, std::size_t maxEvents,
                     std::shared_ptr<const flows::TrainerConfig> config = nullptr) {
    TrainerState s;
    s.label = labelFor(t.config());
    s.rwpo = t.config().flow.rwpo;
    fillTrainerState(s, t, maxEvents);
    s.model = std::make_shared<const flows::FlowModel<float>>(t.evaluatedModel());
    s.config = config ? std::move(config) : std::make_shared<const flows::TrainerConfig>(t.config());
    return s;
}

} // namespace

std::vector<flows::TrainerConfig> trainingConfigs(const flows::TrainerConfig& config, bool sideBySide) {
    return configsFor(config, sideBySide);
}

TrainerState trainerState(const FlowTrainer& t, std::size_t maxEvents) {
    return stateOf(t, maxEvents);
}

// ---------------------------------------------------------------------------------------------------------
// TrainingPictureMaker

TrainingPictureMaker::TrainingPictureMaker(const TrainingOptions& options, int d) : options_(options) {
    flows::Rng rng(options_.pictureSeed);
    base_.resize(d, options_.samples);
    for (Eigen::Index i = 0; i < base_.size(); ++i) base_(i) = float(rng.normal());
}

Mat TrainingPictureMaker::data(const FlowTrainer& t) const {
    return t.sampleData(options_.samples, options_.pictureSeed);
}

std::shared_ptr<const TrainingPicture> TrainingPictureMaker::make(const FlowTrainer& t,
                                                                  const Mat& data) const {
    auto p = std::make_shared<TrainingPicture>();
    p->iteration = t.iteration();
    p->data = data;
    p->gridExtent = options_.gridExtent;
    // In double on the float32 parameters, as flowscope-cli sample draws (engine/flows/Sampling.h): there the
    // exact-inverse sampler's fixed points converge, where in float32 they stall at the iteration cap on
    // rounding noise (with the RWPO layer at initialization, 1000 samples: 35 iterations per sub-step and
    // 5.9 s, against 100 and 13.3 s), and a picture shows the samples `sample` writes for these draws.
    const flows::FlowModel<double> model = flows::inDouble(t.evaluatedModel());
    std::vector<flows::FlowModel<double>::Matrix> trajectory;
    p->samples = flows::toRows(model.generate(base_.cast<double>(), &trajectory).cast<float>());
    const Eigen::Index k = std::min<Eigen::Index>(options_.trajectorySamples, base_.cols());
    for (const auto& layer : trajectory)
        p->trajectories.push_back(flows::toRows(layer.leftCols(k).cast<float>()));
    if (t.config().flow.d == 2 && options_.gridSize > 0) {
        // The model density where it is defined point by point: without the layer, or beside its reference.
        p->densityFromSamples = t.config().flow.rwpo && t.evaluatedModel().reference().size() == 0;
        p->density = p->densityFromSamples ? sampleHistogram(p->samples) : modelDensity(t.evaluatedModel());
    }
    return p;
}

// exp(log ρ) by (24) at the centres of a gridSize² grid.
Mat TrainingPictureMaker::modelDensity(const FlowTrainer::Model& model) const {
    const int n = options_.gridSize;
    const double cell = 2.0 * options_.gridExtent / n;
    Matrix grid(2, n * n);
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
            grid(0, i + n * j) = float(-options_.gridExtent + (i + 0.5) * cell);
            grid(1, i + n * j) = float(-options_.gridExtent + (j + 0.5) * cell);
        }
    Eigen::Matrix<float, 1, Eigen::Dynamic> logDensity;
    model.encode(grid, &logDensity);
    Mat density(n, n);
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) density(i, j) = std::exp(double(logDensity(i + n * j)));
    return density;
}

// Samples per unit area on a grid of half as many cells per side as the model's (a thousand samples would
// leave most of 64² cells empty). Samples outside the grid or not finite are not counted.
Mat TrainingPictureMaker::sampleHistogram(const Mat& samples) const {
    const int n = std::max(options_.gridSize / 2, 1);
    const double cell = 2.0 * options_.gridExtent / n;
    Mat h = Mat::Zero(n, n);
    for (Eigen::Index r = 0; r < samples.rows(); ++r) {
        const double i = std::floor((samples(r, 0) + options_.gridExtent) / cell);
        const double j = std::floor((samples(r, 1) + options_.gridExtent) / cell);
        if (i >= 0 && i < n && j >= 0 && j < n) h(int(i), int(j)) += 1.0;
    }
    if (samples.rows() > 0) h /= double(samples.rows()) * cell * cell;
    return h;
}

// ---------------------------------------------------------------------------------------------------------
// TrainingRunner::Job: the trainers as a Steppable, and the snapshot it publishes. Worker thread unless said.

class TrainingRunner::Job : public Steppable {
  public:
    explicit Job(const TrainingOptions& options) : options_(options) {}

    // Replaces the run with trainers built (and validated) by start().
    void install(std::vector<std::unique_ptr<FlowTrainer>> trainers, std::uint64_t generation) {
        generation_ = generation;
        slots_.clear();
        // Fixed base draws z: successive pictures show where the same z's go as the flow learns.
        pictures_.emplace(options_, trainers.empty() ? 2 : trainers.front()->config().flow.d);
        for (auto& t : trainers) {
            Slot slot;
            slot.data = pictures_->data(*t);
            slot.config = std::make_shared<const flows::TrainerConfig>(t->config());
            slot.trainer = std::move(t);
            slots_.push_back(std::move(slot));
        }
        failure_.clear();
    }

    // The same configs afresh: iteration 0, the initial parameters, the same batches.
    void reset() {
        try {
            for (Slot& slot : slots_) {
                slot.trainer = std::make_unique<FlowTrainer>(slot.trainer->config());
                slot.picture.reset();
            }
            failure_.clear();
        } catch (const std::exception& e) {
            failure_ = e.what();
        }
    }

    void evaluate() {
        try {
            for (Slot& slot : slots_) slot.trainer->evaluate();
        } catch (const std::exception& e) {
            failure_ = e.what();
        }
    }

    bool advance() override {
        if (slots_.empty() || !failure_.empty()) return false;
        bool more = false;
        try {
            for (Slot& slot : slots_) more = stepTrainer(*slot.trainer, options_.evaluateEvery) || more;
        } catch (const std::exception& e) {
            failure_ = e.what(); // the parameters may be half-updated: no more steps until reset or start
            return false;
        }
        return more;
    }

    void publish(double stepsPerSecond, bool playing) override {
        if (generation_ == 0) return; // nothing started yet: snapshot() stays null
        refreshPictures(playing);
        auto s = std::make_shared<TrainingSnapshot>();
        s->generation = generation_;
        s->playing = playing;
        s->sideBySide = slots_.size() == 2;
        s->iterationsPerSecond = stepsPerSecond;
        for (const Slot& slot : slots_) {
            s->trainers.push_back(stateOf(*slot.trainer, options_.maxEvents, slot.config));
            s->trainers.back().picture = slot.picture;
        }
        s->error = failure_;
        for (const Slot& slot : slots_)
            if (s->error.empty() && slot.trainer->stopped() && !slot.trainer->events().empty())
                s->error = (s->sideBySide ? labelFor(slot.trainer->config()) + ": " : std::string()) +
                           slot.trainer->events().back().message;
        store(std::move(s));
    }

    // Any thread.
    void store(std::shared_ptr<const TrainingSnapshot> s) { latest_.store(std::move(s)); }
    std::shared_ptr<const TrainingSnapshot> snapshot() const { return latest_.get(); }

  private:
    // New pictures for trainers whose picture is older than their iteration: at once when paused (a single
    // step shows its result), else at most every pictureSeconds, and never more than ~20 % of the time.
    void refreshPictures(bool playing) {
        const auto now = Clock::now();
        const double interval = std::max(options_.pictureSeconds, 4.0 * pictureCost_);
        const bool timeForOne =
            !playing || std::chrono::duration<double>(now - lastPicture_).count() >= interval;
        bool made = false;
        for (Slot& slot : slots_) {
            const bool stale = !slot.picture || slot.picture->iteration != slot.trainer->iteration();
            if (!stale || (slot.picture && !timeForOne)) continue;
            try {
                slot.picture = makePicture(slot);
                made = true;
            } catch (const std::exception& e) {
                failure_ = e.what();
            }
        }
        if (!made) return;
        lastPicture_ = Clock::now();
        pictureCost_ = std::chrono::duration<double>(lastPicture_ - now).count();
    }

    std::shared_ptr<const TrainingPicture> makePicture(const Slot& slot) const {
        return pictures_->make(*slot.trainer, slot.data);
    }

    const TrainingOptions options_;
    std::vector<Slot> slots_;
    std::optional<TrainingPictureMaker> pictures_; // made by install()
    std::uint64_t generation_ = 0;
    std::string failure_; // an exception from the trainer; cleared by reset and start
    Clock::time_point lastPicture_{};
    double pictureCost_ = 0.0; // seconds the last pictures took

    // Shared with readers.
    LatestSnapshot<TrainingSnapshot> latest_;
};

// ---------------------------------------------------------------------------------------------------------
// TrainingRunner

TrainingRunner::TrainingRunner(TrainingOptions options)
    : job_(std::make_unique<Job>(options)), loop_(std::make_unique<WorkerLoop>(*job_)) {
    loop_->setMaxStepsPerSecond(0.0); // one iteration after another: training is never too fast to watch
}

TrainingRunner::~TrainingRunner() {
    loop_.reset();
}

void TrainingRunner::start(const flows::TrainerConfig& config, bool sideBySide) {
    // Built here, so that a bad config throws on the caller's thread and the running trainers stay.
    auto trainers = std::make_shared<std::vector<std::unique_ptr<FlowTrainer>>>();
    for (const flows::TrainerConfig& c : configsFor(config, sideBySide))
        trainers->push_back(std::make_unique<FlowTrainer>(c));

    auto first = std::make_shared<TrainingSnapshot>();
    first->generation = ++generation_;
    first->playing = loop_->playing();
    first->sideBySide = sideBySide;
    for (const auto& t : *trainers) first->trainers.push_back(stateOf(*t, 0));
    job_->store(first);
    loop_->post([job = job_.get(), trainers, generation = generation_] {
        job->install(std::move(*trainers), generation);
    });
}

void TrainingRunner::startFrom(const flows::FlowModel<float>& model, flows::TrainerConfig config) {
    config.flow = model.config();
    config.initialParams = std::make_shared<const flows::FlowParams<float>>(model.params());
    start(config, false);
}

void saveTrainedFlow(const std::string& path, const TrainerState& state) {
    if (!state.model || !state.config) throw std::runtime_error("no trained model to save yet");
    double seconds = 0;
    for (const flows::TrainRecord& r : state.history) seconds += r.seconds;
    flows::saveFlow(path, *state.model,
                    flows::trainingRecord(*state.config, state.iteration, state.stopped, state.history,
                                          state.evaluations, state.events, seconds));
}

void TrainingRunner::play() {
    loop_->play();
}
void TrainingRunner::pause() {
    loop_->pause();
}
void TrainingRunner::stepOnce() {
    loop_->stepOnce();
}

void TrainingRunner::reset() {
    loop_->post([job = job_.get()] { job->reset(); });
}

void TrainingRunner::evaluateNow() {
    loop_->post([job = job_.get()] { job->evaluate(); });
}

std::shared_ptr<const TrainingSnapshot> TrainingRunner::snapshot() const {
    return job_->snapshot();
}

} // namespace flowscope
