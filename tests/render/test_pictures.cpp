// The pictures of render/picture without a widget or an OpenGL context (Qt Gui's offscreen platform only):
// each particle layer's vertices against the geometry it stands for, the particle picture's camera against
// the cloud it frames, and a training picture painted into an image. This executable links flowscope_picture
// and no Qt Widgets: the exporter and `flowscope-cli render` draw exactly this.
#include "engine/dynamics/CausalParking.h"
#include "engine/gaussian/MatrixRoots.h"
#include "engine/runner/RunHistory.h"
#include "engine/runner/SimulationRunner.h"
#include "engine/scene/DefaultScene.h"
#include "render/GaussianOverlay.h"
#include "render/picture/CurvePlot.h"
#include "render/picture/FlowsPicture.h"
#include "render/picture/InversePicture.h"
#include "render/picture/ParticleLayers.h"
#include "render/picture/ParticlePicture.h"
#include "render/picture/Theme.h"
#include "render/picture/TransformersPicture.h"

#include <QFontMetricsF>
#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

namespace flowscope {
namespace {

void application() {
    static std::unique_ptr<QGuiApplication> app = [] {
        qputenv("QT_QPA_PLATFORM", "offscreen");
        static int argc = 1;
        static char name[] = "flowscope_picture_tests";
        static char* argv[] = {name, nullptr};
        return std::make_unique<QGuiApplication>(argc, argv);
    }();
}

// A frame of `X` (N x 2) in the plane, origin at its box's centre, as the picture builds it.
ParticleFrame planeFrame(const Snapshot& s) {
    ParticleFrame f;
    f.snapshot = &s;
    f.basis = Mat::Identity(2, 2);
    f.projected = s.tokens;
    f.boxValid = finiteBox(f.projected, f.boxLo, f.boxHi);
    f.origin = 0.5 * (f.boxLo + f.boxHi);
    return f;
}

std::shared_ptr<Snapshot> snapshotOf(Tokens X, double t = 0.0) {
    auto s = std::make_shared<Snapshot>();
    s->generation = 1;
    s->t = t;
    s->tokens = std::move(X);
    return s;
}

// --- ParticleLayers and ParticlePicture ---

TEST(ParticleLayers, TokensAreOneVertexEachAndDivergedOnesTransparent) {
    Tokens X(4, 2);
    X << 0, 0, 1, 2, NAN, 1, -1, 3;
    const auto s = snapshotOf(X);
    const ParticleFrame f = planeFrame(*s);
    VertexBuffer points;
    TokensLayer{}.append(f, points);
    ASSERT_EQ(points.size(), 4u); // vertex i is token i, diverged or not
    EXPECT_EQ(points[2].a, 0.0f);
    for (int i : {0, 1, 3}) {
        EXPECT_EQ(points[std::size_t(i)].a, 1.0f);
        // Positions are the token less the origin (the centre of the finite tokens' box: (0, 1.5)).
        EXPECT_FLOAT_EQ(points[std::size_t(i)].x, float(X(i, 0) - 0.0));
        EXPECT_FLOAT_EQ(points[std::size_t(i)].y, float(X(i, 1) - 1.5));
    }
}

TEST(ParticleLayers, GaussianEllipsesAreTheOneAndTwoSigmaLevelSets) {
    application();
    Scene scene = builtinDefaultScene();
    scene.initial.cov << 2.0, 0.6, 0.6, 0.5;
    scene.initial.mean << 0.3, -0.2;
    GaussianOverlay overlay;
    overlay.setScene(scene);
    ASSERT_TRUE(overlay.available()) << overlay.reason();
    const double t = 1.7;
    const GaussianState g = *overlay.at(t);
    const Mat Sinv = g.cov.inverse();

    Tokens X = Tokens::Random(50, 2);
    const auto s = snapshotOf(X, t);
    const ParticleFrame f = planeFrame(*s);
    GaussianLayer layer;
    layer.overlay = &overlay;
    VertexBuffer lines;
    layer.append(f, lines);
    ASSERT_EQ(lines.size(), 2u * 2u * 96u); // two ellipses of 96 segments
    // Every vertex p satisfies (p - m)^T S^-1 (p - m) = k^2, k = 1 for the first ellipse and 2 for the
    // second.
    for (std::size_t v = 0; v < lines.size(); ++v) {
        const Vec p = Eigen::Vector2d(lines[v].x + f.origin.x(), lines[v].y + f.origin.y());
        const double k = v < lines.size() / 2 ? 1.0 : 2.0;
        const Vec r = p - g.mean;
        EXPECT_NEAR(r.dot(Sinv * r), k * k, 1e-4 * k * k) << "vertex " << v;
    }
    layer.enabled = false;
    VertexBuffer none;
    layer.append(f, none);
    EXPECT_TRUE(none.empty());
}

TEST(ParticleLayers, AttentionLinesHaveTheWeightsOpacityAndSkipTheSmallOnes) {
    Tokens X(4, 2);
    X << 0, 0, 1, 0, 0, 1, 1, 1;
    const auto s = snapshotOf(X);
    const ParticleFrame f = planeFrame(*s);
    AttentionLayer layer;
    layer.token = 0;
    layer.weights = Vec(4);
    layer.weights << 0.5, 0.3, 0.19, 0.005; // 0.005 / 0.5 = 1 %: left out, as is the token itself
    VertexBuffer lines;
    layer.append(f, lines);
    ASSERT_EQ(lines.size(), 4u); // tokens 1 and 2
    EXPECT_FLOAT_EQ(lines[0].a, float(0.9 * 0.3 / 0.5));
    EXPECT_FLOAT_EQ(lines[2].a, float(0.9 * 0.19 / 0.5));
    EXPECT_FLOAT_EQ(lines[1].x + float(f.origin.x()), 1.0f); // from token 0 to token 1
    EXPECT_FLOAT_EQ(lines[3].y + float(f.origin.y()), 1.0f); // ... and to token 2
}

TEST(ParticleLayers, TrailsJoinConsecutiveFramesWithGrowingOpacity) {
    const int n = 3, frames = 5;
    auto history = std::make_shared<RunHistory>();
    for (int k = 0; k < frames; ++k) {
        Tokens X(n, 2);
        for (int i = 0; i < n; ++i) X.row(i) << double(i), 0.1 * k;
        history->append({0.1 * k, k, {}, std::make_shared<const Tokens>(X)});
    }
    auto s = snapshotOf(*history->at(frames - 1).tokens, 0.1 * (frames - 1));
    s->history = history;
    const ParticleFrame f = planeFrame(*s);
    TrailsLayer layer;
    VertexBuffer lines;
    layer.append(f, lines);
    EXPECT_TRUE(lines.empty()); // off by default
    layer.enabled = true;
    layer.append(f, lines);
    ASSERT_EQ(lines.size(), std::size_t(2 * n * (frames - 1)));
    for (std::size_t v = 2 * n; v < lines.size(); v += 2 * n) EXPECT_GT(lines[v].a, lines[v - 2 * n].a);
    // A segment joins a token's places in two consecutive frames: same x, y up by 0.1.
    EXPECT_FLOAT_EQ(lines[0].x, lines[1].x);
    EXPECT_NEAR(lines[1].y - lines[0].y, 0.1f, 1e-6f);
}

// `picture` on the default scene showing X, 400 x 300 logical pixels, prepared (no OpenGL: cameras and layers
// only).
void showFramed(ParticlePicture& picture, const Tokens& X) {
    picture.setScene(builtinDefaultScene());
    picture.show(snapshotOf(X));
    picture.setSize(QSizeF(400, 300));
    picture.prepare();
}

TEST(ParticlePicture, FramingPutsEveryTokenInsideTheImage) {
    application();
    ParticlePicture picture;
    Tokens X = 3.0 * Tokens::Random(200, 2);
    X.col(0).array() += 10.0;
    showFramed(picture, X);
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
        const auto p = picture.worldToPixel(X.row(i).transpose());
        ASSERT_TRUE(p);
        EXPECT_GE(p->x(), 0.0);
        EXPECT_LE(p->x(), 400.0);
        EXPECT_GE(p->y(), 0.0);
        EXPECT_LE(p->y(), 300.0);
    }
    // And the view's own map agrees: the pixel of a token maps back to it.
    const QPointF back = picture.view().pixelToWorld(*picture.worldToPixel(X.row(7).transpose()));
    EXPECT_NEAR(back.x(), X(7, 0), 1e-9);
    EXPECT_NEAR(back.y(), X(7, 1), 1e-9);
}

TEST(ParticlePicture, TokensTheCameraLeavesOutAreCountedAndPointedAt) {
    application();
    ParticlePicture picture;
    const Tokens X = Tokens::Random(300, 2);
    showFramed(picture, X);
    EXPECT_EQ(picture.offView().count, 0); // framed: every token in view

    picture.view().pan(QPointF(250, 0)); // the content moves right: its right part leaves the picture
    picture.prepare();
    long outside = 0;
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
        const auto p = picture.worldToPixel(X.row(i).transpose());
        ASSERT_TRUE(p);
        outside += !QRectF(0, 0, 400, 300).contains(*p);
    }
    ASSERT_GT(outside, 0);
    const ParticlePicture::OffView off = picture.offView();
    EXPECT_EQ(off.count, outside);
    EXPECT_NEAR(off.toward.x(), 400.0, 1e-9); // on the right border, where they went
    EXPECT_GT(off.toward.y(), 0.0);
    EXPECT_LT(off.toward.y(), 300.0);

