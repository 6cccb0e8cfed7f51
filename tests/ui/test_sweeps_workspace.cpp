// The Sweeps tab: a sweep run in the background on the workspace's LocalSweep, drawn as it fills in; its
// cells against Prop 2's exact t_max, its table against the engine's serial one, Cancel and close while
// running, the hover readout and a click that opens the cell's scene in the Particles workspace.
#include "MainWindowFixture.h"
#include "UiTestUtil.h"

#include "engine/backend/Registry.h"
#include "engine/gaussian/Cone.h"
#include "engine/gaussian/Regime.h"
#include "engine/sweep/SweepTable.h"
#include "render/picture/Colormap.h"
#include "ui/panels/SweepPanel.h"
#include "ui/shell/MainWindow.h"
#include "ui/views/ConeView.h"
#include "ui/views/SweepView.h"
#include "ui/workspaces/flows/FlowsWorkspace.h"
#include "ui/workspaces/particles/ParticlesWorkspace.h"
#include "ui/workspaces/sweeps/SweepsWorkspace.h"

#include <QElapsedTimer>
#include <QFile>
#include <QLabel>
#include <QMouseEvent>
#include <QTabWidget>

#include <cmath>
#include <cstring>
#include <fstream>
#include <thread>

namespace flowscope::test {
namespace {

// Q = K = I, V = 0.1 I on the trace-1 disc: B = 0.2 I commutes with every Σ0, so Prop 2 is exact there:
// t_max = 1 / (0.1 (1 + r)), r = |(x, y)|. Five x by four y values (not square: a swap of x and y shows);
// the cells outside the disc are skipped.
const char* kDisc = R"({"name": "disc-cut", "mode": "moments", "skip_invalid": true,
  "base": {"d": 2, "n": 2, "initial": {"kind": "gaussian", "mean": 0, "cov": 1},
           "attention": {"type": "softmax", "heads": [{"Q": 1, "K": 1, "V": 0.1}]},
           "integrator": {"method": "rk4", "T": 20, "steps": 20, "rtol": 1e-10, "atol": 1e-12},
           "moments": {"tol_high": 1000, "grid": {"nu": 1, "nc": 1, "limits": [0, 0, 0, 0]}}},
  "axes": [{"pointer": ["/moments/grid/limits/0", "/moments/grid/limits/1"], "name": "x", "range": {"lin": [-0.9, 0.9, 5]}},
           {"pointer": ["/moments/grid/limits/2", "/moments/grid/limits/3"], "name": "y", "range": {"lin": [-0.9, 0.9, 4]}}],
  "measures": ["t_max", "prop2_t_max", "prop2_blow_up", "outcomes"]})";

// A cheap particle sweep over beta x n, two replicates.
const char* kParticles = R"({"name": "tiny",
  "base": {"d": 2, "n": 12, "initial": {"kind": "gaussian", "mean": [0, 0], "cov": [[1, 0], [0, 1]]},
           "attention": {"type": "softmax", "beta": 1, "heads": [{"Q": 1, "K": 1, "V": [[1, 0.2], [0, 1]]}]},
           "integrator": {"method": "rk4", "T": 2, "steps": 10}, "output": {"every": 2, "cluster_tol": 0.05}},
  "axes": [{"pointer": "/attention/beta", "values": [0.5, 2, 4]}, {"pointer": "/n", "values": [8, 12]}],
  "measures": ["clusters", "rank", {"time_to_clusters": 3}, "energy"],
  "replicates": 2})";

// 64 runs of about a tenth of a second each: long enough to cancel in the middle.
const char* kSlow = R"({"name": "slow",
  "base": {"d": 2, "n": 160, "initial": {"kind": "gaussian", "mean": [0, 0], "cov": [[1, 0], [0, 1]]},
           "attention": {"type": "softmax", "beta": 1, "heads": [{"Q": 1, "K": 1, "V": 1}]},
           "integrator": {"method": "rk4", "T": 2, "steps": 300}, "output": {"every": 100}},
  "axes": [{"pointer": "/attention/beta", "range": {"lin": [1, 4, 8]}}, {"pointer": "/n", "values": [150, 160]}],
  "measures": ["clusters"], "replicates": 4})";

class SweepsWorkspaceTest : public MainWindowFilesFixture {
  protected:
    SweepsWorkspaceTest() : MainWindowFilesFixture(QSize(1280, 800)) {}

