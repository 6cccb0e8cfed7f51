// ConeView: the covariance trajectories land where the cone geometry and the camera say; the trace-1 disc is
// round and its curves end on the rank-one circle; unsupported scenes show a message; a newer scene
// supersedes a running solve; destroying the view during a solve is safe.
// Set FLOWSCOPE_SAVE_SHOTS=<dir> to write cone-fig2d.png and cone-fig3d-mixed.png (full preset grids).
#include "GuiEnvironment.h"
#include "TestScenes.h"

#include "engine/gaussian/Cone.h"
#include "ui/shell/MainWindow.h"
#include "ui/views/ConeView.h"
#include "ui/workspaces/particles/ParticlesWorkspace.h"

#include <QDir>
#include <QFontMetricsF>
#include <QImage>
#include <QSignalSpy>
#include <QtTest/QTest>

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <numbers>

namespace flowscope::test {
namespace {

using Vector3 = Eigen::Vector3d;

Scene preset(const std::string& name) {
    // The repository's presets, found from this source file (tests/ui/ -> assets/presets/).
    const auto root = std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
    return loadScene((root / "assets" / "presets" / (name + ".json")).string());
}

// A preset with an nu x nu initial grid (the preset's own when nu = 0).
Scene smallPreset(const std::string& name, int nu) {
    Scene s = preset(name);
    if (nu > 0) s.moments.grid.nu = s.moments.grid.nc = nu;
    return s;
}

// The plot background of PlotStyle; anything drawn differs from it clearly.
bool isBackground(QRgb c) {
    const QColor bg = PlotStyle{}.background;
    return std::abs(qRed(c) - bg.red()) + std::abs(qGreen(c) - bg.green()) + std::abs(qBlue(c) - bg.blue()) <
           24;
}

// Whether something is drawn within `radius` device pixels of `p` (logical pixels).
bool drawnNear(const QImage& img, QPointF p, double dpr, int radius = 1) {
    const QPoint c = (p * dpr).toPoint();
    for (int dy = -radius; dy <= radius; ++dy)
        for (int dx = -radius; dx <= radius; ++dx) {
            const QPoint q = c + QPoint(dx, dy);
            if (img.rect().contains(q) && !isBackground(img.pixel(q))) return true;
        }
    return false;
}

long pixelsOffBackground(const QImage& img) {
    long n = 0;
    for (int y = 0; y < img.height(); ++y)
        for (int x = 0; x < img.width(); ++x) n += !isBackground(img.pixel(x, y));
    return n;
}

// A shown view with `scene` solved (or rejected).
struct Shown {
    std::unique_ptr<ConeView> view = std::make_unique<ConeView>();
    bool ok = false;
    explicit Shown(const Scene& scene, QSize size = {900, 700}) {
        view->resize(size);
        view->show();
        if (!QTest::qWaitForWindowExposed(view.get())) return;
        QSignalSpy spy(view.get(), &ConeView::solved);
        view->setScene(scene);
        ok = !view->solving() || waitFor([&] { return spy.count() > 0; }, kEventGuard);
    }
    QImage grab() const { return view->grabFramebuffer().convertToFormat(QImage::Format_RGB32); }
};

Eigen::Vector2d slice(const Vector3& p) {
    return {p.x() / p.z(), p.y() / p.z()};
}

// --- Hints and data ---

TEST(ConeViewHints, DefaultsAndPresetValues) {
    const ConeHints none = coneHints("{}");
    EXPECT_EQ(none.plot, ConeMode::Cone);
    EXPECT_EQ(none.colorBy, ConeColorBy::InitialY);
    EXPECT_DOUBLE_EQ(none.elev, 20.0);
    EXPECT_DOUBLE_EQ(none.azim, -60.0);
    EXPECT_TRUE(none.referenceRays.empty());
    EXPECT_EQ(coneHints("not json").plot, ConeMode::Cone);
    EXPECT_DOUBLE_EQ(coneHints(R"({"cone": {"elev": "high", "azim": 30}})").elev, 20.0);

    const ConeHints h = coneHints(preset("cone-fig2d-two-lines").viewJson);
    EXPECT_EQ(h.plot, ConeMode::Cone);
    EXPECT_EQ(h.colorBy, ConeColorBy::FinalTrace);
    EXPECT_DOUBLE_EQ(h.azim, -88.0);
    ASSERT_EQ(h.referenceRays.size(), 2u);
    EXPECT_NEAR(h.referenceRays[0].x(), 0.96503, 1e-5);
    EXPECT_EQ(coneHints(preset("cone-fig3d-mixed").viewJson).plot, ConeMode::Disc);
    EXPECT_TRUE(coneHints(preset("cone-fig2c-plane").viewJson).referencePlaneNormal.has_value());
}

TEST(ConeViewData, InterpolatesLinearlyAndCapsBlowUps) {
    ConeTrajectory t;
    t.times = {0.0, 1.0, 3.0};
    t.points = {Vector3(0, 0, 1), Vector3(0.2, 0, 1), Vector3(0.2, 0.4, 2)};
    EXPECT_TRUE(t.at(-1.0).isApprox(t.points[0]));
    EXPECT_TRUE(t.at(1.0).isApprox(t.points[1]));
    EXPECT_TRUE(t.at(2.0).isApprox(Vector3(0.2, 0.2, 1.5)));
    EXPECT_TRUE(t.at(10.0).isApprox(t.points[2]));
    EXPECT_DOUBLE_EQ(t.peakTrace(), 2.0);

    // Nine runs near trace 1 and one blow-up to 1000: the cap is 10 x the median peak.
    std::vector<ConeTrajectory> runs(10);
    for (int i = 0; i < 10; ++i)
        runs[std::size_t(i)].points = {Vector3(0, 0, 1), Vector3(0, 0, i == 9 ? 1000 : 1)};
    EXPECT_DOUBLE_EQ(coneHeightCap(runs), 10.0);
    runs[9].points.back().z() = 5.0; // nothing far out: no cut
    EXPECT_DOUBLE_EQ(coneHeightCap(runs), 5.0);
    for (ConeTrajectory& r : runs) r.points.back().z() = 1000.0 + r.points.size(); // all blow up: no cut
    EXPECT_DOUBLE_EQ(coneHeightCap(runs), 1002.0);
}

// A grid whose moment states would not fit in memory is refused before any solve, with the field that drives
// it as the view's message (the CLI's moments budget, engine/scene/RunBudget.h).
TEST(ConeViewData, AGridBeyondTheMemoryBudgetIsRefusedNamingIt) {
    Scene s = preset("cone-fig2d-two-lines");
    s.moments.method = MomentMethod::Adaptive;
    s.moments.grid.nu = s.moments.grid.nc = 1000; // 10^6 trajectories of 20002 states: about 2 TiB
    s.integrator.steps = 20000;
    const ConeData data = computeConeData(s);
    EXPECT_TRUE(data.trajectories.empty());
    EXPECT_EQ(data.message.rfind("/moments/grid: ", 0), 0u) << data.message;
    EXPECT_NE(data.message.find("memory limit"), std::string::npos) << data.message;
}

// --- Drawing ---

// Fig 2(d): every converged curve ends on one of the two isotropic rays of A + A^T; its end dot is drawn
// where the orthographic camera maps it, the apex and the cone's axis project where the geometry says.
TEST(ConeView, ConeModeDrawsTrajectoriesWhereTheCameraPutsThem) {
    FLOWSCOPE_REQUIRE_GUI();
    const Scene scene = smallPreset("cone-fig2d-two-lines", 6);
    Shown s(scene);
    ASSERT_TRUE(s.ok);
    ConeView& v = *s.view;
    ASSERT_TRUE(v.glError().isEmpty()) << v.glError().toStdString();
    ASSERT_TRUE(v.message().isEmpty()) << v.message().toStdString();
    EXPECT_EQ(v.mode(), ConeMode::Cone);
    ASSERT_EQ(v.trajectoryCount(), int(coneGrid(scene.moments.grid).size())); // 16
    const auto data = v.data();
    ASSERT_GT(data->converged, 0);

    const QImage img = s.grab();
    const double dpr = v.devicePixelRatioF();
    ASSERT_EQ(img.width(), int(std::lround(v.width() * dpr)));
    EXPECT_GT(pixelsOffBackground(img), 5000);

    const auto& rays = v.hints().referenceRays;
    int onRay = 0;
    for (const ConeTrajectory& t : data->trajectories) {
        if (t.event != MomentEvent::Converged) continue;
        const Vector3 end = t.points.back();
        // Mathematics: a rank-one limit on an isotropic ray, i.e. on the cone's boundary.
        EXPECT_NEAR(end.head<2>().norm(), end.z(), 1e-3 * end.z());
        for (const Vector3& r : rays) onRay += (slice(end) - slice(r)).norm() < 1e-3;
        // Drawing: its end dot.
        const QPointF at = v.projectToWidget(end);
        ASSERT_TRUE(QRectF(v.rect()).contains(at));
        EXPECT_TRUE(drawnNear(img, at, dpr)) << "end " << end.transpose();
    }
    EXPECT_EQ(onRay, data->converged);

    // The camera: the z axis projects to the vertical through the widget's centre (the framing is symmetric),
    // upwards; a horizontal circle z = x^2 + y^2 projects to an ellipse whose axes have ratio sin(elev).
    const QPointF apex = v.projectToWidget(Vector3::Zero());
    const double H = data->heightCap;
    const QPointF axisTop = v.projectToWidget(Vector3(0, 0, H));
    EXPECT_NEAR(apex.x(), v.width() / 2.0, 1.0);
    EXPECT_NEAR(axisTop.x(), v.width() / 2.0, 1.0);
    EXPECT_LT(axisTop.y(), apex.y() - 100);
    double halfW = 0, halfH = 0;
    for (int k = 0; k < 360; ++k) {
        const double phi = k * std::numbers::pi / 180.0;
        const QPointF q = v.projectToWidget(Vector3(H * std::cos(phi), H * std::sin(phi), H)) - axisTop;
        halfW = std::max(halfW, std::abs(q.x())), halfH = std::max(halfH, std::abs(q.y()));
    }
    EXPECT_NEAR(halfH / halfW, std::sin(v.hints().elev * std::numbers::pi / 180.0), 1e-3);
    EXPECT_TRUE(drawnNear(img, apex, dpr)); // generatrices and axes meet there
}

// The trace-1 slice: a round disc whose boundary is drawn, converged runs end on the reference ray's disc
// point (0.965, -0.262), blow-ups run to the circle.
TEST(ConeView, DiscModeDrawsTheTraceOneSlice) {
    FLOWSCOPE_REQUIRE_GUI();
    Shown s(smallPreset("cone-fig2d-two-lines", 6));
    ASSERT_TRUE(s.ok);
    ConeView& v = *s.view;
    v.setMode(ConeMode::Disc);
    const QImage img = s.grab();
    const double dpr = v.devicePixelRatioF();

    const QPointF centre = v.projectToWidget(Vector3::Zero());
    const double radius = std::hypot(v.projectToWidget(Vector3(1, 0, 0)).x() - centre.x(),
                                     v.projectToWidget(Vector3(1, 0, 0)).y() - centre.y());
    EXPECT_GT(radius, 200.0);
    for (int deg : {0, 30, 135, 200, 290}) {
        const double a = deg * std::numbers::pi / 180.0;
        const QPointF q = v.projectToWidget(Vector3(std::cos(a), std::sin(a), 0));
        EXPECT_NEAR(std::hypot(q.x() - centre.x(), q.y() - centre.y()), radius, 0.5) << deg; // square aspect
        EXPECT_TRUE(drawnNear(img, q, dpr)) << "circle at " << deg << " degrees";
    }

    const Eigen::Vector2d ray(0.96503, -0.26214); // Fig 2(d)'s isotropic direction at -7.6 degrees
    int there = 0;
    for (const ConeTrajectory& t : v.data()->trajectories) {
        if (t.event != MomentEvent::Converged || (slice(t.points.back()) - ray).norm() > 1e-3) continue;
        ++there;
        EXPECT_TRUE(drawnNear(img, v.projectToWidget(Vector3(ray.x(), ray.y(), 0)), dpr)); // the end dot
    }
    EXPECT_GT(there, 0);

    // Fig 3(d) (a disc preset): four of a 10 x 10 grid blow up, their curves ending on the circle opposite.
    Shown mixed(smallPreset("cone-fig3d-mixed", 10));
    ASSERT_TRUE(mixed.ok);
    EXPECT_EQ(mixed.view->mode(), ConeMode::Disc);
    const auto data = mixed.view->data();
    EXPECT_EQ(data->converged + data->blowUp + data->other, 60);
    ASSERT_GT(data->blowUp, 0);
    const QImage mixedImg = mixed.grab();
    for (const ConeTrajectory& t : data->trajectories) {
        if (t.event != MomentEvent::BlowUp) continue;
        const Eigen::Vector2d end = slice(t.points.back());
        EXPECT_GT(end.norm(), 0.99);
        // Direction th = 78.7 degrees: the disc point at angle 2 th = 157.4 degrees.
        EXPECT_NEAR(std::atan2(end.y(), end.x()), 2.0 * 78.7 * std::numbers::pi / 180.0, 0.02);
        EXPECT_TRUE(drawnNear(mixedImg, mixed.view->projectToWidget(Vector3(end.x(), end.y(), 0)), dpr));
    }
}

TEST(ConeView, TimeDotsAndTheParticleCovarianceAreDrawn) {
    FLOWSCOPE_REQUIRE_GUI();
    Shown s(smallPreset("cone-fig2d-two-lines", 6));
    ASSERT_TRUE(s.ok);
    ConeView& v = *s.view;
    const double dpr = v.devicePixelRatioF();
    v.setTime(10.0);
    v.setCurrentCovariance(Mat(0.5 * Mat::Identity(2, 2))); // the cone point (0, 0, 1)
    const QImage img = s.grab();
    for (const ConeTrajectory& t : v.data()->trajectories) {
        const QPointF at = v.projectToWidget(t.at(10.0));
        EXPECT_TRUE(drawnNear(img, at, dpr, 0));
    }
    const QColor current(img.pixel((v.projectToWidget(Vector3(0, 0, 1)) * dpr).toPoint()));
    EXPECT_GT(std::min({current.red(), current.green(), current.blue()}), 200); // the white dot
    v.setCurrentCovariance(std::nullopt);
    const QColor hidden(s.grab().pixel((v.projectToWidget(Vector3(0, 0, 1)) * dpr).toPoint()));
    EXPECT_LT(std::min({hidden.red(), hidden.green(), hidden.blue()}), 200);
}

// On a wide frame the trace scale reaches down to the legend's rows: the legend moves right of it, so the
// scale's foot and its "0" label stay visible; on a squarer frame it keeps its corner.
TEST(ConeView, TheLegendLeavesTheTraceScaleVisible) {
    FLOWSCOPE_REQUIRE_GUI();
    for (const QSize size : {QSize(1280, 720), QSize(900, 700)}) {
        Shown s(smallPreset("cone-fig2d-two-lines", 6), size);
        ASSERT_TRUE(s.ok);
        ConeView& v = *s.view;
        v.setTime(1.0); // one more legend row
        s.grab();
        const QLineF scale = v.traceScale();
        const QRectF legend = v.legendRect();
        ASSERT_FALSE(legend.isEmpty());
        // The scale's foot with the room its "0" label takes at the left (9 px gap, a digit or two).
        const double h = QFontMetricsF(v.font()).height();
        const QRectF foot(scale.p1().x() - 30.0, scale.p1().y() - h / 2, 31.0, h);
        EXPECT_FALSE(legend.intersects(foot)) << size.width() << "x" << size.height();
        const double x = scale.p1().x();
        EXPECT_FALSE(legend.left() <= x && x <= legend.right() && legend.top() < scale.p1().y())
            << "the legend covers the scale's line";
        EXPECT_LE(legend.right(), v.width());
        EXPECT_LE(legend.bottom(), v.height());
        if (size == QSize(900, 700)) {
            EXPECT_EQ(legend.left(), 10.0) << "no overlap there: the corner";
        }
    }
}

// The legend and the colour bar share the bottom edge: on a narrow frame the bar goes above the legend
// rather than over its text ("boundary: rank 1" was cut off), and both stay inside the view.
TEST(ConeView, TheColourBarLeavesTheLegendWhole) {
    FLOWSCOPE_REQUIRE_GUI();
    for (const QSize size : {QSize(480, 420), QSize(640, 480), QSize(1280, 720)}) {
        Shown s(smallPreset("cone-fig2d-two-lines", 6), size);
        ASSERT_TRUE(s.ok);
        ConeView& v = *s.view;
        v.setTime(1.0);
        s.grab();
        const QRectF legend = v.legendRect(), bar = v.picture().colorBarRect();
        ASSERT_FALSE(legend.isEmpty());
        ASSERT_FALSE(bar.isEmpty()) << "36 trajectories of several colours: a bar";
        EXPECT_FALSE(legend.intersects(bar)) << size.width() << "x" << size.height();
        EXPECT_TRUE(QRectF(v.rect()).contains(bar)) << size.width() << "x" << size.height();
        EXPECT_LE(legend.right(), v.width()) << size.width();
        ASSERT_FALSE(v.picture().legendLines().isEmpty());
        EXPECT_TRUE(v.picture().legendLines().front().startsWith(
            QStringLiteral("%1 trajectories:").arg(v.data()->trajectories.size())))
            << v.picture().legendLines().front().toStdString();
    }
}

// The orientation gizmo's labels sit on no axis line and on no other label, also where an axis is seen
// nearly end-on (Fig 2(d)'s azimuth of -88 degrees put "2c" on the tr axis).
TEST(ConeView, GizmoLabelsKeepOffTheAxes) {
    FLOWSCOPE_REQUIRE_GUI();
    for (const char* name : {"cone-fig2d-two-lines", "cone-fig3d-mixed"}) {
        Shown s(smallPreset(name, 4));
        ASSERT_TRUE(s.ok);
        s.grab();
        const auto& gizmo = s.view->picture().gizmo();
        ASSERT_EQ(gizmo.size(), 3u);
        for (std::size_t i = 0; i < gizmo.size(); ++i) {
            ASSERT_FALSE(gizmo[i].label.isEmpty());
            const QRectF label = gizmo[i].label.adjusted(-3, -1, 3, 1); // its halo, and a pixel more
            for (std::size_t j = 0; j < gizmo.size(); ++j) {
                // Its own axis ends just beside it: only the label itself must not cover it.
                const QRectF box = j == i ? gizmo[i].label : label;
                for (int k = 0; k <= 40; ++k) // points along axis j
                    EXPECT_FALSE(box.contains(gizmo[j].axis.pointAt(k / 40.0)))
                        << name << ": label " << gizmo[i].name.toStdString() << " on axis "
                        << gizmo[j].name.toStdString();
                if (j != i)
                    EXPECT_FALSE(label.intersects(gizmo[j].label))
                        << name << ": " << gizmo[i].name.toStdString() << " and "
                        << gizmo[j].name.toStdString();
            }
        }
    }
}

// --- Marks and explanations ---

// Fig 3(a)'s 1184 blow-ups end all along the circle: no group holds a quarter of them, so the disc marks
// none (it marked three groups of 32 to 34 as "blow-up ×32", which did not add up to the summary's 1184).
TEST(ConeView, RunsThatEndEverywhereHaveNoMark) {
    FLOWSCOPE_REQUIRE_GUI();
    Shown s(preset("cone-fig3a-blowup"));
    ASSERT_TRUE(s.ok);
    s.view->setMode(ConeMode::Disc);
    for (const auto& m : s.view->picture().discMarks()) {
        EXPECT_GE(4 * m.runs, m.ofKind) << m.runs << " of " << m.ofKind;
        EXPECT_FALSE(m.blowUp) << m.runs << " of " << m.ofKind << " blow-ups";
    }
}

// The default scene's cone has one trajectory: "1 trajectory", and no colour bar from 1 to 1.
// The disc marks where Fig 3(d)'s runs end: one limit for the 591 that converge, at the rank-one point
// (0.965, -0.262) of the isotropic ray at -7.6 degrees, and one blow-up direction for the 57 others, at
// (-0.923, 0.384) (the preset's own counts and points, measured with the paper's Euler scheme). Each is
// drawn as a ring (pixels at its rim), and the cone mode marks nothing.
TEST(ConeView, TheDiscMarksTheLimitAndTheBlowUpDirection) {
    FLOWSCOPE_REQUIRE_GUI();
    Shown s(preset("cone-fig3d-mixed"));
    ASSERT_TRUE(s.ok);
    ConeView& v = *s.view;
    ASSERT_EQ(v.picture().mode(), ConeMode::Disc);
    const auto marks = v.picture().discMarks();
    ASSERT_EQ(marks.size(), 2u);
    const auto& limit = marks[0].blowUp ? marks[1] : marks[0];
    const auto& blowUp = marks[0].blowUp ? marks[0] : marks[1];
    EXPECT_FALSE(limit.blowUp);
    EXPECT_TRUE(blowUp.blowUp);
    EXPECT_EQ(limit.runs, 591);
    EXPECT_EQ(blowUp.runs, 57);
    EXPECT_EQ(limit.ofKind, 591);
    EXPECT_EQ(blowUp.ofKind, 57);
    EXPECT_NEAR(limit.point.x(), 0.965, 0.01);
    EXPECT_NEAR(limit.point.y(), -0.262, 0.01);
    EXPECT_NEAR(blowUp.point.x(), -0.923, 0.02);
    EXPECT_NEAR(blowUp.point.y(), 0.384, 0.02);
    const QImage img = s.grab();
    const double dpr = v.devicePixelRatioF();
    // The blow-up ring is red, a colour no viridis curve has.
    const QPoint top =
        ((v.picture().project({blowUp.point.x(), blowUp.point.y(), 0}) + QPointF(0, -8)) * dpr).toPoint();
    int red = 0;
    for (int dy = -2; dy <= 2; ++dy)
        for (int dx = -2; dx <= 2; ++dx) {
            const QColor c(img.pixel(top + QPoint(dx, dy)));
            red += c.red() > 170 && c.green() < 130 && c.blue() < 130;
        }
    EXPECT_GT(red, 0);
}

TEST(ConeView, OneTrajectoryIsSingularAndHasNoColourBar) {
    FLOWSCOPE_REQUIRE_GUI();
    Shown s(preset("default"));
    ASSERT_TRUE(s.ok);
    ConeView& v = *s.view;
    ASSERT_TRUE(v.data());
    ASSERT_EQ(v.data()->trajectories.size(), 1u);
    s.grab();
    ASSERT_FALSE(v.picture().legendLines().isEmpty());
    EXPECT_TRUE(v.picture().legendLines().front().startsWith(QStringLiteral("1 trajectory:")))
        << v.picture().legendLines().front().toStdString();
    EXPECT_TRUE(v.picture().colorBarRect().isEmpty());
}

TEST(ConeView, ExplainsScenesItCannotShow) {
    FLOWSCOPE_REQUIRE_GUI();
    Scene d3 = smallPreset("cone-fig2d-two-lines", 4);
    d3.d = 3; // the view looks at d before anything else
    Shown s(d3);
    ASSERT_TRUE(s.ok);
    EXPECT_FALSE(s.view->solving());
    EXPECT_EQ(s.view->trajectoryCount(), 0);
    EXPECT_EQ(s.view->message(), QStringLiteral("The covariance cone needs d = 2; this scene has d = 3."));
    const QImage img = s.grab();
    const long drawn = pixelsOffBackground(img);
    EXPECT_GT(drawn, 100); // the message
    EXPECT_LT(drawn, long(img.width()) * img.height() / 20);

    Scene uniform = smallPreset("cone-fig2d-two-lines", 4);
    uniform.initial.kind = InitKind::Uniform;
    uniform.initial.low = Vec::Constant(2, -1.0);
    uniform.initial.high = Vec::Constant(2, 1.0);
    s.view->setScene(uniform);
    EXPECT_FALSE(s.view->solving());
    EXPECT_TRUE(s.view->message().contains(QStringLiteral("Gaussian"))) << s.view->message().toStdString();
    s.grab();
}

// --- Solves in the background ---

TEST(ConeView, ANewerSceneSupersedesARunningSolve) {
    FLOWSCOPE_REQUIRE_GUI();
    const Scene first =
        smallPreset("cone-fig2d-two-lines", 10); // 60 runs: still solving when the others come
    const Scene middle = smallPreset("cone-fig2d-two-lines", 6); // 16 runs: replaced while waiting its turn
    const Scene last = smallPreset("cone-fig3d-mixed", 4);       // 4 runs, a disc preset

    ConeView v;
    v.resize(600, 500);
    v.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&v));
    QSignalSpy spy(&v, &ConeView::solved);
    v.setScene(first);
    v.setScene(middle);
    v.setScene(last);
    EXPECT_TRUE(v.solving());
    EXPECT_EQ(v.mode(), ConeMode::Disc);
    ASSERT_TRUE(waitFor([&] { return spy.count() > 0; }, kEventGuard));
    QTest::qWait(300); // nothing else may arrive
    EXPECT_EQ(spy.count(), 1);
    EXPECT_FALSE(v.solving());
    EXPECT_EQ(v.trajectoryCount(), int(coneGrid(last.moments.grid).size()));
    EXPECT_EQ(v.data()->trajectories.front().points.front(), toCone(coneGrid(last.moments.grid).front()));
}

