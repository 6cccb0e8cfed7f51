// VkStepper: DeviceStepperTests.h (whole integration steps on Vulkan compute, lavapipe here, against the CPU
// integrator on the CPU float64 and float32 fields within the bounds GlStepper's tests use; advance reads
// nothing back; refusals; live edits, as test_gl_stepper.cpp), long runs batched into few submissions, no
// tokens and no heads, and the time of one RK4 step (printed only). Skipped where there is no Vulkan device.
#include "GpuTestUtil.h"

#if FLOWSCOPE_HAVE_VULKAN

#include "DeviceStepperTests.h"
#include "engine/gpu/vulkan/VkStepper.h"

using namespace flowscope;
using namespace flowscope::test;

INSTANTIATE_TYPED_TEST_SUITE_P(Vulkan, DeviceStepperTest, VkStepper);

// 120 RK4 steps of two heads (20 dispatches a step) take three submissions of at most
// VkStepper::kMaxDispatches dispatches, and equal 120 submissions of one step bit for bit.
TEST(VkStepper, LongRunsAreFewSubmissions) {
    FLOWSCOPE_REQUIRE_VULKAN();
    const int steps = 120;
    const auto [a, Xa] = expectAdvanceReadsNothingBackAndComposes(makeTestStepper<VkStepper>, steps);
    const int perSubmission = VkStepper::kMaxDispatches / 20;
    // The upload, the advance, the two downloads.
    EXPECT_EQ(a->submissions(), 1 + (steps + perSubmission - 1) / perSubmission + 2);
    EXPECT_EQ(a->share(0), nullptr); // no drawable device copy on Vulkan
}

// No tokens, and a spec with no heads (zero velocity): nothing moves, nothing fails.
TEST(VkStepper, NoTokensAndNoHeads) {
    FLOWSCOPE_REQUIRE_VULKAN();
    AttentionSpec none;
    VkStepper stepper(none, fixedSteps(Method::Rk4, 1.0, 10), 2, *vkContext());
    stepper.advance(3); // before any upload: only the time counts
    stepper.upload(Tokens(0, 2), 0.0);
    stepper.advance(2);
    Tokens X;
    stepper.download(X);
    EXPECT_EQ(X.rows(), 0);
    EXPECT_EQ(X.cols(), 2);
    std::mt19937_64 rng(3);
    const Tokens X0 = randomMatrix(70, 2, rng, 1.0);
    stepper.upload(X0, 0.5);
    stepper.advance(4);
    stepper.download(X);
    EXPECT_EQ(X, X0.cast<float>().cast<double>());
    EXPECT_DOUBLE_EQ(stepper.time(), 0.9);
    EXPECT_THROW(stepper.upload(Tokens(3, 3), 0.0), std::invalid_argument);
}

TEST(VkTiming, StepperRk4StepN4096PrintedOnly) {
    FLOWSCOPE_REQUIRE_MEASURE();
    FLOWSCOPE_REQUIRE_VULKAN();
    Tokens sink;
    printStepperRk4Timing(
        makeTestStepper<VkStepper>, [&](VkStepper& s) { s.download(sink); }, "VkStepper",
        vkContext()->describe());
}

#else

TEST(VkStepper, BuiltWithoutVulkan) {
    GTEST_SKIP() << "no Vulkan compute device: " << flowscope::test::vkUnavailable();
}

#endif // FLOWSCOPE_HAVE_VULKAN
