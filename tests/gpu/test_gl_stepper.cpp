// GlStepper: whole integration steps on the GPU (no read-back) against the CPU integrator on the CPU float64
// and float32 fields; that advance reads nothing back; the llvmpipe time of one RK4 step (printed only).
#include "GpuTestUtil.h"

#include "engine/attention/StreamKernel.h"
#include "engine/dynamics/Integrator.h"
#include "engine/gpu/gl/GlStepper.h"

#include <chrono>
#include <cstdio>

using namespace flowscope;
using namespace flowscope::test;

namespace {

constexpr int kSteps = 50;

// The CPU integrator on the CPU field; `floatState`: the tokens are also rounded to float32 at the start and
// after every step, as the GPU stores them.
Tokens integrate(const AttentionSpec& spec, Precision precision, Tokens X, const IntegratorSpec& is,
                 bool floatState = false) {
    auto round = [&] {
        if (floatState) X = X.cast<float>().cast<double>();
    };
    round();
    auto field = makeCpuField(spec, int(X.cols()), precision);
    auto integrator = makeIntegrator(is);
    const Field f = [&](double t, const Tokens& Y, Tokens& dY) { field->velocity(t, Y, dY); };
    const double h = is.T / is.steps;
    for (int k = 0; k < is.steps; ++k) {
        integrator->advance(f, k * h, h, X);
        if (spec.sphere) X.rowwise().normalize(); // as Simulation::step
        round();
    }
    return X;
}

Tokens onGpu(const AttentionSpec& spec, const Tokens& X0, const IntegratorSpec& is, int steps) {
    GlStepper stepper(spec, is, int(X0.cols()), gpuContext()->gl());
    stepper.upload(X0, 0.0);
    stepper.advance(steps);
    Tokens X;
    stepper.download(X);
    return X;
}

struct StepperVariant {
    const char* name;
    AttentionType type = AttentionType::Softmax;
    bool masked = false;
    int heads = 1;
    double scoreStd = 2.0; // score spread at t = 0 (exp: e^{max score} scales the velocity)
    double vScale = 1.0;   // |V| (exp: |dx/dt| ~ e^{max score} |V|, and blows up in finite time)
    bool keyframes = false;
    bool sphere = false;
};

// Random Q, K (calibrated so the scores spread v.scoreStd over X) and V (norm ~1: tokens move O(1) by T = 1).
AttentionSpec stepperSpec(const StepperVariant& v, const Tokens& X, std::mt19937_64& rng) {
    const int d = int(X.cols());
    AttentionSpec spec;
    spec.type = v.type;
    spec.masked = v.masked;
    spec.sphere = v.sphere;
    setHeads(spec, v.keyframes,
             [&] { return randomHeads(v.heads, d, d, v.vScale / std::sqrt(double(d)), rng); });
    if (X.rows() > 1) {
        // First head at kSweepTime (0.3): close enough for a scale.
        const double spread = scoreSpread(sweepScores(spec, X));
        scaleQueries(spec, spread > 0 ? v.scoreStd / spread : 1.0);
    }
    return spec;
}

const StepperVariant kVariants[] = {
    {"softmax"},
    {"two_head_softmax", AttentionType::Softmax, false, 2},
    {"masked_softmax", AttentionType::Softmax, true},
    {"exp", AttentionType::Exp, false, 1, 0.5, 0.5},
    {"sigmoid", AttentionType::Sigmoid},
};

struct Deviation {
    double gpu;          // GlStepper
    double cpu32;        // CPU float32 field, state in double (what Simulation does in float32)
    double cpu32state;   // CPU float32 field, state rounded to float32 after every step (as the GPU keeps it)
    double storageBound; // worst case of the GPU's extra state roundings (floor against cpu32)
    double walkFloor;    // their typical size (floor against cpu32state)
};

// The deviations from CPU float64 after kSteps steps of `method` (T = 1), and the two floors.
//
// The GPU keeps the tokens in float32 between steps, while the CPU float32 field rounds only its kernel's
// inputs and keeps the state in double. So every GPU step rounds each coordinate once more, by at most
// eps/2 |x| (RK4's stage inputs round too, but enter the update only through h k). That dominates: at N = 1
// the CPU float32 deviation is 1e-10..1e-8 and the GPU's 1e-7, all storage. Two criteria:
//  - against the CPU float32 field: gpu <= 3 cpu32 + storageBound, storageBound = kSteps eps/2 max|x| times
//    2 for the flow's growth of early errors over T = 1 with |V| ~ 1 (the worst case: every rounding alike);
//  - against the same CPU run with the state rounded to float32 after each step (the GPU's storage, so the
//    remaining difference is the field: in-shader queries rounding twice, float head assembly and combine):
//    gpu <= 3 cpu32state + walkFloor. The two runs' roundings are independent once their velocities differ
//    in the last bit, so each is a random walk of kSteps roundings uniform in +-ulp/2 (variance ulp^2 / 12);
//    walkFloor = sqrt(kSteps / 6) eps max|x| is one standard deviation of their difference.
Deviation deviation(const AttentionSpec& spec, const Tokens& X0, Method method) {
    const IntegratorSpec is = fixedSteps(method, 1.0, kSteps);
    const Tokens X64 = integrate(spec, Precision::Float64, X0, is);
    const Tokens X32 = integrate(spec, Precision::Float32, X0, is);
    const Tokens X32s = integrate(spec, Precision::Float32, X0, is, true);
    const Tokens Xgl = onGpu(spec, X0, is, kSteps);
    EXPECT_TRUE(X64.allFinite());
    EXPECT_TRUE(Xgl.allFinite());
    const double scale = std::max(maxRowNorm(X64), maxRowNorm(X0));
    return {maxRowError(Xgl, X64), maxRowError(X32, X64), maxRowError(X32s, X64),
            2.0 * kSteps * 0.5 * FLT_EPSILON * scale, std::sqrt(kSteps / 6.0) * FLT_EPSILON * scale};
}

// Prints the deviations and checks both criteria.
void expectTracks(const char* name, Method method, int n, int d, const Deviation& e) {
    std::printf(
        "[ stepper  ] %-16s %-5s N=%3d d=%d  gpu %.2e  cpu-f32 %.2e (gpu/cpu %7.1f)  cpu-f32-state %.2e "
        "(gpu/cpu %.2f)\n",
        name, toString(method), n, d, e.gpu, e.cpu32, e.gpu / e.cpu32, e.cpu32state, e.gpu / e.cpu32state);
    EXPECT_LE(e.gpu, 3.0 * e.cpu32 + e.storageBound);
    EXPECT_LE(e.gpu, 3.0 * e.cpu32state + e.walkFloor);
}

class GlStepperAgreement : public ::testing::TestWithParam<std::tuple<int, Method>> {};

} // namespace