    // The note is drawn in the arrow's colour: the image has it where the arrow points, and not without it.
    QImage image(400, 300, QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::black);
    {
        QPainter p(&image);
        picture.paintOver(p, true, QRectF());
    }
    const QColor arrow = image.pixelColor(int(off.toward.x()) - 12, int(off.toward.y()));
    EXPECT_EQ(arrow, QColor(255, 170, 60));
}

TEST(ParticleLayers, TheSphereIsAWireframeOfUnitCirclesIn3DOnly) {
    Tokens X = Tokens::Random(50, 3);
    const auto s = snapshotOf(X);
    ParticleFrame f = planeFrame(*s);
    f.is3D = true;
    f.origin = Eigen::Vector3d(0.3, -0.2, 0.1);
    SphereLayer layer;
    VertexBuffer lines;
    layer.append(f, lines);
    EXPECT_TRUE(lines.empty()); // off unless the tokens live on the sphere
    layer.enabled = true;
    layer.append(f, lines);
    ASSERT_EQ(lines.size(),
              std::size_t(2 * SphereLayer::kSegments * (SphereLayer::kMeridians + SphereLayer::kParallels)));
    for (const PointVertex& v : lines) // on the unit sphere about the shown origin, less the frame's origin
        EXPECT_NEAR((Eigen::Vector3d(v.x, v.y, v.z) + f.origin).norm(), 1.0, 1e-6);
    VertexBuffer plane;
    f.is3D = false;
    layer.append(f, plane);
    EXPECT_TRUE(plane.empty());
}

