// GlStepper: DeviceStepperTests.h (whole integration steps on the GPU, no read-back, against the CPU
// integrator on the CPU float64 and float32 fields; advance reads nothing back; refusals; live edits), the
// token buffer the GUI draws, and the llvmpipe time of one RK4 step (printed only).
#include "DeviceStepperTests.h"

#include "engine/gpu/gl/GlStepper.h"

using namespace flowscope;
using namespace flowscope::test;

INSTANTIATE_TYPED_TEST_SUITE_P(OpenGL, DeviceStepperTest, GlStepper);

// tokenBuffer() names the buffer download() reads, in the documented layout (what the GUI draws).
TEST(GlStepper, TokenBufferHoldsTheDownloadedTokens) {
    FLOWSCOPE_REQUIRE_GPU();
    const auto [a, Xa] = expectAdvanceReadsNothingBackAndComposes(makeTestStepper<GlStepper>);
    ASSERT_NE(a->tokenBuffer(), 0u);
    const GlFunctions& gl = gpuContext()->gl();
    Eigen::MatrixXf raw(65, 2);
    gl.BindBuffer(gl::SHADER_STORAGE_BUFFER, a->tokenBuffer());
    gl.GetBufferSubData(gl::SHADER_STORAGE_BUFFER, 0, gl::Sizeiptr(raw.size() * sizeof(float)), raw.data());
    EXPECT_EQ(raw.cast<double>(), Xa);
}

// The stepper keeps at most kQueuedAdvances advances queued ahead of the GPU (each fenced), so that a view's
// draw in another context never waits behind an unbounded queue; the pacing changes no result: ten single
// advances end bit for bit where one advance of ten does.
TEST(GlStepper, QueuesABoundedNumberOfAdvancesAndStepsAlike) {
    FLOWSCOPE_REQUIRE_GPU();
    std::mt19937_64 rng(3);
    const Tokens X0 = randomMatrix(300, 3, rng, 1.0);
    AttentionSpec spec;
    spec.heads = {HeadParams{Mat::Identity(3, 3), Mat::Identity(3, 3), -0.5 * Mat::Identity(3, 3)}};
    const IntegratorSpec euler = fixedSteps(Method::Euler, 1.0, 50);
    auto paced = makeTestStepper<GlStepper>(spec, euler, 3);
    auto once = makeTestStepper<GlStepper>(spec, euler, 3);
    paced->upload(X0, 0.0);
    once->upload(X0, 0.0);
    for (int k = 1; k <= 10; ++k) {
        paced->advance(1);
        EXPECT_EQ(paced->queuedAdvances(), std::min(k, GlStepper::kQueuedAdvances)) << "after advance " << k;
    }
    once->advance(10);
    Tokens a, b;
    paced->download(a);
    once->download(b);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, X0);
}

TEST(GlTiming, StepperRk4StepN4096PrintedOnly) {
    FLOWSCOPE_REQUIRE_MEASURE();
    FLOWSCOPE_REQUIRE_GPU();
    printStepperRk4Timing(
        makeTestStepper<GlStepper>, [](GlStepper&) { gpuContext()->gl().Finish(); }, "GlStepper",
        gpuContext()->describe());
}