    void ready() override {
        window->showPage(window->workspace<SweepsWorkspace>().view());
        QTest::qWait(20);
    }
    SweepsWorkspace& sweeps() { return window->workspace<SweepsWorkspace>(); }
    SweepView* view() { return sweeps().view(); }

    QString writeSpec(const char* name, const char* text) {
        const QString p = path(name);
        std::ofstream(QFile::encodeName(p).toStdString()) << text;
        return p;
    }
    // Opens and runs a spec, and waits for its end.
    void runToEnd(const char* text, int threads = 2) {
        ASSERT_TRUE(sweeps().openSweep(writeSpec("spec.json", text))) << sweeps().lastError().toStdString();
        ASSERT_TRUE(sweeps().run(threads)) << sweeps().lastError().toStdString();
        waitForEnd();
        ASSERT_EQ(sweeps().runner().progress().state, LocalSweepProgress::State::Finished)
            << sweeps().runner().progress().error;
    }
    // Starts the slow sweep and waits until `done` runs have finished.
    void startSlow(int threads, long done) {
        ASSERT_TRUE(sweeps().openSweep(writeSpec("slow.json", kSlow)));
        ASSERT_TRUE(sweeps().run(threads));
        ASSERT_TRUE(waitFor([&] { return sweeps().runner().progress().done >= done; }));
    }
    // Waits until the sweep has ended (finished, failed or cancelled).
    void waitForEnd() {
        waitFor([&] { return !sweeps().running(); });
        sweeps().poll();
    }
    QPoint centre(std::size_t i, std::size_t j) {
        return view()->picture().cellRect({i, j}).center().toPoint();
    }
    QTabWidget* tabs() { return qobject_cast<QTabWidget*>(window->centralWidget()); }
};

TEST_F(SweepsWorkspaceTest, TheWorkspaceRegistersAndItsPageShows) {
    ASSERT_EQ(tabs()->count(), 7);
    EXPECT_EQ(tabs()->tabText(5), QStringLiteral("Sweeps"));
    EXPECT_EQ(tabs()->currentWidget(), view());
    EXPECT_EQ(window->activeWorkspace(), &sweeps());
    EXPECT_TRUE(sweeps().panel()->isVisible()); // the Sweeps tab raised its panel
    // The shipped sweeps are offered.
    for (const char* name : {"disc-tmax", "fig11-ranks-l2", "fig4-ranks-softmax", "sphere-beta-n"})
        EXPECT_GE(sweeps().panel()->sweepBox()->findText(QString::fromLatin1(name)), 0) << name;
    window->showPage(window->workspace<FlowsWorkspace>().view());
    EXPECT_FALSE(sweeps().panel()->isVisible());
}

TEST_F(SweepsWorkspaceTest, TheDiscCellsDrawnAreProp2sTMax) {
    runToEnd(kDisc);
    const SweepPicture& picture = view()->picture();
    ASSERT_EQ(picture.kind(), SweepPicture::Kind::Heatmap);
    const SweepHeat& heat = picture.heat();
    ASSERT_EQ(heat.nx(), 5u);
    ASSERT_EQ(heat.ny(), 4u);
    const QImage shot = view()->grab().toImage();
    const double dpr = view()->devicePixelRatioF();
    int inside = 0;
    for (std::size_t j = 0; j < heat.ny(); ++j)
        for (std::size_t i = 0; i < heat.nx(); ++i) {
            const double x = heat.xLevels[i], y = heat.yLevels[j];
            const std::size_t k = heat.index(i, j);
            EXPECT_EQ(heat.rows[k], 1) << x << ", " << y;
            const QPoint c = centre(i, j) * dpr;
            if (x * x + y * y >= 1) { // outside the disc: run, no value, grey
                EXPECT_EQ(heat.numbers[k], 0) << x << ", " << y;
                continue;
            }
            ++inside;
            const double exact = 1 / (0.1 * (1 + std::hypot(x, y)));
            EXPECT_NEAR(heat.mean[k], exact, 1e-6 * exact) << x << ", " << y;
            EXPECT_EQ(heat.regime[k], 1);
            // The pixel at the cell's centre has the colour bar's colour of that value.
            const QColor want = viridis(heat.unit(exact)), got = shot.pixelColor(c);
            EXPECT_NEAR(got.red(), want.red(), 3) << x << ", " << y;
            EXPECT_NEAR(got.green(), want.green(), 3) << x << ", " << y;
            EXPECT_NEAR(got.blue(), want.blue(), 3) << x << ", " << y;
        }
    EXPECT_EQ(inside, 12);
    // The colour bar spans the exact values: from the rim's 1/(0.1 (1 + r_max)) to the centre-most cell's.
    EXPECT_NEAR(heat.hi, 1 / (0.1 * (1 + std::hypot(0.0, 0.3))), 1e-5);
    EXPECT_NEAR(heat.lo, 1 / (0.1 * (1 + std::hypot(0.9, 0.3))), 1e-5);
    saveShot(*window, QStringLiteral("sweeps-disc.png"));
}

