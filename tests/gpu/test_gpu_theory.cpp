// Issue 48 on the GPU backends, against the dense float64 formula (tests/DenseAttention.h: an N x N score
// matrix written from docs/math/theory.md, sharing no code with any kernel):
// - positional decay (ALiBi), s_ij -= (lambda / N) |i - j|, which the kernel computes per pair from the
// query's
//   and the key's index (POS_DECAY; docs/math/theory.md#positional-decay), masked and not;
// - the causal kernels (masked: j <= i) of every weighting, with and without decay;
// - the normalization schemes (pre, peri: the CPU wrapper around the GPU field; post: the sphere) with decay.
// Float32 against float64: the largest row error within 1e-5 of the largest velocity. Skipped where a backend
// has no context or device.
#include "../DenseAttention.h"
#include "GpuTestUtil.h"

#include "engine/attention/SphereProjection.h"

using namespace flowscope;
using namespace flowscope::test;

namespace {

constexpr double kRelative = 1e-5;

// The row error of `V` against the dense reference, relative to the reference's largest velocity.
double relativeError(const Tokens& V, const Tokens& ref) {
    return maxRowError(V, ref) / std::max(maxRowNorm(ref), 1e-300);
}

// One head, Q = K = I, V random, beta 2 / sqrt(d) for the exponential weights (softmax, exp, l2): scores of
// N(0, I_d) tokens spread by a few units, so that the decay (lambda up to 100 over N) and the scores both
// shape the weights.
AttentionSpec decaySpec(AttentionType type, int d, bool masked, double lambda) {
    AttentionSpec a;
    a.type = type;
    const bool exponential = type != AttentionType::Relu && type != AttentionType::Sigmoid;
    a.beta = exponential ? 2.0 / std::sqrt(double(d)) : 1.0;
    a.masked = masked;
    a.positionalDecay = lambda;
    std::mt19937_64 rng(7 + d);
    a.heads = {{Mat::Identity(d, d), Mat::Identity(d, d), randomMatrix(d, d, rng, 0.5)}};
    return a;
}

using GpuPositionalDecay = GpuBackendTest;

// Softmax, exp and l2 (whose key biases the field uploads). Every layout of the pass (keys staged in shared
// memory or read from the buffer; 1, 2 or 4 queries per invocation: the query index the decay needs is each
// invocation's own), N on and off the tile (64) and the unrolled step (4), d with one, one and three vec4
// chunks per key; lambda 0 is the plain causal or full kernel, 7.5 and 100 the decay below and above the
// score spread.
TEST_P(GpuPositionalDecay, KernelMatchesTheDenseFormulaOnEveryLayout) {
    // One runner per layout, made once: each keeps its compiled kernel variants.
    std::vector<std::shared_ptr<KernelPassRunner>> runners;
    for (bool staged : {false, true})
        for (int qpt : {1, 2, 4}) {
            runners.push_back(makeBackendRunner(backend));
            runners.back()->setSharedStaging(staged);
            runners.back()->setQueriesPerInvocation(qpt);
        }
    int cases = 0;
    double worst = 0.0;
    for (AttentionType type : {AttentionType::Softmax, AttentionType::Exp, AttentionType::L2})
        for (bool masked : {false, true})
            for (double lambda : {0.0, 7.5, 100.0})
                for (int d : {2, 3, 8})
                    for (int n : {1, 5, 65, 300}) {
                        const AttentionSpec spec = decaySpec(type, d, masked, lambda);
                        std::mt19937_64 rng(100 * n + d);
                        const Tokens X = randomMatrix(n, d, rng, 1.0);
                        const Tokens ref = denseVelocity(X, spec);
                        if (lambda > 0.0 && n > 1) // the decay moves the velocity far beyond the tolerance
                            EXPECT_GT(relativeError(denseVelocity(X, decaySpec(type, d, masked, 0.0)), ref),
                                      100.0 * kRelative);
                        for (const std::shared_ptr<KernelPassRunner>& runner : runners) {
                            SCOPED_TRACE(std::string(toString(type)) + (masked ? " masked" : "") +
                                         " lambda " + std::to_string(lambda) + " d " + std::to_string(d) +
                                         " N " + std::to_string(n) +
                                         (runner->sharedStaging() ? " staged" : " direct") + " qpt " +
                                         std::to_string(runner->layout(d, n).qpt));
                            Tokens V;
                            makeField(spec, d, runner)->velocity(0.0, X, V);
                            ASSERT_EQ(V.rows(), n);
                            const double e = relativeError(V, ref);
                            worst = std::max(worst, e);
                            EXPECT_LE(e, kRelative);
                            ++cases;
                        }
                    }
    std::printf("[ decay    ] %s: %d passes, worst relative error %.2e\n", backendName(backend), cases,
                worst);
}

// The causal kernel of every weighting against the dense masked formula (lambda 0), through the backend's
// field as a run makes it, N across several tiles.
TEST_P(GpuPositionalDecay, CausalKernelsOfEveryWeightingMatchTheDenseMaskedFormula) {
    for (AttentionType type :
         {AttentionType::Softmax, AttentionType::Exp, AttentionType::Relu, AttentionType::Sigmoid})
        for (int d : {1, 3})
            for (int n : {2, 64, 200}) {
                SCOPED_TRACE(std::string(toString(type)) + " d " + std::to_string(d) + " N " +
                             std::to_string(n));
                const AttentionSpec spec = decaySpec(type, d, true, 0.0);
                std::mt19937_64 rng(3 * n + d);
                const Tokens X = randomMatrix(n, d, rng, 1.0);
                Tokens V;
                makeBackendField(backend, spec, d)->velocity(0.0, X, V);
                EXPECT_LE(relativeError(V, denseVelocity(X, spec)), kRelative);
            }
}

// The schemes with a decay, two random heads, tokens of radii 0.2 .. 2 (post: on the sphere), through the
// backend's field (the schemes' wrapper around the GPU passes).
TEST_P(GpuPositionalDecay, NormalizationSchemesWithDecayMatchTheDenseFormula) {
    const int n = 37, d = 3;
    std::mt19937_64 rng(21);
    Tokens X = randomMatrix(n, d, rng, 1.0);
    for (Eigen::Index i = 0; i < n; ++i) X.row(i) *= 0.2 + 1.8 * double(i) / double(n - 1);
    for (Normalization scheme :
         {Normalization::None, Normalization::Post, Normalization::Pre, Normalization::Peri})
        for (bool masked : {false, true})
            for (double lambda : {0.0, 12.0}) {
                SCOPED_TRACE(std::string(toString(scheme)) + (masked ? " masked" : "") + " lambda " +
                             std::to_string(lambda));
                AttentionSpec a;
                a.beta = 1.3;
                a.masked = masked;
                a.positionalDecay = lambda;
                for (int h = 0; h < 2; ++h)
                    a.heads.push_back({randomMatrix(d, d, rng, 0.5), randomMatrix(d, d, rng, 0.5),
                                       randomMatrix(d, d, rng, 0.7)});
                a.sphere = scheme == Normalization::Post;
                a.normalization = a.sphere ? Normalization::None : scheme;
                const Tokens at = a.sphere ? directionsOf(X) : X;
                Tokens V;
                makeBackendField(backend, a, d)->velocity(0.0, at, V);
                EXPECT_LE(relativeError(V, denseVelocity(at, a)), kRelative);
            }
}

// A decay the kernel cannot take is refused as on the CPU: relu weights, or queries that are not the keys.
TEST_P(GpuPositionalDecay, ADecayNeedsExponentialWeightsAndTheTokensAsQueries) {
    const Tokens X = Tokens::Random(8, 2), Q = Tokens::Random(5, 2);
    const Mat B = Mat::Identity(2, 2);
    const Vec none;
    std::unique_ptr<KernelPassRunner> runner = makeBackendRunner(backend);
    StreamSums sums;
    StreamPass relu{X, B, X, none, false, Weighting::Relu};
    relu.positionSlope = 0.5;
    EXPECT_THROW(runner->run(relu, sums), std::invalid_argument);
    StreamPass other{Q, B, X, none, false, Weighting::Softmax};
    other.positionSlope = 0.5;
    EXPECT_THROW(runner->run(other, sums), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Backends, GpuPositionalDecay, ::testing::ValuesIn(kGpuBackends), backendParamName);

} // namespace
