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

TEST(GlTiming, StepperRk4StepN4096PrintedOnly) {
    FLOWSCOPE_REQUIRE_MEASURE();
    FLOWSCOPE_REQUIRE_GPU();
    printStepperRk4Timing(
        makeTestStepper<GlStepper>, [](GlStepper&) { gpuContext()->gl().Finish(); }, "GlStepper",
        gpuContext()->describe());
}