TEST_F(SweepsWorkspaceTest, TheTableEqualsTheEnginesSerialTableAndIsSavedAsTheCliWritesIt) {
    runToEnd(kParticles);
    const SweepSpec& spec = *sweeps().spec();
    ASSERT_EQ(spec.runs(), 12);
    std::map<long, SweepJournalEntry> serial;
    for (long r = 0; r < spec.runs(); ++r) serial[r] = timedSweepRun(spec, r, {});
    const SweepTable mine = sweepTableOf(spec, sweeps().runner().entries()),
                     theirs = sweepTableOf(spec, serial);
    ASSERT_EQ(mine.columns, theirs.columns);
    for (std::size_t c = 0; c < mine.columns.size(); ++c) {
        ASSERT_EQ(mine.values[c].size(), std::size_t(spec.runs()));
        EXPECT_EQ(std::memcmp(mine.values[c].data(), theirs.values[c].data(), mine.values[c].size() * 8), 0)
            << mine.columns[c];
    }
    // Save table: the CLI's results.csv, byte for byte.
    ASSERT_TRUE(sweeps().saveTable(path("app"))) << sweeps().lastError().toStdString();
    ASSERT_TRUE(QDir().mkpath(path("engine")));
    writeSweepTable(path("engine").toStdString(), spec, serial, {});
    QFile a(path("app/results.csv")), b(path("engine/results.csv"));
    ASSERT_TRUE(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
    const QByteArray csv = a.readAll();
    EXPECT_EQ(csv, b.readAll());
    EXPECT_TRUE(csv.startsWith("run,cell,replicate,seed,valid,beta,n,clusters,"));
    EXPECT_EQ(readSweepTable(path("app").toStdString()).column("clusters"), theirs.column("clusters"));
}

// The panel's Backend: on a GPU backend each worker opens its own, and the table is the engine's serial table
// on that backend bit for bit (not the CPU's: float32 on the device), with the backend in its record.
TEST_F(SweepsWorkspaceTest, OnAGpuBackendTheTableIsTheEnginesOnThatBackend) {
    int ran = 0;
    for (const std::string id : {"gl", "vulkan"}) {
        SCOPED_TRACE(id);
        ASSERT_TRUE(sweeps().openSweep(writeSpec("spec.json", kParticles)));
        const std::shared_ptr<const SweepSpec> shown = sweeps().spec(); // runToEnd opens it again
        const SweepSpec& spec = *shown;
        // The engine's serial table on the backend, on a thread of its own as the app's workers (this thread
        // has the views' OpenGL context current).
        std::map<long, SweepJournalEntry> serial, cpu;
        std::string unavailable;
        std::thread([&] {
            try {
                const SweepCompute compute =
                    sweepComputeOn(std::make_shared<const ComputeBackend>(openBackend(id)));
                for (long r = 0; r < spec.runs(); ++r) serial[r] = timedSweepRun(spec, r, compute);
            } catch (const BackendError& e) {
                unavailable = e.what();
            }
        }).join();
        if (!unavailable.empty()) {
            std::printf("[ skipped  ] %s\n", unavailable.c_str());
            continue;
        }
        for (long r = 0; r < spec.runs(); ++r) cpu[r] = timedSweepRun(spec, r, {});
        ASSERT_GE(sweeps().panel()->backendBox()->findData(QString::fromStdString(id)), 0);
        sweeps().panel()->setBackend(id);
        ASSERT_EQ(sweeps().panel()->backend(), id);
        runToEnd(kParticles);
        const SweepTable mine = sweepTableOf(spec, sweeps().runner().entries()),
                         theirs = sweepTableOf(spec, serial), onCpu = sweepTableOf(spec, cpu);
        ASSERT_EQ(mine.columns, theirs.columns);
        for (std::size_t c = 0; c < mine.columns.size(); ++c)
            EXPECT_EQ(std::memcmp(mine.values[c].data(), theirs.values[c].data(), mine.values[c].size() * 8),
                      0)
                << mine.columns[c];
        EXPECT_NE(mine.column("energy"), onCpu.column("energy")); // the device's float32, not the CPU's run
        const QString dir = path(("app-" + id).c_str());
        ASSERT_TRUE(sweeps().saveTable(dir)) << sweeps().lastError().toStdString();
        EXPECT_EQ(readSweepTable(dir.toStdString()).record["execution"]["backend"], id);
        ++ran;
    }
    if (ran == 0) GTEST_SKIP() << "no GPU backend here";
}

TEST_F(SweepsWorkspaceTest, CancelStopsPromptlyWithAPartialTable) {
    startSlow(1, 2);
    auto* cancel = sweeps().panel()->cancelButton();
    ASSERT_TRUE(cancel->isEnabled());
    const long doneAtCancel = sweeps().runner().progress().done;
    cancel->click(); // returns at once
    waitForEnd();
    const LocalSweepProgress p = sweeps().runner().progress();
    EXPECT_LE(p.done, doneAtCancel + 1); // the run in flight (one thread), not the 60-odd left
    EXPECT_EQ(p.state, LocalSweepProgress::State::Cancelled);
    EXPECT_LT(p.done, p.total);
    EXPECT_EQ(p.total, 64);
    // The picture holds the finished runs; the cells none of them reached are drawn as not run.
    const SweepHeat& heat = view()->picture().heat();
    long rows = 0, empty = 0;
    for (std::size_t k = 0; k < heat.rows.size(); ++k) {
        rows += heat.rows[k];
        empty += heat.rows[k] == 0;
    }
    EXPECT_EQ(rows, p.done);
    EXPECT_EQ(empty, long(heat.rows.size()) - (p.done + 3) / 4); // 4 replicates a cell, in run order
    EXPECT_TRUE(sweeps().panel()->runButton()->isEnabled());
    EXPECT_TRUE(sweeps().panel()->progressLabel()->text().startsWith(QStringLiteral("Cancelled after")));
    // Save keeps the finished runs as a sweep directory without a table: the spec and a journal the command
    // line resumes from (flowscope-cli sweep DIR/sweep.json --out DIR runs only the runs left).
    ASSERT_TRUE(sweeps().saveTable(path("partial"))) << sweeps().lastError().toStdString();
    const std::string dir = path("partial").toStdString();
    EXPECT_FALSE(QFileInfo::exists(path("partial/results.csv")));
    const SweepSpec saved = loadSweepDir(dir);
    EXPECT_EQ(saved.hash(), sweeps().spec()->hash());
    const std::map<long, SweepJournalEntry> journal = readSweepJournals(dir, saved),
                                            app = sweeps().runner().entries();
    ASSERT_EQ(journal.size(), app.size());
    for (const auto& [run, e] : app) {
        ASSERT_TRUE(journal.count(run)) << run;
        EXPECT_EQ(journal.at(run).result.measures, e.result.measures) << run;
    }
    EXPECT_EQ(long(pendingRuns(saved, journal).size()), p.total - p.done);
    // Saving again adds nothing: the journal has every run once.
    ASSERT_TRUE(sweeps().saveTable(path("partial")));
    std::ifstream lines(dir + "/journal/app.jsonl");
    EXPECT_EQ(std::count(std::istreambuf_iterator<char>(lines), {}, '\n'),
              1 + p.done); // the header, the runs
}

TEST_F(SweepsWorkspaceTest, ClosingWhileRunningDoesNotHang) {
    startSlow(2, 1);
    QElapsedTimer clock;
    clock.start();
    window->close();
    window.reset();
    // A guard against a hang, not a timing: the 60-odd runs left would take minutes; the close waits for the
    // runs in flight only.
    EXPECT_LT(clock.elapsed(), 30000);
}

TEST_F(SweepsWorkspaceTest, HoveringACellReportsItsValues) {
    runToEnd(kDisc);
    // x = 0.45 (i = 3), y = -0.3 (j = 1): inside the disc.
    const double exact = 1 / (0.1 * (1 + std::hypot(0.45, 0.3)));
    QMouseEvent move(QEvent::MouseMove, QPointF(centre(3, 1)), view()->mapToGlobal(QPointF(centre(3, 1))),
                     Qt::NoButton, Qt::NoButton, Qt::NoModifier);
    QCoreApplication::sendEvent(view(), &move);
    const QString text = sweeps().panel()->readout()->text();
    EXPECT_TRUE(text.startsWith(QStringLiteral("x = 0.45, y = −0.3: 1 of 1 runs done")))
        << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("\nt_max = %1").arg(exact, 0, 'g', 5))) << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("\nprop2_t_max = %1").arg(exact, 0, 'g', 5)))
        << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("\nprop2_blow_up = 1\n"))) << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("\nblow_up = 1\n"))) << text.toStdString(); // outcomes
    // A cell outside the disc: run, without a value.
    const QString corner = view()->describeAt(centre(0, 0));
    EXPECT_TRUE(corner.contains(QStringLiteral("t_max = no value"))) << corner.toStdString();
}

