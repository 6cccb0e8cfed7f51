// FlowRunner: commands reach the worker's trainers, snapshots mirror them, reset and start behave.
#include "engine/flows/Sampling.h"
#include "engine/runner/FlowRunner.h"

#include "../TinyFlow.h"
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <stdexcept>
#include <thread>

using namespace flowscope;
using namespace std::chrono_literals;

namespace {

// Tiny enough that a step takes well under a millisecond.
flows::TrainerConfig tinyConfig(bool rwpo = false) {
    return test::tinyFlowConfig("8gaussians", rwpo, 3);
}

using test::smallPictures;
using test::waitForSnapshot;

// Waits until every trainer reached `iteration` and carries a picture of it (a paused runner makes one
// after every step).
bool waitForIteration(const FlowRunner& runner, long iteration) {
    return waitForSnapshot(runner, [iteration](const FlowSnapshot& s) {
        for (const FlowTrainerState& t : s.trainers)
            if (t.iteration != iteration || !t.picture || t.picture->iteration != iteration) return false;
        return !s.trainers.empty();
    });
}

TEST(FlowRunner, NoSnapshotBeforeStartThenTheInitialStateAtOnce) {
    FlowRunner runner(smallPictures());
    EXPECT_EQ(runner.snapshot(), nullptr);
    runner.play(); // nothing to train: still nothing to show
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(runner.snapshot(), nullptr);
    runner.pause();

    runner.start(tinyConfig());
    const auto s = runner.snapshot();
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->generation, 1u);
    EXPECT_FALSE(s->comparison);
    ASSERT_EQ(s->trainers.size(), 1u);
    EXPECT_EQ(s->trainers[0].iteration, 0);
    EXPECT_TRUE(s->trainers[0].history.empty());
    EXPECT_EQ(s->trainers[0].label, "without RWPO");
}

TEST(FlowRunner, StepOnceGivesExactlyOneRecordEach) {
    FlowRunner runner(smallPictures());
    runner.start(tinyConfig());
    for (int i = 0; i < 5; ++i) runner.stepOnce();
    ASSERT_TRUE(waitForIteration(runner, 5));
    std::this_thread::sleep_for(50ms); // no extra step comes later
    const auto s = runner.snapshot();
    EXPECT_FALSE(runner.playing());
    EXPECT_FALSE(s->playing);
    ASSERT_EQ(s->trainers[0].iteration, 5);
    ASSERT_EQ(s->trainers[0].history.size(), 5u);
    for (std::size_t k = 0; k < 5; ++k) EXPECT_EQ(s->trainers[0].history[k].iteration, long(k) + 1);
}

TEST(FlowRunner, SnapshotCurvesEqualThoseOfATrainerRunDirectly) {
    FlowRunner runner(smallPictures());
    runner.start(tinyConfig());
    for (int i = 0; i < 4; ++i) runner.stepOnce();
    ASSERT_TRUE(waitForIteration(runner, 4));

    flows::FlowTrainer direct(tinyConfig());
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(direct.step());
    const auto& shown = runner.snapshot()->trainers[0].history;
    ASSERT_EQ(shown.size(), direct.history().size());
    for (std::size_t k = 0; k < shown.size(); ++k) {
        EXPECT_EQ(shown[k].terms.loss, direct.history()[k].terms.loss) << "iteration " << k + 1;
        EXPECT_EQ(shown[k].terms.nll, direct.history()[k].terms.nll);
        EXPECT_EQ(shown[k].terms.transport, direct.history()[k].terms.transport);
        EXPECT_EQ(shown[k].terms.hjb, direct.history()[k].terms.hjb);
        EXPECT_EQ(shown[k].lambda, direct.history()[k].lambda);
        EXPECT_EQ(shown[k].beta, direct.history()[k].beta);
    }
    EXPECT_EQ(runner.snapshot()->trainers[0].learningRate, direct.learningRate());
}

TEST(FlowRunner, ResetRestoresIterationZeroAndTheInitialLossBitForBit) {
    FlowRunner runner(smallPictures());
    runner.start(tinyConfig());
    for (int i = 0; i < 6; ++i) runner.stepOnce();
    ASSERT_TRUE(waitForIteration(runner, 6));
    const auto before = runner.snapshot();

    runner.reset();
    ASSERT_TRUE(waitForIteration(runner, 0));
    EXPECT_TRUE(runner.snapshot()->trainers[0].history.empty());
    EXPECT_NE(runner.snapshot()->trainers[0].picture->samples, before->trainers[0].picture->samples);
    runner.stepOnce();
    ASSERT_TRUE(waitForIteration(runner, 1));
    ASSERT_EQ(runner.snapshot()->trainers[0].history.size(), 1u);
    EXPECT_EQ(runner.snapshot()->trainers[0].history[0].terms.loss,
              before->trainers[0].history[0].terms.loss);

    // The same six steps again: the same curves and the same picture, bit for bit.
    for (int i = 0; i < 5; ++i) runner.stepOnce();
    ASSERT_TRUE(waitForIteration(runner, 6));
    const auto after = runner.snapshot();
    for (std::size_t k = 0; k < 6; ++k)
        EXPECT_EQ(after->trainers[0].history[k].terms.loss, before->trainers[0].history[k].terms.loss);
    EXPECT_EQ(after->trainers[0].picture->samples, before->trainers[0].picture->samples);
    EXPECT_EQ(after->generation, before->generation);
}

