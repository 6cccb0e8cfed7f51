// Whole trajectories on each GPU backend's field, and how long one evaluation takes on this machine (printed
// only).
#include "GpuTestUtil.h"

#include "engine/attention/StreamKernel.h"
#include "engine/attention/VelocityField.h"

#include <chrono>
#include <cstdio>

using namespace flowscope;
using namespace flowscope::test;

namespace {

class GpuTrajectory : public GpuBackendTest {};

// 100 RK4 steps (400 evaluations). Rounding errors made at each step are carried to t = T by the same
// linearized flow whichever path made them (the error is linear in the per-step errors to first order), so
// a GPU path whose per-evaluation error is within 2x of CPU float32 ends within about 2x of CPU float32's
// deviation from float64; 3x leaves room for the steps where the two paths' errors happen not to cancel
// alike. The floor (1e-6 of the cloud's extent, ~10 float32 ulps) covers a CPU float32 that stays exact.
TEST_P(GpuTrajectory, Rk4HundredStepsTracksFloat64AsCloselyAsCpuFloat32) {
    const int n = 300, d = 2;
    const auto [X0, spec] = trajectoryProblem(n, 20240611);
    const TrajectoryErrors e =
        trajectoryErrors(spec, *makeBackendField(backend, spec, d), X0, fixedSteps(Method::Rk4, 2.0, 100));
    ASSERT_TRUE(e.Xgpu.allFinite());
    std::printf(
        "[ ratio    ] %-6s rk4 x100 softmax N=%d d=%d  gpu %.2e  cpu-f32 %.2e  ratio %.2f  (|X| %.2f, "
        "moved %.2f)\n",
        backendName(backend), n, d, e.gpuError, e.cpu32Error, e.gpuError / e.cpu32Error, maxRowNorm(e.X64),
        maxRowError(e.X64, X0));
    EXPECT_LE(e.gpuError, 3.0 * e.cpu32Error + 1e-6 * maxRowNorm(e.X64));
}

INSTANTIATE_TEST_SUITE_P(Backends, GpuTrajectory, ::testing::ValuesIn(kGpuBackends), backendParamName);

// Sphere-normalized dynamics in d = 3 (makeGlField / makeVkField wrap the field in the CPU's
// SphereProjection): unmasked on OpenGL, masked on Vulkan.
struct SphereCase {
    GpuBackendKind backend;
    bool masked;
};

class GpuSphereTrajectory : public ::testing::TestWithParam<SphereCase> {};

TEST_P(GpuSphereTrajectory, EulerTracksFloat64AsCloselyAsCpuFloat32) {
    const auto [backend, masked] = GetParam();
    FLOWSCOPE_REQUIRE_BACKEND(backend);
    std::mt19937_64 rng(77);
    const int n = 200, d = 3;
    Tokens X0 = randomMatrix(n, d, rng, 1.0);
    X0.rowwise().normalize();
    AttentionSpec spec;
    spec.heads = {HeadParams{Mat::Identity(d, d), Mat::Identity(d, d), Mat::Identity(d, d)}};
    spec.beta = 4.0;
    spec.sphere = true;
    spec.masked = masked;
    const TrajectoryErrors e =
        trajectoryErrors(spec, *makeBackendField(backend, spec, d), X0, fixedSteps(Method::Euler, 3.0, 100));
    std::printf(
        "[ ratio    ] %-6s euler x100 %ssphere softmax N=%d d=%d  gpu %.2e  cpu-f32 %.2e  ratio %.2f\n",
        backendName(backend), masked ? "masked " : "", n, d, e.gpuError, e.cpu32Error,
        e.gpuError / e.cpu32Error);
    EXPECT_LE(e.gpuError, 3.0 * e.cpu32Error + 1e-6 * maxRowNorm(e.X64));
}

INSTANTIATE_TEST_SUITE_P(Backends, GpuSphereTrajectory,
                         ::testing::Values(SphereCase{GpuBackendKind::Gl, false},
                                           SphereCase{GpuBackendKind::Vulkan, true}),
                         [](const ::testing::TestParamInfo<SphereCase>& info) {
                             return std::string(info.param.masked ? "masked_" : "") +
                                    backendName(info.param.backend);
                         });

class GpuTiming : public GpuBackendTest {};

// One softmax evaluation, d = 2, N = 4096: the backend (llvmpipe or lavapipe without a GPU) against the CPU
// float32 path, both staging paths of the shader. Printed, never asserted (timings belong to benchmarks).
TEST_P(GpuTiming, SoftmaxEvaluationN4096PrintedOnly) {
    FLOWSCOPE_REQUIRE_MEASURE();
    const int n = 4096, d = 2;
    const TrajectoryProblem problem = trajectoryProblem(n, 4096);
    const Tokens& X = problem.X;
    const AttentionSpec& spec = problem.spec;
    auto gpu = makeBackendKernelField(backend, spec, d);
    auto cpu = makeCpuField(spec, d, Precision::Float32);
    auto seconds = [&](VelocityField& f) {
        Tokens dX;
        f.velocity(0.0, X, dX); // warm-up: shader compile, buffer allocation, thread pool start
        const int reps = 5;
        const auto t0 = std::chrono::steady_clock::now();
        for (int k = 0; k < reps; ++k) f.velocity(0.0, X, dX);
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
    };
    const bool defaultStaging = gpu->sharedStaging();
    gpu->setSharedStaging(!defaultStaging);
    const double tOther = seconds(*gpu);
    gpu->setSharedStaging(defaultStaging);
    const double tGpu = seconds(*gpu), tCpu = seconds(*cpu);
    const char* label = backend == GpuBackendKind::Gl ? "OpenGL" : "Vulkan";
    std::printf("[ timing   ] softmax d=2 N=4096, one evaluation: %s %.2f ms (%s; %s %.2f ms), CPU float32 "
                "(%s) %.2f ms, %s/CPU %.2f  [%s]\n",
                label, 1e3 * tGpu, defaultStaging ? "shared" : "direct", defaultStaging ? "direct" : "shared",
                1e3 * tOther, streamKernelIsa(), 1e3 * tCpu, label, tGpu / tCpu,
                backendDescription(backend).c_str());
    RecordProperty(backend == GpuBackendKind::Gl ? "opengl_ms" : "vulkan_ms", std::to_string(1e3 * tGpu));
    RecordProperty("cpu_f32_ms", std::to_string(1e3 * tCpu));
}

INSTANTIATE_TEST_SUITE_P(Backends, GpuTiming, ::testing::ValuesIn(kGpuBackends), backendParamName);

} // namespace
