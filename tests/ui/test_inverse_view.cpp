// The Inverse tab: the Inverse panel drives a PosteriorRunner on a shipped problem, the view draws what it
// publishes.
#include "MainWindowFixture.h"
#include "TestScenes.h"
#include "UiTestUtil.h"

#include "engine/inverse/PosteriorIo.h"
#include "ui/panels/InversePanel.h"
#include "ui/shell/MainWindow.h"
#include "ui/views/InverseView.h"
#include "ui/views/ParticleView.h"
#include "ui/workspaces/inverse/InverseWorkspace.h"
#include "ui/workspaces/particles/ParticlesWorkspace.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QElapsedTimer>
#include <QFile>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest/QTest>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

namespace flowscope::test {
namespace {

class InverseViewTest : public TrainingTabFixture<InverseWorkspace> {
  protected:
    QImage grabView() { return view->grab().toImage().convertToFormat(QImage::Format_RGB32); }
    QRect devicePixels(const QRectF& r) const {
        const double dpr = view->devicePixelRatioF();
        return QRect(QPoint(int(r.left() * dpr), int(r.top() * dpr)),
                     QPoint(int(r.right() * dpr), int(r.bottom() * dpr)));
    }
    // Pixels near `color` (a trainer's curve colour, drawn opaque or translucent over the dark background)
    // in `area`.
    static long pixelsLike(const QImage& image, const QRect& area, const QColor& color) {
        long count = 0;
        for (int y = std::max(area.top(), 0); y <= std::min(area.bottom(), image.height() - 1); ++y)
            for (int x = std::max(area.left(), 0); x <= std::min(area.right(), image.width() - 1); ++x) {
                const QColor c(image.pixel(x, y));
                const bool orange = color.red() > color.blue();
                count += orange ? (c.red() > 150 && c.red() > c.green() + 30 && c.green() > c.blue() + 20)
                                : (c.blue() > 150 && c.blue() > c.red() + 60);
            }
        return count;
    }
    QComboBox* problemBox() { return panel->findChild<QComboBox*>(QStringLiteral("inverse.problem")); }
    // Clicks Evaluate and waits for the shown run's `count`-th evaluation; returns it.
    PosteriorEvaluation evaluated(std::size_t count) {
        button("evaluate")->click();
        const bool shown = waitFor([&] {
            view->refresh();
            const auto now = view->displayedSnapshot();
            return now && now->trainers[0].evaluations.size() == count;
        });
        EXPECT_TRUE(shown) << "no evaluation " << count;
        return shown ? view->displayedSnapshot()->trainers[0].evaluations.back() : PosteriorEvaluation{};
    }
};

// --- The workspace ---

TEST_F(InverseViewTest, TheWorkspaceRegistersAndItsPageShows) {
    expectTheCurrentTab(4, "Inverse");
    EXPECT_EQ(window->activeWorkspace(), &window->workspace<InverseWorkspace>());
    // The shipped problems, linear-Gaussian chosen.
    QComboBox* problems = problemBox();
    ASSERT_NE(problems, nullptr);
    for (const char* name : {"eit", "elliptic", "linear-gaussian", "lorenz63"})
        EXPECT_GE(problems->findText(QString::fromLatin1(name)), 0) << name;
    EXPECT_EQ(problems->currentText(), QStringLiteral("linear-gaussian"));
    // Another tab hides the panel.
    window->showPage(window->workspace<FlowsWorkspace>().view());
    EXPECT_FALSE(panel->isVisible());
}

// --- Training and its pictures ---

TEST_F(InverseViewTest, StepsOnLinearGaussianUpdateTheCurvesAndTheScatter) {
    ASSERT_NO_FATAL_FAILURE(expectStepsFromNoRun(3));
    auto s = view->displayedSnapshot();
    ASSERT_EQ(s->trainers.size(), 1u);
    ASSERT_TRUE(s->scene);
    EXPECT_EQ(s->scene->d, 2);
    EXPECT_EQ(s->trainers[0].history.size(), 3u);
    EXPECT_TRUE(s->trainers[0].rwpo); // the problem file's choice
    ASSERT_EQ(s->trainers[0].picture->samples.rows(), 2);
    EXPECT_EQ(s->trainers[0].picture->prediction.size(), 3); // F(mean): the 3 observations
    EXPECT_TRUE(panel->statusText().contains(QStringLiteral("iteration 3")))
        << panel->statusText().toStdString();
    const inverse::Matrix before = s->trainers[0].picture->samples;

    const QImage first = grabView();
    const QRect scatter = devicePixels(view->pictureRect(0));
    const QRect loss = devicePixels(view->plotRect(InverseView::Plot::Loss));
    ASSERT_TRUE(scatter.isValid());
    ASSERT_TRUE(loss.isValid());
    const QColor orange = rwpoCurveColor(true);
    EXPECT_GT(pixelsLike(first, scatter, orange), 300); // 600 samples and their histograms
    EXPECT_GT(pixelsLike(first, loss, orange), 5);      // the loss curve

    // Three more steps: the curves grow and the samples move.
    for (int i = 0; i < 3; ++i) button("step")->click();
    ASSERT_TRUE(waitForIteration(6));
    s = view->displayedSnapshot();
    EXPECT_EQ(s->trainers[0].history.size(), 6u);
    EXPECT_GT((s->trainers[0].picture->samples - before).cwiseAbs().maxCoeff(), 1e-9);
    const QImage second = grabView();
    EXPECT_NE(first.copy(loss), second.copy(loss));
    EXPECT_NE(first.copy(scatter), second.copy(scatter));

    // The first step evaluated the starting point (d = 2): the frame's own error, at iteration 0.
    ASSERT_FALSE(s->trainers[0].evaluations.empty());
    EXPECT_EQ(s->trainers[0].evaluations.front().iteration, 0);
    // Evaluate: the relative L1 error of the posterior mean, in the error plot.
    const PosteriorEvaluation e = evaluated(2);
    EXPECT_EQ(e.iteration, 6);
    EXPECT_TRUE(std::isfinite(e.relativeL1Error));
    EXPECT_GT(pixelsLike(grabView(), devicePixels(view->plotRect(InverseView::Plot::Error)), orange), 3);
}

// The Metropolis reference: started with the run, it is metropolis() on the run's posterior in the run's
// frame (ReferenceChain's scale and thinning), and the corner plot draws it in grey under the flow's samples.
TEST_F(InverseViewTest, TheMetropolisReferenceIsDrawnUnderTheSamples) {
    ASSERT_NO_FATAL_FAILURE(expectStepsFromNoRun(2));
    ASSERT_TRUE(waitFor([&] { return view->picture().reference() != nullptr; }));
    const auto s = view->displayedSnapshot();
    const PosteriorRunConfig& config = *s->trainers[0].config;
    const auto reference = view->picture().reference();
    const ReferenceChain::Options o;
    const long thin = (o.steps - o.burnIn) / o.kept;
    const inverse::Chain direct = inverse::metropolis(*config.problem->posterior, *config.frame, o.steps,
                                                      o.burnIn, 2.38 / std::sqrt(2.0), o.seed, thin);
    EXPECT_TRUE(reference->samples == direct.samples);
    EXPECT_EQ(reference->steps, o.steps);

    const auto greyish = [](const QImage& image, const QRect& area) {
        const QColor grey = InversePicture::kReferenceColor;
        long n = 0;
        for (int y = std::max(area.top(), 0); y <= std::min(area.bottom(), image.height() - 1); ++y)
            for (int x = std::max(area.left(), 0); x <= std::min(area.right(), image.width() - 1); ++x) {
                const QColor c(image.pixel(x, y));
                n += std::abs(c.red() - grey.red()) < 40 && std::abs(c.green() - grey.green()) < 40 &&
                     std::abs(c.blue() - grey.blue()) < 40 && std::abs(c.red() - c.blue()) < 24;
            }
        return n;
    };
    view->repaint();
    const QRect picture = devicePixels(view->pictureRect(0));
    const long with = greyish(grabView(), picture);
    view->setReference(nullptr);
    const long without = greyish(grabView(), picture);
    EXPECT_GT(with, without + 300) << with << " grey pixels with the reference, " << without << " without";

    // Evaluate: the flow's distance to the reference, a dot in the distance plot beside the starting point's.
    view->setReference(reference);
    const PosteriorEvaluation e = evaluated(2);
    const double w = InversePicture::distanceToReference(e, *reference);
    EXPECT_TRUE(std::isfinite(w));
    EXPECT_GT(w, 0.0);
    view->repaint();
    const QRect distance = devicePixels(view->plotRect(InverseView::Plot::Distance));
    ASSERT_TRUE(distance.isValid());
    EXPECT_GT(pixelsLike(grabView(), distance, rwpoCurveColor(s->trainers[0].rwpo)), 3);
}

// Space is the panel's Start / Pause / Resume button on a training tab, as it plays and pauses the particles.
TEST_F(InverseViewTest, SpaceStartsPausesAndResumesTraining) {
    EXPECT_FALSE(window->workspace<InverseWorkspace>().runner().started());
    window->activateWindow(); // shortcuts go to the active window
    ASSERT_TRUE(QTest::qWaitForWindowActive(window.get()));
    QTest::keyClick(window.get(), Qt::Key_Space);
    ASSERT_TRUE(waitFor([&] { return window->workspace<InverseWorkspace>().runner().started(); }));
    EXPECT_TRUE(window->workspace<InverseWorkspace>().runner().playing());
    QTest::keyClick(window.get(), Qt::Key_Space);
    EXPECT_FALSE(window->workspace<InverseWorkspace>().runner().playing());
    QTest::keyClick(window.get(), Qt::Key_Space);
    EXPECT_TRUE(window->workspace<InverseWorkspace>().runner().playing());
    window->workspace<InverseWorkspace>().runner().pause();
    // On the particles' page Space is theirs again: the training stays paused.
    window->showPage(window->workspace<ParticlesWorkspace>().particleView());
    QTest::keyClick(window.get(), Qt::Key_Space);
    EXPECT_FALSE(window->workspace<InverseWorkspace>().runner().playing());
}

TEST_F(InverseViewTest, SwitchingProblemsResets) {
    ASSERT_TRUE(step(2));
    const std::uint64_t generation = view->displayedSnapshot()->generation;
    problemBox()->setCurrentText(QStringLiteral("lorenz63")); // a new run of it, paused at iteration 0
    ASSERT_TRUE(waitFor(
        [&] {
            view->refresh();
            const auto s = view->displayedSnapshot();
            return s && s->generation > generation && !s->trainers.empty() && s->trainers[0].picture;
        },
        kEventGuard));
    const auto s = view->displayedSnapshot();
    EXPECT_EQ(s->iteration(), 0);
    EXPECT_TRUE(s->trainers[0].history.empty());
    EXPECT_EQ(s->scene->modelType, "lorenz63");
    EXPECT_EQ(s->scene->d, 3);
    EXPECT_EQ(s->trainers[0].picture->samples.rows(), 3);
    EXPECT_FALSE(window->workspace<InverseWorkspace>().runner().playing());
    EXPECT_TRUE(panel->warningText().isEmpty()) << panel->warningText().toStdString();
    // The panel shows the new problem's own iterations.
    EXPECT_EQ(panel->config().flow.iterations, s->trainers[0].iterations);
    EXPECT_EQ(panel->config().problemId, "lorenz63");
}

// EIT's frame (the Laplace approximation: a MAP search of up to 100 Levenberg–Marquardt iterations, each
// with 576 pullbacks) takes a second or more; it is made off the UI thread, which keeps handling events
// (a 10 ms timer fires) while the new problem is prepared.
TEST_F(InverseViewTest, TheWindowAnswersWhileAProblemIsPrepared) {
    int ticks = 0;
    QTimer tick;
    tick.setInterval(10);
    QObject::connect(&tick, &QTimer::timeout, [&] { ++ticks; });
    tick.start();
    QElapsedTimer clock;
    clock.start();
    ASSERT_TRUE(panel->selectProblem(QStringLiteral("eit")));
    const qint64 blocked = clock.elapsed();
    tick.stop();
    std::printf("eit: the problem prepared in %lld ms, %d ticks of a 10 ms timer meanwhile\n", blocked,
                ticks);
    ASSERT_TRUE(window->workspace<InverseWorkspace>().runner().snapshot())
        << window->lastError().toStdString();
    EXPECT_EQ(window->workspace<InverseWorkspace>().runner().snapshot()->scene->modelType, "eit");
    ASSERT_GE(blocked, 100) << "the frame took too little time to tell";
    EXPECT_GE(ticks, int(blocked / 100));
}

TEST_F(InverseViewTest, SideBySideTrainsTwoFlows) {
    panel->findChild<QCheckBox*>(QStringLiteral("inverse.side_by_side"))->setChecked(true);
    ASSERT_TRUE(step(2));
    const auto s = view->displayedSnapshot();
    ASSERT_EQ(s->trainers.size(), 2u);
    EXPECT_TRUE(s->comparison);
    EXPECT_TRUE(s->trainers[0].rwpo);
    EXPECT_FALSE(s->trainers[1].rwpo);
    EXPECT_EQ(s->trainers[0].history.size(), 2u);
    EXPECT_EQ(s->trainers[1].history.size(), 2u);
    // The same frame for both (made once).
    EXPECT_EQ(s->trainers[0].config->frame, s->trainers[1].config->frame);
    const QRectF with = view->pictureRect(0), without = view->pictureRect(1);
    ASSERT_FALSE(without.isEmpty());
    EXPECT_FALSE(with.intersects(without));
    const QImage image = grabView();
    EXPECT_GT(pixelsLike(image, devicePixels(without), rwpoCurveColor(false)), 300);
    const QRect loss = devicePixels(view->plotRect(InverseView::Plot::Loss));
    EXPECT_GT(pixelsLike(image, loss, rwpoCurveColor(true)), 3);
    EXPECT_GT(pixelsLike(image, loss, rwpoCurveColor(false)), 3);
}

// --- Files ---

// File ▸ Export ▸ Trained model writes the posterior as flowscope-cli infer does: loadPosterior reads it back
// with the run's problem and the averaged parameters.
TEST_F(InverseViewTest, ExportWritesThePosteriorTheCliReads) {
    EXPECT_FALSE(
        window->workspace<InverseWorkspace>().exportModel(QStringLiteral("/nonexistent/none.safetensors")));
    ASSERT_TRUE(step(2));
    QTemporaryDir dir;
    ASSERT_TRUE(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("posterior.safetensors"));
    ASSERT_TRUE(window->workspace<InverseWorkspace>().exportModel(path)) << window->lastError().toStdString();
    ASSERT_TRUE(inverse::isPosteriorFile(path.toStdString()));
    const inverse::LoadedPosterior loaded = inverse::loadPosterior(path.toStdString());
    EXPECT_EQ(loaded.problem.modelType, "linear");
    const auto s = view->displayedSnapshot();
    EXPECT_EQ(loaded.flow->params().phi.K0, s->trainers[0].params->phi.K0);
    EXPECT_EQ(loaded.flow->params().phi.w, s->trainers[0].params->phi.w);
}

// File ▸ Open trained model on a saved posterior: a new run of the file's own problem, paused at iteration
// 0 with the file's parameters (the picture's samples are the saved flow's, from the same draws); Start and
// Reset keep those parameters, and choosing a problem forgets them. A file that is not a model is refused
// with the run untouched.
TEST_F(InverseViewTest, OpeningASavedPosteriorShowsItAndStartTrainsItOn) {
    ASSERT_TRUE(step(5));
    QTemporaryDir dir;
    ASSERT_TRUE(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("posterior.safetensors"));
    ASSERT_TRUE(window->workspace<InverseWorkspace>().exportModel(path)) << window->lastError().toStdString();
    const auto trained = view->displayedSnapshot();
    const flows::FlowParams<double> saved = *trained->trainers[0].params;

    // Another problem first, so that the open has something to replace.
    ASSERT_TRUE(panel->selectProblem(QStringLiteral("lorenz63")));
    ASSERT_TRUE(waitFor([&] {
        view->refresh();
        const auto s = view->displayedSnapshot();
        return s && s->scene && s->scene->d == 3;
    }));
    const QString junk = dir.filePath(QStringLiteral("junk.safetensors"));
    {
        QFile f(junk);
        ASSERT_TRUE(f.open(QIODevice::WriteOnly));
        f.write("not a model");
    }
    EXPECT_FALSE(window->openModelFile(junk));
    EXPECT_FALSE(window->lastError().isEmpty());
    EXPECT_EQ(view->displayedSnapshot()->scene->d, 3); // the Lorenz run goes on

    window->showPage(window->workspace<FlowsWorkspace>().view());
    ASSERT_TRUE(window->openModelFile(path)) << window->lastError().toStdString();
    EXPECT_EQ(window->activeWorkspace(), &window->workspace<InverseWorkspace>()); // its tab came to the front
    ASSERT_TRUE(waitFor([&] {
        view->refresh();
        const auto s = view->displayedSnapshot();
        return s && s->scene && s->scene->d == 2 && s->trainers[0].picture;
    }));
    auto s = view->displayedSnapshot();
    EXPECT_EQ(s->trainers[0].iteration, 0);
    EXPECT_EQ(s->trainers[0].params->phi.K0, saved.phi.K0);
    EXPECT_EQ(s->trainers[0].params->phi.w, saved.phi.w);
    // The picture's samples are the trained flow's, not a fresh initialization's.
    const inverse::Matrix opened = s->trainers[0].picture->samples;
    EXPECT_LT((opened - trained->trainers[0].picture->samples).cwiseAbs().maxCoeff(), 1e-12);
    auto* note = panel->findChild<QLabel*>(QStringLiteral("loaded"));
    ASSERT_NE(note, nullptr);
    EXPECT_TRUE(note->isVisibleTo(panel));
    EXPECT_TRUE(note->text().contains(QStringLiteral("posterior.safetensors"))) << note->text().toStdString();
    EXPECT_EQ(problemBox()->currentText(), QStringLiteral("posterior.safetensors (opened)"));

    // Start trains the opened parameters on (the panel's config carries them); Reset returns to them.
    const PosteriorRunConfig next = panel->config();
    ASSERT_TRUE(next.initialParams);
    EXPECT_EQ(next.initialParams->phi.K0, saved.phi.K0);
    EXPECT_EQ(next.problem->modelType, "linear");
    ASSERT_TRUE(step(2));
    EXPECT_NE(view->displayedSnapshot()->trainers[0].params->phi.K0, saved.phi.K0);
    button("reset")->click();
    ASSERT_TRUE(waitForIteration(0));
    EXPECT_EQ(view->displayedSnapshot()->trainers[0].params->phi.K0, saved.phi.K0);

    // Choosing a problem forgets the file.
    ASSERT_TRUE(panel->selectProblem(QStringLiteral("linear-gaussian")));
    EXPECT_FALSE(note->isVisibleTo(panel));
    EXPECT_EQ(problemBox()->currentText(), QStringLiteral("linear-gaussian"));
    EXPECT_EQ(problemBox()->findText(QStringLiteral("posterior.safetensors (opened)")), -1);
    ASSERT_TRUE(waitFor([&] {
        view->refresh();
        const auto now = view->displayedSnapshot();
        return now && now->trainers[0].iteration == 0 && now->trainers[0].params->phi.K0 != saved.phi.K0;
    }));
}

// --- Failures and layout ---

// A problem whose forward model blows up (Lorenz-63 with σ, r, β near 1000: forward Euler diverges): every
// step's loss is non-finite, the flow stops after twenty rejected steps, and the panel says so in red.
TEST_F(InverseViewTest, ANonFiniteLossStopsTheRunAndThePanelSaysSo) {
    QTemporaryDir dir;
    ASSERT_TRUE(dir.isValid());
    QFile file(dir.filePath(QStringLiteral("blow-up.json")));
    ASSERT_TRUE(file.open(QIODevice::WriteOnly));
    file.write(R"({"name": "blow-up", "model": {"type": "lorenz63", "dt": 0.01, "spin_up": 0, "window": 0.2,
                   "windows": 10}, "noise": 0.01, "prior": {"type": "gaussian", "mean": 1000, "sd": 100},
                   "truth": [10, 28, 2.6666666666666665],
                   "flow": {"rwpo": false, "frame": "prior", "iterations": 200, "batch": 16}})");
    file.close();
    panel->setProblemDirectory(dir.path());
    ASSERT_TRUE(panel->selectProblem(QStringLiteral("blow-up")));
    ASSERT_TRUE(window->workspace<InverseWorkspace>().runner().snapshot())
        << window->lastError().toStdString();
    button("start")->click(); // Resume: plays the new run
    ASSERT_TRUE(waitFor([&] {
        view->refresh();
        const auto s = view->displayedSnapshot();
        return s && !s->error.empty() && !s->playing;
    }));
    const auto s = view->displayedSnapshot();
    EXPECT_TRUE(s->trainers[0].stopped);
    // The forward model's non-finite outputs are samples outside its domain, counted (docs/inverse.md).
    EXPECT_TRUE(panel->warningText().contains(QStringLiteral("16 of the 16 samples outside")) &&
                panel->warningText().contains(QStringLiteral("training stopped")))
        << panel->warningText().toStdString();
    EXPECT_FALSE(window->workspace<InverseWorkspace>().runner().playing());
}