TEST(ConeView, DestroyingTheViewDuringASolveIsSafe) {
    FLOWSCOPE_REQUIRE_GUI();
    const Scene scene = smallPreset("cone-fig2d-two-lines", 10);
    for (int i = 0; i < 2; ++i) {
        auto v = std::make_unique<ConeView>();
        v->resize(400, 300);
        v->show();
        v->setScene(scene);
        EXPECT_TRUE(v->solving());
        v.reset(); // the solve keeps running; its result must go nowhere
    }
    QTest::qWait(200);
    Shown s(smallPreset("cone-fig2d-two-lines", 4)); // later views still work
    ASSERT_TRUE(s.ok);
    EXPECT_EQ(s.view->trajectoryCount(),
              int(coneGrid(smallPreset("cone-fig2d-two-lines", 4).moments.grid).size()));
}

// The app's cone view says when the particle run stops, as the animations do: Fig 2(d)'s sample mean runs
// away, and the run stops (diverged) with a red banner "Particles: Diverged at t = ..." at the top of the
// picture; a reset takes it away.
TEST(ConeView, TheParticlesStopIsABannerInTheLiveView) {
    FLOWSCOPE_REQUIRE_GUI();
    Scene scene = smallPreset("cone-fig2d-two-lines", 4);
    scene.n = 64;
    scene.integrator.divergenceNorm = 3.0; // the runaway mean passes it within a few hundred steps
    MainWindow w;
    w.resize(900, 700);
    ASSERT_TRUE(w.workspace<ParticlesWorkspace>().setScene(scene));
    w.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
    w.showPage(w.workspace<ParticlesWorkspace>().coneView());
    ConeView* view = w.workspace<ParticlesWorkspace>().coneView();
    ASSERT_TRUE(view->isVisible());
    ASSERT_TRUE(waitFor([&] { return view->trajectoryCount() > 0; }, kEventGuard));
    EXPECT_TRUE(view->banner().isEmpty());
    w.workspace<ParticlesWorkspace>().setMaxSpeed(true);
    w.workspace<ParticlesWorkspace>().play();
    ASSERT_TRUE(waitForSnapshot(w.workspace<ParticlesWorkspace>().runner(),
                                [](const Snapshot& s) { return s.finished && !s.playing; }));
    ASSERT_TRUE(w.workspace<ParticlesWorkspace>().runner().snapshot()->event.has_value());
    ASSERT_TRUE(waitFor([&] { return !view->banner().isEmpty(); }));
    EXPECT_TRUE(view->banner().startsWith(QStringLiteral("Particles: Diverged at t = ")))
        << view->banner().toStdString();
    const QImage img = view->grabFramebuffer().convertToFormat(QImage::Format_RGB32);
    const QRectF banner = view->bannerRect();
    ASSERT_FALSE(banner.isEmpty());
    EXPECT_TRUE(QRectF(view->rect()).contains(banner));
    EXPECT_LT(banner.top(), view->height() / 3.0); // at the top
    const double dpr = view->devicePixelRatioF();
    long red = 0;
    for (int y = int(banner.top() * dpr); y < int(banner.bottom() * dpr); ++y)
        for (int x = int(banner.left() * dpr); x < int(banner.right() * dpr); ++x) {
            const QRgb c = img.pixel(x, y);
            red += qRed(c) > 150 && qGreen(c) < 90 && qBlue(c) < 90;
        }
    EXPECT_GT(red, 0.3 * banner.width() * banner.height() * dpr * dpr); // white text on red
    w.workspace<ParticlesWorkspace>().reset();
    EXPECT_TRUE(waitFor([&] { return view->banner().isEmpty(); }));
}

