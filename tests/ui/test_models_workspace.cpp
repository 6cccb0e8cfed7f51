// The Models tab on tiny random GPT-2 and ALBERT checkpoints written by the test (tests/ModelFiles.h): what
// it shows against the engine's numbers and against closed forms: every histogram holds the n(n-1)/2 pairs
// and integrates to 1; the mean cosine is a float64 reference's; the cloud through depth is the normalised
// states on orthonormal principal axes; the head's ODE starts on layer 0 (distance 0), stays on the sphere
// for ALBERT, and opens in the Particles workspace. A bad folder is one message naming the key.
#include "../ModelFiles.h"
#include "MainWindowFixture.h"
#include "UiTestUtil.h"

#include "engine/dynamics/Observables.h"
#include "engine/models/ModelRun.h"
#include "ui/views/ModelPlots.h"
#include "ui/views/ParticleView.h"
#include "ui/workspaces/models/ModelsWorkspace.h"
#include "ui/workspaces/particles/ParticlesWorkspace.h"

#include <QCheckBox>
#include <QDockWidget>
#include <QLabel>
#include <QSignalSpy>
#include <QTabWidget>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

namespace flowscope::test {
namespace {

using models::RowMat;

// 12 tokens of the tiny GPT-2's 40 (repeats included: equal ids at other positions are other tokens).
const char* kIds = "3,1,4,1,5,9,2,6,5,3,5,8";

class ModelsWorkspaceTest : public MainWindowFilesFixture {
  protected:
    ModelsWorkspaceTest() : MainWindowFilesFixture({1280, 800}) {}

    ModelsWorkspace& models() { return window->workspace<ModelsWorkspace>(); }

    // Opens `dir`, runs it on `ids` and waits for runFinished; returns its argument.
    bool openAndRun(const std::string& dir, const QString& ids) {
        EXPECT_TRUE(models().openModel(QString::fromStdString(dir))) << models().lastError().toStdString();
        models().setInput({}, ids);
        QSignalSpy finished(&models(), &ModelsWorkspace::runFinished);
        EXPECT_TRUE(models().run()) << models().lastError().toStdString();
        EXPECT_TRUE(finished.count() > 0 || finished.wait(120000));
        return finished.count() == 1 && finished.at(0).at(0).toBool();
    }

    bool buildOde(int layer, int head) {
        QSignalSpy finished(&models(), &ModelsWorkspace::dynamicsFinished);
        EXPECT_TRUE(models().buildDynamics(layer, head)) << models().lastError().toStdString();
        EXPECT_TRUE(finished.count() > 0 || finished.wait(120000));
        return finished.count() == 1 && finished.at(0).at(0).toBool();
    }

