// TrainerRun, the live-training mechanism every trainer kind shares, on a toy trainer whose every step is
// known in advance: commands reach the worker in order, snapshots mirror the trainers exactly, a failing
// step becomes the run's error and stops it, comparison names the trainer that stopped, reset starts afresh.
#include "engine/runner/TrainerRun.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

using namespace flowscope;

namespace {

struct ToyConfig {
    std::string name = "toy";
    double rate = 0.5;
    long stopAt = -1;  // the trainer stops itself (with an event) at this iteration; -1: never
    long throwAt = -1; // step() throws when it would reach this iteration; -1: never
};

struct ToyEvent {
    std::string message;
};

// x_{k+1} = (1 - rate) x_k from x_0 = 1: the snapshot's history is checkable term by term.
class ToyTrainer {
  public:
    explicit ToyTrainer(const ToyConfig& c) : config_(c) {
        if (c.rate <= 0 || c.rate >= 1) throw std::invalid_argument("rate: must be in (0, 1)");
    }
    bool step() {
        if (iteration_ + 1 == config_.throwAt) throw std::runtime_error("the toy step failed");
        x_ *= 1.0 - config_.rate;
        history_.push_back(x_);
        ++iteration_;
        if (iteration_ == config_.stopAt) events_.push_back({"stopped at " + std::to_string(iteration_)});
        return !stopped();
    }
    void evaluate() { evaluations_.push_back(x_); }
    bool stopped() const { return config_.stopAt >= 0 && iteration_ >= config_.stopAt; }
    long iteration() const { return iteration_; }
    double learningRate() const { return config_.rate; }
    const std::vector<double>& history() const { return history_; }
    const std::vector<double>& evaluations() const { return evaluations_; }
    const std::vector<ToyEvent>& events() const { return events_; }
    const ToyConfig& config() const { return config_; }

  private:
    ToyConfig config_;
    double x_ = 1.0;
    long iteration_ = 0;
    std::vector<double> history_, evaluations_;
    std::vector<ToyEvent> events_;
};

struct ToyPicture {
    long iteration = 0;
    double x = 0;
    bool draft = false;
};

// A gate the toy pictures wait at while it is shut: a picture that takes as long as the test wants.
struct PictureGate {
    std::mutex mutex;
    std::condition_variable opened;
    bool open = true;
    int drawn = 0, drafts = 0; // pictures drawn so far, and drafts among them

    void shut() {
        std::lock_guard lock(mutex);
        open = false;
    }
    void release() {
        {
            std::lock_guard lock(mutex);
            open = true;
        }
        opened.notify_all();
    }
    void pass(bool draft) {
        std::unique_lock lock(mutex);
        opened.wait(lock, [this] { return open; });
        ++drawn;
        drafts += draft;
    }
};

struct ToyState {
    std::string label;
    long iteration = 0;
    double learningRate = 0;
    std::vector<double> history, evaluations;
    std::vector<ToyEvent> events;
    bool stopped = false;
    std::shared_ptr<const ToyPicture> picture;
};

struct ToySnapshot : TrainerRunSnapshot<ToyState> {
    int described = 0; // describe() ran on this snapshot
};

struct ToyKind {
    using Trainer = ToyTrainer;
    using Config = ToyConfig;
    using Model = double; // a "trained model" is the starting rate
    using State = ToyState;
    using Picture = ToyPicture;
    struct Options {
        double pictureSeconds = 0.0;
        int evaluateEvery = 0;
        std::size_t maxEvents = 2;
        std::shared_ptr<PictureGate> gate = std::make_shared<PictureGate>();
        bool drafts = false; // the pictures have drafts
    };
    using Snapshot = ToySnapshot;