// The parking layer: for each leader a ring of radius kRing about its start, a tick and an arc of delta on
// the circle of radius kArcRadius centred on its direction; nothing in 3-D or without leaders. The picture
// gives a causal scene on the circle its leaders (those of parkingLeaders on the initial tokens, at spacing
// 4 / sqrt(beta)), and none to the same scene unmasked; a live beta edit moves the spacing.
TEST(ParticleLayers, ParkingRingsSitAtTheLeadersStartsAndTheirSpotsSpanDelta) {
    ParkingLayer layer;
    layer.delta = 0.5;
    layer.leaders.resize(2, 2);
    layer.leaders << 1.0, 0.0, 0.0, -1.0;
    const auto s = snapshotOf(layer.leaders);
    ParticleFrame f = planeFrame(*s);
    VertexBuffer lines;
    layer.append(f, lines);
    const std::size_t perLeader = 2 * (ParkingLayer::kRingSegments + 1 + 12);
    ASSERT_EQ(lines.size(), 2 * perLeader);
    for (int k = 0; k < 2; ++k) {
        const Eigen::Vector3d start(layer.leaders(k, 0), layer.leaders(k, 1), 0.0);
        const double a = std::atan2(start.y(), start.x());
        for (std::size_t v = 0; v < 2 * std::size_t(ParkingLayer::kRingSegments); ++v) {
            const PointVertex& p = lines[std::size_t(k) * perLeader + v];
            EXPECT_NEAR((Eigen::Vector3d(p.x, p.y, p.z) + f.origin - start).norm(), ParkingLayer::kRing,
                        1e-6);
        }
        double lo = INFINITY, hi = -INFINITY; // the spot's angular extent
        for (std::size_t v = 2 * std::size_t(ParkingLayer::kRingSegments) + 2; v < perLeader; ++v) {
            const PointVertex& p = lines[std::size_t(k) * perLeader + v];
            const Eigen::Vector3d q = Eigen::Vector3d(p.x, p.y, p.z) + f.origin;
            EXPECT_NEAR(q.norm(), ParkingLayer::kArcRadius, 1e-6);
            const double rel = std::remainder(std::atan2(q.y(), q.x()) - a, 2 * M_PI);
            lo = std::min(lo, rel);
            hi = std::max(hi, rel);
        }
        EXPECT_NEAR(lo, -0.25, 1e-6);
        EXPECT_NEAR(hi, 0.25, 1e-6);
    }
    VertexBuffer none;
    f.is3D = true;
    layer.append(f, none);
    EXPECT_TRUE(none.empty());

    application();
    Scene scene = loadScene(std::string(FLOWSCOPE_PRESET_DIR) + "/causal-circle-fig2.json");
    ParticlePicture picture;
    picture.setScene(scene);
    ASSERT_TRUE(picture.parkingAvailable());
    const std::vector<int> leaders = parkingLeaders(initialTokens(scene), 0.5);
    ASSERT_EQ(picture.parkingLayer().leaders.rows(), Eigen::Index(leaders.size()));
    for (std::size_t k = 0; k < leaders.size(); ++k)
        EXPECT_LT((picture.parkingLayer().leaders.row(Eigen::Index(k)) -
                   initialTokens(scene).row(leaders[k]).normalized())
                      .norm(),
                  1e-12);
    AttentionSpec wider = scene.attention;
    wider.beta = 16.0;
    picture.setAttention(wider);
    EXPECT_DOUBLE_EQ(picture.parkingLayer().delta, 1.0);
    scene.attention.masked = false;
    picture.setScene(scene);
    EXPECT_FALSE(picture.parkingAvailable());
}