TEST(FlowRunner, BadConfigThrowsAtStartNamingTheFieldAndKeepsTheRun) {
    FlowRunner runner(smallPictures());
    runner.start(tinyConfig());
    runner.stepOnce();
    ASSERT_TRUE(waitForIteration(runner, 1));

    flows::TrainerConfig bad = tinyConfig();
    bad.batch = 1;
    try {
        runner.start(bad);
        FAIL() << "a batch of 1 was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("batch"), std::string::npos) << e.what();
    }
    const auto s = runner.snapshot();
    EXPECT_EQ(s->generation, 1u);
    EXPECT_EQ(s->trainers[0].iteration, 1);
    EXPECT_EQ(s->trainers[0].history.size(), 1u);
}

TEST(FlowRunner, PictureHasSamplesTrajectoriesDataAndADensity) {
    const FlowRunOptions o = smallPictures();
    FlowRunner runner(o);
    runner.start(tinyConfig());
    runner.stepOnce();
    ASSERT_TRUE(waitForIteration(runner, 1));
    const FlowPicture& p = *runner.snapshot()->trainers[0].picture;
    EXPECT_EQ(p.samples.rows(), o.samples);
    EXPECT_EQ(p.samples.cols(), 2);
    EXPECT_TRUE(p.samples.allFinite());
    EXPECT_EQ(p.data.rows(), o.samples);
    EXPECT_EQ(p.data.cols(), 2);
    ASSERT_EQ(p.trajectories.size(), 3u); // M + 1 for M = 2 layers
    for (const Mat& layer : p.trajectories) EXPECT_EQ(layer.rows(), o.trajectorySamples);
    // The last layer of the trajectory is the generated sample.
    EXPECT_EQ(p.trajectories.back(), p.samples.topRows(o.trajectorySamples));
    EXPECT_FALSE(p.densityFromSamples);
    ASSERT_EQ(p.gridSize(), o.gridSize);
    EXPECT_TRUE(p.density.allFinite());
    EXPECT_GE(p.density.minCoeff(), 0.0);
    // The model's density exp(log ρ) by (24) at the cell centres, as the trainer itself gives it.
    flows::FlowTrainer direct(tinyConfig());
    ASSERT_TRUE(direct.step());
    const int n = p.gridSize();
    for (int j = 0; j < n; j += 5)
        for (int i = 0; i < n; i += 3) {
            flows::FlowTrainer::Matrix x(2, 1);
            x << float(p.cellCenter(i)), float(p.cellCenter(j));
            Eigen::Matrix<float, 1, Eigen::Dynamic> logDensity;
            direct.model().encode(x, &logDensity);
            EXPECT_NEAR(p.density(i, j), std::exp(double(logDensity(0))), 1e-5 * p.density(i, j))
                << "cell " << i << ", " << j;
        }
    EXPECT_GT(p.density.maxCoeff(), 0.0);
}