    static std::vector<Config> configs(const Config& c, bool comparison) {
        if (!comparison) return {c};
        Config baseline = c;
        baseline.name = "baseline";
        baseline.rate = c.rate / 2;
        baseline.stopAt = -1;
        baseline.throwAt = -1;
        return {c, baseline};
    }
    static std::string label(const Config& c) { return c.name; }
    static State state(const Trainer& t, std::size_t maxEvents, std::shared_ptr<const Config>) {
        State s;
        s.label = label(t.config());
        fillTrainerState(s, t, maxEvents);
        return s;
    }
    static Config fromModel(const Model& rate, Config c) {
        c.rate = rate;
        return c;
    }
    class Pictures {
      public:
        Pictures(const Options& o, const Trainer&) : gate_(o.gate), drafts_(o.drafts) {}
        PictureTask<Picture> capture(const Trainer& t) const {
            const Picture p{t.iteration(), t.history().empty() ? 1.0 : t.history().back()};
            return [gate = gate_, p](bool draft) {
                gate->pass(draft);
                auto made = std::make_shared<Picture>(p);
                made->draft = draft;
                return made;
            };
        }
        bool hasDrafts() const { return drafts_; }
        void describe(Snapshot& s, const Trainer&) const { s.described = 1; }

      private:
        std::shared_ptr<PictureGate> gate_;
        bool drafts_;
    };
};

using ToyRun = TrainerRun<ToyKind>;

// Waits until every trainer reached `iteration` and shows its full picture of it.
bool waitForIteration(const ToyRun& run, long iteration) {
    return test::waitForSnapshot(run, [iteration](const ToySnapshot& s) {
        for (const ToyState& t : s.trainers)
            if (t.iteration != iteration || !t.picture || t.picture->iteration != iteration ||
                t.picture->draft)
                return false;
        return !s.trainers.empty();
    });
}

TEST(TrainerRun, SnapshotsMirrorTheTrainersStepByStep) {
    ToyRun run;
    EXPECT_FALSE(run.started());
    EXPECT_EQ(run.snapshot(), nullptr);
    run.start(ToyConfig{}, false);
    ASSERT_TRUE(run.started());
    const auto first = run.snapshot(); // shown at once, before the worker installed the run
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(first->iteration(), 0);
    EXPECT_EQ(first->described, 1);
    for (int k = 0; k < 3; ++k) run.stepOnce();
    ASSERT_TRUE(waitForIteration(run, 3));
    const auto s = run.snapshot();
    ASSERT_EQ(s->trainers.size(), 1u);
    const ToyState& t = s->trainers.front();
    ASSERT_EQ(t.history.size(), 3u);
    for (int k = 0; k < 3; ++k) EXPECT_DOUBLE_EQ(t.history[std::size_t(k)], std::pow(0.5, k + 1));
    EXPECT_DOUBLE_EQ(t.picture->x, 0.125); // a paused run draws the picture of every step
    EXPECT_FALSE(s->comparison);
    EXPECT_TRUE(s->error.empty());
}

TEST(TrainerRun, AFailedStepIsTheRunsErrorAndStopsItUntilReset) {
    ToyRun run;
    ToyConfig c;
    c.throwAt = 2;
    run.start(c, false);
    run.stepOnce();
    run.stepOnce(); // throws
    run.stepOnce(); // refused: the parameters may be half-updated
    ASSERT_TRUE(test::waitForSnapshot(run, [](const ToySnapshot& s) { return !s.error.empty(); }));
    EXPECT_EQ(run.snapshot()->error, "the toy step failed");
    EXPECT_EQ(run.snapshot()->iteration(), 1);
    run.reset(); // afresh: iteration 0, no error
    ASSERT_TRUE(waitForIteration(run, 0));
    EXPECT_TRUE(run.snapshot()->error.empty());
    EXPECT_TRUE(run.snapshot()->trainers.front().history.empty());
}

TEST(TrainerRun, ComparisonNamesTheTrainerThatStopped) {
    ToyRun run;
    ToyConfig c;
    c.name = "configured";
    c.stopAt = 2;
    run.start(c, true);
    for (int k = 0; k < 3; ++k) run.stepOnce(); // the baseline goes on after the configured one stopped
    ASSERT_TRUE(test::waitForSnapshot(
        run, [](const ToySnapshot& s) { return s.trainers.size() == 2 && s.trainers[1].iteration == 3; }));
    const auto s = run.snapshot();
    EXPECT_TRUE(s->comparison);
    EXPECT_EQ(s->trainers[0].iteration, 2);
    EXPECT_TRUE(s->trainers[0].stopped);
    EXPECT_EQ(s->error, "configured: stopped at 2");
    EXPECT_DOUBLE_EQ(s->trainers[1].history.back(), std::pow(0.75, 3)); // the baseline's half rate
}

TEST(TrainerRun, ABadConfigThrowsOnTheCallerAndKeepsTheRun) {
    ToyRun run;
    run.start(ToyConfig{}, false);
    run.stepOnce();
    ASSERT_TRUE(waitForIteration(run, 1));
    ToyConfig bad;
    bad.rate = 2;
    EXPECT_THROW(run.start(bad, false), std::invalid_argument);
    EXPECT_EQ(run.snapshot()->iteration(), 1);
    // startFrom: the model's rate, the config's stopping rule.
    ToyConfig c;
    c.stopAt = 1;
    run.startFrom(0.25, c);
    run.stepOnce();
    ASSERT_TRUE(waitForIteration(run, 1));
    EXPECT_DOUBLE_EQ(run.snapshot()->trainers.front().history.front(), 0.75);
    EXPECT_EQ(run.snapshot()->error, "stopped at 1"); // one trainer: no name before the message
}

TEST(TrainerRun, EvaluateNowAppendsAnEvaluationOfTheCurrentState) {
    ToyRun run;
    run.start(ToyConfig{}, false);
    run.stepOnce();
    ASSERT_TRUE(waitForIteration(run, 1)); // commands run before pending single steps: wait for the step
    run.evaluateNow();
    ASSERT_TRUE(
        test::waitForSnapshot(run, [](const ToySnapshot& s) { return !s.trainers[0].evaluations.empty(); }));
    EXPECT_DOUBLE_EQ(run.snapshot()->trainers[0].evaluations.front(), 0.5); // x_1
}

} // namespace

