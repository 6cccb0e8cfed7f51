// Helpers shared by the GPU-kernel tests: one headless OpenGL context and one Vulkan device for the whole run
// (main.cpp creates them), the backend parameter (GpuBackendKind) and its fields, random attention problems,
// the agreement sweep's problems and error floor, trajectories, and error norms against the CPU reference.
#pragma once

#include "engine/attention/KernelAttention.h"
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

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
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
    AttentionSpec plain = spec;
    plain.sphere = false;
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

} // namespace flowscope::test