// The hardmax layer: for three unit keys 2 pi / 3 apart (M = I), each cell's two rays from the origin out to
// 1.5 times the farthest token, at pi / 3 on either side of its key; nothing unless the scene has the cells.
TEST(ParticleLayers, HardmaxRaysBoundTheCellsOfTheShownTokens) {
    Tokens three(3, 2);
    for (int k = 0; k < 3; ++k) three.row(k) << std::cos(2 * M_PI * k / 3), std::sin(2 * M_PI * k / 3);
    const auto s = snapshotOf(three);
    ParticleFrame f = planeFrame(*s);
    HardmaxLayer layer;
    layer.M = Mat::Identity(2, 2);
    VertexBuffer lines;
    layer.append(f, lines);
    EXPECT_TRUE(lines.empty()); // not active
    layer.active = true;
    layer.append(f, lines);
    ASSERT_EQ(lines.size(), 12u);
    for (std::size_t v = 0; v < lines.size(); v += 2) {
        const Eigen::Vector3d from = Eigen::Vector3d(lines[v].x, lines[v].y, lines[v].z) + f.origin;
        const Eigen::Vector3d to = Eigen::Vector3d(lines[v + 1].x, lines[v + 1].y, lines[v + 1].z) + f.origin;
        EXPECT_NEAR(from.norm(), 0.0, 1e-6);
        EXPECT_NEAR(to.norm(), 1.5, 1e-6);
        // Boundaries lie halfway between neighbouring keys: at pi/3, pi and 5 pi/3.
        const double angle = std::atan2(to.y(), to.x());
        EXPECT_NEAR(std::remainder(angle - M_PI / 3, 2 * M_PI / 3), 0.0, 1e-6) << angle;
    }
}

TEST(ParticlePicture, TokensOnTheSphereGetItsWireframeAndADepthCueAcrossIt) {
    application();
    Scene scene = builtinDefaultScene();
    scene.d = 3;
    scene.attention.sphere = true;
    ParticlePicture picture;
    picture.setScene(scene);
    Tokens X = Tokens::Random(200, 3);
    X.rowwise().normalize();
    picture.show(snapshotOf(X));
    picture.setSize(QSizeF(400, 300));
    picture.prepare();
    ASSERT_TRUE(picture.is3D());
    EXPECT_TRUE(picture.showsSphere());
    // The cue runs from the sphere's nearest point to its farthest: a token there has that depth.
    const auto [nearW, farW] = picture.depthCueRange();
    EXPECT_NEAR(farW - nearW, 2.0, 1e-9);
    const OrbitCamera& camera = picture.camera();
    const Eigen::Vector3d toEye = (camera.eye() - camera.target).normalized(); // against the view direction
    EXPECT_NEAR(camera.depth(toEye), nearW, 1e-9);
    EXPECT_NEAR(camera.depth(-toEye), farW, 1e-9);

    // A cloud on a small cap of the sphere is framed with the whole sphere around it.
    ParticlePicture cap;
    cap.setScene(scene);
    Tokens C = 0.1 * Tokens::Random(100, 3);
    C.col(2).array() += 1.0;
    C.rowwise().normalize();
    cap.show(snapshotOf(C));
    cap.setSize(QSizeF(400, 300));
    cap.prepare();
    for (int k = 0; k < 6; ++k) {
        const auto p = cap.shownToPixel(Vec(Eigen::Vector3d::Unit(k / 2) * (k % 2 ? -1.0 : 1.0)));
        ASSERT_TRUE(p);
        EXPECT_TRUE(QRectF(0, 0, 400, 300).contains(*p)) << k << ": " << p->x() << ", " << p->y();
    }

    scene.attention.sphere = false; // a live edit off the sphere: neither
    picture.setAttention(scene.attention);
    EXPECT_FALSE(picture.showsSphere());
    EXPECT_EQ(picture.depthCueRange(), std::make_pair(0.0, 0.0));
}

