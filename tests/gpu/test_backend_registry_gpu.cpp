// The registry's GPU side: what a device stepper (OpenGL, Vulkan) says it cannot run is what it refuses when
// made (asked first, so Simulation and the runner never try), and the backend the registry opens answers the
// same.
#include "GpuTestUtil.h"

#include "engine/backend/Registry.h"
#include "engine/dynamics/Simulation.h"
#include "engine/gpu/gl/GlStepper.h"
#include "engine/sweep/Sweep.h"
#if FLOWSCOPE_HAVE_VULKAN
#include "engine/gpu/vulkan/VkStepper.h"
#endif

using namespace flowscope;
using namespace flowscope::test;

namespace {

struct StepCase {
    const char* name;
    AttentionType type;
    Method method;
    const char* field;  // the scene field a refusal names; null when the stepper takes the case
    double decay = 0.0; // positional decay lambda, masked (the kernel's POS_DECAY)
    Normalization scheme = Normalization::None;
};

const StepCase kStepCases[] = {
    {"softmax_rk4", AttentionType::Softmax, Method::Rk4, nullptr},
    {"exp_euler", AttentionType::Exp, Method::Euler, nullptr},
    {"softmax_dopri", AttentionType::Softmax, Method::DormandPrince, nullptr}, // adaptive sub-steps
    {"l2_heun", AttentionType::L2, Method::Heun, nullptr}, // key biases formed on the device (QUAD_BIAS)
    {"sinkhorn_rk4", AttentionType::Sinkhorn, Method::Rk4, "/attention/type"}, // not a kernel average
    {"masked_decay_rk4", AttentionType::Softmax, Method::Rk4, nullptr, 8.0},
    {"pre_decay_heun", AttentionType::Softmax, Method::Heun, nullptr, 4.0, Normalization::Pre},
    {"peri_dopri", AttentionType::Exp, Method::DormandPrince, nullptr, 0.0, Normalization::Peri},
};

AttentionSpec specOf(AttentionType type, int d) {
    AttentionSpec s;
    s.type = type;
    s.heads = {HeadParams{Mat::Identity(d, d), Mat::Identity(d, d), Mat::Identity(d, d)}};
    return s;
}

// A case's attention: specOf with its decay (masked) and scheme.
AttentionSpec caseSpec(const StepCase& c, int d) {
    AttentionSpec s = specOf(c.type, d);
    s.masked = c.decay != 0.0;
    s.positionalDecay = c.decay;
    s.normalization = c.scheme;
    return s;
}

IntegratorSpec integratorOf(Method method) {
    return fixedSteps(method, 1.0, 10);
}

// Every stepper, by the name of its class.
#if FLOWSCOPE_HAVE_VULKAN
using Steppers = ::testing::Types<GlStepper, VkStepper>;
#else
using Steppers = ::testing::Types<GlStepper>;
#endif
struct StepperName {
    template <class Stepper> static std::string GetName(int) {
        return kStepperOnGl<Stepper> ? "GlStepper" : "VkStepper";
    }
};

template <class Stepper> class StepperSupports : public ::testing::Test {};
TYPED_TEST_SUITE(StepperSupports, Steppers, StepperName);

// The backend's answers: the fields run every scene the CPU does; only whole steps on the device are refused,
// as the backend's stepper says.
void expectTheBackendAsksItsStepper(const ComputeBackend& backend, const BackendInfo& info,
                                    const StepperFactory::Check& refusal) {
    EXPECT_TRUE(backend.gpu);
    EXPECT_EQ(backend.label, info.label);
    EXPECT_TRUE(info.deviceSteps);
    ASSERT_TRUE(backend.makeStepper);
    for (const StepCase& c : kStepCases) {
        Scene scene;
        scene.d = 2;
        scene.attention = caseSpec(c, 2);
        scene.integrator = integratorOf(c.method);
        EXPECT_EQ(backend.supports(scene), std::nullopt) << c.name;
        EXPECT_EQ(backend.supportsDeviceSteps(scene), refusal(scene.attention, scene.integrator, 2))
            << c.name;
    }
}

// The listed backend `which` picks; null, failing the test, when there is none or it is not available.
const BackendInfo* listed(bool (*which)(const BackendInfo&)) {
    static const std::vector<BackendInfo> list = listBackends();
    const auto it = std::find_if(list.begin(), list.end(), which);
    if (it == list.end()) {
        ADD_FAILURE() << "no such backend is listed";
        return nullptr;
    }
    if (!it->available) {
        ADD_FAILURE() << it->id << " is not available: " << it->why;
        return nullptr;
    }
    return &*it;
}

#if FLOWSCOPE_HAVE_VULKAN
// The backend with whole steps on a device of its own (no OpenGL host): Vulkan.
const BackendInfo* listedVulkan() {
    return listed([](const BackendInfo& b) { return b.deviceSteps && !b.takesGlHost; });
}
#endif

} // namespace

TYPED_TEST(StepperSupports, TheAnswerNeedsNoDeviceAndNamesTheField) {
    for (const StepCase& c : kStepCases) {
        const std::optional<std::string> why = TypeParam::refusal(caseSpec(c, 2), integratorOf(c.method), 2);
        if (!c.field) {
            EXPECT_EQ(why, std::nullopt) << c.name << ": " << why.value_or("");
            continue;
        }
        ASSERT_TRUE(why) << c.name;
        EXPECT_EQ(why->rfind(std::string(c.field) + ": ", 0), 0u) << c.name << ": " << *why;
    }
}

