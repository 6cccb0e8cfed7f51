// PlotsPanel: the charts hold exactly the recorded observables of a hand-made history, read incrementally
// while the history only grows and again after a rewind; undefined values draw nothing; gaps stay gaps.
// Set FLOWSCOPE_SAVE_SHOTS=<dir> to write the panel in a dark and a light palette as PNGs.
#include "../TinyScenes.h"
#include "GuiEnvironment.h"

#include "engine/dynamics/Simulation.h"
#include "engine/runner/RunHistory.h"
#include "engine/runner/SimulationRunner.h"
#include "ui/panels/PlotsPanel.h"

#include <QDir>
#include <QImage>
#include <QLabel>
#include <QPalette>
#include <QtCharts/QChart>
#include <QtCharts/QLineSeries>
#include <QtCharts/QValueAxis>
#include <QtTest/QTest>

#include <gtest/gtest.h>

#include <QtCharts/QChart>
#include <QtCharts/QValueAxis>
#include <cmath>

#include <functional>
#include <limits>

namespace flowscope::test {
namespace {

constexpr double kDt = 0.02;

// Frame i of a made-up run: t = i dt, kinetic e^{-t}, energy 0.5 + t, entropy ln 4 - t/10, 3 clusters, and
// Σ = diag(2, 0.5 e^{-t}, 0): eigenvalues 2 > 0.5 e^{-t} > 0 (the last has no place on a log axis).
RecordedFrame frame(long i) {
    RecordedFrame f;
    f.t = double(i) * kDt;
    f.step = i;
    f.obs.kinetic = std::exp(-f.t);
    f.obs.energy = 0.5 + f.t;
    f.obs.entropy = std::log(4.0) - f.t / 10.0;
    f.obs.clusters = 3;
    f.obs.rank = 2;
    f.obs.mean = Vec::Zero(3);
    f.obs.cov = Mat::Zero(3, 3);
    f.obs.cov.diagonal() << 2.0, 0.5 * std::exp(-f.t), 0.0;
    return f;
}

void fill(RunHistory& h, long from, long to) {
    for (long i = from; i < to; ++i) h.append(frame(i));
}

// A history of frames [0, n), each changed by edit() first where one is given.
std::shared_ptr<RunHistory> historyOf(long n, const std::function<void(RecordedFrame&)>& edit = {}) {
    auto h = std::make_shared<RunHistory>();
    for (long i = 0; i < n; ++i) {
        RecordedFrame f = frame(i);
        if (edit) edit(f);
        h->append(f);
    }
    return h;
}

std::shared_ptr<const Snapshot> snapshotOf(const std::shared_ptr<RunHistory>& history,
                                           std::uint64_t generation = 1) {
    auto s = std::make_shared<Snapshot>();
    s->generation = generation;
    s->history = history;
    return s;
}

// The mean cosine chart: the recorded ρ, and in its title the rate of 1 − ρ fitted to the second half of the
// run beside the law of the scene's normalization (post: e^{−2t}; pre and peri: t^{−2}); no rate without one.
TEST(PlotsPanel, TheMeanCosineTitleFitsTheConsensusRateOfTheScheme) {
    FLOWSCOPE_REQUIRE_GUI();
    PlotsPanel panel;
    const auto exponential =
        historyOf(200, [](RecordedFrame& f) { f.obs.meanCosine = 1.0 - std::exp(-1.5 * f.t); });
    panel.setSnapshot(snapshotOf(exponential));
    EXPECT_EQ(panel.pointCount("mean cosine"), 200);
    EXPECT_TRUE(panel.rateText().isEmpty()); // no normalization: no law to compare with
    Scene scene = tinyScene();               // V = -0.4 I: no consensus law
    scene.attention.sphere = true;           // post-LN
    panel.setScene(scene);
    EXPECT_TRUE(panel.rateText().isEmpty());
    scene.attention.heads = {HeadParams{Mat::Identity(2, 2), Mat::Identity(2, 2), Mat::Identity(2, 2)}};
    panel.setScene(scene);
    EXPECT_EQ(panel.rateText(),
              QStringLiteral("1 − ρ ∝ e<sup>−1.50 t</sup>; post-LN predicts e<sup>−2t</sup>"));

    const auto power =
        historyOf(200, [](RecordedFrame& f) { f.obs.meanCosine = 1.0 - 0.5 / ((1 + f.t) * (1 + f.t)); });
    scene.attention.sphere = false;
    scene.attention.normalization = Normalization::Pre;
    panel.setScene(scene);
    panel.setSnapshot(snapshotOf(power, 2));
    // 1 − ρ = 0.5 (1 + t)^{−2} against log t over t in [2, 4]: a slope of −2 t/(1 + t), from −1.33 to −1.6.
    const QString text = panel.rateText();
    EXPECT_TRUE(text.startsWith(QStringLiteral("1 − ρ ∝ t<sup>−1."))) << text.toStdString();
    EXPECT_TRUE(text.endsWith(QStringLiteral("pre-LN predicts t<sup>−2</sup>"))) << text.toStdString();
}

// The equiangular prediction: n orthonormal tokens on the sphere (cosines all 0, radii 1) under softmax with
// Q = K = V = I stay equiangular, and their ρ(t) is the reduced ODE's. The panel's dashed curve, made from
// the run's first frame, meets the simulation's measured mean cosine (RK4, h = 0.01) at every shared time; a
// Gaussian start has no prediction, and a live edit drops it.
TEST(PlotsPanel, AnEquiangularStartDrawsThePredictedMeanCosine) {
    FLOWSCOPE_REQUIRE_GUI();
    Scene scene = tinyScene(4, 256);
    scene.d = 4;
    const Mat I = Mat::Identity(4, 4);
    scene.attention.heads = {HeadParams{I, I, I}};
    scene.attention.sphere = true;
    scene.initial.kind = InitKind::Points;
    scene.initial.points = I;
    scene.integrator.method = Method::Rk4;
    scene.integrator.T = 2.56;
    Simulation sim(scene);
    sim.run();
    auto history = std::make_shared<RunHistory>();
    for (const Frame& f : sim.history())
        history->append({f.t, f.step, f.obs, std::make_shared<const Tokens>(f.tokens)});

    PlotsPanel panel;
    panel.setScene(scene);
    panel.setSnapshot(snapshotOf(history));
    const QList<QPointF> predicted = panel.points("rho predicted"), measured = panel.points("mean cosine");
    ASSERT_EQ(predicted.size(), 257);
    EXPECT_EQ(predicted.front(), QPointF(0.0, 0.0));
    EXPECT_GT(predicted.back().y(), 0.5); // the tokens gather
    int compared = 0;
    for (const QPointF& p : predicted)
        for (const QPointF& m : measured)
            if (std::abs(m.x() - p.x()) < 1e-9) {
                EXPECT_NEAR(m.y(), p.y(), 1e-8) << "t = " << p.x();
                ++compared;
            }
    EXPECT_GE(compared, 200);

    Scene edited = scene;
    edited.attention.beta = 3.0;
    panel.setScene(edited, true); // a live edit: the prediction was for β = 1
    EXPECT_EQ(panel.pointCount("rho predicted"), 0);

    PlotsPanel gaussian;
    Scene cloud = scene;
    cloud.initial.kind = InitKind::Gaussian;
    cloud.initial.mean = Vec::Zero(4);
    cloud.initial.cov = I;
    Simulation other(cloud);
    other.step();
    auto otherHistory = std::make_shared<RunHistory>();
    for (const Frame& f : other.history())
        otherHistory->append({f.t, f.step, f.obs, std::make_shared<const Tokens>(f.tokens)});
    gaussian.setScene(cloud);
    gaussian.setSnapshot(snapshotOf(otherHistory));
    EXPECT_EQ(gaussian.pointCount("rho predicted"), 0);
    EXPECT_GT(gaussian.pointCount("mean cosine"), 0);
}

// The influence chart (docs/math/theory.md#influence): for a scene with positional decay that the profile
// describes, the predicted profile at the newest frame's time against the source position, exactly
// influenceProfile's; its title says whether it is U-shaped; a live edit of lambda predicts for the new
// value; a scene without decay has no chart, and the time cursor never lands on it.
TEST(PlotsPanel, PositionalDecayDrawsThePredictedInfluenceAgainstPosition) {
    FLOWSCOPE_REQUIRE_GUI();
    Scene scene = tinyScene(64);
    const Mat I = Mat::Identity(2, 2);
    scene.attention.heads = {HeadParams{I, I, I}};
    scene.attention.sphere = true;
    scene.attention.masked = true;
    scene.attention.positionalDecay = 1.0;
    PlotsPanel panel;
    panel.setScene(scene);
    EXPECT_TRUE(panel.showsInfluence());
    // Masked, with decay: no interaction energy, and its chart says so; unmasked without decay it has one.
    EXPECT_TRUE(panel.energyTitle().contains(QStringLiteral("defined for softmax")))
        << panel.energyTitle().toStdString();
    Scene plain = scene;
    plain.attention.masked = false;
    plain.attention.positionalDecay = 0.0;
    panel.setScene(plain);
    EXPECT_EQ(panel.energyTitle(), QStringLiteral("Interaction energy"));
    panel.setScene(scene);
    EXPECT_EQ(panel.pointCount("influence predicted"), 0); // no frame yet
    panel.setSnapshot(snapshotOf(historyOf(51)));          // the newest frame at t = 1
    const auto expectProfile = [&](const Scene& s, double t) {
        const std::vector<double> profile = influenceProfile(influenceSetting(s), t);
        const QList<QPointF> drawn = panel.points("influence predicted");
        ASSERT_EQ(drawn.size(), qsizetype(profile.size()));
        for (std::size_t k = 0; k < profile.size(); ++k) {
            EXPECT_EQ(drawn[qsizetype(k)].x(), double(k));
            EXPECT_EQ(drawn[qsizetype(k)].y(), profile[k]) << k;
        }
    };
    expectProfile(scene, 50 * kDt);
    const ProfileShape shape = profileShape(influenceProfile(influenceSetting(scene), 50 * kDt));
    ASSERT_TRUE(shape.uShaped);
    EXPECT_TRUE(panel.influenceTitle().contains(QStringLiteral("predicted at t = 1 ")));
    EXPECT_TRUE(
        panel.influenceTitle().contains(QStringLiteral("U-shaped, least at position %1").arg(shape.argmin)))
        << panel.influenceTitle().toStdString();

    Scene edited = scene;
    edited.attention.positionalDecay = 2.0;
    panel.setScene(edited, true);
    expectProfile(edited, 50 * kDt);

    panel.setCursorTime(0.5);
    for (QAbstractSeries* s : panel.chart(PlotsPanel::Plot::Influence)->series())
        if (const auto* line = qobject_cast<QLineSeries*>(s); line && line->name().isEmpty())
            EXPECT_EQ(line->count(), 0); // the cursor series: a time has no place on a position axis

    scene.attention.positionalDecay = 0.0;
    panel.setScene(scene);
    EXPECT_FALSE(panel.showsInfluence());
    EXPECT_EQ(panel.pointCount("influence predicted"), 0);
}

TEST(PlotsPanel, PlotsExactlyTheRecordedObservables) {
    FLOWSCOPE_REQUIRE_GUI();
    PlotsPanel panel;
    const auto history = historyOf(50);
    panel.setSnapshot(snapshotOf(history));

    for (const char* name : {"kinetic", "energy", "entropy", "clusters", "rank", "lambda1", "lambda2"})
        ASSERT_EQ(panel.pointCount(name), 50) << name;
    const QList<QPointF> kinetic = panel.points("kinetic");
    const QList<QPointF> energy = panel.points("energy");
    const QList<QPointF> entropy = panel.points("entropy");
    const QList<QPointF> clusters = panel.points("clusters");
    for (long i = 0; i < 50; ++i) {
        const double t = double(i) * kDt;
        EXPECT_EQ(kinetic[i], QPointF(t, std::exp(-t)));
        EXPECT_EQ(energy[i], QPointF(t, 0.5 + t));
        EXPECT_EQ(entropy[i], QPointF(t, std::log(4.0) - t / 10.0));
        EXPECT_EQ(clusters[i], QPointF(t, 3.0));
    }

    // The spectrum, largest first; the zero eigenvalue is left out of the log chart.
    ASSERT_EQ(panel.eigenvalueIndices(), (std::vector<int>{0, 1, 2}));
    const QList<QPointF> l1 = panel.points(PlotsPanel::eigenvalueCurve(0));
    const QList<QPointF> l2 = panel.points(PlotsPanel::eigenvalueCurve(1));
    for (long i = 0; i < 50; ++i) {
        const double t = double(i) * kDt;
        EXPECT_DOUBLE_EQ(l1[i].y(), 2.0);
        EXPECT_DOUBLE_EQ(l2[i].y(), 0.5 * std::exp(-t));
        EXPECT_DOUBLE_EQ(l2[i].x(), t);
    }
    EXPECT_EQ(panel.pointCount(PlotsPanel::eigenvalueCurve(2)), 0);

    // The dashed rank threshold is rankTol × λmax, and follows the tolerance.
    ASSERT_EQ(panel.pointCount("rank threshold"), 50);
    EXPECT_DOUBLE_EQ(panel.points("rank threshold")[7].y(), 1e-6 * 2.0);
    panel.setRankTolerance(1e-3);
    EXPECT_DOUBLE_EQ(panel.points("rank threshold")[7].y(), 1e-3 * 2.0);
    EXPECT_EQ(panel.framesRead(), 50u); // the tolerance needs no re-read
}

// A count of 2000 clusters and a rank of 2 on one axis made the rank read as 0: the rank has the clusters
// chart's right-hand axis, scaled to it, and the count keeps the left one, scaled to the count.
TEST(PlotsPanel, TheRankHasItsOwnAxisBesideTheClusterCount) {
    FLOWSCOPE_REQUIRE_GUI();
    PlotsPanel panel;
    panel.setSnapshot(snapshotOf(historyOf(20, [](RecordedFrame& f) { f.obs.clusters = 2000; })));
    QChart* chart = panel.chart(PlotsPanel::Plot::Clusters);
    const auto axisOf = [chart](const char* name, Qt::Alignment side) -> QValueAxis* {
        for (QAbstractSeries* s : chart->series())
            if (s->name() == QLatin1String(name))
                for (QAbstractAxis* a : s->attachedAxes())
                    if (a->orientation() == Qt::Vertical && a->alignment() == side)
                        return qobject_cast<QValueAxis*>(a);
        return nullptr;
    };
    QValueAxis* right = axisOf("rank", Qt::AlignRight);
    QValueAxis* left = axisOf("clusters", Qt::AlignLeft);
    ASSERT_NE(right, nullptr);
    ASSERT_NE(left, nullptr);
    EXPECT_EQ(axisOf("rank", Qt::AlignLeft), nullptr);
    EXPECT_EQ(right->min(), 0.0);
    EXPECT_GE(right->max(), 2.0);
    EXPECT_LE(right->max(), 4.0); // the rank fills at least half its axis
    EXPECT_GE(left->max(), 2000.0);
}

// The charts' titles are whole: labels above the charts, which wrap in a narrow dock (QChart elided its own
// titles to "Interaction e..." even at 390 px), each showing all of its text.
TEST(PlotsPanel, TitlesAreShownWhole) {
    FLOWSCOPE_REQUIRE_GUI();
    for (const int width : {390, 220}) {
        PlotsPanel panel;
        panel.resize(width, 800);
        panel.show();
        QCoreApplication::processEvents();
        const QList<QLabel*> titles = panel.findChildren<QLabel*>();
        ASSERT_EQ(titles.size(), 7); // the influence chart's is hidden without positional decay
        QStringList texts;
        for (const QLabel* t : titles) {
            if (!t->isVisibleTo(&panel)) continue;
            texts << t->text();
            EXPECT_LE(t->heightForWidth(t->contentsRect().width()) - t->contentsMargins().top() -
                          t->contentsMargins().bottom(),
                      t->contentsRect().height())
                << width << " px: " << t->text().toStdString();
        }
        EXPECT_TRUE(texts.contains(QStringLiteral("Interaction energy")));
        EXPECT_TRUE(panel.chart(PlotsPanel::Plot::Energy)->title().isEmpty()); // no elided chart title
    }
}

TEST(PlotsPanel, AppendsOnlyNewFramesAndRereadsAfterARewind) {
    FLOWSCOPE_REQUIRE_GUI();
    PlotsPanel panel;
    const auto history = historyOf(30);
    panel.setSnapshot(snapshotOf(history));
    EXPECT_EQ(panel.framesRead(), 30u);
    panel.setSnapshot(snapshotOf(history)); // nothing new: nothing read
    EXPECT_EQ(panel.framesRead(), 30u);
    const QList<QPointF> before = panel.points("kinetic");

    fill(*history, 30, 45);
    panel.setSnapshot(snapshotOf(history));
    EXPECT_EQ(panel.framesRead(), 45u) << "only the 15 new frames are read";
    const QList<QPointF> after = panel.points("kinetic");
    ASSERT_EQ(after.size(), 45);
    EXPECT_EQ(after.mid(0, 30), before);
    EXPECT_EQ(after[44], QPointF(44 * kDt, std::exp(-44 * kDt)));

    // "Continue from here" at frame 9: the revision changes, everything is read again.
    history->truncateAfter(9 * kDt + 1e-9);
    ASSERT_EQ(history->size(), 10u);
    panel.setSnapshot(snapshotOf(history));
    EXPECT_EQ(panel.framesRead(), 55u);
    EXPECT_EQ(panel.points("kinetic"), before.mid(0, 10));
    fill(*history, 10, 12);
    panel.setSnapshot(snapshotOf(history));
    EXPECT_EQ(panel.framesRead(), 57u);
    EXPECT_EQ(panel.pointCount("kinetic"), 12);

    // Another scene (a new generation) is another run, even on the same history object.
    panel.setSnapshot(snapshotOf(history, 2));
    EXPECT_EQ(panel.framesRead(), 69u);
    EXPECT_EQ(panel.pointCount("kinetic"), 12);

    // No history: empty charts.
    panel.setSnapshot(nullptr);
    EXPECT_EQ(panel.pointCount("kinetic"), 0);
    EXPECT_EQ(panel.pointCount(PlotsPanel::eigenvalueCurve(0)), 0);
}

TEST(PlotsPanel, UndefinedValuesDrawNothingAndBlowUpsLeaveGaps) {
    FLOWSCOPE_REQUIRE_GUI();
    PlotsPanel panel;
    const auto history = historyOf(20, [](RecordedFrame& f) {
        const long i = f.step;
        f.obs.energy = kNaN; // this variant has no interaction energy
        if (i >= 8 && i < 11) f.obs.kinetic = std::numeric_limits<double>::infinity();
        if (i == 15) f.obs.entropy = kNaN;
        if (i == 19) f.obs.cov(0, 0) = kNaN; // a blown-up covariance has no spectrum
    });
    panel.setSnapshot(snapshotOf(history));

    EXPECT_EQ(panel.pointCount("energy"), 0);
    EXPECT_EQ(panel.segmentCount("energy"), 0);
    EXPECT_EQ(panel.pointCount("kinetic"), 17);
    EXPECT_EQ(panel.segmentCount("kinetic"), 2);
    for (const QPointF& p : panel.points("kinetic")) EXPECT_TRUE(std::isfinite(p.y()));
    EXPECT_EQ(panel.pointCount("entropy"), 19);
    EXPECT_EQ(panel.segmentCount("entropy"), 2);
    EXPECT_EQ(panel.pointCount(PlotsPanel::eigenvalueCurve(0)), 19);
    EXPECT_EQ(panel.pointCount("rank threshold"), 19);
}

TEST(PlotsPanel, DecimatesLongRunsTheSameWayIncrementallyOrAtOnce) {
    FLOWSCOPE_REQUIRE_GUI();
    auto history = std::make_shared<RunHistory>();
    PlotsPanel incremental;
    const long total = 9001;
    for (long i = 0; i < total; i += 500) {
        fill(*history, i, std::min(i + 500, total));
        incremental.setSnapshot(snapshotOf(history));
    }
    PlotsPanel atOnce;
    atOnce.setSnapshot(snapshotOf(history));

    EXPECT_EQ(atOnce.stride(), 4); // 9001 frames: 2251 multiples of 4 fit in 4000, 4501 of 2 do not
    EXPECT_EQ(incremental.stride(), 4);
    const QList<QPointF> a = atOnce.points("kinetic"), b = incremental.points("kinetic");
    EXPECT_EQ(a, b);
    ASSERT_LE(a.size(), qsizetype(PlotsPanel::kMaxPoints + 1));
    ASSERT_EQ(a.size(), 2251);
    EXPECT_EQ(a[1].x(), 4 * kDt);
    EXPECT_EQ(a.back().x(), 9000 * kDt); // the newest frame is always there

    // A newest frame off the stride still shows, and is replaced when the next one arrives.
    fill(*history, total, total + 2);
    atOnce.setSnapshot(snapshotOf(history));
    EXPECT_EQ(atOnce.pointCount("kinetic"), 2252);
    EXPECT_EQ(atOnce.points("kinetic").back().x(), double(total + 1) * kDt);
}

TEST(PlotsPanel, DrawsTheScrubCursorOnEveryChart) {
    FLOWSCOPE_REQUIRE_GUI();
    PlotsPanel panel;
    const auto history = historyOf(60);
    panel.setSnapshot(snapshotOf(history));
    panel.setCursorTime(0.5);
    const auto cursorOn = [](QChart* chart, double t) {
        for (QAbstractSeries* s : chart->series()) {
            const auto* line = qobject_cast<QLineSeries*>(s);
            if (line && line->count() == 2 && line->at(0).x() == t && line->at(1).x() == t &&
                line->at(0).y() < line->at(1).y())
                return true;
        }
        return false;
    };
    for (auto plot : {PlotsPanel::Plot::Energy, PlotsPanel::Plot::Kinetic, PlotsPanel::Plot::Entropy,
                      PlotsPanel::Plot::Spectrum, PlotsPanel::Plot::Clusters})
        EXPECT_TRUE(cursorOn(panel.chart(plot), 0.5)) << int(plot);
    panel.setCursorTime(kNaN);
    EXPECT_FALSE(cursorOn(panel.chart(PlotsPanel::Plot::Kinetic), 0.5));
}

QPalette paletteOf(QColor window, QColor base, QColor text, QColor highlight) {
    QPalette p;
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Highlight, highlight);
    return p;
}

TEST(PlotsPanel, FollowsTheDarkAndTheLightPalette) {
    FLOWSCOPE_REQUIRE_GUI();
    PlotsPanel panel;
    const auto history = historyOf(400, [](RecordedFrame& f) {
        f.obs.clusters = int(1 + 40 * std::exp(-f.t));
        f.obs.entropy = std::log(400.0) * std::exp(-0.5 * f.t);
        f.obs.energy = 0.5 * std::exp(2.0 - 2.0 * std::exp(-f.t));
        f.obs.cov.diagonal() << 2.0, 0.5 * std::exp(-2.0 * f.t), 1e-3 * std::exp(-4.0 * f.t);
        f.obs.rank = 1 + (f.obs.cov(1, 1) > 2e-6) + (f.obs.cov(2, 2) > 2e-6);
    });
    panel.resize(400, 800); // the six charts at their least height: no scroll bar at the right edge
    panel.setSnapshot(snapshotOf(history));
    panel.setCursorTime(3.0);
    panel.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&panel));

    const QString dir = qEnvironmentVariable("FLOWSCOPE_SAVE_SHOTS");
    const struct {
        const char* file;
        QPalette palette;
        bool dark;
    } looks[] = {{"plots_dark.png",
                  paletteOf({0x23, 0x25, 0x2b}, {0x1a, 0x1c, 0x21}, {0xe6, 0xe8, 0xee}, {0x3d, 0x8b, 0xd9}),
                  true},
                 {"plots_light.png",
                  paletteOf({0xef, 0xef, 0xef}, Qt::white, {0x20, 0x20, 0x20}, {0x30, 0x8c, 0xc6}), false}};
    for (const auto& look : looks) {
        panel.setPalette(look.palette);
        QTest::qWait(50);
        const QImage img = panel.grab().toImage();
        if (!dir.isEmpty()) {
            QDir().mkpath(dir);
            img.save(QDir(dir).filePath(look.file));
        }
        // The chart background follows the palette's base colour.
        const QColor corner = img.pixelColor(img.width() - 3, img.height() / 2);
        EXPECT_EQ(corner.lightness() < 128, look.dark) << look.file << " " << corner.name().toStdString();
        EXPECT_EQ(panel.chart(PlotsPanel::Plot::Kinetic)->backgroundBrush().color(),
                  look.palette.color(QPalette::Base));
    }
}

} // namespace
} // namespace flowscope::test