// How many tokens of X the picture draws outside its 400 x 300 pixels.
long tokensOutside(const ParticlePicture& picture, const Tokens& X) {
    long outside = 0;
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
        const auto p = picture.worldToPixel(X.row(i).transpose());
        outside += !p || p->x() < 0.0 || p->x() > 400.0 || p->y() < 0.0 || p->y() > 300.0;
    }
    return outside;
}

TEST(ParticlePicture, FollowEasesTowardsTheFrameAndKeepsTheCloudInView) {
    application();
    ParticlePicture picture;
    const Tokens X = Tokens::Random(300, 2);
    showFramed(picture, X);
    const double wide = picture.view().pixelsPerUnit();

    // The cloud contracts to a quarter: one 60 Hz step zooms in a little, not at once, and not past the goal.
    const Tokens small = 0.25 * X;
    picture.show(snapshotOf(small, 1.0)); // the same run: nothing frames it
    picture.prepare();
    ViewTransform goal = picture.view();
    goal.frame(QRectF(QPointF(small.col(0).minCoeff(), small.col(1).minCoeff()),
                      QPointF(small.col(0).maxCoeff(), small.col(1).maxCoeff())));
    ASSERT_GT(goal.pixelsPerUnit(), 3.5 * wide);
    EXPECT_TRUE(picture.follow(1.0 / 60));
    const double first = picture.view().pixelsPerUnit();
    EXPECT_GT(first, wide * 1.01);
    EXPECT_LT(first, wide * 1.2); // 1 - exp(-1/60 / 0.35): under 5 % of the way on a log scale
    // Each step goes further, monotonically, and it settles on the frame within a few seconds.
    double last = first;
    int steps = 0;
    while (picture.follow(1.0 / 60) && ++steps < 600) {
        EXPECT_GE(picture.view().pixelsPerUnit(), last);
        last = picture.view().pixelsPerUnit();
    }
    EXPECT_LT(steps, 300); // 5 s
    EXPECT_NEAR(picture.view().pixelsPerUnit(), goal.pixelsPerUnit(), 1e-9 * goal.pixelsPerUnit());
    EXPECT_NEAR(picture.view().center().x(), goal.center().x(), 1e-9);
    EXPECT_FALSE(picture.follow(1.0 / 60)); // settled: nothing to do

    // The cloud jumps far right, faster than any easing: one step carries the camera along, so the cloud is
    // where it was in the picture (the grid's numbers changed), not off view.
    const QPointF before = *picture.worldToPixel(small.row(0).transpose());
    Tokens moved = small;
    moved.col(0).array() += 5.0;
    picture.show(snapshotOf(moved, 2.0));
    picture.prepare();
    ASSERT_GT(tokensOutside(picture, moved), 0); // before the step: off view
    picture.follow(1.0 / 60);
    const QPointF after = *picture.worldToPixel(moved.row(0).transpose());
    EXPECT_NEAR(after.x(), before.x(), 1e-6);
    EXPECT_NEAR(after.y(), before.y(), 1e-6);
    EXPECT_EQ(tokensOutside(picture, moved), 0);
    EXPECT_EQ(picture.offView().count, 0);

    // The cloud spreads fourfold at once: the view is pushed out to hold its box at the first step already.
    const Tokens spread = 4.0 * moved;
    picture.show(snapshotOf(spread, 3.0));
    picture.prepare();
    ASSERT_GT(tokensOutside(picture, spread), 0);
    EXPECT_TRUE(picture.follow(1.0 / 60));
    EXPECT_EQ(tokensOutside(picture, spread), 0);
    for (int k = 0; k < 30; ++k) {
        picture.follow(1.0 / 60);
        EXPECT_EQ(tokensOutside(picture, spread), 0);
    }
}

// --- Training pictures and curve plots ---