TEST_P(GlStepperAgreement, FiftyStepsTrackFloat64AsCloselyAsCpuFloat32) {
    FLOWSCOPE_REQUIRE_GPU();
    const StepperVariant& v = kVariants[std::get<0>(GetParam())];
    const Method method = std::get<1>(GetParam());
    for (int n : {1, 65, 300})
        for (int d : {1, 2, 3}) {
            SCOPED_TRACE(std::string(v.name) + " N=" + std::to_string(n) + " d=" + std::to_string(d));
            std::mt19937_64 rng(1000 * n + 10 * d + std::get<0>(GetParam()));
            const Tokens X0 = randomMatrix(n, d, rng, 1.0);
            const AttentionSpec spec = stepperSpec(v, X0, rng);
            expectTracks(v.name, method, n, d, deviation(spec, X0, method));
        }
}

INSTANTIATE_TEST_SUITE_P(Variants, GlStepperAgreement,
                         ::testing::Combine(::testing::Range(0, int(std::size(kVariants))),
                                            ::testing::Values(Method::Euler, Method::Rk4)),
                         [](const auto& info) {
                             return std::string(kVariants[std::get<0>(info.param)].name) + "_" +
                                    toString(std::get<1>(info.param));
                         });

// Heun, keyframed heads (re-set up at every stage time) and sphere dynamics, one size each.
TEST(GlStepper, HeunKeyframesAndSphereTrackFloat64) {
    FLOWSCOPE_REQUIRE_GPU();
    const StepperVariant keyframed{.name = "keyframed", .keyframes = true};
    const StepperVariant sphere{.name = "sphere", .heads = 2, .sphere = true};
    for (const auto& [v, method] : {std::pair{keyframed, Method::Heun}, std::pair{keyframed, Method::Rk4},
                                    std::pair{sphere, Method::Euler}, std::pair{sphere, Method::Rk4}}) {
        SCOPED_TRACE(std::string(v.name) + " " + toString(method));
        std::mt19937_64 rng(31);
        Tokens X0 = randomMatrix(100, 3, rng, 1.0);
        if (v.sphere) X0.rowwise().normalize();
        expectTracks(v.name, method, 100, 3, deviation(stepperSpec(v, X0, rng), X0, method));
    }
}

