// Helpers shared by the GPU-kernel tests: one headless OpenGL context and one Vulkan device for the whole run
// (main.cpp creates them), random attention problems, the agreement sweep's problems and error floor, and
// error norms against the CPU reference.
#pragma once

#include "engine/attention/KernelAttention.h"
#include "engine/gpu/GlContext.h"
#include "engine/scene/Scene.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace flowscope {
class VkContext; // engine/gpu/VkContext.h, only in builds with FLOWSCOPE_HAVE_VULKAN
}

namespace flowscope::test {

// The run's context, current on the test thread, or null (then gpuUnavailable() says why).
GlContext* gpuContext();
const std::string& gpuUnavailable();

#define FLOWSCOPE_REQUIRE_GPU()                                                                              \
    do {                                                                                                     \
        if (!::flowscope::test::gpuContext())                                                                \
            GTEST_SKIP() << "no OpenGL 4.3 compute context: " << ::flowscope::test::gpuUnavailable();        \
    } while (0)

// The run's Vulkan device, or null (then vkUnavailable() says why: no loader, no device, or not built).
VkContext* vkContext();
const std::string& vkUnavailable();

#define FLOWSCOPE_REQUIRE_VULKAN()                                                                           \
    do {                                                                                                     \
        if (!::flowscope::test::vkContext())                                                                 \
            GTEST_SKIP() << "no Vulkan compute device: " << ::flowscope::test::vkUnavailable();              \
    } while (0)

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

// The agreement sweep every GPU backend runs against the CPU float64 reference (criterion: the backend's
// float32 error is at most twice the CPU float32 error, plus sweepFloor; see test_gl_kernel_field.cpp).
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
    auto heads = [&] {
        std::vector<HeadParams> hs;
        for (int h = 0; h < v.heads; ++h)
            hs.push_back({randomMatrix(k, d, rng, 1.0), randomMatrix(k, d, rng, 1.0),
                          randomMatrix(d, d, rng, 1.0 / std::sqrt(double(d)))});
        return hs;
    };
    if (v.keyframes) {
        spec.keyframes = {{0.0, heads()}, {1.0, heads()}};
        spec.interpolation = Interpolation::Linear;
    } else {
        spec.heads = heads();
    }
    const Tokens sample = X.topRows(std::min<Eigen::Index>(X.rows(), 256));
    double spread = 0.0;
    if (X.rows() > 1) {
        const Mat S = sweepScores(spec, sample);
        spread = std::sqrt((S.array() - S.mean()).square().mean());
    }
    if (spread > 0) {
        const double f = kSweepScoreStd / spread;
        if (v.betaCarriesScale || v.type == AttentionType::L2) {
            spec.beta = f;
        } else {
            for (HeadParams& h : spec.heads) h.Q *= f;
            for (Keyframe& kf : spec.keyframes)
                for (HeadParams& h : kf.heads) h.Q *= f;
        }
    }
    return spec;
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
