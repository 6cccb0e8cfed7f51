// MainWindow and trained models (issue 7): a flow saved by the engine opens in the Flows tab, and its samples
// and density export as the same bytes as the shared sampler flowscope-cli sample / density uses; a
// Transformer opens in the Transformers tab; a model exported from the app loads back with the same bits;
// a truncated file keeps the current run and names the file.
#include "MainWindowFixture.h"
#include "TestScenes.h"
#include "UiTestUtil.h"

#include "../TinyFlow.h"

#include "engine/flows/FlowIo.h"
#include "engine/flows/Sampling.h"
#include "engine/ottransformer/TransformerIo.h"
#include "ui/panels/FlowPanel.h"
#include "ui/panels/TransformerPanel.h"
#include "ui/shell/MainWindow.h"
#include "ui/views/FlowView.h"
#include "ui/views/TransformerView.h"
#include "ui/workspaces/flows/FlowsWorkspace.h"
#include "ui/workspaces/particles/ParticlesWorkspace.h"
#include "ui/workspaces/transformers/TransformersWorkspace.h"

#include <QApplication>
#include <QFile>
#include <QMessageBox>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest/QTest>

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>

namespace flowscope::test {
namespace {

flows::TrainerConfig tinyFlow(bool rwpo) {
    return tinyFlowConfig("moons", rwpo, 11);
}

QByteArray bytesOf(const QString& path) {
    QFile f(path);
    EXPECT_TRUE(f.open(QIODevice::ReadOnly)) << path.toStdString();
    return f.readAll();
}

bool sameFlowParams(const flows::FlowParams<float>& a, const flows::FlowParams<float>& b) {
    bool same = a.lambdaRaw == b.lambdaRaw && a.betaRaw == b.betaRaw;
    flows::FlowParams<float> x = a, y = b;
    x.phi.forEach(y.phi, [&](const ad::Matrix<float>& u, const ad::Matrix<float>& v, const std::string&) {
        same = same && u.rows() == v.rows() && u.cols() == v.cols() && u == v;
    });
    return same;
}

class ModelFilesTest : public MainWindowFilesFixture {
  protected:
    ModelFilesTest() : MainWindowFilesFixture({1000, 700}) {}
    void prepare() override { ASSERT_TRUE(window->workspace<ParticlesWorkspace>().setScene(tinyScene())); }