    std::filesystem::path root() const { return std::filesystem::path(dir.path().toStdString()); }
};

// The float64 reference: every layer's states from the float64 weights, and the mean of the cosines of the
// pairs i != j computed pair by pair.
std::vector<double> referenceMeanCosines(const std::string& dir, const std::vector<int>& ids) {
    const models::Checkpoint c(dir);
    std::vector<double> means;
    for (const RowMat<double>& x :
         models::hiddenStates(c.config(), c.weights<double>(), ids, c.config().layers)) {
        double sum = 0;
        const Eigen::Index n = x.rows();
        for (Eigen::Index i = 0; i < n; ++i)
            for (Eigen::Index j = 0; j < n; ++j)
                if (i != j) sum += x.row(i).dot(x.row(j)) / (x.row(i).norm() * x.row(j).norm());
        means.push_back(sum / double(n * (n - 1)));
    }
    return means;
}

TEST_F(ModelsWorkspaceTest, TheHistogramsAndCurvesAreTheEnginesNumbers) {
    const TinyModel m = writeTinyGpt2(root() / "gpt2");
    ASSERT_TRUE(openAndRun(m.dir, QString::fromLatin1(kIds))) << models().lastError().toStdString();
    const auto r = models().result();
    ASSERT_TRUE(r);
    const std::vector<int> ids = models::parseIds(kIds, "ids");
    ASSERT_EQ(r->ids, ids);
    const long n = long(ids.size());

    // Every panel: the n(n-1)/2 pairs, a density that integrates to 1, under the one shared scale.
    const models::GramHistograms& g = models().histogramView()->histograms();
    ASSERT_EQ(g.layers, (std::vector<int>{0, 1, 2})); // 0, L/3, 2L/3, L for L = 2, without repeats
    for (std::size_t k = 0; k < g.layers.size(); ++k) {
        long pairs = 0;
        double mass = 0, peak = 0;
        for (std::size_t b = 0; b < g.counts[k].size(); ++b) {
            pairs += g.counts[k][b];
            mass += g.density[k][b] * (g.edges[b + 1] - g.edges[b]);
            peak = std::max(peak, g.density[k][b]);
        }
        EXPECT_EQ(pairs, n * (n - 1) / 2);
        EXPECT_NEAR(mass, 1.0, 1e-12);
        EXPECT_LE(peak, models().histogramView()->densityScale());
    }

    // The mean cosine against depth: the float64 reference (the run is in float32, as model gram's).
    const std::vector<double> shown = models().depthCurves()->values(QStringLiteral("mean cosine"));
    const std::vector<double> reference = referenceMeanCosines(m.dir, ids);
    ASSERT_EQ(shown.size(), reference.size());
    for (std::size_t k = 0; k < shown.size(); ++k) EXPECT_NEAR(shown[k], reference[k], 1e-5) << "layer " << k;
    // The cluster count: the greedy leader count (the all-pairs reference) of the normalised states.
    const std::vector<double> clusters = models().depthCurves()->values(QStringLiteral("clusters"));
    ASSERT_EQ(clusters.size(), r->states.size());
    for (std::size_t k = 0; k < clusters.size(); ++k)
        EXPECT_EQ(clusters[k], countClustersBruteForce(Tokens(models::normalizedRows(r->states[k])),
                                                       models::kGramClusterTol))
            << "layer " << k;
    window->showPage(models().pages().front().widget);
    saveShot(*window, QStringLiteral("models-cosines.png"));
}

// Log density (the checkbox above the histograms): every bar's height is log10 of its bin's density, the
// count over the pairs and the bin width, on whole decades from the one below the least filled bin's to the
// one at or above the fullest; an empty bin has no bar; a compared input's outline is on the same axis.
// Unchecked, the heights are the densities over the linear scale again. Read from the view's bar heights
// (what paintEvent draws), not from pixels.
TEST_F(ModelsWorkspaceTest, LogDensityDrawsLog10OfTheDensities) {
    const TinyModel m = writeTinyGpt2(root() / "gpt2");
    models().setCompare(QStringLiteral("ids 7,7,2,9,1,30,31"));
    ASSERT_TRUE(openAndRun(m.dir, QString::fromLatin1(kIds))) << models().lastError().toStdString();
    GramHistogramView& view = *models().histogramView();
    ASSERT_FALSE(view.logScale());
    models().logDensityBox()->click();
    ASSERT_TRUE(view.logScale());
    const models::GramHistograms& g = view.histograms();
    ASSERT_EQ(view.compared().size(), 1u);
    const models::GramHistograms& c = view.compared().front().g;
    // The decades, from every bin of both inputs.
    const double width = g.edges[1] - g.edges[0];
    double least = INFINITY, most = 0;
    int empty = 0;
    for (const models::GramHistograms* h : {&g, &c})
        for (const auto& counts : h->counts)
            for (const long n : counts) {
                empty += n == 0;
                if (n == 0) continue;
                least = std::min(least, double(n) / double(h->pairs) / width);
                most = std::max(most, double(n) / double(h->pairs) / width);
            }
    ASSERT_GT(empty, 0) << "the test needs empty bins";
    const double bottom = std::floor(std::log10(least) - 1e-12), top = std::ceil(std::log10(most) - 1e-12);
    EXPECT_NEAR(std::log10(view.densityAxis().bottom), bottom, 1e-12);
    EXPECT_NEAR(std::log10(view.densityAxis().top), top, 1e-12);
    for (std::size_t k = 0; k < g.layers.size(); ++k)
        for (int input = -1; input < 1; ++input) {
            const models::GramHistograms& h = input < 0 ? g : c;
            const std::vector<double> heights = view.barHeights(k, input);
            ASSERT_EQ(heights.size(), h.counts[k].size());
            for (std::size_t b = 0; b < heights.size(); ++b) {
                const long n = h.counts[k][b];
                const double expected =
                    n == 0 ? 0.0
                           : (std::log10(double(n) / double(h.pairs) / width) - bottom) / (top - bottom);
                EXPECT_NEAR(heights[b], expected, 1e-12) << "layer " << h.layers[k] << ", bin " << b;
                if (n > 0) EXPECT_GT(heights[b], 0.0); // the least filled bin still shows
            }
        }
    window->showPage(models().pages().front().widget);
    saveShot(*window, QStringLiteral("models-log.png"));
    models().logDensityBox()->click();
    ASSERT_FALSE(view.logScale());
    for (std::size_t b = 0; b < g.density[0].size(); ++b)
        EXPECT_NEAR(view.barHeights(0)[b], g.density[0][b] / view.densityScale(), 1e-15);
}

// Several inputs in one view: each further input (one per line of Compare) runs alone, so its histograms
// and mean cosines are those of a run of it as the first input; the view draws them over the first input's,
// and the depth curves gain its mean cosine, in the colour of its outline. A bad line names its line.
TEST_F(ModelsWorkspaceTest, ComparedInputsAreEachTheRunOfThatInputAlone) {
    const TinyModel m = writeTinyGpt2(root() / "gpt2");
    const QString second = QStringLiteral("7,7,2,9,1"), third = QStringLiteral("10,11,12,13,14,15,16");
    models().setCompare(QStringLiteral("ids ") + second + QStringLiteral("\n\n  ids: ") + third + "\n");
    ASSERT_TRUE(openAndRun(m.dir, QString::fromLatin1(kIds))) << models().lastError().toStdString();
    const std::vector<GramHistogramView::Compared> shown = models().histogramView()->compared();
    ASSERT_EQ(shown.size(), 2u);
    EXPECT_EQ(shown[0].label, QStringLiteral("ids ") + second);
    const std::vector<models::GramHistograms> first = {models().histogramView()->histograms()};

    for (std::size_t k = 0; k < 2; ++k) {
        models().setCompare({});
        ASSERT_TRUE(openAndRun(m.dir, k == 0 ? second : third)) << models().lastError().toStdString();
        const models::GramHistograms& alone = models().histogramView()->histograms();
        EXPECT_EQ(shown[k].g.layers, alone.layers);
        EXPECT_EQ(shown[k].g.counts, alone.counts);
        EXPECT_EQ(shown[k].g.density, alone.density);
        EXPECT_EQ(shown[k].g.meanCosine, alone.meanCosine);
        EXPECT_EQ(shown[k].g.clusters, alone.clusters);
        EXPECT_NE(shown[k].g.density, first[0].density); // the inputs differ: the test tells them apart
    }

    // The curves and the view after one more run with the comparison, and a screenshot of it.
    models().setCompare(QStringLiteral("ids ") + second + QStringLiteral("\nids ") + third);
    ASSERT_TRUE(openAndRun(m.dir, QString::fromLatin1(kIds)));
    EXPECT_EQ(models().depthCurves()->values(QStringLiteral("mean cosine 2")), shown[0].g.meanCosine);
    EXPECT_EQ(models().depthCurves()->values(QStringLiteral("mean cosine 3")), shown[1].g.meanCosine);
    EXPECT_EQ(models().histogramView()->histograms().density, first[0].density);
    window->showPage(models().pages().front().widget);
    saveShot(*window, QStringLiteral("models-compare.png"));
    window->resize(1024, 640);
    saveShot(*window, QStringLiteral("models-compare-1024.png"));

    models().setCompare(QStringLiteral("ids 1,2\nids 1,x"));
    EXPECT_FALSE(models().run());
    EXPECT_NE(models().lastError().indexOf(QStringLiteral("compare, line 2")), -1)
        << models().lastError().toStdString();
    // A line that parses but has one token fails in the pass, naming its line (blank lines counted).
    models().setCompare(QStringLiteral("ids 1,2\n\nids 5"));
    EXPECT_FALSE(openAndRun(m.dir, QString::fromLatin1(kIds)));
    EXPECT_NE(models().lastError().indexOf(QStringLiteral("compare, line 3")), -1)
        << models().lastError().toStdString();
}

TEST_F(ModelsWorkspaceTest, TheCloudThroughDepthIsTheNormalisedStatesOnTheirPrincipalAxes) {
    const TinyModel m = writeTinyGpt2(root() / "gpt2");
    // A vocabulary for the hover's text: GPT-2's byte symbols ("Ġ" is the space byte).
    std::ofstream(root() / "gpt2" / "vocab.json") << "{\"\u0120cat\": 9, \"mat\": 3}";
    std::ofstream(root() / "gpt2" / "merges.txt") << "#version: 0.2\n";
    ASSERT_TRUE(openAndRun(m.dir, QString::fromLatin1(kIds)));
    const auto r = models().result();
    const models::PrincipalAxes& a = r->axes;
    ASSERT_EQ(a.basis.cols(), 3);
    // Orthonormal axes, each an eigenvector of the pooled covariance, eigenvalues in decreasing order.
    EXPECT_LT((a.basis.transpose() * a.basis - Eigen::MatrixXd::Identity(3, 3)).norm(), 1e-12);
    Eigen::MatrixXd cov = Eigen::MatrixXd::Zero(m.D, m.D);
    Eigen::Index rows = 0;
    for (const RowMat<double>& x : r->states) {
        const Eigen::MatrixXd c = models::normalizedRows(x).rowwise() - a.mean;
        cov += c.transpose() * c;
        rows += x.rows();
    }
    cov /= double(rows);
    double previous = HUGE_VAL;
    for (int k = 0; k < 3; ++k) {
        const Eigen::VectorXd v = a.basis.col(k);
        const double lambda = v.dot(cov * v);
        EXPECT_LT((cov * v - lambda * v).norm(), 1e-10 * cov.norm()) << "axis " << k;
        EXPECT_LE(lambda, previous * (1 + 1e-12));
        previous = lambda;
    }
    // The pooled projected cloud is centred.
    Eigen::RowVectorXd sum = Eigen::RowVectorXd::Zero(3);
    for (const RowMat<double>& p : r->depth) sum += p.colwise().sum();
    EXPECT_LT(sum.norm(), 1e-10);

    // The view shows the layer of the depth bar; hovering token 5 names its id.
    for (int k : {0, 2, 1}) {
        models().setDepth(k);
        const auto shot = models().depthView()->displayedSnapshot();
        ASSERT_TRUE(shot);
        EXPECT_EQ(shot->tokens, Tokens(r->depth[std::size_t(k)])) << "layer " << k;
    }
    EXPECT_TRUE(models().depthView()->is3D());
    models().tabs()->setCurrentIndex(1);
    models().depthView()->pick(5);
    EXPECT_EQ(models().hoverLabel()->text(), QStringLiteral("token 5: \u201c cat\u201d (id 9)"));
    models().depthView()->pick(-1);
    models().depthView()->pick(0); // id 3
    EXPECT_EQ(models().hoverLabel()->text(), QStringLiteral("token 0: \u201cmat\u201d (id 3)"));
    models().depthView()->pick(1); // id 1: not in the vocabulary
    EXPECT_EQ(models().hoverLabel()->text(), QStringLiteral("token 1: \u201c#1\u201d (id 1)"));
    saveShot(*window, QStringLiteral("models-depth.png"));
}

TEST_F(ModelsWorkspaceTest, TheHeadsOdeStartsOnLayerZeroIsTheEnginesAndOpensInParticles) {
    const TinyModel m = writeTinyGpt2(root() / "gpt2");
    ASSERT_TRUE(openAndRun(m.dir, QString::fromLatin1(kIds)));
    ASSERT_TRUE(buildOde(1, 2)) << models().lastError().toStdString();
    const auto d = models().dynamics();
    ASSERT_TRUE(d);
    const auto r = models().result();
    // The engine's dynamics from the same states: the same distances.
    const models::Checkpoint c(m.dir);
    const models::ModelDynamics e = models::modelDynamics(c, c.weights<double>(), r->states, 1, 2);
    const std::vector<double> shown =
        models().distanceCurve()->values(QStringLiteral("distance between the ODE and the layers"));
    ASSERT_EQ(shown.size(), e.distance.size());
    for (std::size_t k = 0; k < shown.size(); ++k)
        EXPECT_NEAR(shown[k], e.distance[k], 1e-12 * (1 + e.distance[k])) << "layer " << k;
    // t = 0 is layer 0 in the scene's coordinates: distance 0, and both views show the same cloud.
    EXPECT_EQ(shown[0], 0.0);
    EXPECT_TRUE(models().odeView()->is3D());
    models().setDepth(0);
    EXPECT_EQ(models().odeView()->displayedSnapshot()->tokens,
              models().realView()->displayedSnapshot()->tokens);
    // Layer 2: the ODE's tokens at t = 2 and the real layer's, each projected on the real layers' axes.
    models().setDepth(2);
    EXPECT_TRUE(
        models().odeView()->displayedSnapshot()->tokens.isApprox(Tokens(d->axes.project(e.ode[2])), 1e-12));
    EXPECT_TRUE(
        models().realView()->displayedSnapshot()->tokens.isApprox(Tokens(d->axes.project(e.real[2])), 1e-12));
    EXPECT_EQ(d->dynamics.scene.d, m.D);
    EXPECT_TRUE(d->dynamics.scene.attention.masked); // GPT-2 is causal
    saveShot(*window, QStringLiteral("models-dynamics.png"));

    ASSERT_TRUE(models().openInParticles()) << models().lastError().toStdString();
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().scene());
    EXPECT_EQ(window->workspace<ParticlesWorkspace>().scene()->name, d->dynamics.scene.name);
    EXPECT_EQ(window->workspace<ParticlesWorkspace>().scene()->n, int(r->ids.size()));
    EXPECT_EQ(qobject_cast<QTabWidget*>(window->centralWidget())->currentWidget(),
              static_cast<QWidget*>(window->workspace<ParticlesWorkspace>().particleView()));
}

TEST_F(ModelsWorkspaceTest, AlbertsOdeStaysOnTheSphere) {
    const TinyModel m = writeTinyAlbert(root() / "albert");
    ASSERT_TRUE(openAndRun(m.dir, QStringLiteral("2 7 1 8 2 8 1 8 2 8")));
    ASSERT_TRUE(buildOde(0, 1)) << models().lastError().toStdString();
    const models::ModelDynamics& e = models().dynamics()->dynamics;
    EXPECT_TRUE(e.scene.attention.sphere);
    ASSERT_EQ(e.ode.size(), e.real.size());
    for (std::size_t k = 0; k < e.ode.size(); ++k)
        for (Eigen::Index i = 0; i < e.ode[k].rows(); ++i) {
            EXPECT_NEAR(e.ode[k].row(i).norm(), 1.0, 1e-9) << "t = " << k << ", token " << i;
            EXPECT_NEAR(e.real[k].row(i).norm(), 1.0, 1e-12) << "layer " << k << ", token " << i;
        }
    EXPECT_LT(e.distance[0], 1e-14); // the same tokens, normalised once more by the run
    EXPECT_TRUE(models().odeView()->is3D());
}

TEST_F(ModelsWorkspaceTest, ABadFolderOrInputIsOneMessageNamingTheKey) {
    expectEveryControlHasATooltip(*models().dock()->widget(), true);
    TinyModel m = writeTinyGpt2(root() / "gpt2");
    SafeTensors edited = m.tensors;
    edited.tensors.erase(edited.tensors.begin() + 5); // h.0.attn.c_attn.bias
    writeSafetensors(m.dir + "/model.safetensors", edited);
    EXPECT_FALSE(models().openModel(QString::fromStdString(m.dir)));
    EXPECT_TRUE(models().lastError().contains(QStringLiteral("tensor 'h.0.attn.c_attn.bias' is missing")))
        << models().lastError().toStdString();
    EXPECT_EQ(models().messageLabel()->text(), models().lastError());

    EXPECT_FALSE(models().openModel(QString::fromStdString((root() / "nothing").string())));
    EXPECT_TRUE(models().lastError().contains(QStringLiteral("config.json")))
        << models().lastError().toStdString();

    writeSafetensors(m.dir + "/model.safetensors", m.tensors);
    ASSERT_TRUE(models().openModel(QString::fromStdString(m.dir)));
    models().setInput({}, QStringLiteral("3,x"));
    EXPECT_FALSE(models().run());
    EXPECT_TRUE(models().lastError().startsWith(QStringLiteral("ids:")))
        << models().lastError().toStdString();
    // An id outside the vocabulary fails in the pass: runFinished(false), the message names the token.
    EXPECT_FALSE(openAndRun(m.dir, QStringLiteral("3,41")));
    EXPECT_TRUE(models().lastError().contains(QStringLiteral("token 1: id 41 is outside the vocabulary")))
        << models().lastError().toStdString();
    EXPECT_FALSE(models().result());
    EXPECT_FALSE(models().buildDynamics(0, 0));
}

// The job machinery under the tab's two jobs: a value, an error, and a cancelled job that leaves neither
// (the job stops when its progress callback says so; the test waits on the job, never on the clock).
TEST(BackgroundJob, GivesTheValueOrTheErrorAndACancelledJobNeither) {
    BackgroundJob<int> job;
    job.start([](const auto& progress) {
        progress(1.0);
        return 42;
    });
    job.wait();
    ASSERT_TRUE(job.result());
    EXPECT_EQ(*job.result(), 42);
    EXPECT_EQ(job.progress(), 1.0);
    EXPECT_EQ(job.error(), "");

    job.start([](const auto&) -> int {
        throw models::ModelError("config.json: /n_head: required field is missing");
    });
    job.wait();
    EXPECT_FALSE(job.result());
    EXPECT_EQ(job.error(), "config.json: /n_head: required field is missing");

    std::atomic<bool> started{false};
    job.start([&](const auto& progress) -> int {
        started = true;
        while (progress(0.5)) std::this_thread::yield();
        throw models::ModelCancelled();
    });
    while (!started) std::this_thread::yield();
    EXPECT_TRUE(job.running());
    job.cancel();
    job.wait();
    EXPECT_FALSE(job.running());
    EXPECT_FALSE(job.result());
    EXPECT_EQ(job.error(), "");
}

} // namespace
} // namespace flowscope::test