TEST(TransformersPicture, TheLegendNamesTheCrossesAndTheDashedPathsOrShortensToFit) {
    application();
    const QFontMetricsF fm(QGuiApplication::font());
    const QStringList full{"X₀", "X(T), M = 10", "X*(T) closed form", "optimal path"};
    const QStringList brief{"X₀", "X(T)", "X*(T)", "optimal"};
    double fullWidth = 0.0, briefWidth = 0.0;
    for (int k = 0; k < 4; ++k) {
        fullWidth += TransformersPicture::kLegendMark + fm.horizontalAdvance(full[k]) +
                     (k ? TransformersPicture::kLegendGap : 0.0);
        briefWidth += TransformersPicture::kLegendMark + fm.horizontalAdvance(brief[k]) +
                      (k ? TransformersPicture::kLegendGap : 0.0);
    }
    EXPECT_EQ(TransformersPicture::legendTexts(true, 10, fullWidth, fm), full);
    // Narrower (a 1024-pixel window's picture): every mark is still named, briefly; before, the cross's
    // entry was dropped and the later one drawn.
    EXPECT_EQ(TransformersPicture::legendTexts(true, 10, fullWidth - 1.0, fm), brief);
    EXPECT_EQ(TransformersPicture::legendTexts(true, 10, briefWidth, fm), brief);
    // Narrower still: the first entries, in order, never a later one past a missing one.
    EXPECT_EQ(TransformersPicture::legendTexts(true, 10, briefWidth - 1.0, fm), brief.mid(0, 3));
    // Without a closed form (lambda_OT = 0): no cross and no dashed path to name.
    EXPECT_EQ(TransformersPicture::legendTexts(false, 10, 1e4, fm), full.mid(0, 2));
}

TEST(FlowsPicture, PaintsThePlaceholderWithoutARunAndTheLayoutWithOne) {
    application();
    FlowsPicture picture;
    picture.setPalette(themePalette(ThemeKind::Dark));
    picture.setFont(QGuiApplication::font());
    picture.setSize(QSizeF(640, 400));
    QImage image(640, 400, QImage::Format_ARGB32_Premultiplied);
    {
        QPainter p(&image);
        picture.paint(p);
    }
    // The window colour everywhere but the placeholder's text.
    EXPECT_EQ(image.pixelColor(3, 3), themePalette(ThemeKind::Dark).color(QPalette::Window));

    auto s = std::make_shared<FlowSnapshot>();
    s->trainers.resize(1);
    picture.show(s);
    const QRectF square = picture.pictureRect(0), loss = picture.plotRect(FlowsPicture::Plot::Loss);
    EXPECT_FALSE(square.isEmpty());
    EXPECT_FALSE(loss.isEmpty());
    EXPECT_LE(square.right(), loss.left()); // the picture left of the plots
    EXPECT_TRUE(QRectF(0, 0, 640, 400).contains(square.united(loss)));
}

// A frozen λ (the default) gets no plot of its own, only a line above the plots; a trained λ gets its plot.
TEST(FlowsPicture, LeavesOutTheLambdaPlotWhenLambdaIsNotTrained) {
    application();
    FlowsPicture picture;
    picture.setFont(QGuiApplication::font());
    picture.setSize(QSizeF(1000, 600));
    const auto snapshot = [](bool trainLambda) {
        auto s = std::make_shared<FlowSnapshot>();
        s->trainers.resize(1);
        s->trainers[0].rwpo = true;
        auto config = std::make_shared<flows::TrainerConfig>();
        config->flow.rwpo = true;
        config->flow.trainLambda = trainLambda;
        config->flow.lambda0 = 0.05;
        s->trainers[0].config = config;
        return s;
    };
    using Plot = FlowsPicture::Plot;
    picture.show(snapshot(false));
    EXPECT_TRUE(picture.plotRect(Plot::Lambda).isEmpty());
    for (Plot plot : {Plot::Loss, Plot::Nll, Plot::Beta, Plot::Mmd2})
        EXPECT_FALSE(picture.plotRect(plot).isEmpty()) << int(plot);
    EXPECT_EQ(picture.shownPlots().size(), 4u);
    EXPECT_TRUE(picture.plotNote().contains(QStringLiteral("0.05"))) << picture.plotNote().toStdString();
    // The note's line is above the first plot, inside the picture.
    EXPECT_GT(picture.plotRect(Plot::Loss).top(),
              FlowsPicture::kMargin + QFontMetricsF(QGuiApplication::font()).height());

    picture.show(snapshot(true));
    EXPECT_FALSE(picture.plotRect(Plot::Lambda).isEmpty());
    EXPECT_EQ(picture.shownPlots().size(), 5u);
    EXPECT_TRUE(picture.plotNote().isEmpty());
}

// Whether `image` holds only `fill` in `rect`.
bool untouched(const QImage& image, const QRect& rect, QColor fill) {
    for (int y = std::max(rect.top(), 0); y <= std::min(rect.bottom(), image.height() - 1); ++y)
        for (int x = std::max(rect.left(), 0); x <= std::min(rect.right(), image.width() - 1); ++x)
            if (image.pixelColor(x, y) != fill) return false;
    return true;
}

