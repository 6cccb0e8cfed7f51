// Helpers shared by the GPU-kernel tests: one headless OpenGL context and one Vulkan device for the whole run
// (main.cpp creates them), the backend parameter (GpuBackendKind) and its fields, random attention problems,
// the agreement sweep's problems and error floor, trajectories, and error norms against the CPU reference;
// and the device steppers' tests (GlStepper, VkStepper), written once for any stepper.
#pragma once

#include "engine/attention/KernelAttention.h"
#include "engine/attention/StreamKernel.h"
#include "engine/dynamics/DeviceStepper.h"
#include "engine/dynamics/Integrator.h"
#include "engine/gpu/gl/GlContext.h"
#include "engine/gpu/gl/GlKernelField.h"
#include "engine/gpu/gl/GlStreamRunner.h"
#include "engine/scene/Scene.h"
#if FLOWSCOPE_HAVE_VULKAN
#include "engine/gpu/vulkan/VkContext.h"
#include "engine/gpu/vulkan/VkKernelField.h"
#include "engine/gpu/vulkan/VkStreamRunner.h"
#endif

#include <gtest/gtest.h>

#include <cstdlib>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace flowscope {
class VkContext; // engine/gpu/vulkan/VkContext.h, only in builds with FLOWSCOPE_HAVE_VULKAN
}

namespace flowscope::test {

// The run's context, current on the test thread, or null (then gpuUnavailable() says why).
GlContext* gpuContext();
const std::string& gpuUnavailable();

// Skips the test when `available` is null, saying `what` is missing and why.
#define FLOWSCOPE_SKIP_UNLESS_AVAILABLE_(available, what, why)                                               \
    do {                                                                                                     \
        if (!(available)) GTEST_SKIP() << what << ": " << why;                                               \
    } while (0)

#define FLOWSCOPE_REQUIRE_GPU()                                                                              \
    FLOWSCOPE_SKIP_UNLESS_AVAILABLE_(::flowscope::test::gpuContext(), "no OpenGL 4.3 compute context",       \
                                     ::flowscope::test::gpuUnavailable())

// Timings printed for a person to read: left to the benchmarks (flowscope-cli bench) unless
// FLOWSCOPE_MEASURE=1.
#define FLOWSCOPE_REQUIRE_MEASURE()                                                                          \
    do {                                                                                                     \
        const char* measure = std::getenv("FLOWSCOPE_MEASURE");                                              \
        if (!measure || !*measure) GTEST_SKIP() << "a timing, not a check: set FLOWSCOPE_MEASURE=1";         \
    } while (false)

// The run's Vulkan device, or null (then vkUnavailable() says why: no loader, no device, or not built).
VkContext* vkContext();
const std::string& vkUnavailable();

#define FLOWSCOPE_REQUIRE_VULKAN()                                                                           \
    FLOWSCOPE_SKIP_UNLESS_AVAILABLE_(::flowscope::test::vkContext(), "no Vulkan compute device",             \
                                     ::flowscope::test::vkUnavailable())

// The GPU backends a test can be parameterized by.
enum class GpuBackendKind { Gl, Vulkan };
inline constexpr GpuBackendKind kGpuBackends[] = {GpuBackendKind::Gl, GpuBackendKind::Vulkan};

// "gl" or "vulkan" (test names, printed lines).
inline const char* backendName(GpuBackendKind b) {
    return b == GpuBackendKind::Gl ? "gl" : "vulkan";
}
inline std::string backendParamName(const ::testing::TestParamInfo<GpuBackendKind>& info) {
    return backendName(info.param);
}

// Skips the test when backend b has no context or device here, with the reason.
#define FLOWSCOPE_REQUIRE_BACKEND(b)                                                                         \
    do {                                                                                                     \
        if ((b) == ::flowscope::test::GpuBackendKind::Gl)                                                    \
            FLOWSCOPE_REQUIRE_GPU();                                                                         \
        else                                                                                                 \
            FLOWSCOPE_REQUIRE_VULKAN();                                                                      \
    } while (0)

// A test parameterized by the backend: skipped (in SetUp) where `backend` has no context or device here.
class GpuBackendTest : public ::testing::TestWithParam<GpuBackendKind> {
  protected:
    void SetUp() override { FLOWSCOPE_REQUIRE_BACKEND(backend); }

