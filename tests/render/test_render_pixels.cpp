// The shared renderers (render/) drawn headless: an EGL surfaceless context (Mesa's llvmpipe without a GPU),
// an offscreen framebuffer, pixels read back. Every expectation is geometry: where a matrix puts a point,
// how large a sprite of a given size is, what "source over" blending gives. Skips where no context exists.
#include "engine/gpu/gl/GlContext.h"
#include "render/ConeRenderer.h"
#include "render/GlApi.h"
#include "render/OffscreenTarget.h"
#include "render/PointRenderer.h"

#include <EGL/egl.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace flowscope {
namespace {

constexpr int kW = 64, kH = 48;
const float kBg[3] = {0.1f, 0.2f, 0.3f};

struct Rgba {
    int r, g, b, a;
};

// One context and entry-point table for the whole run (made on first use, on the test thread).
struct Headless {
    std::unique_ptr<GlContext> context;
    GlApi gl;
    std::string why;
    Headless() {
        context = GlContext::createHeadless(&why);
        if (context && !gl.load([](const char* name) { return GlApi::Proc(eglGetProcAddress(name)); }, &why))
            context.reset();
    }
};

Headless& headless() {
    static Headless h;
    return h;
}

#define REQUIRE_GL()                                                                                         \
    do {                                                                                                     \
        if (!headless().context) GTEST_SKIP() << "no headless OpenGL context: " << headless().why;           \
    } while (0)

class RenderPixels : public ::testing::Test {
  protected:
    void SetUp() override {
        REQUIRE_GL();
        std::string why;
        ASSERT_TRUE(target.create(headless().gl, kW, kH, &why)) << why;
    }
    Rgba at(int x, int y) const { // top row first
        const std::uint8_t* p = &pixels[(std::size_t(y) * kW + std::size_t(x)) * 4];
        return {p[0], p[1], p[2], p[3]};
    }
    bool isBackground(int x, int y) const {
        const Rgba c = at(x, y);
        return std::abs(c.r - 26) <= 1 && std::abs(c.g - 51) <= 1 && std::abs(c.b - 77) <= 1 && c.a == 255;
    }
    // Where NDC (x, y) lands: pixel column and row (top row 0), as continuous coordinates.
    static double column(double x) { return (x + 1.0) / 2.0 * kW; }
    static double row(double y) { return (1.0 - y) / 2.0 * kH; }

