// The tests every device stepper passes (GlStepper, VkStepper), written once as a typed test suite on
// GpuTestUtil.h's checks: a test file instantiates it for its stepper,
//     INSTANTIATE_TYPED_TEST_SUITE_P(OpenGL, DeviceStepperTest, GlStepper);
// and adds what only its device has. Skipped where the stepper's context or device is missing.
#pragma once

#include "GpuTestUtil.h"

template <class Stepper> class DeviceStepperTest : public ::testing::Test {
  protected:
    void SetUp() override { FLOWSCOPE_REQUIRE_STEPPER_DEVICE(Stepper); }
};

TYPED_TEST_SUITE_P(DeviceStepperTest);

// Every stepper variant with Euler and RK4, N = 1, 65, 300 and d = 1, 2, 3.
TYPED_TEST_P(DeviceStepperTest, FiftyStepsTrackFloat64AsCloselyAsCpuFloat32) {
    using namespace flowscope;
    for (int v = 0; v < int(std::size(test::kStepperVariants)); ++v)
        for (Method method : {Method::Euler, Method::Rk4}) {
            SCOPED_TRACE(std::string(test::kStepperVariants[v].name) + " " + toString(method));
            test::expectVariantTracksFloat64(test::makeTestStepper<TypeParam>, v, method);
        }
}

TYPED_TEST_P(DeviceStepperTest, HeunKeyframesAndSphereTrackFloat64) {
    flowscope::test::expectHeunKeyframesAndSphereTrackFloat64(flowscope::test::makeTestStepper<TypeParam>);
}

TYPED_TEST_P(DeviceStepperTest, AdvanceReadsNothingBackAndComposes) {
    flowscope::test::expectAdvanceReadsNothingBackAndComposes(flowscope::test::makeTestStepper<TypeParam>);
}

TYPED_TEST_P(DeviceStepperTest, TakesL2AndRejectsAdaptiveSteps) {
    flowscope::test::expectTakesL2AndRejectsAdaptiveSteps(flowscope::test::makeTestStepper<TypeParam>);
}

TYPED_TEST_P(DeviceStepperTest, LiveEditsContinueFromTheCurrentState) {
    flowscope::test::expectLiveEditsContinueFromTheCurrentState(flowscope::test::makeTestStepper<TypeParam>);
}

REGISTER_TYPED_TEST_SUITE_P(DeviceStepperTest, FiftyStepsTrackFloat64AsCloselyAsCpuFloat32,
                            HeunKeyframesAndSphereTrackFloat64, AdvanceReadsNothingBackAndComposes,
                            TakesL2AndRejectsAdaptiveSteps, LiveEditsContinueFromTheCurrentState);