// The value labels stay below the title's line (a label on the frame's top edge sat on the title: NLL's
// "10"), and an empty plot shows its text alone, with no value ticks beside it.
TEST(CurvePlot, ValueLabelsKeepOffTheTitleAndAnEmptyPlotHasNone) {
    application();
    const QFont font = QGuiApplication::font();
    const QFontMetricsF fm(font);
    const QRectF area(0, 0, 300, 200);
    const QColor fill(1, 2, 3);
    // The value labels' column, left of the frame (CurvePlot.cpp: the widest label or "iteration", + 14).
    const int yLabels = int(std::max(fm.horizontalAdvance(QStringLiteral("-0.0000")),
                                     fm.horizontalAdvance(QStringLiteral("iteration")))) +
                        10;
    const QPalette palette = themePalette(ThemeKind::Dark);
    // Many ranges, so that some put a value label on the frame's top edge.
    for (int k = 0; k < 40; ++k) {
        CurvePlot plot; // no title: whatever is painted in its line is a value label
        const double top = 1.0 + 0.25 * k;
        plot.series.push_back({Qt::red, {{0.0, 0.1}, {50.0, top}, {100.0, 0.5 * top}}});
        plot.xMax = 100;
        QImage image(300, 200, QImage::Format_ARGB32);
        image.fill(fill);
        {
            QPainter p(&image);
            paintCurvePlot(p, area, plot, PlotStyle{}, palette, font);
        }
        EXPECT_TRUE(untouched(image, QRect(0, 0, yLabels, int(fm.height())), fill)) << "top " << top;
    }
    CurvePlot empty;
    empty.xMax = 100;
    empty.emptyText = QStringLiteral("held-out metrics: every 200 iterations");
    QImage image(300, 200, QImage::Format_ARGB32);
    image.fill(fill);
    {
        QPainter p(&image);
        paintCurvePlot(p, area, empty, PlotStyle{}, palette, font);
    }
    // Left of the frame, above the iteration ticks' line: nothing.
    EXPECT_TRUE(untouched(image, QRect(0, 0, yLabels, int(area.height() - 2 * fm.height() - 6)), fill));
}

// The frame paintCurvePlot draws its data in (CurvePlot.cpp: the value labels' column on the left, the title
// band on top, the iteration ticks below, and a right-hand column when a series uses the right axis).
QRectF curveFrame(const QRectF& area, const QFont& font, bool rightAxis) {
    const QFontMetricsF fm(font);
    const double left = std::max(fm.horizontalAdvance(QStringLiteral("-0.0000")),
                                 fm.horizontalAdvance(QStringLiteral("iteration"))) +
                        14;
    const double right = rightAxis ? fm.horizontalAdvance(QStringLiteral("-0.0000")) + 8 : 0.0;
    const double top = 1.5 * fm.height() + 2;
    return QRectF(area.left() + left, area.top() + top, area.width() - left - right,
                  area.height() - top - fm.height() - 4);
}

// Whether a pixel within `radius` of `at` is mostly `c` (a line is antialiased over a pixel or two).
bool drawnNear(const QImage& image, QPointF at, QColor c, int radius = 2) {
    for (int dy = -radius; dy <= radius; ++dy)
        for (int dx = -radius; dx <= radius; ++dx) {
            const QColor p = image.pixelColor(int(at.x()) + dx, int(at.y()) + dy);
            if (std::abs(p.red() - c.red()) + std::abs(p.green() - c.green()) +
                    std::abs(p.blue() - c.blue()) <
                90)
                return true;
        }
    return false;
}

