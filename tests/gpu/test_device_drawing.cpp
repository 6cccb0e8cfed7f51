// The particle view's device path, headless: a GL stepper computes in one context and publishes a copy of its
// tokens (GlStepper::share); a second context of the same share group draws that copy
// (PointRenderer::drawDevicePoints), as the app's view and `flowscope-cli bench view` do. The oracle is the
// view's other path: the same tokens downloaded and uploaded as vertices must give the same picture, pixel
// for pixel (the positions are the same float32 numbers, projected by the same matrix).
#if FLOWSCOPE_HAVE_RENDER_GL

#include "GpuTestUtil.h"

#include "engine/gpu/gl/GlStepper.h"
#include "render/OffscreenTarget.h"
#include "render/PointRenderer.h"

#include <random>

using namespace flowscope;
using namespace flowscope::test;

namespace {

// One vertex per token at its coordinates (zero-padded to three), in one colour.
std::vector<PointVertex> vertices(const Tokens& X) {
    std::vector<PointVertex> v(std::size_t(X.rows()));
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
        PointVertex& p = v[std::size_t(i)];
        p = {0.0f, 0.0f, 0.0f, 0.9f, 0.6f, 0.2f, 1.0f};
        p.x = float(X(i, 0));
        if (X.cols() > 1) p.y = float(X(i, 1));
        if (X.cols() > 2) p.z = float(X(i, 2));
    }
    return v;
}

long litPixels(const std::vector<std::uint8_t>& rgba) {
    long lit = 0;
    for (std::size_t i = 0; i + 3 < rgba.size(); i += 4) lit += rgba[i] > 128 ? 1 : 0;
    return lit;
}

} // namespace

TEST(DeviceDrawing, TheStepperSharedCopyDrawsTheDownloadedTokensPixelForPixel) {
    FLOWSCOPE_REQUIRE_GPU();
    GlContext* compute = gpuContext();
    std::string why;
    const auto draw = GlContext::createHeadless(&why, compute);
    ASSERT_TRUE(draw) << why;
    ASSERT_TRUE(compute->makeCurrent());

    for (const int d : {2, 3}) {
        SCOPED_TRACE("d = " + std::to_string(d));
        const int n = 700;
        AttentionSpec spec;
        spec.heads = {{Mat::Identity(d, d), Mat::Identity(d, d), -0.5 * Mat::Identity(d, d)}};
        IntegratorSpec is;
        is.method = Method::Rk4;
        is.T = 0.4;
        is.steps = 4;
        GlStepper stepper(spec, is, d, compute->gl());
        const int tag = 0; // any address: the share group's name as the producer tags it
        stepper.setShareGroup(&tag);
        std::mt19937 rng(7 + d);
        std::normal_distribution<double> normal;
        Tokens X0(n, d);
        for (Eigen::Index i = 0; i < X0.size(); ++i) X0.data()[i] = normal(rng);
        stepper.upload(X0, 0.0);
        stepper.advance(3);
        const std::shared_ptr<const DeviceTokens> copy = stepper.share(3);
        ASSERT_TRUE(copy);
        EXPECT_EQ(copy->shareGroup, &tag);
        EXPECT_EQ(copy->n, n);
        EXPECT_EQ(copy->d, d);
        Tokens X;
        stepper.download(X);
        ASSERT_GT((X - X0).norm(), 1e-3); // the copy is of the stepped tokens, not the uploaded ones

        ASSERT_TRUE(draw->makeCurrent());
        {
            GlApi gl;
            ASSERT_TRUE(gl.load(GlContext::procLoader(), &why)) << why;
            PointRenderer renderer;
            ASSERT_TRUE(renderer.initialize(gl)) << renderer.log();
            OffscreenTarget target;
            ASSERT_TRUE(target.create(gl, 320, 200, &why)) << why;
            Eigen::Matrix4f vp = Eigen::Matrix4f::Identity(); // [-3, 3] in x and y, z squashed
            vp(0, 0) = vp(1, 1) = 1.0f / 3.0f;
            vp(2, 2) = 0.1f;
            Eigen::Matrix4f project = Eigen::Matrix4f::Zero();
            for (int k = 0; k < d; ++k) project(k, k) = 1.0f;
            renderer.upload(PointRenderer::Points, vertices(X));

            std::vector<std::uint8_t> uploaded, fromDevice;
            target.begin(0.0f, 0.0f, 0.0f, 1.0f);
            renderer.drawPoints(vp, 3.0f);
            target.read(uploaded);
            target.begin(0.0f, 0.0f, 0.0f, 1.0f);
            ASSERT_TRUE(renderer.drawDevicePoints(*copy, project, Eigen::Vector3f::Zero(), vp, 3.0f));
            target.read(fromDevice);
            EXPECT_GT(litPixels(uploaded), n / 4); // the points are there (most of N(0, I) is in view)
            EXPECT_TRUE(uploaded == fromDevice)
                << litPixels(uploaded) << " lit uploaded, " << litPixels(fromDevice) << " from the device";

            // The initial tokens, uploaded, are another picture: the comparison tells the two apart.
            std::vector<std::uint8_t> initial;
            renderer.upload(PointRenderer::Points, vertices(X0));
            target.begin(0.0f, 0.0f, 0.0f, 1.0f);
            renderer.drawPoints(vp, 3.0f);
            target.read(initial);
            EXPECT_FALSE(initial == fromDevice);
            target.destroy();
            renderer.destroy();
        }
        ASSERT_TRUE(compute->makeCurrent()); // the stepper goes in its own context
    }
}

#endif