// Issue 32: side by side ("With and without RWPO") in a 1024 x 640 window, each unknown's summary line of the
// Lorenz-63 corner plot ("σ = 10 ± 0.0035 (truth 10)") is drawn whole, inside its trainer's picture, at
// device pixel ratio 1 and 2 (it was cut to "σ = 10 ± 0.00…"). The picture is the view's, at the view's size,
// painted from a snapshot made here (a real Lorenz-63 run takes seconds per picture).
TEST_F(InverseViewTest, TheSummaryLinesFitSideBySideAt1024) {
    window->resize(1024, 640);
    QApplication::processEvents();
    ASSERT_EQ(window->width(), 1024);
    const QSize size = view->size();
    auto scene = std::make_shared<PosteriorScene>();
    scene->name = scene->modelType = "lorenz63";
    scene->d = 3;
    scene->truth = inverse::Vector::Zero(3);
    *scene->truth << 10.0, 28.0, 8.0 / 3.0;
    scene->y = inverse::Vector::Zero(12);
    scene->noise = 0.5;
    auto snapshot = std::make_shared<PosteriorSnapshot>();
    snapshot->scene = scene;
    snapshot->comparison = true;
    for (const bool rwpo : {true, false}) {
        PosteriorState t;
        t.label = rwpo ? "with RWPO" : "without RWPO";
        t.rwpo = rwpo;
        t.iteration = t.iterations = 400;
        auto picture = std::make_shared<PosteriorPicture>();
        picture->iteration = 400;
        picture->summary.mean = *scene->truth + inverse::Vector::Constant(3, 0.00123);
        picture->summary.sd = inverse::Vector::Zero(3);
        picture->summary.sd << 0.003456, 0.01234, 0.0004567;
        picture->summary.relativeL1Error = 1.2e-4;
        picture->samples = inverse::Matrix(3, 200);
        for (Eigen::Index s = 0; s < picture->samples.cols(); ++s)
            for (Eigen::Index i = 0; i < 3; ++i)
                picture->samples(i, s) =
                    picture->summary.mean(i) + picture->summary.sd(i) * std::sin(double(s + 7 * i));
        t.picture = picture;
        snapshot->trainers.push_back(t);
    }
    InversePicture picture;
    picture.setPalette(view->palette());
    picture.setFont(view->font());
    picture.setSize(QSizeF(size));
    picture.show(snapshot);
    for (const double dpr : {1.0, 2.0}) {
        QImage image((QSizeF(size) * dpr).toSize(), QImage::Format_RGB32);
        image.setDevicePixelRatio(dpr);
        {
            QPainter p(&image);
            picture.paint(p);
        }
        for (std::size_t k = 0; k < 2; ++k) {
            const QRectF rect = picture.pictureRect(int(k));
            ASSERT_FALSE(rect.isEmpty());
            const auto lines = picture.summaryLines(k);
            ASSERT_GE(lines.size(), 3u)
                << "dpr " << dpr << ", picture " << k << ": " << rect.width() << " px wide";
            for (const auto& line : lines)
                EXPECT_FALSE(line.text.contains(QChar(0x2026))) << line.text.toStdString();
            ASSERT_EQ(lines.size(), 4u); // and the error (the font shrank to make room for it)
            EXPECT_TRUE(lines[3].text.startsWith(QStringLiteral("rel. L1 error 1.2")))
                << lines[3].text.toStdString();
            for (std::size_t i = 0; i < 3; ++i) {
                const std::string text = lines[i].text.toStdString();
                EXPECT_TRUE(lines[i].text.startsWith(InversePicture::unknownNames(*scene).value(int(i)) +
                                                     QStringLiteral(" = ")))
                    << text;
                EXPECT_TRUE(lines[i].text.contains(QStringLiteral(" ± "))) << text;
                EXPECT_TRUE(rect.contains(lines[i].rect))
                    << text << " at x " << lines[i].rect.left() << ".." << lines[i].rect.right()
                    << ", picture " << rect.left() << ".." << rect.right();
            }
        }
    }
}

} // namespace
} // namespace flowscope::test
