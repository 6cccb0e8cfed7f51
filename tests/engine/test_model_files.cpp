// Trained models in and out of the runners: a run started from a loaded model shows that model (its picture
// is the model's own generate() of the picture's base draws), a model saved from a snapshot loads back with
// the same bits, and the shared sampler (engine/flows/Sampling.h) behaves as its definition says.
#include "engine/flows/FlowIo.h"
#include "engine/flows/ModelFile.h"
#include "engine/flows/Sampling.h"
#include "engine/ottransformer/TransformerIo.h"
#include "engine/runner/FlowRunner.h"
#include "engine/runner/TransformerRunner.h"

#include "../TempDir.h"
#include "../TinyFlow.h"
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <fstream>

using namespace flowscope;

namespace {

using test::smallPictures;

flows::TrainerConfig tinyFlow(bool rwpo, std::uint64_t seed) {
    return test::tinyFlowConfig("moons", rwpo, seed);
}

// A model unlike any seeded initialization: a few training steps from seed 11.
flows::FlowModel<float> trainedFlow(bool rwpo) {
    flows::FlowTrainer t(tinyFlow(rwpo, 11));
    for (int k = 0; k < 5; ++k) t.step();
    return t.model();
}

template <class P> bool sameParams(const P& a, const P& b);

template <> bool sameParams(const flows::FlowParams<float>& a, const flows::FlowParams<float>& b) {
    bool same = a.lambdaRaw == b.lambdaRaw && a.betaRaw == b.betaRaw && a.phi.sameShape(b.phi);
    flows::FlowParams<float> x = a, y = b;
    x.phi.forEach(y.phi, [&](const ad::Matrix<float>& u, const ad::Matrix<float>& v, const std::string&) {
        same = same && u.rows() == v.rows() && u.cols() == v.cols() && u == v;
    });
    return same;
}

template <> bool sameParams(const ot::TransformerParams& a, const ot::TransformerParams& b) {
    if (a.blocks.size() != b.blocks.size()) return false;
    bool same = true;
    ot::TransformerParams x = a, y = b;
    x.forEach(y, [&](const ot::Matrix& u, const ot::Matrix& v, const std::string&) {
        same = same && u.rows() == v.rows() && u.cols() == v.cols() && u == v;
    });
    return same;
}

bool pictureAt(const FlowRunner& runner, long iteration) {
    return test::waitForSnapshot(runner, [iteration](const FlowSnapshot& s) {
        return !s.trainers.empty() && s.trainers[0].iteration == iteration && s.trainers[0].picture &&
               s.trainers[0].picture->iteration == iteration;
    });
}

ot::OtTrainerConfig taskA(std::uint64_t seed) {
    ot::OtTrainerConfig c = ot::defaultTrainerConfig(ot::Task::A);
    c.model.lambdaOt = 1.0;
    c.model.steps = 4;
    c.model.seed = seed;
    c.evalSets = 20;
    return c;
}

} // namespace

TEST(ModelFiles, AFlowRunStartedFromALoadedModelShowsThatModel) {
    test::TempDir dir("models");
    for (bool rwpo : {false, true}) {
        const flows::FlowModel<float> trained = trainedFlow(rwpo);
        const std::string path = dir.file(rwpo ? "rwpo.safetensors" : "plain.safetensors");
        flows::saveFlow(path, trained, nlohmann::json::object());
        const flows::FlowModel<float> loaded = flows::loadFlow(path);
        EXPECT_EQ(trainedModelKind(path), TrainedModelKind::Flow);

        const FlowRunOptions o = smallPictures();
        FlowRunner runner(o);
        runner.startFrom(loaded, tinyFlow(!rwpo, 0)); // the config's architecture and seed give way
        ASSERT_TRUE(pictureAt(runner, 0));
        const auto s = runner.snapshot();
        const FlowTrainerState& state = s->trainers[0];
        EXPECT_EQ(state.rwpo, rwpo);
        ASSERT_TRUE(state.model);
        EXPECT_TRUE(sameParams(state.model->params(), trained.params()));
        // The picture: the samples flowscope-cli sample draws from the base draws z of pictureSeed (one
        // batch, in double), exactly.
        const ad::Matrix<float> Z = flows::baseSamples(2, o.samples, o.pictureSeed);
        EXPECT_EQ(state.picture->samples, flows::toRows(flows::sampleFlow(loaded, Z, o.samples))) << rwpo;
        // ... which a seeded initialization does not give (the test can tell the models apart).
        flows::FlowConfig fresh = loaded.config();
        fresh.seed = 0;
        EXPECT_NE(state.picture->samples, flows::toRows(flows::FlowModel<float>(fresh).generate(Z)));

        // Training goes on from the loaded parameters: one step equals a trainer built on them.
        runner.stepOnce();
        ASSERT_TRUE(pictureAt(runner, 1));
        flows::TrainerConfig c = tinyFlow(!rwpo, 0);
        c.flow = loaded.config();
        c.initialParams = std::make_shared<const flows::FlowParams<float>>(loaded.params());
        flows::FlowTrainer direct(c);
        direct.step();
        EXPECT_TRUE(sameParams(runner.snapshot()->trainers[0].model->params(), direct.model().params()));
        // Reset goes back to the loaded parameters, not to a seeded initialization.
        runner.reset();
        ASSERT_TRUE(pictureAt(runner, 0));
        EXPECT_TRUE(sameParams(runner.snapshot()->trainers[0].model->params(), trained.params()));
    }
}