// --- Screenshots ---

// Screenshots of the full presets, for looking at (FLOWSCOPE_SAVE_SHOTS=<dir>).
TEST(ConeView, SavesScreenshots) {
    FLOWSCOPE_REQUIRE_GUI();
    const QString dir = qEnvironmentVariable("FLOWSCOPE_SAVE_SHOTS");
    if (dir.isEmpty()) GTEST_SKIP() << "set FLOWSCOPE_SAVE_SHOTS=<dir>";
    QDir().mkpath(dir);
    for (const char* name :
         {"cone-fig2d-two-lines", "cone-fig3d-mixed", "cone-fig2c-plane", "cone-fig3a-blowup"}) {
        Shown s(preset(name), {1000, 760});
        ASSERT_TRUE(s.ok) << name;
        s.view->setTime(8.0);
        const QString base = dir + QLatin1Char('/') + QString::fromLatin1(name);
        EXPECT_TRUE(s.view->grabFramebuffer().save(base + QStringLiteral(".png")));
        s.view->setMode(s.view->mode() == ConeMode::Cone ? ConeMode::Disc : ConeMode::Cone);
        EXPECT_TRUE(s.view->grabFramebuffer().save(base + QStringLiteral("-other.png")));
    }
    Shown solving(preset("cone-fig2d-two-lines"), {800, 600});
    ASSERT_TRUE(solving.ok);
    solving.view->setScene(preset("cone-fig3d-mixed"));
    EXPECT_TRUE(solving.view->grabFramebuffer().save(dir + QStringLiteral("/cone-solving.png")));
    solving.view->setScene(preset("sphere-clustering"));
    EXPECT_TRUE(solving.view->grabFramebuffer().save(dir + QStringLiteral("/cone-message.png")));
}

} // namespace
} // namespace flowscope::test
