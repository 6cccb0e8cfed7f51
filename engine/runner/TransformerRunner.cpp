#include "engine/runner/TransformerRunner.h"

#include "engine/ottransformer/TransformerIo.h"
#include "engine/runner/LatestSnapshot.h"
#include "engine/runner/TrainerSteps.h"

#include <Eigen/Eigenvalues>

#include <chrono>
#include <cstdio>

namespace flowscope {

namespace {

using Clock = std::chrono::steady_clock;

std::string labelFor(double lambda) {
    char text[64];
    std::snprintf(text, sizeof text, "λ_OT = %g", lambda);
    return text;
}

TransformerTrainerState stateOf(const ot::OtTrainer& t, std::size_t maxEvents) {
    TransformerTrainerState s;
    s.lambdaOt = t.config().model.lambdaOt;
    s.label = labelFor(s.lambdaOt);
    fillTrainerState(s, t, maxEvents);
    s.model = std::make_shared<const ot::TransformerModel>(t.evaluatedModel());
    s.config = std::make_shared<const ot::OtTrainerConfig>(t.config());
    return s;
}

} // namespace

std::vector<Mat> projectedStates(const std::vector<ot::Matrix>& states, int set, int setSize) {
    std::vector<Mat> out;
    if (states.empty()) return out;
    const Eigen::Index d = states.front().rows();
    Eigen::MatrixXd axes = Eigen::MatrixXd::Identity(d, std::min<Eigen::Index>(2, d));
    Eigen::VectorXd centre = Eigen::VectorXd::Zero(d);
    if (d > 2) {
        Eigen::MatrixXd all(d, Eigen::Index(states.size()) * setSize);
        for (std::size_t m = 0; m < states.size(); ++m)
            all.middleCols(Eigen::Index(m) * setSize, setSize) =
                states[m].middleCols(Eigen::Index(set) * setSize, setSize);
        centre = all.rowwise().mean();
        const Eigen::MatrixXd c = all.colwise() - centre;
        Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(c * c.transpose());
        axes.col(0) = eig.eigenvectors().col(d - 1);
        axes.col(1) = eig.eigenvectors().col(d - 2);
    }
    for (const ot::Matrix& X : states) {
        const Eigen::MatrixXd block = X.middleCols(Eigen::Index(set) * setSize, setSize);
        Mat p = Mat::Zero(setSize, 2);
        p.leftCols(axes.cols()) = (axes.transpose() * (block.colwise() - centre)).transpose();
        out.push_back(std::move(p));
    }
    return out;
}

class TransformerRunner::Job : public Steppable {
  public:
    explicit Job(const TransformerRunOptions& options) : options_(options) {}

    void install(std::vector<std::unique_ptr<ot::OtTrainer>> trainers, bool comparison,
                 std::uint64_t generation) {
        generation_ = generation;
        comparison_ = comparison;
        trainers_ = std::move(trainers);
        pictures_.assign(trainers_.size(), nullptr);
        failure_.clear();
        if (!trainers_.empty()) {
            // One fixed input set shown for the whole run.
            flows::Rng rng(options_.pictureSeed);
            const ot::OtTrainerConfig& c = trainers_.front()->config();
            shown_ = c.task == ot::Task::A ? ot::sampleTaskA(1, rng) : ot::sampleTaskB(1, rng);
        }
    }

    void reset() {
        try {
            for (std::size_t i = 0; i < trainers_.size(); ++i) {
                trainers_[i] = std::make_unique<ot::OtTrainer>(trainers_[i]->config());
                pictures_[i].reset();
            }
            failure_.clear();
        } catch (const std::exception& e) {
            failure_ = e.what();
        }
    }

    void evaluate() {
        try {
            for (auto& t : trainers_) t->evaluate();
        } catch (const std::exception& e) {
            failure_ = e.what();
        }
    }

    bool advance() override {
        if (trainers_.empty() || !failure_.empty()) return false;
        bool more = false;
        try {
            for (auto& t : trainers_) more = stepTrainer(*t, options_.evaluateEvery) || more;
        } catch (const std::exception& e) {
            failure_ = e.what();
            return false;
        }
        return more;
    }

    void publish(double stepsPerSecond, bool playing) override {
        if (generation_ == 0) return;
        refreshPictures(playing);
        auto s = std::make_shared<TransformerSnapshot>();
        s->generation = generation_;
        s->playing = playing;
        s->comparison = comparison_;
        s->iterationsPerSecond = stepsPerSecond;
        if (!trainers_.empty()) {
            s->task = trainers_.front()->config().task;
            s->threshold = trainers_.front()->evaluatedModel().stabilityThreshold(shown_.setSize);
        }
        for (std::size_t i = 0; i < trainers_.size(); ++i) {
            s->trainers.push_back(stateOf(*trainers_[i], options_.maxEvents));
            s->trainers.back().picture = pictures_[i];
        }
        s->error = failure_;
        for (const auto& t : trainers_)
            if (s->error.empty() && t->stopped() && !t->events().empty())
                s->error = labelFor(t->config().model.lambdaOt) + ": " + t->events().back().message;
        latest_.store(std::move(s));
    }