TYPED_TEST(StepperSupports, TheAnswerIsWhatTheConstructorDoes) {
    FLOWSCOPE_REQUIRE_STEPPER_DEVICE(TypeParam);
    for (const StepCase& c : kStepCases) {
        const AttentionSpec spec = caseSpec(c, 2);
        const IntegratorSpec is = integratorOf(c.method);
        const std::optional<std::string> why = TypeParam::refusal(spec, is, 2);
        try {
            makeTestStepper<TypeParam>(spec, is, 2);
            EXPECT_EQ(why, std::nullopt) << c.name << ": made, but refused with " << why.value_or("");
        } catch (const SceneError& e) {
            EXPECT_EQ(why, std::optional<std::string>(e.what())) << c.name;
        }
    }
}

TEST(GlBackend, TheRegistrysGlBackendAsksItsStepper) {
    FLOWSCOPE_REQUIRE_GPU();
    const BackendInfo* gl = listed([](const BackendInfo& b) { return b.takesGlHost; });
    ASSERT_TRUE(gl);
    {
        ComputeBackend backend;
        try {
            backend = openBackend(gl->id); // a headless context of its own, current on this thread
        } catch (const BackendError& e) {
            gpuContext()->makeCurrent();
            GTEST_SKIP() << e.what();
        }
        expectTheBackendAsksItsStepper(backend, *gl, &GlStepper::refusal);
    }
    EXPECT_TRUE(gpuContext()->makeCurrent()); // the other tests use the run's context
}

#if FLOWSCOPE_HAVE_VULKAN
TEST(VkBackend, TheRegistrysVulkanBackendAsksItsStepper) {
    FLOWSCOPE_REQUIRE_VULKAN();
    const BackendInfo* vk = listedVulkan();
    ASSERT_TRUE(vk);
    const ComputeBackend backend = openBackend(vk->id);
    expectTheBackendAsksItsStepper(backend, *vk, &VkStepper::refusal);
    // Its stepper is what it makes: a VkStepper.
    const std::unique_ptr<DeviceStepper> stepper =
        backend.makeStepper.make(specOf(AttentionType::Softmax, 2), integratorOf(Method::Rk4), 2);
    EXPECT_NE(dynamic_cast<VkStepper*>(stepper.get()), nullptr) << stepper->name();
}

// A sweep on a backend with a device stepper takes whole steps on the device, as simulate does: a run's
// measures are those of a Simulation given the backend's stepper, bit for bit, and not those of its fields
// alone (a read-back per stage, float32 arithmetic of its own). Dormand-Prince, so that the adaptive steps
// are covered too.
TEST(VkBackend, ASweepRunTakesWholeStepsOnTheDevice) {
    FLOWSCOPE_REQUIRE_VULKAN();
    const BackendInfo* vk = listedVulkan();
    ASSERT_TRUE(vk);
    const ComputeBackend backend = openBackend(vk->id);
    const SweepSpec spec = sweepFromJson(R"({
      "name": "device",
      "base": {"d": 2, "n": 48, "precision": "float32",
               "initial": {"kind": "gaussian", "mean": [0, 0], "cov": [[1, 0], [0, 1]]},
               "attention": {"type": "softmax", "heads": [{"Q": 1, "K": 1, "V": [[-0.5, 0.3], [0, -0.5]]}]},
               "integrator": {"method": "dopri5", "T": 2, "steps": 8, "rtol": 1e-5}},
      "axes": [{"pointer": "/attention/beta", "values": [0.5, 2]}],
      "measures": ["energy", "entropy", "kinetic"]
    })",
                                         ".", "");
    const auto finalObservables = [&](long run, bool stepper) {
        Simulation sim(sweepScene(spec, run), backend.makeField);
        if (stepper) sim.setStepper(backend.makeStepper);
        EXPECT_EQ(sim.onDevice(), stepper);
        sim.run();
        const Observables& last = sim.lastObservables();
        return std::vector<double>{last.energy, last.entropy, last.kinetic};
    };
    for (long run = 0; run < spec.runs(); ++run) {
        const SweepRunResult r =
            runSweepRun(spec, run, sweepComputeOn(std::make_shared<const ComputeBackend>(backend)));
        ASSERT_TRUE(r.valid);
        EXPECT_EQ(r.measures, finalObservables(run, true)) << "run " << run;
        EXPECT_NE(r.measures, finalObservables(run, false)) << "run " << run;
        EXPECT_TRUE(std::isfinite(r.measures[0]) && std::isfinite(r.measures[1]));
    }
}
#endif

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
    // The steppers refuse them too, when they are uploaded.
    const AttentionSpec spec = specOf(AttentionType::Softmax, 2);
    if (backend == GpuBackendKind::Gl)
        EXPECT_THROW(makeTestStepper<GlStepper>(spec, integratorOf(Method::Euler), 2)->upload(keys, 0.0),
                     SceneError);
#if FLOWSCOPE_HAVE_VULKAN
    else
        EXPECT_THROW(makeTestStepper<VkStepper>(spec, integratorOf(Method::Euler), 2)->upload(keys, 0.0),
                     SceneError);
#endif
}

INSTANTIATE_TEST_SUITE_P(Backends, CpuDeviceLimit, ::testing::ValuesIn(kGpuBackends), backendParamName);