// advance() only records dispatches: advance(0) leaves the uploaded tokens (rounded to float) untouched,
// advance(k) reads nothing back and equals k calls of advance(1) bit for bit, and the time is t0 + k h.
TEST(GlStepper, AdvanceReadsNothingBackAndComposes) {
    FLOWSCOPE_REQUIRE_GPU();
    std::mt19937_64 rng(5);
    const Tokens X0 = randomMatrix(65, 2, rng, 1.0);
    const AttentionSpec spec = stepperSpec(kVariants[1], X0, rng);
    const IntegratorSpec is = fixedSteps(Method::Rk4, 1.0, 20);
    GlStepper a(spec, is, 2, gpuContext()->gl()), b(spec, is, 2, gpuContext()->gl());
    a.upload(X0, 0.25);
    b.upload(X0, 0.25);
    EXPECT_NE(a.tokenBuffer(), 0u);

    Tokens X;
    a.advance(0);
    a.download(X);
    EXPECT_EQ(X, X0.cast<float>().cast<double>());
    EXPECT_EQ(a.downloads(), 1);

    a.advance(7);
    for (int k = 0; k < 7; ++k) b.advance(1);
    EXPECT_EQ(a.downloads(), 1);
    EXPECT_EQ(b.downloads(), 0);
    EXPECT_DOUBLE_EQ(a.time(), 0.25 + 7 * 0.05);
    Tokens Xa, Xb;
    a.download(Xa);
    b.download(Xb);
    EXPECT_EQ(Xa, Xb);
    EXPECT_GT(maxRowError(Xa, X0), 1e-3); // it moved

    // tokenBuffer() names the buffer download() reads, in the documented layout (what the GUI will draw).
    const GlFunctions& gl = gpuContext()->gl();
    Eigen::MatrixXf raw(65, 2);
    gl.BindBuffer(gl::SHADER_STORAGE_BUFFER, a.tokenBuffer());
    gl.GetBufferSubData(gl::SHADER_STORAGE_BUFFER, 0, gl::Sizeiptr(raw.size() * sizeof(float)), raw.data());
    EXPECT_EQ(raw.cast<double>(), Xa);
}

TEST(GlStepper, RejectsTokenDependentHeadsAndAdaptiveSteps) {
    FLOWSCOPE_REQUIRE_GPU();
    std::mt19937_64 rng(9);
    AttentionSpec spec;
    spec.heads = {{randomMatrix(2, 2, rng, 1.0), randomMatrix(2, 2, rng, 1.0), Mat::Identity(2, 2)}};
    IntegratorSpec is;
    is.method = Method::DormandPrince;
    EXPECT_THROW(GlStepper(spec, is, 2, gpuContext()->gl()), SceneError);
    is.method = Method::Rk4;
    AttentionSpec l2 = spec;
    l2.type = AttentionType::L2;
    EXPECT_THROW(GlStepper(l2, is, 2, gpuContext()->gl()), SceneError);
    GlStepper stepper(spec, is, 2, gpuContext()->gl());
    EXPECT_THROW(stepper.setAttention(l2), SceneError);
}

// One RK4 step, softmax d = 2, N = 4096: the GPU stepper (llvmpipe here) against the CPU float32 field
// through the same Integrator Simulation::step uses. Printed, never asserted (performance is measured by
// benchmarks, never asserted in tests).
TEST(GlTiming, StepperRk4StepN4096PrintedOnly) {
    FLOWSCOPE_REQUIRE_GPU();
    std::mt19937_64 rng(4096);
    const int n = 4096, d = 2;
    const Tokens X0 = randomMatrix(n, d, rng, 1.0);
    const AttentionSpec spec = stepperSpec(kVariants[0], X0.topRows(256), rng);
    const IntegratorSpec is = fixedSteps(Method::Rk4, 1.0, 100);
    const GlFunctions& gl = gpuContext()->gl();
    using Clock = std::chrono::steady_clock;
    const int reps = 3;

    GlStepper stepper(spec, is, d, gl);
    stepper.upload(X0, 0.0);
    stepper.advance(1); // warm-up: shader compile, allocation
    gl.Finish();
    auto t0 = Clock::now();
    stepper.advance(reps);
    gl.Finish();
    const double tGpu = std::chrono::duration<double>(Clock::now() - t0).count() / reps;

    auto field = makeCpuField(spec, d, Precision::Float32);
    auto integrator = makeIntegrator(is);
    const Field f = [&](double t, const Tokens& Y, Tokens& dY) { field->velocity(t, Y, dY); };
    Tokens X = X0;
    integrator->advance(f, 0.0, 0.01, X); // warm-up: thread pool
    t0 = Clock::now();
    for (int k = 0; k < reps; ++k) integrator->advance(f, 0.01 * (k + 1), 0.01, X);
    const double tCpu = std::chrono::duration<double>(Clock::now() - t0).count() / reps;
    std::printf("[ timing   ] softmax d=2 N=4096, one RK4 step: GlStepper %.1f ms, CPU float32 (%s) %.1f ms, "
                "GPU/CPU %.2f  [%s]\n",
                1e3 * tGpu, streamKernelIsa(), 1e3 * tCpu, tGpu / tCpu, gpuContext()->describe().c_str());
    RecordProperty("stepper_rk4_ms", std::to_string(1e3 * tGpu));
    RecordProperty("cpu_f32_rk4_ms", std::to_string(1e3 * tCpu));
}
