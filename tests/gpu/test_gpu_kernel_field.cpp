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
#include "engine/gpu/common/StepperPlan.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cstdio>

using namespace flowscope;
using namespace flowscope::test;

namespace {

// The backend's velocity with keys staged in shared memory or read from the buffer, queries formed on the
// host or in the shader, one or several queries per invocation (every path of the shader).
Tokens gpuVelocity(GpuBackendKind backend, const AttentionSpec& spec, int d, const Tokens& X, bool staging,
                   bool queriesOnGpu, int qpt) {
    std::unique_ptr<GpuField> kernel = makeBackendKernelField(backend, spec, d);
    kernel->setSharedStaging(staging);
    kernel->setQueriesOnGpu(queriesOnGpu);
    kernel->setQueriesPerInvocation(qpt);
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
        int qpt;      // queries per invocation
    };
    // Queries formed in the shader are rounded twice (float B times float x) where the CPU rounds the
    // double-precision q once, so scores carry up to about twice the CPU's query error, which exp and
    // sigmoid weights amplify by |s| (exp: e^{m_i} with m_i the max score); measured up to 6.6x CPU float32
    // on this sweep, hence 8x for that path. The default path (host queries) meets the 2x criterion.
    // Several queries per invocation: the workgroup's last queries fall past N at other counts than with one.
    const Path paths[] = {{"shared", true, false, 2.0, 1},
                          {"direct", false, false, 2.0, 1},
                          {"gpu-q", true, true, 8.0, 1},
                          {"shared-q4", true, false, 2.0, 4},
                          {"direct-q2", false, false, 2.0, 2}};
    for (const Path& p : paths) {
        const Tokens vg = gpuVelocity(backend, spec, d, X, p.staging, p.queriesOnGpu, p.qpt);
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

// N: one token, one tile exactly, one past it, and past a workgroup of four queries per invocation (the
// sums over N themselves: LongSumsStayWithinTheTileBound); d = 1, 3 and a wide 8. Each case
// builds its pipelines (about 0.1 s on llvmpipe and lavapipe), so the grid is kept to what tells apart.
INSTANTIATE_TEST_SUITE_P(Variants, GpuKernelAgreement,
                         ::testing::Combine(::testing::ValuesIn(kGpuBackends),
                                            ::testing::Range(0, int(std::size(kSweepVariants))),
                                            ::testing::Values(1, 64, 65, 257), ::testing::Values(1, 3, 8)),
                         sweepCaseName<kSweepVariants>);

class GpuKernelField : public GpuBackendTest {};

// A record's one pass on the device (the kernel's ENTROPY knob): the entropies H_i = log den_i - e_i / den_i
// and the energy from the rows' log-sum-exps, against the CPU float64 passes, within twice the CPU float32
// error plus the float32 floor of docs/observables.md, on both shader paths and across tile boundaries.
TEST_P(GpuKernelField, RecordPassEntropiesAndEnergyMatchTheFloat64Passes) {
    std::mt19937_64 rng(77);
    for (const bool masked : {false, true})
        for (const int n : {1, 63, 65, 1000, 3000})
            for (const int d : {2, 3}) {
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
                Vec H32;
                double E32 = 0;
                cpu32->velocityAndStats(0.0, X, V, &H32, &E32);
                const double errCpu = (H32 - H64).cwiseAbs().maxCoeff();
                // The energy is the mean of the rows' e^{log Z_i}, so each score's float32 rounding, up to
                // |s| eps / 2 with |s| <= max log Z_i (here up to ~220), is a relative error of the energy
                // that both float32 paths make, differently: 2 eps max log Z_i on top of twice the CPU's
                // error.
                const double logZmax = std::log(2.0 * n * n * E64);
                const double energyFloor = 1e-5 + 2.0 * double(FLT_EPSILON) * std::max(0.0, logZmax);
                for (const auto& [staging, qpt] : {std::pair{true, 1}, {false, 1}, {true, 4}}) {
                    SCOPED_TRACE(std::string(masked ? "masked " : "") + "N " + std::to_string(n) + " d " +
                                 std::to_string(d) + (staging ? " shared" : " direct") + " qpt " +
                                 std::to_string(qpt));
                    Vec Hg;
                    double Eg = 0;
                    std::unique_ptr<GpuField> gpu = makeBackendKernelField(backend, spec, d);
                    gpu->setSharedStaging(staging);
                    gpu->setQueriesPerInvocation(qpt);
                    gpu->velocityAndStats(0.0, X, V, &Hg, &Eg);
                    ASSERT_EQ(Hg.size(), n);
                    const double errGpu = (Hg - H64).cwiseAbs().maxCoeff();
                    EXPECT_LE(errGpu, 2.0 * errCpu + 1e-5 * (1.0 + H64.maxCoeff())) << "cpu " << errCpu;
                    // float32 on the device, not the double passes a runner without e_i falls back to
                    if (n > 1) EXPECT_GT(errGpu, 0.0);
                    if (masked) {
                        EXPECT_TRUE(std::isnan(Eg));
                    } else {
                        EXPECT_LE(std::abs(Eg / E64 - 1.0), 2.0 * std::abs(E32 / E64 - 1.0) + energyFloor);
                    }
                }
            }
}

// Long sums (docs/gpu.md#accuracy): each tile of TILE weights (64 unless overridden) is summed on its own
// and the tile sums are added with Kahan's compensation, so the sums' relative rounding stays about
// (tile + 2) eps however many keys there are. Case: N keys x_j = (1, 0) with biases b_0 = 0 and b_j = log
// 0.3, zero queries, so every weight after the first is w = 0.3 and den = num_0. The reference adds, exactly,
// the float32 sums of each tile of the runner's layout: compensation leaves a few eps of it (the bound: 4
// eps, and 4 more for the device's exp2 of the constant score, which may differ from 0.3f by an ulp or two).
// The same tile sums added plainly drift by over four times that, with tiles of 64 and of 128 (worked out
// below in float32, so the case is known to tell the two apart; 0.1 did so for 64 only). N stays below 63 000
// because Mesa's CPU drivers stop any shader loop after 65 535 iterations (docs/gpu.md#cpu-devices).
TEST_P(GpuKernelField, LongSumsStayWithinTheTileBound) {
    const int n = 49152, nq = 64, d = 2;
    Tokens keys(n, d);
    keys.col(0).setOnes();
    keys.col(1).setZero();
    Vec bias = Vec::Constant(n, std::log(0.3));
    bias(0) = 0.0;
    const Tokens queries = Tokens::Zero(nq, d);
    const Mat none;
    const double bound = 8 * double(FLT_EPSILON);

    for (const auto& [staging, qpt] : {std::pair{true, 1}, {false, 1}, {true, 4}, {false, 2}}) {
        std::unique_ptr<KernelPassRunner> runner = makeBackendRunner(backend);
        runner->setSharedStaging(staging);
        runner->setQueriesPerInvocation(qpt);
        const int tile = runner->layout(d, nq).tile; // FLOWSCOPE_STREAM_TILE may set another
        double exact = 0.0;                          // the float32 tile sums added exactly
        float blocked = 0.0f;                        // ... and plainly
        for (int base = 0; base < n; base += tile) {
            float t = 0.0f;
            for (int k = base; k < std::min(n, base + tile); ++k) t += k == 0 ? 1.0f : 0.3f;
            exact += t;
            blocked += t;
        }
        ASSERT_GT(std::abs(blocked / exact - 1.0), 4.0 * bound) << "the case does not tell the sums apart";

        StreamSums sums;
        runner->run(StreamPass{queries, none, keys, bias}, sums);
        ASSERT_EQ(sums.den.size(), nq);
        const double errDen = (sums.den.array() / exact - 1.0).abs().maxCoeff();
        const double errNum = (sums.num.col(0).array() / exact - 1.0).abs().maxCoeff();
        std::printf("[ sums     ] %-6s staging %d qpt %d tile %d: den %.2e num %.2e (bound %.2e, plain tile "
                    "sums %.2e)\n",
                    backendName(backend), int(staging), qpt, tile, errDen, errNum, bound,
                    std::abs(blocked / exact - 1.0));
        EXPECT_LE(errDen, bound) << "staging " << staging << " qpt " << qpt;
        EXPECT_LE(errNum, bound) << "staging " << staging << " qpt " << qpt;
        EXPECT_EQ(sums.num.col(1).cwiseAbs().maxCoeff(), 0.0);
    }
}

// The tile bound (TILE_BOUND, docs/gpu.md#the-streaming-kernel): a query sweeps a tile without tracking the
// running max when |q| R_tile, R_tile the tile's largest key norm, is within the margin of that max. Cases
// where the scores span ~1200 natural units, far beyond float32's exponent range, so that tiles on both sides
// of the margin occur: key norms rising along the keys (later tiles' bounds run far above the max so far: the
// max-tracking sweep), falling (the first tile sets the max, every later tile is bounded), and random. The
// softmax average against the CPU float64 pass, within twice the CPU float32 pass's error plus 4 ulps, and a
// log-sum-exp pass (no values) on the same keys: m + log den, with m now only a reference under the max,
// within the scores' own float32 rounding.
TEST_P(GpuKernelField, TileBoundKeepsSoftmaxAveragesAcrossWideScoreRanges) {
    const int n = 1000, nq = 300, d = 3;
    std::mt19937_64 rng(2026);
    std::normal_distribution<double> normal;
    const Mat none;
    const Vec noBias;
    for (const char* order : {"rising", "falling", "random"}) {
        Tokens keys(n, d);
        for (int j = 0; j < n; ++j) {
            Eigen::RowVector3d u(normal(rng), normal(rng), normal(rng));
            u.normalize();
            // Norms 0.5 3^k in five steps (k = 0..4, and 5 for the last key): a step's first tile has a
            // bound ~3x the max so far.
            const double t = double(j) / double(n - 1);
            const double along = std::string(order) == "rising"    ? t
                                 : std::string(order) == "falling" ? 1.0 - t
                                                                   : std::uniform_real_distribution<>()(rng);
            keys.row(j) = 0.5 * std::pow(3.0, std::floor(5.0 * along)) * u;
        }
        const Tokens queries = 5.0 * randomMatrix(nq, d, rng, 1.0).rowwise().normalized();
        StreamSums s64, s32;
        CpuStreamRunner(Precision::Float64).run(StreamPass{queries, none, keys, noBias}, s64);
        CpuStreamRunner(Precision::Float32).run(StreamPass{queries, none, keys, noBias}, s32);
        const Tokens v64 = s64.num.array().colwise() / s64.den.array();
        const Tokens v32 = s32.num.array().colwise() / s32.den.array();
        const double err32 = maxRowError(v32, v64), floor = 4.0 * FLT_EPSILON * maxRowNorm(v64);
        const Vec lse64 = s64.max.array() + s64.den.array().log();
        for (const int qpt : {1, 2}) {
            SCOPED_TRACE(std::string(order) + " qpt " + std::to_string(qpt));
            std::unique_ptr<KernelPassRunner> runner = makeBackendRunner(backend);
            runner->setSharedStaging(true);
            runner->setQueriesPerInvocation(qpt);
            StreamSums g;
            runner->run(StreamPass{queries, none, keys, noBias}, g);
            const Tokens vg = g.num.array().colwise() / g.den.array();
            ASSERT_TRUE(vg.allFinite());
            const double errG = maxRowError(vg, v64);
            std::printf("[ bound    ] %-6s %-7s qpt %d: gpu %.2e cpu-f32 %.2e\n", backendName(backend), order,
                        qpt, errG, err32);
            EXPECT_LE(errG, 2.0 * err32 + floor);

            StreamPass lse{queries, none, keys, noBias};
            lse.values = false;
            runner->run(lse, g);
            const Vec lseG = g.max.array() + g.den.array().log();
            // Each score rounds by up to |s| eps / 2 on either side, |s| <= |q| max |x| (~600 here).
            const double scoreRounding = 2.0 * FLT_EPSILON * 5.0 * 121.5;
            EXPECT_LE((lseG - lse64).cwiseAbs().maxCoeff(),
                      scoreRounding + 1e-5 * lse64.cwiseAbs().maxCoeff());
        }
    }
}

// Which passes take the kernel's fast softmax forms: a softmax average (values, no entropy, no key biases)
// forms its scores in log2 units; the tile bound needs staged keys and no key biases; neither for exp
// weights, and log2 units not for a pass whose max or e_i is read (log-sum-exps, entropies).
TEST(StreamKernelInputs, OnlyPassesThatNeedNoExactMaxTakeTheFastSoftmaxForms) {
    const int n = 9, d = 3;
    std::mt19937_64 rng(5);
    const Tokens X = randomMatrix(n, d, rng, 1.0);
    const Mat B = Mat::Identity(d, d);
    const Vec none, bias = Vec::Ones(n);
    const StreamKernelLayout staged = streamKernelLayout(d, n, 32768, 1024, true);
    const StreamKernelLayout direct = streamKernelLayout(d, n, 32768, 1024, false);
    ASSERT_TRUE(staged.log2Scores && staged.tileBound) << "FLOWSCOPE_STREAM_LOG2 or _BOUND set to 0";

    const StreamKernelVariant average = streamKernelInputs(StreamPass{X, B, X, none}, false, staged).variant;
    EXPECT_TRUE(average.log2Scores);
    EXPECT_TRUE(average.tileBound);
    EXPECT_EQ(average.unroll, staged.unroll);
    EXPECT_FALSE(streamKernelInputs(StreamPass{X, B, X, none}, false, direct).variant.tileBound);
    const StreamKernelVariant biased = streamKernelInputs(StreamPass{X, B, X, bias}, false, staged).variant;
    EXPECT_FALSE(biased.tileBound || biased.log2Scores);

    StreamPass withEntropy{X, B, X, none};
    withEntropy.entropy = true;
    const StreamKernelVariant entropy = streamKernelInputs(withEntropy, false, staged).variant;
    EXPECT_FALSE(entropy.log2Scores);
    EXPECT_TRUE(entropy.tileBound);
    StreamPass readsMax{X, B, X, none}; // a velocity pass whose log Z = m + log den is read (the energy)
    readsMax.readsMax = true;
    EXPECT_FALSE(streamKernelInputs(readsMax, false, staged).variant.log2Scores);
    StreamPass logSumExp{X, B, X, none};
    logSumExp.values = false;
    EXPECT_FALSE(streamKernelInputs(logSumExp, false, staged).variant.log2Scores);
    StreamPass exps{X, B, X, none, false, Weighting::Exp};
    const StreamKernelVariant exp = streamKernelInputs(exps, false, staged).variant;
    EXPECT_FALSE(exp.log2Scores || exp.tileBound);
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

// l2's head carries its key biases' quadratic form M (bias_j = -x_j^T M x_j). A pass's inputs upload the
// host's biases, as every runner over uploaded keys has them (no QUAD_BIAS), unless the biases are asked to
// be formed on the device: then QUAD_BIAS, no bias vector, and M after B in the params, the very words the
// stepper's own passes use (StepperPlan::heads). A pass with biases but no form keeps uploading them. Host
// only: no device needed.
TEST(StreamKernelInputs, L2BiasesAreUploadedUnlessFormedOnTheDevice) {
    const int n = 7, d = 3;
    std::mt19937_64 rng(11);
    const Tokens X = randomMatrix(n, d, rng, 1.0);
    AttentionSpec spec;
    spec.type = AttentionType::L2;
    spec.heads = randomHeads(1, d, d, 1.0, rng);
    const std::unique_ptr<KernelAttention> ref = kernelAverageReference(spec, d, "test");
    const HeadSetup h = ref->setupHead(spec.heads.front(), X);
    ASSERT_EQ(h.quadraticBias.rows(), d);
    ASSERT_EQ(h.quadraticBias.cols(), d);
    EXPECT_LE((h.bias + (X * h.quadraticBias).cwiseProduct(X).rowwise().sum()).cwiseAbs().maxCoeff(),
              1e-12 * (1.0 + h.bias.cwiseAbs().maxCoeff()));

    const StreamKernelLayout layout = streamKernelLayout(d, n, 32768, 1024, true);
    const std::size_t d2 = std::size_t(d) * d;
    const StreamKernelInputs uploaded = streamKernelInputs(X, h, false, true, layout);
    EXPECT_TRUE(uploaded.variant.hasBias);
    EXPECT_FALSE(uploaded.variant.quadraticBias);
    EXPECT_EQ(uploaded.params.size(), 4 + d2);
    ASSERT_EQ(uploaded.bias.size(), n);
    EXPECT_TRUE(uploaded.bias.isApprox(h.bias.cast<float>()));

    const StreamKernelInputs formed = streamKernelInputs(X, h, false, true, layout, true);
    EXPECT_FALSE(formed.variant.hasBias);
    EXPECT_TRUE(formed.variant.quadraticBias);
    EXPECT_EQ(formed.bias.size(), 0);
    ASSERT_EQ(formed.params.size(), 4 + 2 * d2);
    EXPECT_TRUE(std::equal(uploaded.params.begin(), uploaded.params.end(), formed.params.begin()));
    for (int r = 0; r < d; ++r)
        for (int c = 0; c < d; ++c)
            EXPECT_EQ(formed.params[4 + d2 + std::size_t(r) * d + std::size_t(c)],
                      std::bit_cast<std::uint32_t>(float(h.quadraticBias(r, c))));

    StepperPlan plan(spec, fixedSteps(Method::Euler, 1.0, 10), d, "test", StreamKernelDevice{});
    plan.restart(n, 0.0);
    const StepperHead& head = plan.heads(0.0).front();
    EXPECT_TRUE(head.variant.quadraticBias);
    EXPECT_FALSE(head.variant.hasBias);
    EXPECT_EQ(head.kernelParams, streamKernelInputs(X, h, false, true, plan.layout(n), true).params);

    HeadSetup biasOnly = h;
    biasOnly.quadraticBias = Mat();
    const StreamKernelInputs kept = streamKernelInputs(X, biasOnly, false, true, layout, true);
    EXPECT_TRUE(kept.variant.hasBias);
    EXPECT_FALSE(kept.variant.quadraticBias);
    EXPECT_EQ(kept.bias.size(), n);
}

// A dispatch of more workgroups than the device allows is refused with both counts, the limit in queries:
// tile x qpt queries a group.
TEST(StreamKernelDispatch, OverTheDevicesGroupLimitIsRefusedWithTheQueryLimit) {
    StreamKernelVariant v;
    v.tile = 64;
    v.qpt = 2;
    EXPECT_EQ(streamKernelGroups(v, 1280), 10);
    EXPECT_EQ(streamKernelGroups(v, 1281), 11);
    EXPECT_EQ(dispatchRefusal(v, 1280, 10), "");
    EXPECT_EQ(dispatchRefusal(v, 1281, 10), "too many tokens for one dispatch (1281 queries, at most 1280)");
}

} // namespace