TEST(FlowRunner, RwpoPictureIsTheDensityBesideTheModelsReference) {
    // The trainer gives an RWPO model reference draws of its data, so the picture shows the model density
    // point by point (each grid point beside every draw's keys, the densities averaged), as for the plain
    // flow: exp(log ρ) of the snapshot's own model at the grid's centres.
    const FlowRunOptions o = smallPictures();
    FlowRunner runner(o);
    runner.start(tinyConfig(true));
    runner.stepOnce();
    ASSERT_TRUE(waitForIteration(runner, 1));
    const FlowTrainerState& t = runner.snapshot()->trainers[0];
    const FlowPicture& p = *t.picture;
    EXPECT_FALSE(p.densityFromSamples);
    ASSERT_EQ(p.gridSize(), o.gridSize);
    ASSERT_EQ(t.model->referenceDraws(), 8);
    ASSERT_EQ(t.model->reference().cols(), 8 * tinyConfig(true).batch);
    flows::FlowModel<float>::Matrix grid(2, p.gridSize() * p.gridSize());
    for (int j = 0; j < p.gridSize(); ++j)
        for (int i = 0; i < p.gridSize(); ++i)
            grid.col(i + p.gridSize() * j) << float(p.cellCenter(i)), float(p.cellCenter(j));
    // The keys are the reference draws pushed backward once, in double (the samples' own), then rounded.
    Eigen::Matrix<float, 1, Eigen::Dynamic> logDensity;
    t.model->encode(grid, &logDensity, nullptr, flows::inFloat(flows::inDouble(*t.model).frozenKeys()));
    for (int j = 0; j < p.gridSize(); ++j)
        for (int i = 0; i < p.gridSize(); ++i)
            ASSERT_EQ(p.density(i, j), std::exp(double(logDensity(i + p.gridSize() * j)))) << i << ", " << j;
    // Beside the keys pushed backward in float32 instead: the same density to float32's rounding.
    t.model->encode(grid, &logDensity);
    for (int j = 0; j < p.gridSize(); ++j)
        for (int i = 0; i < p.gridSize(); ++i)
            EXPECT_NEAR(p.density(i, j), std::exp(double(logDensity(i + p.gridSize() * j))),
                        1e-4 * p.density(i, j))
                << i << ", " << j;
}

// A draft is the full picture's first kDraftSamples samples (the same base draws, each sample on its own
// without the RWPO layer) on a coarser grid of the same model density.
TEST(FlowRunner, ADraftIsTheFullPicturesFirstSamplesOnACoarserGrid) {
    FlowRunOptions o; // the app's: 1000 samples on a 64² grid
    o.evaluateEvery = 0;
    flows::FlowTrainer t(tinyConfig());
    ASSERT_TRUE(t.step());
    const FlowPictureMaker maker(o, 2);
    ASSERT_TRUE(maker.hasDrafts());
    const Mat data = maker.data(t);
    const auto full = maker.make(t.iteration(), t.evaluatedModel(), data, false);
    const auto draft = maker.make(t.iteration(), t.evaluatedModel(), data, true);
    EXPECT_FALSE(full->draft);
    EXPECT_TRUE(draft->draft);
    const int k = FlowPictureMaker::kDraftSamples;
    ASSERT_EQ(full->samples.rows(), o.samples);
    ASSERT_EQ(draft->samples.rows(), k);
    // Both solve the same inverse by fixed points that stop on the batch's largest residual
    // (kSamplerTolerance per sub-step): the same samples to that tolerance, amplified by the sub-steps.
    const double agree = 50 * flows::kSamplerTolerance;
    EXPECT_LE((draft->samples - full->samples.topRows(k)).cwiseAbs().maxCoeff(), agree);
    EXPECT_EQ(draft->data, full->data);
    ASSERT_EQ(full->gridSize(), o.gridSize);
    ASSERT_EQ(draft->gridSize(), FlowPictureMaker::kDraftGrid);
    // Both grids integrate the same density: their masses on [-4, 4]² agree to the midpoint rule's error.
    auto mass = [](const FlowPicture& p) {
        const double cell = 2.0 * p.gridExtent / p.gridSize();
        return p.density.sum() * cell * cell;
    };
    EXPECT_NEAR(mass(*draft), mass(*full), 2e-2 * mass(*full));
    // Pictures small enough have no drafts.
    EXPECT_FALSE(FlowPictureMaker(smallPictures(), 2).hasDrafts());
}

// With the RWPO layer and R reference draws, a draft inverts the first draw's map for every sample: its
// sample j is the full picture's wherever the full picture uses that draw too (j ≡ 0 mod R), and its density
// is the first draw's component of the mixture.
TEST(FlowRunner, AnRwpoDraftIsTheFirstReferenceDrawsComponent) {
    FlowRunOptions o;
    o.samples = 300;
    o.evaluateEvery = 0;
    flows::FlowTrainer t(tinyConfig(true));
    ASSERT_TRUE(t.step());
    const flows::FlowModel<float>& model = t.evaluatedModel();
    const int draws = model.referenceDraws();
    ASSERT_GT(draws, 1);
    const FlowPictureMaker maker(o, 2);
    const Mat data = maker.data(t);
    const auto full = maker.make(t.iteration(), model, data, false);
    const auto draft = maker.make(t.iteration(), model, data, true);
    ASSERT_EQ(draft->samples.rows(), FlowPictureMaker::kDraftSamples);
    ASSERT_TRUE(draft->samples.allFinite());
    for (int j = 0; j < FlowPictureMaker::kDraftSamples; j += draws)
        EXPECT_LE((draft->samples.row(j) - full->samples.row(j)).cwiseAbs().maxCoeff(),
                  50 * flows::kSamplerTolerance) // the same inverse, to the sampler's tolerance (as above)
            << "sample " << j;
    // The density at a cell centre: the first draw's, exp(log ρ_0).
    const flows::FlowModel<float>::Matrix keys = model.referenceDraw(0);
    for (int i : {3, draft->gridSize() / 2, draft->gridSize() - 5}) {
        flows::FlowModel<float>::Matrix x(2, 1);
        x << float(draft->cellCenter(i)), float(draft->cellCenter(i + 1));
        Eigen::Matrix<float, 1, Eigen::Dynamic> logDensity;
        model.encode(x, &logDensity, nullptr, &keys);
        EXPECT_NEAR(draft->density(i, i + 1), std::exp(double(logDensity(0))),
                    1e-5 * draft->density(i, i + 1));
    }
}