    // A flow trained a few steps by the engine (as flowscope-cli train does), saved with its record.
    QString trainedFlowFile(const QString& name, bool rwpo) {
        flows::FlowTrainer t(tinyFlow(rwpo));
        for (int k = 0; k < 5; ++k) t.step();
        const QString path = dir.filePath(name);
        flows::saveFlow(path.toStdString(), t, 1.0);
        return path;
    }
};

TEST_F(ModelFilesTest, AFlowOpensAndExportsTheBytesOfTheCliSampler) {
    const QString path = trainedFlowFile(QStringLiteral("moons.safetensors"), true);
    ASSERT_TRUE(window->openModelFile(path)) << window->lastError().toStdString();
    EXPECT_TRUE(window->lastError().isEmpty());
    EXPECT_TRUE(window->workspace<FlowsWorkspace>().view()->isVisible()); // the Flows tab is shown
    const flows::TrainerConfig shown = window->workspace<FlowsWorkspace>().panel()->config();
    EXPECT_EQ(shown.dataset, "moons"); // from the record
    EXPECT_EQ(shown.batch, 64);
    EXPECT_EQ(shown.flow.layers, 2);
    EXPECT_TRUE(shown.initialParams); // Start trains the loaded parameters on
    const flows::FlowModel<float> loaded = flows::loadFlow(path.toStdString());
    const auto s = window->workspace<FlowsWorkspace>().runner().snapshot();
    ASSERT_TRUE(s && !s->trainers.empty() && s->trainers[0].model);
    EXPECT_FALSE(window->workspace<FlowsWorkspace>().runner().playing());
    EXPECT_EQ(s->iteration(), 0);
    EXPECT_TRUE(sameFlowParams(s->trainers[0].model->params(), loaded.params()));

    // Samples: n = 500, seed 7, against the shared sampler of flowscope-cli sample --n 500 --seed 7.
    const QString app = dir.filePath(QStringLiteral("app.npy")),
                  cli = dir.filePath(QStringLiteral("cli.npy"));
    ASSERT_TRUE(window->workspace<FlowsWorkspace>().exportSamples(app, 500, 7))
        << window->lastError().toStdString();
    flows::writeSamplesNpy(cli.toStdString(), flows::sampleFlow(loaded, flows::baseSamples(2, 500, 7)));
    EXPECT_EQ(bytesOf(app), bytesOf(cli));
    EXPECT_EQ(bytesOf(app).size(), 128 + 500 * 2 * 4); // header + (500, 2) float32
    // Another seed gives other samples (the comparison can fail).
    ASSERT_TRUE(window->workspace<FlowsWorkspace>().exportSamples(cli, 500, 8));
    EXPECT_NE(bytesOf(app), bytesOf(cli));

    // Density: a 24² grid on [-3, 3]², against flowscope-cli density --grid 24 --half-width 3 --reference
    // 300 (fewer keys than the default 2000: seconds less with the RWPO layer).
    ASSERT_TRUE(window->workspace<FlowsWorkspace>().exportDensity(app, 24, 3.0, 300))
        << window->lastError().toStdString();
    flows::writeDensityNpy(cli.toStdString(), flows::densityGrid(loaded, 24, 3.0, 300));
    EXPECT_EQ(bytesOf(app), bytesOf(cli));

    // The model exported from the app loads back with the same bits, with a record beside it.
    const QString again = dir.filePath(QStringLiteral("again.safetensors"));
    ASSERT_TRUE(window->workspace<FlowsWorkspace>().exportModel(again)) << window->lastError().toStdString();
    EXPECT_TRUE(sameFlowParams(flows::loadFlow(again.toStdString()).params(), loaded.params()));
    EXPECT_TRUE(QFile::exists(dir.filePath(QStringLiteral("again.json"))));
}

// A long export (a million samples of a trained flow: seconds) reports progress while the window keeps
// answering, and a cancel stops it with nothing written.
TEST_F(ModelFilesTest, ALongSamplesExportShowsProgressAndCancels) {
    flows::FlowTrainer t(tinyFlow(false));
    t.step();
    const QString path = dir.filePath(QStringLiteral("flow.safetensors"));
    flows::saveFlow(path.toStdString(), t, 0.0);
    ASSERT_TRUE(window->openModelFile(path)) << window->lastError().toStdString();
    const QString out = dir.filePath(QStringLiteral("many.npy"));
    long calls = 0, last = -1;
    EXPECT_FALSE(
        window->workspace<FlowsWorkspace>().exportSamples(out, 1 << 20, 0, [&](long done, long total) {
            EXPECT_EQ(total, 1000);
            EXPECT_GE(done, last);
            last = done;
            return ++calls < 3;
        }));
    EXPECT_EQ(calls, 3);
    EXPECT_LT(last, 1000);
    EXPECT_TRUE(window->lastError().contains(QStringLiteral("cancelled")))
        << window->lastError().toStdString();
    EXPECT_FALSE(QFile::exists(out));
    const QStringList left = QDir(dir.path()).entryList(QDir::Files);
    EXPECT_FALSE(left.join(' ').contains(QStringLiteral("many"))) << left.join(' ').toStdString();
}

TEST_F(ModelFilesTest, AFlowWithoutADatasetInItsRecordCanStillBeSampled) {
    flows::FlowTrainer t(tinyFlow(false));
    t.step();
    const QString path = dir.filePath(QStringLiteral("bare.safetensors"));
    flows::saveFlow(path.toStdString(), t.model(), nlohmann::json::object());
    ASSERT_TRUE(window->openModelFile(path)) << window->lastError().toStdString();
    const QString status = window->statusBar()->currentMessage();
    EXPECT_TRUE(status.contains(QStringLiteral("bare.safetensors")) &&
                status.contains(QStringLiteral("no toy dataset")))
        << status.toStdString();
    const QString out = dir.filePath(QStringLiteral("s.npy"));
    ASSERT_TRUE(window->workspace<FlowsWorkspace>().exportSamples(out, 100, 0))
        << window->lastError().toStdString();
    EXPECT_EQ(bytesOf(out).size(), 128 + 100 * 2 * 4);
}

TEST_F(ModelFilesTest, ATransformerOpensInTheTransformersTab) {
    ot::OtTrainerConfig c = ot::defaultTrainerConfig(ot::Task::A);
    c.model.steps = 4;
    c.model.lambdaOt = 1.0;
    c.evalSets = 20;
    ot::OtTrainer t(c);
    for (int k = 0; k < 2; ++k) t.step();
    const QString path = dir.filePath(QStringLiteral("ot.safetensors"));
    ot::saveTransformer(path.toStdString(), t, 0.0);
    ASSERT_TRUE(window->openModelFile(path)) << window->lastError().toStdString();
    EXPECT_TRUE(window->workspace<TransformersWorkspace>().view()->isVisible());
    EXPECT_FALSE(window->workspace<FlowsWorkspace>().runner().snapshot()); // the Flows tab was not touched
    const auto s = window->workspace<TransformersWorkspace>().runner().snapshot();
    ASSERT_TRUE(s && !s->trainers.empty() && s->trainers[0].model);
    EXPECT_EQ(s->task, ot::Task::A);
    EXPECT_EQ(s->trainers[0].model->params().blocks[0].Q, t.evaluatedModel().params().blocks[0].Q);
    EXPECT_TRUE(window->workspace<TransformersWorkspace>().panel()->config().initialParams);
    // Exported from the Transformers tab: a Transformer, bit for bit (the trainer's evaluated, i.e. averaged,
    // parameters: what saveTransformer wrote).
    const QString again = dir.filePath(QStringLiteral("again.safetensors"));
    ASSERT_TRUE(window->workspace<TransformersWorkspace>().exportModel(again))
        << window->lastError().toStdString();
    const ot::TransformerModel back = ot::loadTransformer(again.toStdString());
    EXPECT_EQ(back.params().blocks[0].Q, t.evaluatedModel().params().blocks[0].Q);
    EXPECT_EQ(back.params().blocks[0].W, t.evaluatedModel().params().blocks[0].W);
    // Samples are a flow's: none to export yet.
    EXPECT_FALSE(
        window->workspace<FlowsWorkspace>().exportSamples(dir.filePath(QStringLiteral("s.npy")), 10, 0));
    EXPECT_TRUE(window->lastError().contains(QStringLiteral("No flow"))) << window->lastError().toStdString();
    EXPECT_FALSE(QFile::exists(dir.filePath(QStringLiteral("s.npy"))));
}

TEST_F(ModelFilesTest, ATruncatedFileKeepsTheRunAndNamesTheFile) {
    ASSERT_TRUE(window->workspace<FlowsWorkspace>().start(tinyFlow(false), false, false));
    const std::uint64_t generation = window->workspace<FlowsWorkspace>().runner().snapshot()->generation;
    const QString path = trainedFlowFile(QStringLiteral("cut.safetensors"), false);
    std::filesystem::resize_file(path.toStdString(), std::filesystem::file_size(path.toStdString()) - 40);
    EXPECT_FALSE(window->openModelFile(path));
    EXPECT_TRUE(window->lastError().contains(path)) << window->lastError().toStdString();
    EXPECT_EQ(window->workspace<FlowsWorkspace>().runner().snapshot()->generation, generation);
    EXPECT_FALSE(window->workspace<FlowsWorkspace>().panel()->config().initialParams);
}

// Quit (Ctrl+Q) with a model trained since its last export asks Save / Discard / Cancel: Cancel keeps the
// window, an export clears the question, Discard closes.
TEST_F(ModelFilesTest, QuitAsksBeforeLosingATrainedModel) {
    EXPECT_TRUE(window->workspace<FlowsWorkspace>().unsavedWork().isEmpty()); // nothing trained yet
    ASSERT_TRUE(window->workspace<FlowsWorkspace>().start(tinyFlow(false), false, false))
        << window->lastError().toStdString();
    window->workspace<FlowsWorkspace>().runner().stepOnce();
    ASSERT_TRUE(waitFor([&] {
        const auto s = window->workspace<FlowsWorkspace>().runner().snapshot();
        return s && s->iteration() >= 1;
    }));
    EXPECT_NE(window->workspace<FlowsWorkspace>().unsavedWork().indexOf(QStringLiteral("not exported")), -1);
    // Answers the question when it comes (the close runs it modally), with `button`.
    const auto answer = [&](QMessageBox::StandardButton button) {
        QTimer::singleShot(0, [button] {
            const auto poll = std::make_shared<std::function<void()>>();
            *poll = [button, poll] {
                auto* ask = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
                if (ask && ask->objectName() == QStringLiteral("unsavedWork")) {
                    saveShot(*ask, QStringLiteral("quit-unsaved.png"));
                    ask->button(button)->click();
                } else
                    QTimer::singleShot(10, *poll);
            };
            (*poll)();
        });
    };
    answer(QMessageBox::Cancel);
    EXPECT_FALSE(window->close());
    EXPECT_TRUE(window->isVisible());

    ASSERT_TRUE(
        window->workspace<FlowsWorkspace>().exportModel(dir.filePath(QStringLiteral("kept.safetensors"))));
    EXPECT_TRUE(window->workspace<FlowsWorkspace>().unsavedWork().isEmpty());
    window->workspace<FlowsWorkspace>().runner().stepOnce(); // trained on: unsaved again
    ASSERT_TRUE(waitFor([&] { return !window->workspace<FlowsWorkspace>().unsavedWork().isEmpty(); }));
    answer(QMessageBox::Discard);
    EXPECT_TRUE(window->close());
    EXPECT_FALSE(window->isVisible());
}

} // namespace
} // namespace flowscope::test