TEST_F(SweepsWorkspaceTest, ClickingACellOpensItsSceneInTheParticlesWorkspace) {
    runToEnd(kDisc);
    // Gaussian mode, d = 2: the cone view, with the cell's one initial covariance.
    QTest::mouseClick(view(), Qt::LeftButton, {}, centre(1, 2)); // x = -0.45, y = 0.3
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().scene() != nullptr)
        << window->lastError().toStdString();
    const Scene& disc = *window->workspace<ParticlesWorkspace>().scene();
    EXPECT_EQ(tabs()->currentWidget(), window->workspace<ParticlesWorkspace>().coneView());
    const SweepHeat& heat = view()->picture().heat();
    EXPECT_NEAR(heat.xLevels[1], -0.45, 1e-15);
    EXPECT_NEAR(heat.yLevels[2], 0.3, 1e-15);
    // The cell's one grid point is the scene's initial covariance (the grid cleared), so that the particles,
    // the moment trajectory and the Gaussian analysis all start from the cell's Σ0: Prop 2's t_max of the
    // opened scene is the table's for that cell.
    EXPECT_FALSE(disc.moments.grid.enabled());
    EXPECT_TRUE(
        disc.initial.cov.isApprox(fromCone(Eigen::Vector3d(heat.xLevels[1], heat.yLevels[2], 1.0)), 1e-15))
        << disc.initial.cov;
    EXPECT_EQ(disc.attention.heads[0].V(0, 0), 0.1);
    const long run = sweepCellWith(*sweeps().spec(), {{"x", heat.xLevels[1]}, {"y", heat.yLevels[2]}});
    ASSERT_GE(run, 0);
    const SweepTable table = sweepTableOf(*sweeps().spec(), sweeps().runner().entries());
    const std::optional<double> tMax = predictRegime(disc, disc.initial.cov).tMax;
    ASSERT_TRUE(tMax);
    EXPECT_NEAR(*tMax, table.column("prop2_t_max")[std::size_t(run)], 1e-12 * *tMax);
    EXPECT_NEAR(*tMax, 1 / (0.1 * (1 + std::hypot(-0.45, 0.3))), 1e-9); // t_max = 1 / (0.1 (1 + r))

    // Particles: the particle view, beta and n of the cell, the first replicate's seed.
    window->showPage(view());
    runToEnd(kParticles);
    QTest::mouseClick(view(), Qt::LeftButton, {}, centre(2, 1)); // beta = 4, n = 12
    const Scene& s = *window->workspace<ParticlesWorkspace>().scene();
    EXPECT_EQ(tabs()->currentWidget(), window->workspace<ParticlesWorkspace>().particleView());
    EXPECT_EQ(s.attention.beta, 4);
    EXPECT_EQ(s.n, 12);
    EXPECT_EQ(s.initial.seed, sweepPoint(*sweeps().spec(), (2 * 2 + 1) * 2).seed);
    // The opened scene is named as the sweep's run, and the title names it while its tab is shown only.
    const QString runName = QStringLiteral("tiny run %1").arg((2 * 2 + 1) * 2);
    EXPECT_EQ(QString::fromStdString(s.name), runName) << s.name;
    EXPECT_TRUE(window->windowTitle().startsWith(runName)) << window->windowTitle().toStdString();
    window->showPage(window->workspace<FlowsWorkspace>().view());
    EXPECT_FALSE(window->windowTitle().contains(runName)) << window->windowTitle().toStdString();
}

