// Whole trajectories on the GPU field, and how long one evaluation takes on this machine (printed only).
#include "GpuTestUtil.h"

#include "engine/attention/StreamKernel.h"
#include "engine/attention/VelocityField.h"
#include "engine/dynamics/Integrator.h"
#include "engine/gpu/GlKernelField.h"

#include <chrono>
#include <cstdio>

using namespace flowscope;
using namespace flowscope::test;

namespace {

Tokens integrate(VelocityField& field, Tokens X, const IntegratorSpec& spec) {
    auto integrator = makeIntegrator(spec);
    const Field f = [&](double t, const Tokens& Y, Tokens& dY) { field.velocity(t, Y, dY); };
    const double h = spec.T / spec.steps;
    for (int k = 0; k < spec.steps; ++k) integrator->advance(f, k * h, h, X);
    return X;
}

// Softmax attention, random Q, K and V = I + small random part (clustering, not blowing up), d = 2.
AttentionSpec trajectorySpec(std::mt19937_64& rng) {
    AttentionSpec spec;
    spec.heads = {HeadParams{Mat::Identity(2, 2) + randomMatrix(2, 2, rng, 0.3),
                             Mat::Identity(2, 2) + randomMatrix(2, 2, rng, 0.3),
                             Mat::Identity(2, 2) + randomMatrix(2, 2, rng, 0.2)}};
    spec.beta = 2.0;
    return spec;
}

} // namespace

// 100 RK4 steps (400 evaluations). Rounding errors made at each step are carried to t = T by the same
// linearized flow whichever path made them (the error is linear in the per-step errors to first order), so
// a GPU path whose per-evaluation error is within 2x of CPU float32 ends within about 2x of CPU float32's
// deviation from float64; 3x leaves room for the steps where the two paths' errors happen not to cancel
// alike. The floor (1e-6 of the cloud's extent, ~10 float32 ulps) covers a CPU float32 that stays exact.
TEST(GlTrajectory, Rk4HundredStepsTracksFloat64AsCloselyAsCpuFloat32) {
    FLOWSCOPE_REQUIRE_GPU();
    std::mt19937_64 rng(20240611);
    const int n = 300, d = 2;
    const Tokens X0 = randomMatrix(n, d, rng, 1.0);
    const AttentionSpec spec = trajectorySpec(rng);
    IntegratorSpec is;
    is.method = Method::Rk4;
    is.T = 2.0;
    is.steps = 100;

    const Tokens X64 = integrate(*makeCpuField(spec, d, Precision::Float64), X0, is);
    const Tokens X32 = integrate(*makeCpuField(spec, d, Precision::Float32), X0, is);
    const Tokens Xgl = integrate(*makeGlField(spec, d, gpuContext()->gl()), X0, is);
    ASSERT_TRUE(Xgl.allFinite());
    const double errGl = maxRowError(Xgl, X64), err32 = maxRowError(X32, X64);
    const double floor = 1e-6 * maxRowNorm(X64);
    std::printf(
        "[ ratio    ] rk4 x100 softmax N=%d d=%d  gpu %.2e  cpu-f32 %.2e  ratio %.2f  (|X| %.2f, moved "
        "%.2f)\n",
        n, d, errGl, err32, errGl / err32, maxRowNorm(X64), maxRowError(X64, X0));
    EXPECT_LE(errGl, 3.0 * err32 + floor);
}

// Sphere-normalized dynamics in d = 3: the GPU field is wrapped in the CPU's SphereProjection.
TEST(GlTrajectory, SphereEulerTracksFloat64AsCloselyAsCpuFloat32) {
    FLOWSCOPE_REQUIRE_GPU();
    std::mt19937_64 rng(77);
    const int n = 200, d = 3;
    Tokens X0 = randomMatrix(n, d, rng, 1.0);
    X0.rowwise().normalize();
    AttentionSpec spec;
    spec.heads = {HeadParams{Mat::Identity(d, d), Mat::Identity(d, d), Mat::Identity(d, d)}};
    spec.beta = 4.0;
    spec.sphere = true;
    IntegratorSpec is;
    is.method = Method::Euler;
    is.T = 3.0;
    is.steps = 100;

    const Tokens X64 = integrate(*makeCpuField(spec, d, Precision::Float64), X0, is);
    const Tokens X32 = integrate(*makeCpuField(spec, d, Precision::Float32), X0, is);
    const Tokens Xgl = integrate(*makeGlField(spec, d, gpuContext()->gl()), X0, is);
    const double errGl = maxRowError(Xgl, X64), err32 = maxRowError(X32, X64);
    std::printf("[ ratio    ] euler x100 sphere softmax N=%d d=%d  gpu %.2e  cpu-f32 %.2e  ratio %.2f\n", n,
                d, errGl, err32, errGl / err32);
    EXPECT_LE(errGl, 3.0 * err32 + 1e-6 * maxRowNorm(X64));
}

// One softmax evaluation, d = 2, N = 4096: llvmpipe (or the GPU) against the CPU float32 path. Printed, never
// asserted (timings belong to benchmarks, DESIGN.md).
TEST(GlTiming, SoftmaxEvaluationN4096PrintedOnly) {
    FLOWSCOPE_REQUIRE_GPU();
    std::mt19937_64 rng(4096);
    const int n = 4096, d = 2;
    const Tokens X = randomMatrix(n, d, rng, 1.0);
    const AttentionSpec spec = trajectorySpec(rng);
    auto gl = makeGlField(spec, d, gpuContext()->gl());
    auto cpu = makeCpuField(spec, d, Precision::Float32);
    auto seconds = [&](VelocityField& f) {
        Tokens dX;
        f.velocity(0.0, X, dX); // warm-up: shader compile, buffer allocation, thread pool start
        const int reps = 5;
        const auto t0 = std::chrono::steady_clock::now();
        for (int k = 0; k < reps; ++k) f.velocity(0.0, X, dX);
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
    };
    const double tGl = seconds(*gl), tCpu = seconds(*cpu);
    std::printf("[ timing   ] softmax d=2 N=4096, one evaluation: OpenGL %.2f ms, CPU float32 (%s) %.2f ms, "
                "OpenGL/CPU %.2f  [%s]\n",
                1e3 * tGl, streamKernelIsa(), 1e3 * tCpu, tGl / tCpu, gpuContext()->describe().c_str());
    RecordProperty("opengl_ms", std::to_string(1e3 * tGl));
    RecordProperty("cpu_f32_ms", std::to_string(1e3 * tCpu));
}
