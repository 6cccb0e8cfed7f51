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

// Every stepper variant with Euler and RK4, N = 1 and 200, d = 1, 2, 3.
TYPED_TEST_P(DeviceStepperTest, TwentyStepsTrackFloat64AsCloselyAsCpuFloat32) {
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

TYPED_TEST_P(DeviceStepperTest, PositionalDecayAndPreAndPeriLnTrackFloat64) {
    flowscope::test::expectDecayAndSchemesTrackFloat64(flowscope::test::makeTestStepper<TypeParam>);
}

TYPED_TEST_P(DeviceStepperTest, AdvanceReadsNothingBackAndComposes) {
    flowscope::test::expectAdvanceReadsNothingBackAndComposes(flowscope::test::makeTestStepper<TypeParam>);
}

TYPED_TEST_P(DeviceStepperTest, TakesL2AndAdaptiveSteps) {
    flowscope::test::expectTakesL2AndAdaptiveSteps(flowscope::test::makeTestStepper<TypeParam>);
}

TYPED_TEST_P(DeviceStepperTest, DormandPrinceTracksFloat64AsCloselyAsCpuFloat32) {
    flowscope::test::expectDormandPrinceTracksFloat64(flowscope::test::makeTestStepper<TypeParam>);
}

TYPED_TEST_P(DeviceStepperTest, DormandPrinceComposesAndKeepsAFailedStep) {
    flowscope::test::expectDormandPrinceComposesAndKeepsAFailedStep(
        flowscope::test::makeTestStepper<TypeParam>);
}

TYPED_TEST_P(DeviceStepperTest, LiveEditsContinueFromTheCurrentState) {
    flowscope::test::expectLiveEditsContinueFromTheCurrentState(flowscope::test::makeTestStepper<TypeParam>);
}

// A record's pass at the device's own tokens (DeviceStepper::residentField: nothing uploaded, only the
// kernel's sums read back): the velocity, entropies and energy at the downloaded tokens equal the float64
// field's within twice the CPU float32 error plus the floors of the field tests (test_gpu_kernel_field.cpp),
// on the plane and on the sphere (tangent velocities), and no token download is added. Softmax, and l2, whose
// key biases -gamma |K x_j|^2 the kernel forms from the tokens (QUAD_BIAS) rather than having them uploaded;
// and masked softmax with a positional decay (its entropies include the decay; its energy is NaN).
// Devices without the pass return null (the caller's field runs); a device with it takes l2 too.
TYPED_TEST_P(DeviceStepperTest, ResidentPassMatchesTheFloat64Field) {
    using namespace flowscope;
    const auto& variants = test::kStepperVariants;
    const auto l2 = std::find_if(std::begin(variants), std::end(variants),
                                 [](const test::StepperVariant& v) { return v.type == AttentionType::L2; });
    ASSERT_NE(l2, std::end(variants));
    for (const int k : {0, 1, 2}) // softmax, l2, masked softmax with a decay
        for (const bool sphere : {false, true}) {
            const test::StepperVariant* v = k == 1 ? &*l2 : &variants[0];
            const bool decay = k == 2;
            SCOPED_TRACE(std::string(v->name) + (decay ? " decay" : "") + (sphere ? " sphere" : " plane"));
            std::mt19937_64 rng(5);
            Tokens X0 = test::randomMatrix(300, 3, rng, 1.0);
            if (sphere) X0.rowwise().normalize();
            AttentionSpec spec = test::stepperSpec(*v, X0, rng);
            spec.sphere = sphere;
            spec.masked = decay;
            spec.positionalDecay = decay ? 9.0 : 0.0;
            auto stepper =
                test::makeTestStepper<TypeParam>(spec, test::fixedSteps(Method::Euler, 1.0, 100), 3);
            stepper->upload(X0, 0.0);
            stepper->advance(5);
            Tokens X;
            stepper->download(X);
            VelocityField* resident = stepper->residentField();
            if (!resident && v == &variants[0]) GTEST_SKIP() << stepper->name() << " has no resident pass";
            ASSERT_NE(resident, nullptr) << stepper->name() << " has a resident pass but not for " << v->name;
            Tokens V, V64, V32;
            Vec H, H64, H32;
            double E = 0, E64 = 0, E32 = 0;
            resident->velocityAndStats(0.05, X, V, &H, &E);
            EXPECT_EQ(stepper->downloads(), 1);
            makeCpuField(spec, 3, Precision::Float64)->velocityAndStats(0.05, X, V64, &H64, &E64);
            makeCpuField(spec, 3, Precision::Float32)->velocityAndStats(0.05, X, V32, &H32, &E32);
            ASSERT_EQ(V.rows(), X.rows());
            ASSERT_EQ(H.size(), X.rows());
            const double floor = 4.0 * double(FLT_EPSILON) * test::maxRowNorm(V64);
            EXPECT_LE(test::maxRowError(V, V64),
                      8.0 * test::maxRowError(V32, V64) + floor); // queries formed on the device
            EXPECT_LE((H - H64).cwiseAbs().maxCoeff(),
                      2.0 * (H32 - H64).cwiseAbs().maxCoeff() + 1e-5 * (1.0 + H64.maxCoeff()));
            // The energy is softmax's only: NaN for l2, on every path.
            ASSERT_EQ(std::isnan(E), std::isnan(E64));
            if (!std::isnan(E64)) EXPECT_LE(std::abs(E / E64 - 1.0), 2.0 * std::abs(E32 / E64 - 1.0) + 1e-5);
            if (sphere) EXPECT_LT((V.array() * X.array()).rowwise().sum().abs().maxCoeff(), 1e-5);
        }
}

REGISTER_TYPED_TEST_SUITE_P(DeviceStepperTest, TwentyStepsTrackFloat64AsCloselyAsCpuFloat32,
                            HeunKeyframesAndSphereTrackFloat64, PositionalDecayAndPreAndPeriLnTrackFloat64,
                            AdvanceReadsNothingBackAndComposes, TakesL2AndAdaptiveSteps,
                            DormandPrinceTracksFloat64AsCloselyAsCpuFloat32,
                            DormandPrinceComposesAndKeepsAFailedStep, LiveEditsContinueFromTheCurrentState,
                            ResidentPassMatchesTheFloat64Field);
