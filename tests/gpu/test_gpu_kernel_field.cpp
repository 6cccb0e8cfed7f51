// Each GPU backend's streaming kernel (OpenGL; Vulkan: the same GLSL as SPIR-V with specialization constants)
// against the CPU float64 reference, for every kernel-average variant on every path of the shader
// (test_gpu_variants.cpp sweeps the other variants on the default path).
//
// Criterion (FlashAttention's, docs/math/README.md#flashattention): the GPU float32 error is at most twice
// the CPU float32 error, both measured against CPU float64, plus a small floor for cases where CPU float32
// happens to be (nearly) exact, e.g. N = 1 where the softmax average is the token itself.
#include "GpuTestUtil.h"

#include "engine/attention/SphereProjection.h"
#include "engine/attention/VelocityField.h"

#include <cfloat>
#include <cstdio>

using namespace flowscope;
using namespace flowscope::test;

namespace {

// The backend's velocity with keys staged in shared memory or read from the buffer, queries formed on the
// host or in the shader (every path of the shader).
Tokens gpuVelocity(GpuBackendKind backend, const AttentionSpec& spec, int d, const Tokens& X, bool staging,
                   bool queriesOnGpu) {
    std::unique_ptr<GpuField> kernel = makeBackendKernelField(backend, spec, d);
    kernel->setSharedStaging(staging);
    kernel->setQueriesOnGpu(queriesOnGpu);
    std::unique_ptr<VelocityField> f = std::move(kernel);
    if (spec.sphere) f = std::make_unique<SphereProjection>(std::move(f)); // as makeGlField / makeVkField do
    Tokens V;
    f->velocity(kSweepTime, X, V);
    return V;
}

using GpuKernelAgreement = GpuSweepTest<0x5eed0000u>;

TEST_P(GpuKernelAgreement, WithinTwiceTheCpuFloat32Error) {
    const SweepVariant& v = kSweepVariants[vi];
    const AttentionSpec spec = sweepSpec(v, d, X, rng);

    Tokens v64, v32;
    makeCpuField(spec, d, Precision::Float64)->velocity(kSweepTime, X, v64);
    makeCpuField(spec, d, Precision::Float32)->velocity(kSweepTime, X, v32);
    const double err32 = maxRowError(v32, v64);
    // Floor (sweepFloor): 4 float32 ulps of the largest velocity. Where CPU float32 is exact (N = 1: both
    // sides return the float-rounded token through the same double-precision V), GPU float32 may still differ
    // by the rounding of one exp or one product; 4 eps covers that and is far below any real kernel error.
    // Exp attention multiplies by e^{m_i}: each path rounds the max score m_i to float once, an error of up
    // to |m_i| eps / 2 that e^{m_i} turns into a relative velocity error of the same size, independently of
    // the kernel's summation. Which path rounds a given m_i luckier is chance, so it allows two such
    // roundings.
    const double floor = sweepFloor(v, spec, X, v64);
    struct Path {
        const char* name;
        bool staging, queriesOnGpu;
        double bound; // allowed multiple of the CPU float32 error
    };
    // Queries formed in the shader are rounded twice (float B times float x) where the CPU rounds the
    // double-precision q once, so scores carry up to about twice the CPU's query error, which exp and
    // sigmoid weights amplify by |s| (exp: e^{m_i} with m_i the max score); measured up to 6.6x CPU float32
    // on this sweep, hence 8x for that path. The default path (host queries) meets the 2x criterion.
    const Path paths[] = {
        {"shared", true, false, 2.0}, {"direct", false, false, 2.0}, {"gpu-q", true, true, 8.0}};
    for (const Path& p : paths) {
        const Tokens vg = gpuVelocity(backend, spec, d, X, p.staging, p.queriesOnGpu);
        ASSERT_EQ(vg.rows(), n);
        ASSERT_EQ(vg.cols(), d);
        ASSERT_TRUE(vg.allFinite());
        const double errG = maxRowError(vg, v64);
        const double ratio = err32 > 0 ? errG / err32 : (errG > 0 ? INFINITY : 1.0);
        std::printf("[ ratio    ] %-6s %-18s N=%-5d d=%d %-6s gpu %.2e  cpu-f32 %.2e  ratio %.2f\n",
                    backendName(backend), v.name, n, d, p.name, errG, err32, ratio);
        RecordProperty(std::string("gpu_error_") + p.name, std::to_string(errG));
        EXPECT_LE(errG, p.bound * err32 + floor) << p.name << ", |v| = " << maxRowNorm(v64);
    }
    RecordProperty("cpu_f32_error", std::to_string(err32));
}

INSTANTIATE_TEST_SUITE_P(Variants, GpuKernelAgreement,
                         ::testing::Combine(::testing::ValuesIn(kGpuBackends),
                                            ::testing::Range(0, int(std::size(kSweepVariants))),
                                            ::testing::Values(1, 2, 63, 64, 65, 257, 1000),
                                            ::testing::Values(1, 2, 3, 8)),
                         sweepCaseName<kSweepVariants>);

class GpuKernelField : public GpuBackendTest {};

// A record's one pass on the device (the kernel's ENTROPY knob): the entropies H_i = log den_i - e_i / den_i
// and the energy from the rows' log-sum-exps, against the CPU float64 passes, within twice the CPU float32
// error plus the float32 floor of docs/observables.md, on both shader paths and across tile boundaries.
TEST_P(GpuKernelField, RecordPassEntropiesAndEnergyMatchTheFloat64Passes) {
    std::mt19937_64 rng(77);
    for (const bool masked : {false, true})
        for (const int n : {1, 63, 65, 1000, 3000})
            for (const int d : {2, 3})
                for (const bool staging : {true, false}) {
                    SCOPED_TRACE(std::string(masked ? "masked " : "") + "N " + std::to_string(n) + " d " +
                                 std::to_string(d) + (staging ? " shared" : " direct"));
                    const Tokens X = randomMatrix(n, d, rng, 1.5);
                    AttentionSpec spec;
                    spec.masked = masked;
                    spec.beta = 2.0;
                    spec.heads = {
                        HeadParams{Mat::Identity(d, d), randomMatrix(d, d, rng, 1.0), Mat::Identity(d, d)}};
                    auto reference = makeCpuField(spec, d, Precision::Float64);
                    auto cpu32 = makeCpuField(spec, d, Precision::Float32);
                    const Vec H64 = reference->attentionEntropies(0.0, X);
                    const double E64 = reference->interactionEnergy(0.0, X);
                    Tokens V;
                    Vec H32, Hg;
                    double E32 = 0, Eg = 0;
                    cpu32->velocityAndStats(0.0, X, V, &H32, &E32);
                    std::unique_ptr<GpuField> gpu = makeBackendKernelField(backend, spec, d);
                    gpu->setSharedStaging(staging);
                    gpu->velocityAndStats(0.0, X, V, &Hg, &Eg);
                    ASSERT_EQ(Hg.size(), n);
                    const double errCpu = (H32 - H64).cwiseAbs().maxCoeff(),
                                 errGpu = (Hg - H64).cwiseAbs().maxCoeff();
                    EXPECT_LE(errGpu, 2.0 * errCpu + 1e-5 * (1.0 + H64.maxCoeff())) << "cpu " << errCpu;
                    // float32 on the device, not the double passes a runner without e_i falls back to
                    if (n > 1) EXPECT_GT(errGpu, 0.0);
                    if (masked) {
                        EXPECT_TRUE(std::isnan(Eg));
                    } else {
                        EXPECT_LE(std::abs(Eg / E64 - 1.0), 2.0 * std::abs(E32 / E64 - 1.0) + 1e-5);
                    }
                }
}

// Every variant the CPU has runs on the GPU (the variant's own class, its passes on the device); settings the
// CPU rejects are rejected the same way.
TEST_P(GpuKernelField, EveryVariantIsBuiltAndMaskedSinkhornOrLinearThrowSceneError) {
    for (AttentionType t :
         {AttentionType::Sinkhorn, AttentionType::Linear, AttentionType::Rwpo, AttentionType::Drifting}) {
        AttentionSpec spec;
        spec.type = t;
        spec.heads = {HeadParams{Mat::Identity(2, 2), Mat::Identity(2, 2), Mat::Identity(2, 2)}};
        EXPECT_NO_THROW(makeBackendField(backend, spec, 2)) << toString(t);
        if (t != AttentionType::Sinkhorn && t != AttentionType::Linear) continue;
        spec.masked = true;
        try {
            makeBackendField(backend, spec, 2);
            ADD_FAILURE() << "masked " << toString(t) << " was accepted";
        } catch (const SceneError& e) {
            EXPECT_EQ(e.pointer, "/attention/masked");
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Backends, GpuKernelField, ::testing::ValuesIn(kGpuBackends), backendParamName);

} // namespace