TEST(FlowRunner, SideBySideTrainsWithAndWithoutRwpoInLockstep) {
    FlowRunner runner(smallPictures());
    runner.start(tinyConfig(false), true);
    for (int i = 0; i < 3; ++i) runner.stepOnce();
    ASSERT_TRUE(waitForIteration(runner, 3));
    const auto s = runner.snapshot();
    EXPECT_TRUE(s->comparison);
    ASSERT_EQ(s->trainers.size(), 2u);
    EXPECT_TRUE(s->trainers[0].rwpo);
    EXPECT_EQ(s->trainers[0].label, "with RWPO");
    EXPECT_FALSE(s->trainers[1].rwpo);
    EXPECT_EQ(s->trainers[1].history.size(), 3u);
    EXPECT_EQ(s->trainers[0].history.size(), 3u);
    // Same data, different models.
    EXPECT_EQ(s->trainers[0].picture->data, s->trainers[1].picture->data);
    EXPECT_NE(s->trainers[0].history[0].terms.loss, s->trainers[1].history[0].terms.loss);

    flows::FlowTrainer plain(tinyConfig(false));
    ASSERT_TRUE(plain.step());
    EXPECT_EQ(s->trainers[1].history[0].terms.loss, plain.history()[0].terms.loss);
}

TEST(FlowRunner, PlayAdvancesUntilPausedAndEvaluatesOnDemand) {
    FlowRunner runner(smallPictures());
    runner.start(tinyConfig());
    runner.play();
    ASSERT_TRUE(waitForSnapshot(runner, [](const FlowSnapshot& s) { return s.iteration() >= 10; }));
    runner.pause();
    ASSERT_TRUE(waitForSnapshot(runner, [](const FlowSnapshot& s) { return !s.playing; }));
    const long stoppedAt = runner.snapshot()->iteration();
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(runner.snapshot()->iteration(), stoppedAt);
    EXPECT_EQ(runner.snapshot()->trainers[0].history.size(), std::size_t(stoppedAt));
    EXPECT_TRUE(runner.snapshot()->trainers[0].evaluations.empty()); // evaluateEvery = 0

    runner.evaluateNow();
    ASSERT_TRUE(
        waitForSnapshot(runner, [](const FlowSnapshot& s) { return s.trainers[0].evaluations.size() == 1; }));
    const flows::Evaluation& e = runner.snapshot()->trainers[0].evaluations[0];
    EXPECT_EQ(e.iteration, stoppedAt);
    EXPECT_TRUE(std::isfinite(e.nll));
    EXPECT_TRUE(std::isfinite(e.mmd2));
}

TEST(FlowRunner, EvaluatesEveryKIterations) {
    FlowRunOptions o = smallPictures();
    o.evaluateEvery = 3;
    FlowRunner runner(o);
    runner.start(tinyConfig());
    for (int i = 0; i < 7; ++i) runner.stepOnce();
    ASSERT_TRUE(waitForIteration(runner, 7));
    const auto& evaluations = runner.snapshot()->trainers[0].evaluations;
    ASSERT_EQ(evaluations.size(), 2u);
    EXPECT_EQ(evaluations[0].iteration, 3);
    EXPECT_EQ(evaluations[1].iteration, 6);
}

TEST(FlowRunner, StartReplacesTheRunAndKeepsThePlayState) {
    FlowRunner runner(smallPictures());
    runner.start(tinyConfig());
    for (int i = 0; i < 3; ++i) runner.stepOnce();
    ASSERT_TRUE(waitForIteration(runner, 3));
    flows::TrainerConfig other = tinyConfig();
    other.dataset = "moons";
    runner.start(other);
    EXPECT_EQ(runner.snapshot()->generation, 2u);
    EXPECT_EQ(runner.snapshot()->iteration(), 0);
    runner.stepOnce();
    ASSERT_TRUE(waitForIteration(runner, 1));
    EXPECT_EQ(runner.snapshot()->generation, 2u);
    EXPECT_FALSE(runner.playing());
}

} // namespace