    void store(std::shared_ptr<const TransformerSnapshot> s) { latest_.store(std::move(s)); }
    std::shared_ptr<const TransformerSnapshot> snapshot() const { return latest_.get(); }

  private:
    void refreshPictures(bool playing) {
        const auto now = Clock::now();
        const bool timeForOne =
            !playing || std::chrono::duration<double>(now - lastPicture_).count() >= options_.pictureSeconds;
        bool made = false;
        for (std::size_t i = 0; i < trainers_.size(); ++i) {
            const ot::OtTrainer& t = *trainers_[i];
            const bool stale = !pictures_[i] || pictures_[i]->iteration != t.iteration();
            if (!stale || (pictures_[i] && !timeForOne)) continue;
            try {
                pictures_[i] = makePicture(t);
                made = true;
            } catch (const std::exception& e) {
                failure_ = e.what();
            }
        }
        if (made) lastPicture_ = now;
    }

    std::shared_ptr<const TransformerPicture> makePicture(const ot::OtTrainer& t) const {
        auto p = std::make_shared<TransformerPicture>();
        p->iteration = t.iteration();
        std::vector<ot::Matrix> states;
        t.evaluatedModel().output(shown_.tokens, shown_.setSize, &states);
        // A padded task A model keeps the tokens in its first coordinates (the rest is working space, not
        // drawn): the picture shows them as they are, beside the closed form in the same plane.
        const ot::TransformerConfig& c = t.config().model;
        if (c.padEmbed && c.head == ot::Head::Mean)
            for (ot::Matrix& x : states) x = x.topRows(c.inputDim).eval();
        p->states = projectedStates(states, 0, shown_.setSize);
        if (t.config().task == ot::Task::A) {
            const double lambda = t.evaluatedModel().paperLambda(shown_.setSize);
            if (lambda > 0)
                p->closedForm =
                    ot::taskAClosedFormState(shown_, lambda, t.config().model.horizon).transpose();
        } else {
            p->label = shown_.labels.front();
        }
        return p;
    }

    const TransformerRunOptions options_;
    std::vector<std::unique_ptr<ot::OtTrainer>> trainers_;
    std::vector<std::shared_ptr<const TransformerPicture>> pictures_;
    ot::Batch shown_;
    bool comparison_ = false;
    std::uint64_t generation_ = 0;
    std::string failure_;
    Clock::time_point lastPicture_{};
    LatestSnapshot<TransformerSnapshot> latest_;
};

TransformerRunner::TransformerRunner(TransformerRunOptions options)
    : job_(std::make_unique<Job>(options)), loop_(std::make_unique<WorkerLoop>(*job_)) {
    loop_->setMaxStepsPerSecond(0.0);
}

TransformerRunner::~TransformerRunner() {
    loop_.reset();
}

void TransformerRunner::start(const ot::OtTrainerConfig& config, bool comparison) {
    auto trainers = std::make_shared<std::vector<std::unique_ptr<ot::OtTrainer>>>();
    trainers->push_back(std::make_unique<ot::OtTrainer>(config));
    if (comparison) {
        ot::OtTrainerConfig zero = config;
        zero.model.lambdaOt = 0.0;
        trainers->push_back(std::make_unique<ot::OtTrainer>(zero));
    }
    auto first = std::make_shared<TransformerSnapshot>();
    first->generation = ++generation_;
    first->playing = loop_->playing();
    first->comparison = comparison;
    first->task = config.task;
    for (const auto& t : *trainers) first->trainers.push_back(stateOf(*t, 0));
    job_->store(first);
    loop_->post([job = job_.get(), trainers, comparison, generation = generation_] {
        job->install(std::move(*trainers), comparison, generation);
    });
}

void TransformerRunner::startFrom(const ot::TransformerModel& model, ot::OtTrainerConfig config) {
    config.model = model.config();
    config.initialParams = std::make_shared<const ot::TransformerParams>(model.params());
    start(config, false);
}

void saveTrainedTransformer(const std::string& path, const TransformerTrainerState& state) {
    if (!state.model || !state.config) throw std::runtime_error("no trained model to save yet");
    double seconds = 0;
    for (const ot::OtRecord& r : state.history) seconds += r.seconds;
    ot::saveTransformer(path, *state.model,
                        ot::trainingRecord(*state.config, state.iteration, state.stopped, state.history,
                                           state.evaluations, state.events, seconds));
}

void TransformerRunner::play() {
    loop_->play();
}
void TransformerRunner::pause() {
    loop_->pause();
}
void TransformerRunner::stepOnce() {
    loop_->stepOnce();
}
bool TransformerRunner::playing() const {
    return loop_->playing();
}
void TransformerRunner::reset() {
    loop_->post([job = job_.get()] { job->reset(); });
}
void TransformerRunner::evaluateNow() {
    loop_->post([job = job_.get()] { job->evaluate(); });
}
std::shared_ptr<const TransformerSnapshot> TransformerRunner::snapshot() const {
    return job_->snapshot();
}

} // namespace flowscope