// A flow sweep (docs/sweeps.md#flow-sweeps) says what its runs are, and a cell, a trained flow with no scene,
// says how to train it again (flowscope-cli sweep --print-run) instead of opening anything.
TEST_F(SweepsWorkspaceTest, AFlowSweepsCellSaysHowToTrainItAgain) {
    const QString spec = writeSpec("flows.json", R"({"name": "flow-tiny", "mode": "flow",
        "base": {"dataset": "8gaussians", "layers": 2, "batch": 64, "iterations": 5, "reference_draws": 1},
        "axes": [{"pointer": "/lambda0", "values": [0.05, 0.2]}], "measures": ["kl", "seconds"]})");
    ASSERT_TRUE(sweeps().openSweep(spec)) << sweeps().lastError().toStdString();
    const auto* description = window->findChild<QLabel*>(QStringLiteral("sweepDescription"));
    ASSERT_NE(description, nullptr);
    EXPECT_TRUE(description->text().contains(QStringLiteral("generative flows trained")))
        << description->text().toStdString();
    const Scene* before = window->workspace<ParticlesWorkspace>().scene();
    const std::string name = before ? before->name : std::string();
    EXPECT_FALSE(sweeps().openRun(1));
    EXPECT_TRUE(sweeps().lastError().contains(QStringLiteral("--print-run 1")))
        << sweeps().lastError().toStdString();
    EXPECT_TRUE(sweeps().lastError().contains(spec)) << sweeps().lastError().toStdString();
    const Scene* after = window->workspace<ParticlesWorkspace>().scene();
    EXPECT_EQ(after ? after->name : std::string(), name); // nothing opened
}