TEST(ModelFiles, AFlowSavedFromARunnerLoadsBackBitForBit) {
    test::TempDir dir("models");
    FlowRunner runner(smallPictures());
    runner.start(tinyFlow(true, 3));
    for (int k = 0; k < 4; ++k) runner.stepOnce();
    ASSERT_TRUE(pictureAt(runner, 4));
    const auto s = runner.snapshot();
    const std::string path = dir.file("run.safetensors");
    saveTrainedFlow(path, s->trainers[0]);
    const flows::FlowModel<float> loaded = flows::loadFlow(path);
    EXPECT_TRUE(sameParams(loaded.params(), s->trainers[0].model->params()));
    EXPECT_FALSE(sameParams(loaded.params(), flows::FlowModel<float>(loaded.config()).params())); // trained
    std::string why;
    const nlohmann::json record = readModelRecord(path, &why);
    ASSERT_TRUE(record.is_object()) << why;
    EXPECT_EQ(record["training"]["dataset"], "moons");
    EXPECT_EQ(record["training"]["iterations"], 4);
    EXPECT_EQ(record["curve"]["loss"].size(), 4u);
    EXPECT_EQ(record["architecture"]["layers"], 2);
}

TEST(ModelFiles, BadInitialParametersNameTheFieldAndKeepTheRun) {
    FlowRunner runner(smallPictures());
    runner.start(tinyFlow(false, 3));
    flows::TrainerConfig c = tinyFlow(false, 3);
    flows::FlowConfig wider = c.flow;
    wider.width = 9;
    c.initialParams = std::make_shared<const flows::FlowParams<float>>(flows::FlowParams<float>::init(wider));
    try {
        runner.start(c);
        FAIL() << "mismatched parameters were accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("initialParams."), std::string::npos) << e.what();
    }
    EXPECT_EQ(runner.snapshot()->generation, 1u);
}

TEST(ModelFiles, TheSharedSamplerIsBatchedGenerateInDouble) {
    for (bool rwpo : {false, true}) {
        const flows::FlowModel<float> model = trainedFlow(rwpo);
        // baseSamples: Rng(seed).normal() in column-major order.
        const ad::Matrix<float> Z = flows::baseSamples(2, 50, 9);
        flows::Rng rng(9);
        for (Eigen::Index i = 0; i < Z.size(); ++i) ASSERT_EQ(Z(i), float(rng.normal()));
        // Batches are independent: the first batch of 7 is what the first 7 draws give alone, and with the
        // RWPO layer (a batch's samples are one another's keys) a different batching gives other samples.
        const ad::Matrix<float> X = flows::sampleFlow(model, Z, 7);
        EXPECT_EQ(X.leftCols(7), flows::sampleFlow(model, Z.leftCols(7), 7)) << rwpo;
        if (rwpo) {
            EXPECT_NE(X.leftCols(7), flows::sampleFlow(model, Z, 50).leftCols(7));
        }
        // In double on the float32 parameters: one batch is generate() of the double model.
        EXPECT_EQ(flows::sampleFlow(model, Z, 50),
                  flows::inDouble(model).generate(Z.cast<double>()).cast<float>())
            << rwpo;
        EXPECT_EQ(flows::inDouble(model).params().phi.w, model.params().phi.w.cast<double>());
        EXPECT_EQ(flows::inDouble(model).params().betaRaw, model.params().betaRaw.cast<double>());
    }
    // The density grid of a flow without the RWPO layer integrates to 1 (exact drift log-det, d = 2; the
    // change of variables of N(0, I)) on a grid that holds its samples: a fresh one with a gentler potential
    // (the default A^T A spreads the cloud beyond any grid), as in test_flow_model.cpp.
    flows::FlowConfig gentle = tinyFlow(false, 3).flow;
    gentle.layers = 3;
    flows::FlowModel<float> fresh(gentle);
    fresh.params().phi.A *= 0.5f;
    fresh.params().phi.w *= 0.5f;
    const flows::DensityGrid g = flows::densityGrid(fresh, 60, 7.0, 50, 0);
    EXPECT_EQ(g.rho.size(), 3600u);
    EXPECT_NEAR(g.mass, 1.0, 0.01);
    EXPECT_THROW(flows::densityGrid(fresh, 1, 4.0), std::invalid_argument);
}

