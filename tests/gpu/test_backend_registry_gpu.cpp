// The registry's GPU side: what the OpenGL stepper says it cannot run is what it refuses when made (asked
// first, so Simulation and the runner never try), and the gl backend the registry opens answers the same.
#include "GpuTestUtil.h"

#include "engine/backend/Registry.h"
#include "engine/gpu/gl/GlStepper.h"

using namespace flowscope;
using namespace flowscope::test;

namespace {

struct StepCase {
    const char* name;
    AttentionType type;
    Method method;
    const char* field; // the scene field a refusal names; null when the stepper takes the case
};

const StepCase kStepCases[] = {
    {"softmax_rk4", AttentionType::Softmax, Method::Rk4, nullptr},
    {"exp_euler", AttentionType::Exp, Method::Euler, nullptr},
    {"softmax_dopri", AttentionType::Softmax, Method::DormandPrince, "/integrator/method"},
    {"l2_heun", AttentionType::L2, Method::Heun, "/attention/type"},           // token-dependent key biases
    {"sinkhorn_rk4", AttentionType::Sinkhorn, Method::Rk4, "/attention/type"}, // not a kernel average
};

AttentionSpec specOf(AttentionType type, int d) {
    AttentionSpec s;
    s.type = type;
    s.heads = {HeadParams{Mat::Identity(d, d), Mat::Identity(d, d), Mat::Identity(d, d)}};
    return s;
}

IntegratorSpec integratorOf(Method method) {
    return fixedSteps(method, 1.0, 10);
}

} // namespace

TEST(GlStepperSupports, TheAnswerNeedsNoContextAndNamesTheField) {
    for (const StepCase& c : kStepCases) {
        const std::optional<std::string> why =
            GlStepper::refusal(specOf(c.type, 2), integratorOf(c.method), 2);
        if (!c.field) {
            EXPECT_EQ(why, std::nullopt) << c.name << ": " << why.value_or("");
            continue;
        }
        ASSERT_TRUE(why) << c.name;
        EXPECT_EQ(why->rfind(std::string(c.field) + ": ", 0), 0u) << c.name << ": " << *why;
    }
}

TEST(GlStepperSupports, TheAnswerIsWhatTheConstructorDoes) {
    FLOWSCOPE_REQUIRE_GPU();
    for (const StepCase& c : kStepCases) {
        const AttentionSpec spec = specOf(c.type, 2);
        const IntegratorSpec is = integratorOf(c.method);
        const std::optional<std::string> why = GlStepper::refusal(spec, is, 2);
        try {
            GlStepper stepper(spec, is, 2, gpuContext()->gl());
            EXPECT_EQ(why, std::nullopt) << c.name << ": made, but refused with " << why.value_or("");
        } catch (const SceneError& e) {
            EXPECT_EQ(why, std::optional<std::string>(e.what())) << c.name;
        }
    }
}

TEST(GlBackend, TheRegistrysGlBackendAsksItsStepper) {
    FLOWSCOPE_REQUIRE_GPU();
    const std::vector<BackendInfo> list = listBackends();
    const auto gl =
        std::find_if(list.begin(), list.end(), [](const BackendInfo& b) { return b.takesGlHost; });
    ASSERT_NE(gl, list.end());
    ASSERT_TRUE(gl->available) << gl->why;
    {
        ComputeBackend backend;
        try {
            backend = openBackend(gl->id); // a headless context of its own, current on this thread
        } catch (const BackendError& e) {
            gpuContext()->makeCurrent();
            GTEST_SKIP() << e.what();
        }
        EXPECT_TRUE(backend.gpu);
        EXPECT_EQ(backend.label, gl->label);
        ASSERT_TRUE(backend.makeStepper);
        for (const StepCase& c : kStepCases) {
            Scene scene;
            scene.d = 2;
            scene.attention = specOf(c.type, 2);
            scene.integrator = integratorOf(c.method);
            // The fields run every scene the CPU does; only whole steps on the device are refused.
            EXPECT_EQ(backend.supports(scene), std::nullopt) << c.name;
            EXPECT_EQ(backend.supportsDeviceSteps(scene),
                      GlStepper::refusal(scene.attention, scene.integrator, 2))
                << c.name;
        }
    }
    EXPECT_TRUE(gpuContext()->makeCurrent()); // the other tests use the run's context
}

// Mesa's CPU drivers stop a shader invocation's loops after 65 535 iterations, silently (docs/gpu.md#cpu-
// devices): there the backends refuse scenes past kCpuDeviceMaxKeys before they run, and the runners and the
// stepper throw a SceneError at /n instead of returning sums over the first ~63 500 keys. On a GPU all three
// take the tokens.
class CpuDeviceLimit : public GpuBackendTest {};

TEST_P(CpuDeviceLimit, CpuDevicesRefuseMoreTokensThanTheirShaderLoopsReach) {
    const bool cpu = makeBackendRunner(backend)->cpuDevice();
    const long n = kCpuDeviceMaxKeys + 1;
    Scene scene;
    scene.d = 2;
    scene.n = int(n);
    scene.attention = specOf(AttentionType::Softmax, 2);
    ComputeBackend opened;
    try {
        opened = openBackend(backendName(backend));
    } catch (const BackendError& e) {
        gpuContext()->makeCurrent();
        GTEST_SKIP() << e.what();
    }
    const std::optional<std::string> refused = opened.supports(scene);
    if (cpu) {
        ASSERT_TRUE(refused.has_value());
        EXPECT_EQ(refused->rfind("/n: ", 0), 0u) << *refused;
        scene.n = int(kCpuDeviceMaxKeys);
        EXPECT_EQ(opened.supports(scene), std::nullopt);
    } else {
        EXPECT_EQ(refused, std::nullopt);
    }
    opened = {};
    gpuContext()->makeCurrent();

    if (!cpu) return;
    Tokens keys = Tokens::Zero(n, 2);
    const Tokens query = Tokens::Zero(1, 2);
    const Mat none;
    const Vec noBias;
    StreamSums sums;
    try {
        makeBackendRunner(backend)->run(StreamPass{query, none, keys, noBias}, sums);
        ADD_FAILURE() << "the runner took " << n << " keys";
    } catch (const SceneError& e) {
        EXPECT_EQ(e.pointer, "/n");
    }
    if (backend == GpuBackendKind::Gl) {
        GlStepper stepper(specOf(AttentionType::Softmax, 2), integratorOf(Method::Euler), 2,
                          gpuContext()->gl());
        EXPECT_THROW(stepper.upload(keys, 0.0), SceneError);
    }
}

INSTANTIATE_TEST_SUITE_P(Backends, CpuDeviceLimit, ::testing::ValuesIn(kGpuBackends), backendParamName);