namespace {

// A picture that takes as long as it likes (the gate is shut) never holds the trainer back: training steps on
// while the first picture waits, and once the gate opens the run shows a picture of its latest iteration.
TEST(TrainerRun, APictureInTheMakingNeverHoldsTheTrainerBack) {
    ToyKind::Options options;
    options.gate->shut();
    ToyRun run(options);
    run.start(ToyConfig{}, false);
    for (int k = 0; k < 5; ++k) run.stepOnce();
    ASSERT_TRUE(test::waitForSnapshot(run, [](const ToySnapshot& s) { return s.iteration() == 5; }));
    EXPECT_EQ(run.snapshot()->trainers[0].picture, nullptr); // the first picture is still at the gate
    options.gate->release();
    ASSERT_TRUE(waitForIteration(run, 5));
    EXPECT_DOUBLE_EQ(run.snapshot()->trainers[0].picture->x, std::pow(0.5, 5));
}

// With drafts, a paused run shows a draft first, then the full picture of the same iteration.
TEST(TrainerRun, ADraftComesFirstThenThePausedRunsFullPicture) {
    ToyKind::Options options;
    options.drafts = true;
    ToyRun run(options);
    run.start(ToyConfig{}, true);
    run.stepOnce();
    ASSERT_TRUE(waitForIteration(run, 1));
    std::lock_guard lock(options.gate->mutex);
    // Two trainers: the first pictures (of iteration 0 or 1) are drafts, the last two full pictures of 1.
    EXPECT_GE(options.gate->drafts, 2);
    EXPECT_GE(options.gate->drawn, options.gate->drafts + 2);
}

// Reset while a picture of the old trainers is being drawn: that picture is dropped, not shown over the
// fresh run's.
TEST(TrainerRun, APictureOfTrainersResetSinceIsDropped) {
    ToyKind::Options options;
    ToyRun run(options);
    run.start(ToyConfig{}, false);
    for (int k = 0; k < 3; ++k) run.stepOnce();
    ASSERT_TRUE(waitForIteration(run, 3));
    options.gate->shut();
    run.stepOnce(); // its picture (iteration 4) waits at the gate
    ASSERT_TRUE(test::waitForSnapshot(run, [](const ToySnapshot& s) { return s.iteration() == 4; }));
    run.reset();
    ASSERT_TRUE(test::waitForSnapshot(run, [](const ToySnapshot& s) { return s.iteration() == 0; }));
    options.gate->release();
    ASSERT_TRUE(waitForIteration(run, 0));
    EXPECT_DOUBLE_EQ(run.snapshot()->trainers[0].picture->x, 1.0);
}

} // namespace