TEST_F(SweepsWorkspaceTest, AOneAxisSweepDrawsTheFig4RankHistograms) {
    // The shipped Fig 4 sweep (300 moment runs, a fraction of a second): Prop 2 bounds the rank of the
    // limit by ceil(d/2), and every run ends with a rank (its ODE converges).
    ASSERT_TRUE(sweeps().openSweep(QStringLiteral("fig4-ranks-softmax")))
        << sweeps().lastError().toStdString();
    ASSERT_TRUE(sweeps().run(2));
    waitForEnd();
    ASSERT_EQ(sweeps().runner().progress().state, LocalSweepProgress::State::Finished);
    const SweepPicture& picture = view()->picture();
    ASSERT_EQ(picture.kind(), SweepPicture::Kind::Histograms);
    const SweepHistogram& h = picture.histogram();
    ASSERT_EQ(h.panels, (std::vector<double>{3, 4, 5}));
    ASSERT_TRUE(h.integral);
    for (std::size_t p = 0; p < h.panels.size(); ++p) {
        long total = 0;
        for (int b = 0; b < h.bins; ++b) {
            const long c = h.counts[p][std::size_t(b)];
            total += c;
            if (h.binStart(b) > std::ceil(h.panels[p] / 2)) EXPECT_EQ(c, 0) << "d = " << h.panels[p];
        }
        EXPECT_EQ(total, 100);
        EXPECT_EQ(h.excluded[p], 0);
    }
    // Hovering d = 5's rank-3 bar reads its count; a click opens a d = 5 run of that rank.
    const std::size_t bar = std::size_t(h.bin(3));
    const QString text = view()->describeAt(picture.cellRect({2, bar}).center());
    EXPECT_EQ(text, QStringLiteral("d = 5: rank = 3 in %1 of 100 finished runs").arg(h.counts[2][bar]));
    QTest::mouseClick(view(), Qt::LeftButton, {}, picture.cellRect({2, bar}).center().toPoint());
    ASSERT_TRUE(window->workspace<ParticlesWorkspace>().scene() != nullptr);
    EXPECT_EQ(window->workspace<ParticlesWorkspace>().scene()->d, 5);
    EXPECT_EQ(tabs()->currentWidget(),
              window->workspace<ParticlesWorkspace>().particleView()); // d = 5: no cone
}

} // namespace
} // namespace flowscope::test