// A value that is not finite breaks a line (no segment across it); a right-axis series spans the frame on its
// own range, whatever the left one's; the cursor is a vertical line at its x.
TEST(CurvePlot, GapsAtNonFiniteValuesARightAxisOfItsOwnAndACursor) {
    application();
    const QFont font = QGuiApplication::font();
    const QRectF area(0, 0, 400, 260);
    const QColor fill(1, 2, 3), red(250, 0, 0), blue(0, 0, 250), cursor(0, 250, 0);
    PlotStyle style;
    style.background = style.grid = fill; // only the data and the frame show
    style.axis = cursor;
    CurvePlot plot;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    plot.series.push_back(
        {red, {{0, 0.5}, {1, 0.5}, {2, nan}, {3, 0.5}, {4, 0.5}}, CurveSeries::Style::Marked});
    // 100 .. 200 on the right axis: from the frame's lower left to its upper right, through its centre.
    plot.right.push_back({blue, {{0, 100}, {4, 200}}});
    plot.xMax = 4;
    plot.cursor = 0.5;
    plot.trimStart = false;
    QImage image(int(area.width()), int(area.height()), QImage::Format_ARGB32);
    image.fill(fill);
    {
        QPainter p(&image);
        paintCurvePlot(p, area, plot, style, themePalette(ThemeKind::Dark), font);
    }
    const QRectF f = curveFrame(area, font, true);
    const double y = f.center().y(); // the red line's constant value is its range's middle
    auto x = [&](double v) { return f.left() + v / 4 * f.width(); };
    EXPECT_TRUE(drawnNear(image, {x(0.75), y}, red));
    EXPECT_TRUE(drawnNear(image, {x(3.5), y}, red));
    // No segment from x = 1 to x = 3 across the gap, a quarter of the frame's width either side of x = 2.
    for (double v : {1.5, 2.0, 2.5}) EXPECT_FALSE(drawnNear(image, {x(v), y}, red)) << "x = " << v;
    // The blue line passes through the frame's centre and near its lower-left and upper-right corners.
    EXPECT_TRUE(drawnNear(image, f.center(), blue));
    EXPECT_TRUE(drawnNear(image, {x(1), f.bottom() - (125.0 - 94) / 112 * f.height()}, blue));
    // The cursor: a dashed line at x = 0.5, in the axis colour, somewhere along the frame's height.
    bool seen = false;
    for (double t = 0.1; t < 0.9 && !seen; t += 0.02)
        seen = drawnNear(image, {x(0.5), f.top() + t * f.height()}, cursor, 1);
    EXPECT_TRUE(seen);
}

// --- InversePicture ---

// The Inverse tab's distance to the reference is the Gaussian W₂ distance: 0 between the same moments, |δ|
// for a mean shifted by δ, |√a − √b| per axis between diagonal covariances a and b; NaN across dimensions.
TEST(InversePicture, TheDistanceToTheReferenceIsTheGaussianW2) {
    ReferenceSamples reference;
    reference.summary.mean = inverse::Vector::Constant(3, 0.5);
    reference.summary.covariance = inverse::Vector(inverse::Vector::Constant(3, 4.0)).asDiagonal();
    PosteriorEvaluation e;
    e.mean = reference.summary.mean;
    e.covariance = reference.summary.covariance;
    EXPECT_NEAR(InversePicture::distanceToReference(e, reference), 0.0, 1e-7);
    e.mean(1) += 0.3;
    EXPECT_NEAR(InversePicture::distanceToReference(e, reference), 0.3, 1e-9);
    e.mean = reference.summary.mean;
    e.covariance(0, 0) = 9.0; // sd 3 against 2: W₂ = |3 − 2|
    EXPECT_NEAR(InversePicture::distanceToReference(e, reference), 1.0, 1e-9);
    e.mean = inverse::Vector::Zero(2);
    e.covariance = inverse::Matrix::Identity(2, 2);
    EXPECT_TRUE(std::isnan(InversePicture::distanceToReference(e, reference)));
}

// The sampling floor: n of the chain's samples against the whole chain. All of them: 0 (the same moments);
// for a chain of independent N(0, I) draws it is of the order of √(d / n), the mean's error.
TEST(InversePicture, TheSamplingFloorIsTheChainAgainstItself) {
    ReferenceSamples reference;
    const int d = 2, kept = 4000;
    std::uint64_t state = 12345;
    auto uniform = [&state] { // a small LCG: the test's own draws, fixed
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return (double(state >> 11) + 0.5) / 9007199254740992.0;
    };
    reference.samples.resize(d, kept);
    for (Eigen::Index k = 0; k < reference.samples.size(); ++k) // Box–Muller, cosine branch
        reference.samples(k) = std::sqrt(-2.0 * std::log(uniform())) * std::cos(2.0 * M_PI * uniform());
    reference.summary.mean = reference.samples.rowwise().mean();
    const inverse::Matrix centred = reference.samples.colwise() - reference.summary.mean;
    reference.summary.covariance = centred * centred.transpose() / double(kept - 1);
    EXPECT_NEAR(InversePicture::samplingFloor(reference, kept), 0.0, 1e-6);
    const double floor = InversePicture::samplingFloor(reference, 600);
    EXPECT_GT(floor, 0.1 * std::sqrt(d / 600.0));
    EXPECT_LT(floor, 5.0 * std::sqrt(d / 600.0));
    EXPECT_TRUE(std::isnan(InversePicture::samplingFloor(reference, kept + 1)));
}

} // namespace
} // namespace flowscope
