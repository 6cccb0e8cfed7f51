// TransformerRunner: commands reach the worker's trainers, snapshots mirror them (with pictures of the shown
// set), comparison mode trains λ_OT = 0 beside λ_OT > 0, and the projection of the paths is exact.
#include "engine/runner/TransformerRunner.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

using namespace flowscope;
using namespace std::chrono_literals;

namespace {

bool waitFor(const TransformerRunner& runner, const std::function<bool(const TransformerSnapshot&)>& done) {
    return test::waitForSnapshot(runner, done);
}

ot::OtTrainerConfig taskA(double lambda) {
    ot::OtTrainerConfig c = ot::defaultTrainerConfig(ot::Task::A);
    c.model.lambdaOt = lambda;
    c.model.steps = 4;
    c.evalSets = 20;
    return c;
}

} // namespace

TEST(TransformerRunner, StepsComparisonAndPictures) {
    TransformerRunOptions o;
    o.evaluateEvery = 0;
    TransformerRunner runner(o);
    EXPECT_EQ(runner.snapshot(), nullptr);
    runner.start(taskA(4.0), true);
    auto s = runner.snapshot();
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(s->trainers.size(), 2u);
    EXPECT_EQ(s->trainers[0].lambdaOt, 4.0);
    EXPECT_EQ(s->trainers[1].lambdaOt, 0.0);

    runner.stepOnce();
    runner.stepOnce();
    ASSERT_TRUE(waitFor(runner, [](const TransformerSnapshot& s) {
        for (const auto& t : s.trainers)
            if (t.iteration != 2 || !t.picture || t.picture->iteration != 2) return false;
        return s.trainers.size() == 2;
    }));
    s = runner.snapshot();
    EXPECT_EQ(s->trainers[0].history.size(), 2u);
    EXPECT_NEAR(s->threshold, 1.0, 1e-12); // task A, per-element convention: T L² n d / 2 = 1
    for (const auto& t : s->trainers) {
        ASSERT_EQ(t.picture->states.size(), 5u); // X_0 .. X_4
        EXPECT_EQ(t.picture->states[0].rows(), 6);
    }
    // The closed form only where λ > 0; both runs show the same input set.
    EXPECT_EQ(s->trainers[0].picture->closedForm.rows(), 6);
    EXPECT_EQ(s->trainers[1].picture->closedForm.size(), 0);
    EXPECT_EQ(s->trainers[0].picture->states[0], s->trainers[1].picture->states[0]);

    runner.evaluateNow();
    ASSERT_TRUE(
        waitFor(runner, [](const TransformerSnapshot& s) { return s.trainers[0].evaluations.size() == 1; }));
    runner.reset();
    ASSERT_TRUE(waitFor(runner, [](const TransformerSnapshot& s) { return s.trainers[0].iteration == 0; }));

    // A bad config throws here and leaves the run.
    ot::OtTrainerConfig bad = taskA(1.0);
    bad.model.steps = 0;
    EXPECT_THROW(runner.start(bad), std::invalid_argument);
    EXPECT_EQ(runner.snapshot()->generation, 1u);

    runner.play();
    ASSERT_TRUE(waitFor(runner, [](const TransformerSnapshot& s) { return s.iteration() >= 20; }));
    runner.pause();
}

// A padded task A model ([x; x; 0] in R^6) is drawn in its first two coordinates, the tokens' own plane: its
// X_0 is the input set itself, exactly as the unpadded model's, and the closed form sits in the same plane.
TEST(TransformerRunner, PaddedTaskAModelsAreDrawnInTheTokensPlane) {
    TransformerRunOptions o;
    o.evaluateEvery = 0;
    auto firstPicture = [&](const ot::OtTrainerConfig& c) {
        TransformerRunner runner(o);
        runner.start(c);
        runner.stepOnce();
        EXPECT_TRUE(waitFor(runner, [](const TransformerSnapshot& s) {
            return s.trainers[0].picture && s.trainers[0].picture->iteration == 1;
        }));
        return runner.snapshot()->trainers[0].picture;
    };
    ot::OtTrainerConfig plain = taskA(2.0);
    plain.model.convention = ot::KineticConvention::Paper; // the same λ at every width
    ot::OtTrainerConfig padded = plain;
    padded.model.padEmbed = padded.model.padCopy = padded.model.routingInit = true;
    padded.model.incrementVelocity = true;
    padded.model.width = padded.model.headDim = 6;
    const auto a = firstPicture(plain);
    const auto b = firstPicture(padded);
    ASSERT_EQ(b->states.size(), a->states.size());
    ASSERT_EQ(b->states[0].cols(), 2);
    EXPECT_EQ(b->states[0], a->states[0]);
    EXPECT_EQ(b->closedForm.rows(), 6);
    EXPECT_EQ(b->closedForm, a->closedForm); // the optimum does not depend on the padding
}

TEST(TransformerRunner, ProjectionKeepsTwoDimensionalStatesAndFindsThePlaneOfMotion) {
    // d = 2: the coordinates themselves.
    ot::Matrix X(2, 6);
    X.setRandom();
    std::vector<ot::Matrix> states = {X, X * 2.0};
    auto p = projectedStates(states, 1, 3);
    EXPECT_EQ(p[1], (X.middleCols(3, 3) * 2.0).transpose());
    // d = 4, every point in the plane spanned by e1 and e3: the projection keeps all distances.
    ot::Matrix Y = ot::Matrix::Zero(4, 5);
    Y.row(0) << 0, 1, 2, 3, 4;
    Y.row(2) << 1, -1, 0.5, 2, 0;
    const std::vector<Mat> q = projectedStates({Y, 1.5 * Y}, 0, 5);
    for (int a = 0; a < 5; ++a)
        for (int b = 0; b < 5; ++b)
            EXPECT_NEAR((q[1].row(a) - q[1].row(b)).norm(), (1.5 * (Y.col(a) - Y.col(b))).norm(), 1e-12);
}
