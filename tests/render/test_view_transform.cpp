// ViewTransform and the plot helpers: pure math, no display needed.
#include "render/picture/Colormap.h"
#include "render/picture/PlotDecorations.h"
#include "render/picture/ViewTransform.h"

#include <gtest/gtest.h>

namespace flowscope::test {
namespace {

void expectNear(QPointF a, QPointF b, double tol = 1e-9) {
    EXPECT_NEAR(a.x(), b.x(), tol);
    EXPECT_NEAR(a.y(), b.y(), tol);
}

TEST(ViewTransform, WorldAndPixelsRoundTripWithYUp) {
    ViewTransform v;
    v.setViewportSize({800, 600});
    v.frame(QRectF(QPointF(-1, -1), QPointF(1, 1)), 0.0);
    expectNear(v.worldToPixel({0, 0}), {400, 300});
    EXPECT_LT(v.worldToPixel({0, 1}).y(), 300.0); // y grows upwards on screen
    const QPointF w(0.37, -1.25);
    expectNear(v.pixelToWorld(v.worldToPixel(w)), w);
}

TEST(ViewTransform, FrameFitsTheBoxInsideTheMargin) {
    ViewTransform v;
    v.setViewportSize({1000, 500});
    const QRectF box(QPointF(2, 3), QPointF(6, 4)); // wide box in a wide viewport
    v.frame(box, 0.1);
    const QRectF vis = v.visibleWorld();
    EXPECT_TRUE(vis.contains(box));
    EXPECT_NEAR(v.worldToPixel(box.topLeft()).x(), 100.0, 1e-9); // width is the binding side: 10% margin
    EXPECT_NEAR(v.worldToPixel(box.bottomRight()).x(), 900.0, 1e-9);
}

TEST(ViewTransform, FrameOfASinglePointIsFinite) {
    ViewTransform v;
    v.setViewportSize({400, 400});
    v.frame(QRectF(QPointF(5, 5), QPointF(5, 5)));
    EXPECT_TRUE(std::isfinite(v.pixelsPerUnit()));
    expectNear(v.worldToPixel({5, 5}), {200, 200});
}

TEST(ViewTransform, ZoomKeepsThePointUnderTheCursor) {
    ViewTransform v;
    v.setViewportSize({640, 480});
    v.frame(QRectF(-2, -2, 4, 4));
    const QPointF cursor(100, 350);
    const QPointF before = v.pixelToWorld(cursor);
    v.zoomAt(cursor, 3.0);
    expectNear(v.pixelToWorld(cursor), before);
    expectNear(v.worldToPixel(before), cursor);
}

TEST(ViewTransform, PanMovesContentWithTheMouse) {
    ViewTransform v;
    v.setViewportSize({640, 480});
    const QPointF w(0.5, 0.5);
    const QPointF p = v.worldToPixel(w);
    v.pan({30, -20});
    expectNear(v.worldToPixel(w), p + QPointF(30, -20));
}

TEST(PlotDecorations, GridStepsAreNiceAndWideEnough) {
    EXPECT_DOUBLE_EQ(niceGridStep(100.0, 80.0), 1.0);
    EXPECT_DOUBLE_EQ(niceGridStep(100.0, 150.0), 2.0);
    EXPECT_DOUBLE_EQ(niceGridStep(1000.0, 80.0), 0.1);
    EXPECT_DOUBLE_EQ(niceGridStep(10.0, 80.0), 10.0);
    EXPECT_DOUBLE_EQ(niceGridStep(0.02, 80.0), 5000.0);
}

TEST(PlotDecorations, TickLabelsAreShortAndNeverNegativeZero) {
    EXPECT_EQ(formatTick(0.30000000000000004, 0.1), QStringLiteral("0.3"));
    EXPECT_EQ(formatTick(-1e-17, 0.1), QStringLiteral("0"));
    EXPECT_EQ(formatTick(-2.0, 1.0), QStringLiteral("-2"));
    EXPECT_EQ(formatTick(0.05, 0.05), QStringLiteral("0.05"));
    EXPECT_EQ(formatTick(3e7, 1e7), QStringLiteral("3e+07"));
}

// Round ticks (the sweep picture's axes and colour bar): multiples of 1, 2 or 5 times a power of ten that
// cover the range with about `count` intervals, and nothing outside it.
TEST(PlotDecorations, NiceTicksAreRoundMultiplesInsideTheRange) {
    double step = 0;
    EXPECT_EQ(niceTicks(-1.0, 1.0, 4, &step), (std::vector<double>{-1.0, -0.5, 0.0, 0.5, 1.0}));
    EXPECT_EQ(step, 0.5);
    // The disc-tmax colour bar, 0.35255 to 9.0477: 2, 4, 6, 8 (a step of 2), never 0.35255.
    EXPECT_EQ(niceTicks(0.35255, 9.0477, 6, &step), (std::vector<double>{2.0, 4.0, 6.0, 8.0}));
    EXPECT_EQ(step, 2.0);
    // Cell edges of a 40-value axis from -0.975 to 0.975 (step 0.05): -1 .. 1 by 0.5.
    EXPECT_EQ(niceTicks(-1.0, 1.0, 5, &step).size(), 5u);
    EXPECT_DOUBLE_EQ(niceStep(1e-3, 4), 5e-4); // 2.5e-4 an interval: the next of 1, 2, 5 x 10^k
}

TEST(Colormap, ViridisEndsAndMiddle) {
    EXPECT_EQ(viridis(0.0).name(), QStringLiteral("#440154"));
    EXPECT_EQ(viridis(1.0).name(), QStringLiteral("#fde725"));
    EXPECT_EQ(viridis(0.5).name(), QStringLiteral("#21918c"));
    EXPECT_EQ(viridis(-3.0), viridis(0.0));
    EXPECT_EQ(viridis(7.0), viridis(1.0));
}

} // namespace
} // namespace flowscope::test