    const GpuBackendKind backend = GetParam();
};

// The backend's kernel field (GlKernelField or VkKernelField, no sphere projection), on the run's context or
// device: call FLOWSCOPE_REQUIRE_BACKEND(b) first.
inline std::unique_ptr<GpuField> makeBackendKernelField(GpuBackendKind b, const AttentionSpec& spec, int d) {
    if (b == GpuBackendKind::Gl) return std::make_unique<GlKernelField>(spec, d, gpuContext()->gl());
#if FLOWSCOPE_HAVE_VULKAN
    return std::make_unique<VkKernelField>(spec, d, *vkContext());
#else
    throw std::logic_error("this build has no Vulkan host");
#endif
}

// The backend's streaming-pass runner, on the run's context or device: call FLOWSCOPE_REQUIRE_BACKEND(b)
// first.
inline std::unique_ptr<KernelPassRunner> makeBackendRunner(GpuBackendKind b) {
    if (b == GpuBackendKind::Gl) return std::make_unique<GlStreamRunner>(gpuContext()->gl());
#if FLOWSCOPE_HAVE_VULKAN
    return std::make_unique<VkStreamRunner>(*vkContext());
#else
    throw std::logic_error("this build has no Vulkan host");
#endif
}

// The backend's field for a spec: makeGlField or makeVkField (sphere projection added when spec.sphere).
inline std::unique_ptr<VelocityField> makeBackendField(GpuBackendKind b, const AttentionSpec& spec, int d) {
    if (b == GpuBackendKind::Gl) return makeGlField(spec, d, gpuContext()->gl());
#if FLOWSCOPE_HAVE_VULKAN
    return makeVkField(spec, d, *vkContext());
#else
    throw std::logic_error("this build has no Vulkan host");
#endif
}

// The backend's context or device, in words.
inline std::string backendDescription(GpuBackendKind b) {
    if (b == GpuBackendKind::Gl) return gpuContext()->describe();
#if FLOWSCOPE_HAVE_VULKAN
    return vkContext()->describe();
#else
    return vkUnavailable();
#endif
}

inline Mat randomMatrix(int rows, int cols, std::mt19937_64& rng, double scale) {
    std::normal_distribution<double> normal(0.0, scale);
    Mat M(rows, cols);
    for (Eigen::Index k = 0; k < M.size(); ++k) M.data()[k] = normal(rng);
    return M;
}

// max_i |A_i - B_i| (rows as vectors, Euclidean), the error norm of every comparison here.
inline double maxRowError(const Tokens& A, const Tokens& B) {
    return A.rows() ? (A - B).rowwise().norm().maxCoeff() : 0.0;
}
inline double maxRowNorm(const Tokens& A) {
    return A.rows() ? A.rowwise().norm().maxCoeff() : 0.0;
}

// `count` random heads: Q and K k x d with unit entries, V d x d with entries of deviation vStd.
inline std::vector<HeadParams> randomHeads(int count, int k, int d, double vStd, std::mt19937_64& rng) {
    std::vector<HeadParams> hs;
    for (int h = 0; h < count; ++h)
        hs.push_back(
            {randomMatrix(k, d, rng, 1.0), randomMatrix(k, d, rng, 1.0), randomMatrix(d, d, rng, vStd)});
    return hs;
}

// Sets the spec's heads from makeHeads(): constant, or two keyframes (0 and 1, linear interpolation).
template <class MakeHeads> void setHeads(AttentionSpec& spec, bool keyframes, MakeHeads makeHeads) {
    if (keyframes) {
        spec.keyframes = {{0.0, makeHeads()}, {1.0, makeHeads()}};
        spec.interpolation = Interpolation::Linear;
    } else {
        spec.heads = makeHeads();
    }
}

// Multiplies every head's Q (constant and keyframed) by f.
inline void scaleQueries(AttentionSpec& spec, double f) {
    for (HeadParams& h : spec.heads) h.Q *= f;
    for (Keyframe& kf : spec.keyframes)
        for (HeadParams& h : kf.heads) h.Q *= f;
}

// The standard deviation of a score matrix's entries.
inline double scoreSpread(const Mat& S) {
    return S.size() ? std::sqrt((S.array() - S.mean()).square().mean()) : 0.0;
}

// Uploads 100 floats, then 1000 (the buffer grows), and reads them back (GlBuffer, VkStorageBuffer).
template <class Buffer> void expectUploadDownloadRoundTripAndGrowth(Buffer& b) {
    std::vector<float> in(1000), out(1000);
    std::iota(in.begin(), in.end(), 0.5f);
    b.upload(in.data(), 100 * sizeof(float));
    EXPECT_GE(b.capacity(), 100 * sizeof(float));
    b.upload(in.data(), in.size() * sizeof(float)); // grows
    b.download(out.data(), out.size() * sizeof(float));
    EXPECT_EQ(in, out);
}

// X integrated by `spec`'s fixed steps on `field`.
inline Tokens integrate(VelocityField& field, Tokens X, const IntegratorSpec& spec) {
    auto integrator = makeIntegrator(spec);
    const Field f = [&](double t, const Tokens& Y, Tokens& dY) { field.velocity(t, Y, dY); };
    const double h = spec.T / spec.steps;
    for (int k = 0; k < spec.steps; ++k) integrator->advance(f, k * h, h, X);
    return X;
}

// `steps` fixed steps of `method` over [0, T].
inline IntegratorSpec fixedSteps(Method method, double T, int steps) {
    IntegratorSpec is;
    is.method = method;
    is.T = T;
    is.steps = steps;
    return is;
}

// X0 integrated by `is` on the CPU in float64 (the reference) and float32, and on `gpuField`, with the
// largest row errors of the latter two against the reference. The trajectory tests' criterion: gpuError
// within 3x of cpu32Error plus 1e-6 of the cloud's extent (maxRowNorm(X64)).
struct TrajectoryErrors {
    Tokens X64, Xgpu;
    double gpuError = 0, cpu32Error = 0;
};
inline TrajectoryErrors trajectoryErrors(const AttentionSpec& spec, VelocityField& gpuField, const Tokens& X0,
                                         const IntegratorSpec& is) {
    const int d = int(X0.cols());
    TrajectoryErrors e;
    e.X64 = integrate(*makeCpuField(spec, d, Precision::Float64), X0, is);
    const Tokens X32 = integrate(*makeCpuField(spec, d, Precision::Float32), X0, is);
    e.Xgpu = integrate(gpuField, X0, is);
    e.gpuError = maxRowError(e.Xgpu, e.X64);
    e.cpu32Error = maxRowError(X32, e.X64);
    return e;
}

// Softmax attention, random Q, K and V = I + small random part (clustering, not blowing up), d = 2.
inline AttentionSpec trajectorySpec(std::mt19937_64& rng) {
    AttentionSpec spec;
    spec.heads = {HeadParams{Mat::Identity(2, 2) + randomMatrix(2, 2, rng, 0.3),
                             Mat::Identity(2, 2) + randomMatrix(2, 2, rng, 0.3),
                             Mat::Identity(2, 2) + randomMatrix(2, 2, rng, 0.2)}};
    spec.beta = 2.0;
    return spec;
}

// n random tokens in d = 2 (unit normal entries), then a trajectorySpec for them, drawn in that order from
// one generator seeded by `seed`.
struct TrajectoryProblem {
    Tokens X;
    AttentionSpec spec;
};
inline TrajectoryProblem trajectoryProblem(int n, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    Tokens X = randomMatrix(n, 2, rng, 1.0);
    return {std::move(X), trajectorySpec(rng)};
}

// The agreement sweep every GPU backend runs against the CPU float64 reference (criterion: the backend's
// float32 error is at most twice the CPU float32 error, plus sweepFloor; see test_gpu_kernel_field.cpp).
struct SweepVariant {
    const char* name;
    AttentionType type = AttentionType::Softmax;
    bool masked = false;
    int heads = 1;
    bool keyframes = false;        // two keyframes, linear interpolation, evaluated between them
    bool betaCarriesScale = false; // calibrate the score spread through beta instead of Q (beta != 1)
    bool rootK = false;            // scaleByRootK with k = ceil(d / 2) rows in Q and K
    bool sphere = false;
};

inline const SweepVariant kSweepVariants[] = {
    {"softmax"},
    {"l2", AttentionType::L2},
    {"exp", AttentionType::Exp},
    {"relu", AttentionType::Relu},
    {"sigmoid", AttentionType::Sigmoid},
    {"masked_softmax", AttentionType::Softmax, true},
    {"masked_l2", AttentionType::L2, true},
    {"masked_sigmoid", AttentionType::Sigmoid, true},
    {"two_head_softmax", AttentionType::Softmax, false, 2},
    {"keyframed_softmax", AttentionType::Softmax, false, 1, true},
    {"beta_softmax", AttentionType::Softmax, false, 1, false, true},
    {"root_k_softmax", AttentionType::Softmax, false, 1, false, false, true},
    {"sphere_softmax", AttentionType::Softmax, false, 1, false, false, false, true},
};

inline constexpr double kSweepTime = 0.3;     // evaluation time (between the keyframes at 0 and 1)
inline constexpr double kSweepScoreStd = 3.0; // score spread: softmax neither uniform nor one-hot

// The scores s_ij = (B x_i) . x_j + b_j of the first head at kSweepTime, from the variant's own CPU setup.
inline Mat sweepScores(const AttentionSpec& spec, const Tokens& X) {
    AttentionSpec plain = spec; // the kernel average itself, without a scheme's wrapper
    plain.sphere = false;
    plain.normalization = Normalization::None;
    const auto field = makeCpuField(plain, int(X.cols()), Precision::Float64);
    const HeadSetup h = dynamic_cast<KernelAttention&>(*field).setupHead(spec.headsAt(kSweepTime).front(), X);
    Mat S = X * h.B.transpose() * X.transpose();
    if (h.bias.size()) S.rowwise() += h.bias.transpose();
    return S;
}

// A random spec of variant v for tokens X, its scores calibrated to spread kSweepScoreStd (through beta for
// l2, whose scores are not linear in Q, and for betaCarriesScale; through Q otherwise).
inline AttentionSpec sweepSpec(const SweepVariant& v, int d, const Tokens& X, std::mt19937_64& rng) {
    AttentionSpec spec;
    spec.type = v.type;
    spec.masked = v.masked;
    spec.sphere = v.sphere;
    spec.scaleByRootK = v.rootK;
    const int k = v.rootK ? (d + 1) / 2 : d;
    setHeads(spec, v.keyframes, [&] { return randomHeads(v.heads, k, d, 1.0 / std::sqrt(double(d)), rng); });
    const Tokens sample = X.topRows(std::min<Eigen::Index>(X.rows(), 256));
    const double spread = X.rows() > 1 ? scoreSpread(sweepScores(spec, sample)) : 0.0;
    if (spread > 0) {
        const double f = kSweepScoreStd / spread;
        if (v.betaCarriesScale || v.type == AttentionType::L2)
            spec.beta = f;
        else
            scaleQueries(spec, f);
    }
    return spec;
}

// The agreement sweeps' parameter: backend, variant index, N, d.
using SweepParam = std::tuple<GpuBackendKind, int, int, int>;

// The fixture of an agreement sweep over a table of variants: the case's parameter (skipped where the backend
// is missing), its tokens X (N x d, unit normal entries) and the generator that drew them, seeded from
// `kSeedBase` and the case, for the variant's spec to draw from next.
template <unsigned kSeedBase> class GpuSweepTest : public ::testing::TestWithParam<SweepParam> {
  protected:
    void SetUp() override { FLOWSCOPE_REQUIRE_BACKEND(backend); }

    const GpuBackendKind backend = std::get<0>(GetParam());
    const int vi = std::get<1>(GetParam()), n = std::get<2>(GetParam()), d = std::get<3>(GetParam());
    std::mt19937_64 rng{kSeedBase + 1000u * unsigned(vi) + 10u * unsigned(n) + unsigned(d)};
    const Tokens X = randomMatrix(n, d, rng, 1.0);
};

// A sweep case's test name, backend_variant_N<n>_d<d>, the variant named by `variants`.
template <const auto& variants> std::string sweepCaseName(const ::testing::TestParamInfo<SweepParam>& info) {
    const auto [backend, vi, n, d] = info.param;
    return std::string(backendName(backend)) + "_" + variants[vi].name + "_N" + std::to_string(n) + "_d" +
           std::to_string(d);
}

// The criterion's absolute floor: 4 float32 ulps of the largest velocity (for a CPU float32 that happens to
// be exact, e.g. N = 1), plus, for exp attention, two float roundings of the largest |score| that e^{m_i}
// turns into relative velocity errors.
inline double sweepFloor(const SweepVariant& v, const AttentionSpec& spec, const Tokens& X,
                         const Tokens& v64) {
    double floor = 4.0 * FLT_EPSILON * maxRowNorm(v64);
    if (v.type == AttentionType::Exp)
        floor += 2.0 * FLT_EPSILON * sweepScores(spec, X).cwiseAbs().maxCoeff() * maxRowNorm(v64);
    return floor;
}

// ---- Device steppers (DeviceStepperTests.h, test_gl_stepper.cpp, test_vk_stepper.cpp) ----
//
// Each check below takes a `make(spec, integrator, d)` that returns a std::unique_ptr to the concrete stepper
// on the run's context or device (makeTestStepper<GlStepper> or <VkStepper>).

inline constexpr int kStepperSteps = 20;

// Whether a Stepper (GlStepper or VkStepper) runs in an OpenGL context (else on a Vulkan device).
template <class Stepper>
inline constexpr bool kStepperOnGl =
    std::is_constructible_v<Stepper, const AttentionSpec&, const IntegratorSpec&, int, const GlFunctions&>;

// Skips the test when the run has no context or device for Stepper, with the reason.
#define FLOWSCOPE_REQUIRE_STEPPER_DEVICE(Stepper)                                                            \
    do {                                                                                                     \
        if constexpr (::flowscope::test::kStepperOnGl<Stepper>)                                              \
            FLOWSCOPE_REQUIRE_GPU();                                                                         \
        else                                                                                                 \
            FLOWSCOPE_REQUIRE_VULKAN();                                                                      \
    } while (0)

// A Stepper on the run's context or device, as the checks' `make`: FLOWSCOPE_REQUIRE_STEPPER_DEVICE first.
template <class Stepper>
std::unique_ptr<Stepper> makeTestStepper(const AttentionSpec& spec, const IntegratorSpec& is, int d) {
    if constexpr (kStepperOnGl<Stepper>)
        return std::make_unique<Stepper>(spec, is, d, gpuContext()->gl());
    else
        return std::make_unique<Stepper>(spec, is, d, *vkContext());
}

// The CPU integrator on the CPU field; `floatState`: the tokens are also rounded to float32 at the start and
// after every step, as the GPU stores them.
inline Tokens integrateOnCpu(const AttentionSpec& spec, Precision precision, Tokens X,
                             const IntegratorSpec& is, bool floatState = false) {
    auto round = [&] {
        if (floatState) X = X.cast<float>().cast<double>();
    };
    round();
    auto field = makeCpuField(spec, int(X.cols()), precision);
    auto integrator = makeIntegrator(is);
    const double h = is.T / is.steps;
    // Piecewise-constant keyframes are layers: a stage on a switch time uses the step's layer (Simulation).
    const bool layers = !spec.keyframes.empty() && spec.interpolation == Interpolation::Piecewise;
    double t0 = 0.0;
    const Field f = [&](double t, const Tokens& Y, Tokens& dY) {
        field->velocity(layers ? std::clamp(t, t0 + 1e-9 * h, t0 + h - 1e-9 * h) : t, Y, dY);
    };
    for (int k = 0; k < is.steps; ++k) {
        t0 = k * h;
        integrator->advance(f, k * h, h, X);
        if (spec.sphere) X.rowwise().normalize(); // as Simulation::step
        round();
    }
    return X;
}

// X0 uploaded at t = 0, `steps` steps on the device, downloaded.
template <class Make>
Tokens stepOnDevice(Make& make, const AttentionSpec& spec, const Tokens& X0, const IntegratorSpec& is,
                    int steps) {
    auto stepper = make(spec, is, int(X0.cols()));
    stepper->upload(X0, 0.0);
    stepper->advance(steps);
    Tokens X;
    stepper->download(X);
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
    Normalization scheme = Normalization::None; // pre or peri (post is `sphere`)
};

// Random Q, K (calibrated so the scores spread v.scoreStd over X) and V (norm ~1: tokens move O(1) by T = 1).
inline AttentionSpec stepperSpec(const StepperVariant& v, const Tokens& X, std::mt19937_64& rng) {
    const int d = int(X.cols());
    AttentionSpec spec;
    spec.type = v.type;
    spec.masked = v.masked;
    spec.sphere = v.sphere;
    spec.normalization = v.scheme;
    // Exp attention sums N unnormalized weights of about e^{m_i}: V / N keeps its motion O(1) too (with V
    // of norm ~0.5 the tokens of some draws blow up before T = 1).
    const double vScale =
        v.vScale / std::sqrt(double(d)) / (v.type == AttentionType::Exp ? double(X.rows()) : 1.0);
    setHeads(spec, v.keyframes, [&] { return randomHeads(v.heads, d, d, vScale, rng); });
    if (X.rows() > 1) {
        // First head at kSweepTime (0.3): close enough for a scale.
        const double spread = scoreSpread(sweepScores(spec, X));
        scaleQueries(spec, spread > 0 ? v.scoreStd / spread : 1.0);
    }
    return spec;
}

inline const StepperVariant kStepperVariants[] = {
    {"softmax"},
    {"two_head_softmax", AttentionType::Softmax, false, 2},
    {"masked_softmax", AttentionType::Softmax, true},
    {"exp", AttentionType::Exp, false, 1, 0.5, 0.5},
    {"sigmoid", AttentionType::Sigmoid},
    {"l2", AttentionType::L2}, // key biases -gamma |K x_j|^2 formed on the device (QUAD_BIAS)
};

struct Deviation {
    double gpu;          // the device stepper
    double cpu32;        // CPU float32 field, state in double (what Simulation does in float32)
    double cpu32state;   // CPU float32 field, state rounded to float32 after every step (as the GPU keeps it)
    double storageBound; // worst case of the GPU's extra state roundings (floor against cpu32)
    double walkFloor;    // their typical size (floor against cpu32state)
};

// The deviations from CPU float64 of `Xgpu`, X0 after kStepperSteps steps of `is` (T = 1) on the device,
// and the two floors.
//
// The GPU keeps the tokens in float32 between steps, while the CPU float32 field rounds only its kernel's
// inputs and keeps the state in double. So every GPU step rounds each coordinate once more, by at most
// eps/2 |x| (RK4's stage inputs round too, but enter the update only through h k). That dominates: at N = 1
// the CPU float32 deviation is 1e-10..1e-8 and the GPU's 1e-7, all storage. Two criteria:
//  - against the CPU float32 field: gpu <= 3 cpu32 + storageBound, storageBound = kStepperSteps eps/2 max|x|
//    times 2 for the flow's growth of early errors over T = 1 with |V| ~ 1 (the worst case: every rounding
//    alike);
//  - against the same CPU run with the state rounded to float32 after each step (the GPU's storage, so the
//    remaining difference is the field: in-shader queries rounding twice, float head assembly and combine):
//    gpu <= 3 cpu32state + walkFloor. The two runs' roundings are independent once their velocities differ
//    in the last bit, so each is a random walk of kStepperSteps roundings uniform in +-ulp/2 (variance
//    ulp^2 / 12); walkFloor = sqrt(kStepperSteps / 6) eps max|x| is one standard deviation of their
//    difference.
inline Deviation stepperDeviation(const AttentionSpec& spec, const Tokens& X0, const IntegratorSpec& is,
                                  const Tokens& Xgpu) {
    const Tokens X64 = integrateOnCpu(spec, Precision::Float64, X0, is);
    const Tokens X32 = integrateOnCpu(spec, Precision::Float32, X0, is);
    const Tokens X32s = integrateOnCpu(spec, Precision::Float32, X0, is, true);
    EXPECT_TRUE(X64.allFinite());
    EXPECT_TRUE(Xgpu.allFinite());
    const double scale = std::max(maxRowNorm(X64), maxRowNorm(X0));
    return {maxRowError(Xgpu, X64), maxRowError(X32, X64), maxRowError(X32s, X64),
            2.0 * kStepperSteps * 0.5 * FLT_EPSILON * scale,
            std::sqrt(kStepperSteps / 6.0) * FLT_EPSILON * scale};
}

// Prints the deviations and checks both criteria.
inline void expectStepperTracks(const char* name, Method method, int n, int d, const Deviation& e) {
    std::printf(
        "[ stepper  ] %-16s %-5s N=%3d d=%d  gpu %.2e  cpu-f32 %.2e (gpu/cpu %7.1f)  cpu-f32-state %.2e "
        "(gpu/cpu %.2f)\n",
        name, toString(method), n, d, e.gpu, e.cpu32, e.gpu / e.cpu32, e.cpu32state, e.gpu / e.cpu32state);
    EXPECT_LE(e.gpu, 3.0 * e.cpu32 + e.storageBound);
    EXPECT_LE(e.gpu, 3.0 * e.cpu32state + e.walkFloor);
}

// kStepperSteps steps of `method` (T = 1) on the device track float64 as closely as CPU float32 does.
template <class Make>
void expectStepperTracksFloat64(Make& make, const char* name, const AttentionSpec& spec, const Tokens& X0,
                                Method method) {
    const IntegratorSpec is = fixedSteps(method, 1.0, kStepperSteps);
    const Tokens Xgpu = stepOnDevice(make, spec, X0, is, kStepperSteps);
    expectStepperTracks(name, method, int(X0.rows()), int(X0.cols()), stepperDeviation(spec, X0, is, Xgpu));
}

// The agreement test of kStepperVariants[variant]: N = 1, 200 and d = 1, 2, 3.
template <class Make> void expectVariantTracksFloat64(Make make, int variant, Method method) {
    const StepperVariant& v = kStepperVariants[variant];
    for (int n : {1, 200}) // one token, and more than a workgroup (up to 4 x 64 queries) and three tiles
        for (int d : {1, 2, 3}) {
            SCOPED_TRACE(std::string(v.name) + " N=" + std::to_string(n) + " d=" + std::to_string(d));
            std::mt19937_64 rng(1000 * n + 10 * d + variant);
            const Tokens X0 = randomMatrix(n, d, rng, 1.0);
            expectStepperTracksFloat64(make, v.name, stepperSpec(v, X0, rng), X0, method);
        }
}

// Positional decay and the pre- and peri-LN schemes in whole device steps: the kernel computes
// s_ij -= (lambda / N) |i - j| from the token indices (POS_DECAY; docs/math/theory.md#positional-decay),
// masked and not, lambda below and above the score spread; pre and peri evaluate at the directions a
// stage_combine pass writes first, and peri's velocity is scaled to unit norm by the last head's assembly
// (two heads: after the sum). N over one and several tiles. The CPU integrator on the CPU fields is the
// reference, with expectStepperTracks' criteria.
template <class Make> void expectDecayAndSchemesTrackFloat64(Make make) {
    struct Case {
        const char* name;
        bool masked;
        double lambda;
        Normalization scheme;
        int heads;
    };
    const Case cases[] = {{"decay", false, 7.5, Normalization::None, 1},
                          {"masked_decay", true, 7.5, Normalization::None, 1},
                          {"masked_decay_100", true, 100.0, Normalization::None, 1},
                          {"pre", false, 0.0, Normalization::Pre, 1},
                          {"peri", false, 0.0, Normalization::Peri, 2},
                          {"masked_peri_decay", true, 12.0, Normalization::Peri, 1}};
    for (const Case& c : cases)
        for (Method method : {Method::Euler, Method::Rk4})
            for (int n : {65, 200}) {
                SCOPED_TRACE(std::string(c.name) + " " + toString(method) + " N=" + std::to_string(n));
                std::mt19937_64 rng(500 + n);
                const Tokens X0 = randomMatrix(n, 3, rng, 1.0);
                AttentionSpec spec = stepperSpec(kStepperVariants[c.heads == 1 ? 0 : 1], X0, rng);
                spec.masked = c.masked;
                spec.positionalDecay = c.lambda;
                spec.normalization = c.scheme;
                EXPECT_EQ(deviceStepsRefusal(spec), std::nullopt);
                expectStepperTracksFloat64(make, c.name, spec, X0, method);
                if (c.scheme != Normalization::None) { // the token buffer holds no directions
                    auto stepper = make(spec, fixedSteps(method, 1.0, kStepperSteps), 3);
                    stepper->upload(X0, 0.0);
                    EXPECT_EQ(stepper->residentField(), nullptr);
                }
            }
}

// Heun, keyframed heads (re-set up at every stage time), layers (piecewise-constant keyframes switching at
// t = 0.5, where RK4's last stage of step 25 sits: it must use the step's layer, as on the CPU) and sphere
// dynamics, one size each.
template <class Make> void expectHeunKeyframesAndSphereTrackFloat64(Make make) {
    const StepperVariant keyframed{.name = "keyframed", .keyframes = true};
    const StepperVariant layers{.name = "layers", .keyframes = true};
    const StepperVariant sphere{.name = "sphere", .heads = 2, .sphere = true};
    for (const auto& [v, method] :
         {std::pair{keyframed, Method::Heun}, std::pair{keyframed, Method::Rk4},
          std::pair{layers, Method::Rk4}, std::pair{sphere, Method::Euler}, std::pair{sphere, Method::Rk4}}) {
        SCOPED_TRACE(std::string(v.name) + " " + toString(method));
        std::mt19937_64 rng(31);
        Tokens X0 = randomMatrix(100, 3, rng, 1.0);
        if (v.sphere) X0.rowwise().normalize();
        AttentionSpec spec = stepperSpec(v, X0, rng);
        if (std::string(v.name) == "layers") {
            spec.interpolation = Interpolation::Piecewise;
            spec.keyframes[1].t = 0.5;
        }
        expectStepperTracksFloat64(make, v.name, spec, X0, method);
    }
}

// advance() only records work: advance(0) leaves the uploaded tokens (rounded to float) untouched, advance(k)
// reads nothing back and equals k calls of advance(1) bit for bit (and `steps` calls of advance(1) after it:
// longer runs too), and the time is t0 + k h. Returns the first stepper, after those steps, and its tokens.
template <class Make> auto expectAdvanceReadsNothingBackAndComposes(Make make, int steps = 7) {
    std::mt19937_64 rng(5);
    const Tokens X0 = randomMatrix(65, 2, rng, 1.0);
    const AttentionSpec spec = stepperSpec(kStepperVariants[1], X0, rng);
    const IntegratorSpec is = fixedSteps(Method::Rk4, 1.0, 20);
    auto a = make(spec, is, 2), b = make(spec, is, 2);
    a->upload(X0, 0.25);
    b->upload(X0, 0.25);

    Tokens X;
    a->advance(0);
    a->download(X);
    EXPECT_EQ(X, X0.cast<float>().cast<double>());
    EXPECT_EQ(a->downloads(), 1);

    a->advance(steps);
    for (int k = 0; k < steps; ++k) b->advance(1);
    EXPECT_EQ(a->downloads(), 1);
    EXPECT_EQ(b->downloads(), 0);
    EXPECT_DOUBLE_EQ(a->time(), 0.25 + steps * 0.05);
    Tokens Xa, Xb;
    a->download(Xa);
    b->download(Xb);
    EXPECT_EQ(Xa, Xb);
    EXPECT_GT(maxRowError(Xa, X0), 1e-3); // it moved
    return std::pair{std::move(a), Xa};
}

// l2's token-dependent key biases and adaptive steps are taken, when made and when edited in; other
// token-dependent heads are refused (expectLiveEditsContinueFromTheCurrentState).
template <class Make> void expectTakesL2AndAdaptiveSteps(Make make) {
    std::mt19937_64 rng(9);
    AttentionSpec spec;
    spec.heads = {{randomMatrix(2, 2, rng, 1.0), randomMatrix(2, 2, rng, 1.0), Mat::Identity(2, 2)}};
    IntegratorSpec is;
    is.method = Method::DormandPrince;
    EXPECT_NO_THROW(make(spec, is, 2));
    is.method = Method::Rk4;
    // l2's token-dependent key biases are a quadratic form the kernel evaluates (QUAD_BIAS): taken, also as
    // a live edit (its trajectories are checked with the other variants).
    AttentionSpec l2 = spec;
    l2.type = AttentionType::L2;
    EXPECT_NO_THROW(make(l2, is, 2));
    auto stepper = make(spec, is, 2);
    EXPECT_NO_THROW(stepper->setAttention(l2));
    EXPECT_NO_THROW(stepper->setIntegrator(fixedSteps(Method::DormandPrince, 1.0, 10)));
}

// Dormand-Prince with tolerances a float32 state can meet (rtol 1e-5; the default 1e-6 works too, but its
// error estimates sit closer to float32 rounding).
inline IntegratorSpec dormandPrince(double T, int steps) {
    IntegratorSpec is = fixedSteps(Method::DormandPrince, T, steps);
    is.rtol = 1e-5;
    is.atol = 1e-8;
    return is;
}

// The CPU's Dormand-Prince run of X0 over `is` (Simulation::step's loop: one call per nominal step, sphere
// dynamics normalized after each) and the field evaluations it took.
inline std::pair<Tokens, long> dormandPrinceOnCpu(const AttentionSpec& spec, Precision precision, Tokens X,
                                                  const IntegratorSpec& is) {
    auto field = makeCpuField(spec, int(X.cols()), precision);
    auto integrator = makeIntegrator(is);
    const Field f = [&](double t, const Tokens& Y, Tokens& dY) { field->velocity(t, Y, dY); };
    const double h = is.T / is.steps;
    long evaluations = 0;
    for (int k = 0; k < is.steps; ++k) {
        const StepResult r = integrator->advance(f, k * h, h, X);
        EXPECT_TRUE(r.ok) << "step " << k;
        evaluations += r.evaluations;
        if (spec.sphere) X.rowwise().normalize();
    }
    return {X, evaluations};
}

// Ten nominal steps of Dormand-Prince (T = 1) on the device against the CPU's, for softmax, two heads, l2,
// keyframes, the sphere and peri-LN (two heads), N = 65 and 200, d = 2 and 3:
//  - the device takes the sub-steps the CPU's float64 run takes: the same controller, fed error norms that
//    differ only by float32 rounding, so the evaluation counts agree within 10 %;
//  - its tokens track float64 as closely as the CPU float32 field's (state in double) do, plus the float32
//    storage bound of expectStepperTracks with one rounding per attempted sub-step.
template <class Make> void expectDormandPrinceTracksFloat64(Make make) {
    const StepperVariant keyframed{.name = "keyframed", .keyframes = true};
    const StepperVariant sphere{.name = "sphere", .heads = 2, .sphere = true};
    const StepperVariant peri{.name = "peri", .heads = 2, .scheme = Normalization::Peri};
    const StepperVariant variants[] = {
        kStepperVariants[0], kStepperVariants[1], kStepperVariants[5], keyframed, sphere, peri};
    const IntegratorSpec is = dormandPrince(1.0, 10);
    for (const StepperVariant& v : variants)
        for (int n : {65, 200})
            for (int d : {2, 3}) {
                SCOPED_TRACE(std::string(v.name) + " N=" + std::to_string(n) + " d=" + std::to_string(d));
                std::mt19937_64 rng(7000 + 10 * n + d);
                Tokens X0 = randomMatrix(n, d, rng, 1.0);
                if (v.sphere) X0.rowwise().normalize();
                const AttentionSpec spec = stepperSpec(v, X0, rng);
                auto stepper = make(spec, is, d);
                stepper->upload(X0, 0.0);
                long evaluations = 0, tried = 0;
                for (int k = 0; k < is.steps; ++k) {
                    stepper->advance(1);
                    const StepResult r = stepper->outcome();
                    ASSERT_TRUE(r.ok) << "step " << k;
                    evaluations += r.evaluations;
                    tried += r.accepted + r.rejected;
                }
                EXPECT_EQ(evaluations, is.steps + 6 * tried); // k1 per step, six stages per sub-step
                EXPECT_DOUBLE_EQ(stepper->time(), 1.0);
                Tokens Xgpu;
                stepper->download(Xgpu);
                const auto [X64, evaluations64] = dormandPrinceOnCpu(spec, Precision::Float64, X0, is);
                const Tokens X32 = dormandPrinceOnCpu(spec, Precision::Float32, X0, is).first;
                const double gpu = maxRowError(Xgpu, X64), cpu32 = maxRowError(X32, X64);
                const double storageBound = 2.0 * (double(evaluations) / 6.0) * 0.5 * FLT_EPSILON *
                                            std::max(maxRowNorm(X64), maxRowNorm(X0));
                std::printf(
                    "[ dopri5   ] %-16s N=%3d d=%d  evaluations gpu %ld cpu-f64 %ld  gpu %.2e  cpu-f32 "
                    "%.2e  bound %.2e\n",
                    v.name, n, d, evaluations, evaluations64, gpu, cpu32, 3.0 * cpu32 + storageBound);
                EXPECT_NEAR(double(evaluations), double(evaluations64), 0.1 * double(evaluations64));
                EXPECT_LE(gpu, 3.0 * cpu32 + storageBound);
                if (v.sphere) EXPECT_LT((Xgpu.rowwise().norm().array() - 1.0).abs().maxCoeff(), 1e-6);
            }
}

// advance(k) is k calls of advance(1) bit for bit; and a step the controller cannot complete (a finite-time
// blow-up: exp attention, one token in d = 1, dx/dt = e^{x^2} x from x = 1, singular at t = E1(1)/2 =
// 0.1097) ends advance with outcome() not ok, the tokens and the time kept at that step's start, as the
// CPU's float64 run fails in the same step.
template <class Make> void expectDormandPrinceComposesAndKeepsAFailedStep(Make make) {
    {
        std::mt19937_64 rng(12);
        const Tokens X0 = randomMatrix(65, 2, rng, 1.0);
        const AttentionSpec spec = stepperSpec(kStepperVariants[1], X0, rng);
        const IntegratorSpec is = dormandPrince(1.0, 20);
        auto a = make(spec, is, 2), b = make(spec, is, 2);
        a->upload(X0, 0.0);
        b->upload(X0, 0.0);
        a->advance(4);
        for (int k = 0; k < 4; ++k) b->advance(1);
        Tokens Xa, Xb;
        a->download(Xa);
        b->download(Xb);
        EXPECT_EQ(Xa, Xb);
        EXPECT_GT(maxRowError(Xa, X0), 1e-3); // it moved
        EXPECT_DOUBLE_EQ(a->time(), 0.2);
    }
    AttentionSpec spec;
    spec.type = AttentionType::Exp;
    spec.heads = {{Mat::Identity(1, 1), Mat::Identity(1, 1), Mat::Identity(1, 1)}};
    const IntegratorSpec is = dormandPrince(1.0, 10);
    const Tokens X0 = Tokens::Ones(1, 1);

    auto field = makeCpuField(spec, 1, Precision::Float64);
    auto integrator = makeIntegrator(is);
    const Field f = [&](double t, const Tokens& Y, Tokens& dY) { field->velocity(t, Y, dY); };
    Tokens X = X0;
    EXPECT_TRUE(integrator->advance(f, 0.0, 0.1, X).ok);
    EXPECT_FALSE(integrator->advance(f, 0.1, 0.1, X).ok); // the case fails where the test says

    auto stepper = make(spec, is, 1);
    stepper->upload(X0, 0.0);
    stepper->advance(1);
    ASSERT_TRUE(stepper->outcome().ok);
    Tokens first, kept;
    stepper->download(first);
    EXPECT_GT(first(0, 0), 1.0);
    stepper->advance(5); // stops at the failing step
    EXPECT_FALSE(stepper->outcome().ok);
    EXPECT_DOUBLE_EQ(stepper->time(), 0.1);
    stepper->download(kept);
    EXPECT_EQ(kept, first);
    std::printf("[ dopri5   ] blow-up: %s after %d evaluations, last sub-step %.3g at t = %.6f\n",
                stepper->outcome().exhausted ? "exhausted" : "collapsed", stepper->outcome().evaluations,
                stepper->outcome().lastH, stepper->outcome().reached);
}

// Live edits continue from the current tokens and time, as Simulation's do on the CPU: 10 Euler steps of
// one softmax spec, then 10 RK4 steps of h = 0.05 (setIntegrator), then 10 of a two-head spec on the sphere
// (setAttention; the tokens are projected onto it at once), against the same edits on the CPU field in
// float64 and float32 (the agreement tests' first criterion). A refused edit changes nothing.
template <class Make> void expectLiveEditsContinueFromTheCurrentState(Make make) {
    std::mt19937_64 rng(77);
    const Tokens X0 = randomMatrix(80, 3, rng, 1.0);
    const AttentionSpec first = stepperSpec(kStepperVariants[0], X0, rng);
    AttentionSpec second = stepperSpec(kStepperVariants[1], X0, rng);
    second.sphere = true;
    const IntegratorSpec euler = fixedSteps(Method::Euler, 0.5, 50), rk4 = fixedSteps(Method::Rk4, 1.0, 20);

    auto cpu = [&](Precision precision) {
        Tokens X = X0;
        double t = 0.0;
        auto run = [&](const AttentionSpec& spec, const IntegratorSpec& is) {
            auto field = makeCpuField(spec, 3, precision);
            auto integrator = makeIntegrator(is);
            const Field f = [&](double s, const Tokens& Y, Tokens& dY) { field->velocity(s, Y, dY); };
            const double h = is.T / is.steps;
            for (int k = 0; k < 10; ++k, t += h) {
                integrator->advance(f, t, h, X);
                if (spec.sphere) X.rowwise().normalize();
            }
        };
        run(first, euler);
        run(first, rk4);
        X.rowwise().normalize(); // setAttention onto the sphere
        run(second, rk4);
        return std::pair{X, t};
    };

    auto stepper = make(first, euler, 3);
    stepper->upload(X0, 0.0);
    stepper->advance(10);
    stepper->setIntegrator(rk4);
    EXPECT_DOUBLE_EQ(stepper->time(), 0.1); // the time continues
    stepper->advance(10);
    AttentionSpec sinkhorn = second;
    sinkhorn.type = AttentionType::Sinkhorn;                   // not a kernel average: no stepper takes it
    EXPECT_THROW(stepper->setAttention(sinkhorn), SceneError); // refused: nothing changes
    stepper->setAttention(second);
    Tokens projected;
    stepper->download(projected);
    EXPECT_LT((projected.rowwise().norm().array() - 1.0).abs().maxCoeff(), 1e-6);
    stepper->advance(10);
    Tokens Xgpu;
    stepper->download(Xgpu);

    const auto [X64, t64] = cpu(Precision::Float64);
    const Tokens X32 = cpu(Precision::Float32).first;
    EXPECT_DOUBLE_EQ(stepper->time(), t64);
    const double gpu = maxRowError(Xgpu, X64), cpu32 = maxRowError(X32, X64);
    const double storageBound = 2.0 * 30 * 0.5 * FLT_EPSILON * std::max(maxRowNorm(X64), maxRowNorm(X0));
    std::printf("[ stepper  ] live edits  gpu %.2e  cpu-f32 %.2e\n", gpu, cpu32);
    EXPECT_LE(gpu, 3.0 * cpu32 + storageBound);
}

// One RK4 step, softmax d = 2, N = 4096: the device stepper against the CPU float32 field through the same
// Integrator Simulation::step uses; `finish(stepper)` waits for the device. Printed, never asserted
// (performance is measured by benchmarks, never asserted in tests).
template <class Make, class Finish>
void printStepperRk4Timing(Make make, Finish finish, const char* stepperName, const std::string& device) {
    std::mt19937_64 rng(4096);
    const int n = 4096, d = 2;
    const Tokens X0 = randomMatrix(n, d, rng, 1.0);
    const AttentionSpec spec = stepperSpec(kStepperVariants[0], X0.topRows(256), rng);
    const IntegratorSpec is = fixedSteps(Method::Rk4, 1.0, 100);
    using Clock = std::chrono::steady_clock;
    const int reps = 3;

    auto stepper = make(spec, is, d);
    stepper->upload(X0, 0.0);
    stepper->advance(1); // warm-up: shader compile, allocation
    finish(*stepper);
    auto t0 = Clock::now();
    stepper->advance(reps);
    finish(*stepper);
    const double tGpu = std::chrono::duration<double>(Clock::now() - t0).count() / reps;

    auto field = makeCpuField(spec, d, Precision::Float32);
    auto integrator = makeIntegrator(is);
    const Field f = [&](double t, const Tokens& Y, Tokens& dY) { field->velocity(t, Y, dY); };
    Tokens X = X0;
    integrator->advance(f, 0.0, 0.01, X); // warm-up: thread pool
    t0 = Clock::now();
    for (int k = 0; k < reps; ++k) integrator->advance(f, 0.01 * (k + 1), 0.01, X);
    const double tCpu = std::chrono::duration<double>(Clock::now() - t0).count() / reps;
    std::printf("[ timing   ] softmax d=2 N=4096, one RK4 step: %s %.1f ms, CPU float32 (%s) %.1f ms, "
                "GPU/CPU %.2f  [%s]\n",
                stepperName, 1e3 * tGpu, streamKernelIsa(), 1e3 * tCpu, tGpu / tCpu, device.c_str());
    ::testing::Test::RecordProperty("stepper_rk4_ms", std::to_string(1e3 * tGpu));
    ::testing::Test::RecordProperty("cpu_f32_rk4_ms", std::to_string(1e3 * tCpu));
}

} // namespace flowscope::test