    OffscreenTarget target;
    std::vector<std::uint8_t> pixels;
};

TEST_F(RenderPixels, PointsLandWhereTheMatrixPutsThemAndNowhereElse) {
    PointRenderer r;
    ASSERT_TRUE(r.initialize(headless().gl)) << r.log();
    // Two tokens at known positions; the view-projection is the identity, so world = NDC.
    const float ax = -0.5f, ay = 0.5f, bx = 0.5f, by = -0.25f;
    r.upload(PointRenderer::Points, {{ax, ay, 0, 1, 0, 0, 1}, {bx, by, 0, 0, 1, 0, 1}});
    const float size = 9.0f; // device pixels: radius 4.5
    target.begin(kBg[0], kBg[1], kBg[2], 1.0f);
    r.drawPoints(Eigen::Matrix4f::Identity(), size);
    target.read(pixels);
    r.destroy();

    EXPECT_TRUE(isBackground(0, 0));
    EXPECT_TRUE(isBackground(kW - 1, kH - 1));
    // The pixel under each token's centre has its colour (A above B: rows run top to bottom).
    const Rgba a = at(int(column(ax)), int(row(ay))), b = at(int(column(bx)), int(row(by)));
    EXPECT_GT(a.r, 240);
    EXPECT_LT(a.g, 15);
    EXPECT_LT(b.r, 15);
    EXPECT_GT(b.g, 240);
    // Everything drawn lies within the sprite's radius (plus its one-pixel soft rim) of a token, and the
    // covered area is about the disc's: 2 pi 4.5^2 ~ 127 pixels.
    int drawn = 0;
    for (int y = 0; y < kH; ++y)
        for (int x = 0; x < kW; ++x) {
            if (isBackground(x, y)) continue;
            ++drawn;
            const double da = std::hypot(x + 0.5 - column(ax), y + 0.5 - row(ay));
            const double db = std::hypot(x + 0.5 - column(bx), y + 0.5 - row(by));
            EXPECT_LE(std::min(da, db), size / 2 + 1.0) << "stray pixel at " << x << ", " << y;
        }
    EXPECT_NEAR(drawn, 2 * M_PI * 4.5 * 4.5, 30);
    // Midway between the tokens: nothing.
    EXPECT_TRUE(isBackground(int(column(0.5 * (ax + bx))), int(row(0.5 * (ay + by)))));
}

TEST_F(RenderPixels, TheUploadOriginIsFoldedIntoTheMatrix) {
    // Positions relative to an origin o, and the matrix translating by o: the same picture as absolute ones.
    PointRenderer r;
    ASSERT_TRUE(r.initialize(headless().gl)) << r.log();
    const float ox = 0.25f, oy = -0.5f;
    r.upload(PointRenderer::Points, {{0.0f, 0.0f, 0, 1, 1, 1, 1}});
    Eigen::Matrix4f vp = Eigen::Matrix4f::Identity();
    vp(0, 3) = ox, vp(1, 3) = oy;
    target.begin(kBg[0], kBg[1], kBg[2], 1.0f);
    r.drawPoints(vp, 6.0f);
    target.read(pixels);
    r.destroy();
    const Rgba c = at(int(column(ox)), int(row(oy)));
    EXPECT_GT(c.r, 240);
    EXPECT_GT(c.g, 240);
    EXPECT_TRUE(isBackground(int(column(0.0)), int(row(0.0))));
}

TEST_F(RenderPixels, LinesOverTheCloudFollowTheirSegment) {
    PointRenderer r;
    ASSERT_TRUE(r.initialize(headless().gl)) << r.log();
    const float y = 0.1f; // row 21.6: well inside one pixel row
    r.upload(PointRenderer::LinesOver, {{-0.75f, y, 0, 1, 1, 1, 1}, {0.75f, y, 0, 1, 1, 1, 1}});
    target.begin(kBg[0], kBg[1], kBg[2], 1.0f);
    r.drawLines(PointRenderer::LinesOver, Eigen::Matrix4f::Identity(), 1.0f);
    target.read(pixels);
    r.destroy();
    const int line = int(row(y));
    EXPECT_GT(at(kW / 2, line).r, 240);
    EXPECT_TRUE(isBackground(kW / 2, line - 4));
    EXPECT_TRUE(isBackground(kW / 2, line + 4));
    EXPECT_TRUE(isBackground(int(column(-0.9)), line)); // beyond the segment's ends
    EXPECT_TRUE(isBackground(int(column(0.9)), line));
}

TEST_F(RenderPixels, TransparentTargetsHoldPremultipliedColour) {
    // Headless frames are composed by laying the OpenGL layer (drawn on transparent black) over what the view
    // painted beneath: that is exact when the layer holds premultiplied colour, c * alpha with alpha.
    PointRenderer r;
    ASSERT_TRUE(r.initialize(headless().gl)) << r.log();
    r.upload(PointRenderer::Points, {{0.0f, 0.0f, 0, 1, 0.5f, 0, 0.5f}});
    target.begin();
    r.drawPoints(Eigen::Matrix4f::Identity(), 8.0f);
    target.read(pixels);
    r.destroy();
    const Rgba c = at(kW / 2, kH / 2);
    EXPECT_NEAR(c.a, 128, 1);
    EXPECT_NEAR(c.r, 128, 1);
    EXPECT_NEAR(c.g, 64, 1);
    EXPECT_EQ(c.b, 0);
    EXPECT_EQ(at(0, 0).a, 0);
}

TEST_F(RenderPixels, ConeRendererDrawsDotsCurvesAndBlendedMeshes) {
    ConeRenderer r;
    ASSERT_TRUE(r.initialize(headless().gl)) << r.log();
    auto v = [](float x, float y, float red, float green, float blue, float alpha) {
        return ConeVertex{x, y, 0, 0, 0, 0, red, green, blue, alpha};
    };
    r.upload(ConeRenderer::Batch::Dots, {v(0, 0, 0, 0, 1, 1)}); // blue, white rim
    r.upload(ConeRenderer::Batch::Curves, {v(-0.8f, -0.5f, 1, 0, 0, 1), v(0.8f, -0.5f, 1, 0, 0, 1)}); // red
    // A half-transparent yellow triangle in the top-left corner (inside geometry: no facing test).
    r.upload(ConeRenderer::Batch::ReferenceMesh,
             {v(-1, 1, 1, 1, 0, 0.5f), v(-0.25f, 1, 1, 1, 0, 0.5f), v(-1, 0.25f, 1, 1, 0, 0.5f)});
    ConeRenderer::Frame f;
    f.width = kW, f.height = kH;
    target.begin(kBg[0], kBg[1], kBg[2], 1.0f);
    r.draw(f);
    target.read(pixels);
    r.destroy();

    // The dot (8 px) at the centre: blue inside, its 1.2 px white outline near radius 3.4.
    const Rgba centre = at(kW / 2, kH / 2);
    EXPECT_LT(centre.r, 20);
    EXPECT_GT(centre.b, 240);
    const Rgba rim = at(kW / 2 + 3, kH / 2);
    EXPECT_GT(rim.r, 120) << "outline";
    EXPECT_TRUE(isBackground(kW / 2 + 7, kH / 2));
    // The curve (1.3 px wide) along row 36.
    const Rgba curve = at(int(column(-0.4)), int(row(-0.5)));
    EXPECT_GT(curve.r, 150);
    EXPECT_LT(curve.g, 100);
    EXPECT_TRUE(isBackground(int(column(-0.4)), int(row(-0.5)) + 4));
    // Source over at alpha 0.5: halfway between the background and yellow.
    const Rgba mesh = at(2, 2);
    EXPECT_NEAR(mesh.r, (26 + 255) / 2, 2);
    EXPECT_NEAR(mesh.g, (51 + 255) / 2, 2);
    EXPECT_NEAR(mesh.b, 77 / 2, 2);
    EXPECT_TRUE(isBackground(kW - 3, 2));
}

TEST(RenderTarget, RefusesSizesBeyondTheLimits) {
    REQUIRE_GL();
    OffscreenTarget target;
    std::string why;
    EXPECT_FALSE(target.create(headless().gl, 1 << 20, 16, &why));
    EXPECT_NE(why.find("limits"), std::string::npos) << why;
    EXPECT_FALSE(target.create(headless().gl, 0, 16, &why));
    EXPECT_TRUE(target.create(headless().gl, 17, 9, &why)) << why; // odd sizes are fine
    std::vector<std::uint8_t> px;
    target.begin(1, 0, 0, 1);
    target.read(px);
    EXPECT_EQ(px.size(), std::size_t(17 * 9 * 4));
    EXPECT_EQ(px[0], 255);
}

} // namespace
} // namespace flowscope