// Progress of the shared sampler: after every batch, increasing, ending at 1, without changing the samples;
// a false return stops it with SamplingCancelled at that batch. The density grid counts its reference batch
// and its query chunks.
TEST(ModelFiles, SamplingReportsProgressAndStopsWhenAsked) {
    const flows::FlowModel<float> model(tinyFlow(false, 2).flow);
    const auto Z = flows::baseSamples(2, 230, 3);
    std::vector<double> seen;
    const auto X = flows::sampleFlow(model, Z, 50, false, nullptr, nullptr, [&](double f) {
        seen.push_back(f);
        return true;
    });
    EXPECT_EQ(X, flows::sampleFlow(model, Z, 50));
    EXPECT_EQ(seen, (std::vector<double>{50 / 230.0, 100 / 230.0, 150 / 230.0, 200 / 230.0, 1.0}));
    int calls = 0;
    EXPECT_THROW(
        flows::sampleFlow(model, Z, 50, false, nullptr, nullptr, [&](double) { return ++calls < 2; }),
        flows::SamplingCancelled);
    EXPECT_EQ(calls, 2); // stopped at the second batch

    seen.clear();
    const flows::DensityGrid g = flows::densityGrid(model, 70, 4.0, 100, 0, [&](double f) {
        seen.push_back(f);
        return true;
    });
    // The reference batch (100 of 100 + 4900), then two query chunks (4096 and 804 points).
    EXPECT_EQ(seen, (std::vector<double>{100 / 5000.0, 4196 / 5000.0, 1.0}));
    EXPECT_EQ(g.rho, flows::densityGrid(model, 70, 4.0, 100, 0).rho);
    EXPECT_THROW(flows::densityGrid(model, 70, 4.0, 100, 0, [](double f) { return f < 0.5; }),
                 flows::SamplingCancelled);
}

TEST(ModelFiles, ATransformerRunStartedFromALoadedModelShowsItAndSavesBack) {
    test::TempDir dir("models");
    ot::OtTrainer trainer(taskA(4));
    for (int k = 0; k < 3; ++k) trainer.step();
    const std::string path = dir.file("ot.safetensors");
    ot::saveTransformer(path, trainer, 0.0);
    EXPECT_EQ(trainedModelKind(path), TrainedModelKind::Transformer);
    const ot::TransformerModel loaded = ot::loadTransformer(path);

    TransformerRunOptions o;
    o.evaluateEvery = 0;
    TransformerRunner runner(o);
    runner.startFrom(loaded, taskA(0));
    ASSERT_TRUE(test::waitForSnapshot(runner, [](const TransformerSnapshot& s) {
        return !s.trainers.empty() && s.trainers[0].picture && s.trainers[0].picture->iteration == 0;
    }));
    auto s = runner.snapshot();
    ASSERT_TRUE(s->trainers[0].model);
    EXPECT_TRUE(sameParams(s->trainers[0].model->params(), trainer.evaluatedModel().params())); // as saved
    // The picture: the model's own states of the shown set (pictureSeed's first task A set), in R².
    flows::Rng rng(o.pictureSeed);
    const ot::Batch shown = ot::sampleTaskA(1, rng);
    std::vector<ot::Matrix> states;
    loaded.output(shown.tokens, shown.setSize, &states);
    const auto& picture = s->trainers[0].picture->states;
    ASSERT_EQ(picture.size(), states.size());
    for (std::size_t m = 0; m < states.size(); ++m) EXPECT_EQ(picture[m], Mat(states[m].transpose())) << m;

    // A few more steps, saved from the snapshot, load back with the same bits.
    for (int k = 0; k < 2; ++k) runner.stepOnce();
    ASSERT_TRUE(test::waitForSnapshot(runner, [](const TransformerSnapshot& s) {
        return !s.trainers.empty() && s.trainers[0].iteration == 2;
    }));
    s = runner.snapshot();
    const std::string saved = dir.file("again.safetensors");
    saveTrainedTransformer(saved, s->trainers[0]);
    const ot::TransformerModel back = ot::loadTransformer(saved);
    EXPECT_TRUE(sameParams(back.params(), s->trainers[0].model->params()));
    EXPECT_FALSE(sameParams(back.params(), trainer.model().params())); // the two steps changed them
    const nlohmann::json record = readModelRecord(saved);
    EXPECT_EQ(record["training"]["task"], "A");
    EXPECT_EQ(record["training"]["iterations"], 2);
}

TEST(ModelFiles, MalformedFilesNameTheFile) {
    test::TempDir dir("models");
    const std::string path = dir.file("short.safetensors");
    flows::saveFlow(path, trainedFlow(false), nlohmann::json::object());
    std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
    try {
        trainedModelKind(path);
        FAIL() << "a truncated file was accepted";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
    std::ofstream(dir.file("bad.json")) << "{ not json";
    std::string why;
    EXPECT_TRUE(readModelRecord(dir.file("bad.safetensors"), &why).is_null());
    EXPECT_NE(why.find("bad.json"), std::string::npos) << why;
}
