// Google Benchmark microbenchmarks of the streaming kernel (not run by CI; `flowscope-cli bench particles`
// is the user-facing benchmark with its dense baseline). Run: build/tests/bench/flowscope_bench
#include "engine/attention/VelocityField.h"
#include "engine/autodiff/Tape.h"
#include "engine/core/Parallel.h"

#include <benchmark/benchmark.h>
#include <random>

using namespace flowscope;

namespace {

Tokens tokens(long n, int d) {
    std::mt19937_64 rng(1);
    std::normal_distribution<double> normal;
    Tokens X(n, d);
    for (long i = 0; i < X.size(); ++i) X.data()[i] = normal(rng);
    return X;
}

void velocity(benchmark::State& state, AttentionType type, Precision p) {
    const long n = state.range(0);
    const int d = int(state.range(1));
    AttentionSpec spec;
    spec.type = type;
    const Mat I = Mat::Identity(d, d);
    spec.heads = {HeadParams{I, I, -0.5 * I}};
    auto field = makeCpuField(spec, d, p);
    const Tokens X = tokens(n, d);
    Tokens dX;
    for (auto _ : state) {
        field->velocity(0.0, X, dX);
        benchmark::DoNotOptimize(dX.data());
    }
    state.counters["pairs/s"] =
        benchmark::Counter(double(n) * double(n), benchmark::Counter::kIsIterationInvariantRate);
}

// One RWPO layer's attention on the tape, forward and backward, on one thread: the fused ad::attention
// against the composed ops it replaced (softmaxRows of the N x N logits, then a GEMM of the moments).
// q, k: 4 x N (features and a bias row), v: 5 x N (the d = 2 moments with the cross term).
void tapeAttention(benchmark::State& state, bool fused) {
    const long n = state.range(0);
    const ad::Matrix<float> Q = tokens(n, 4).transpose().cast<float>(),
                            K = tokens(n, 4).transpose().cast<float>(),
                            V = tokens(n, 5).transpose().cast<float>();
    ad::Matrix<float> dQ, dK, dV;
    ad::Tape<float> tape;
    const int threads = threadCount();
    setThreadCount(1);
    for (auto _ : state) {
        tape.clear();
        dQ.resize(0, 0), dK.resize(0, 0), dV.resize(0, 0);
        const auto q = tape.parameter(Q, dQ), k = tape.parameter(K, dK), v = tape.parameter(V, dV);
        const auto out =
            fused ? ad::attention(q, k, v)
                  : ad::transpose(ad::matmulNT(ad::softmaxRows(ad::matmul(ad::transpose(q), k)), v));
        tape.backward(ad::sum(ad::square(out)));
        benchmark::DoNotOptimize(dQ.data());
    }
    setThreadCount(threads);
    state.counters["pairs/s"] =
        benchmark::Counter(double(n) * double(n), benchmark::Counter::kIsIterationInvariantRate);
}

} // namespace

BENCHMARK_CAPTURE(tapeAttention, fused, true)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(tapeAttention, composed, false)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(velocity, softmax_f32, AttentionType::Softmax, Precision::Float32)
    ->Args({4096, 2})
    ->Args({16384, 2})
    ->Args({16384, 3})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(velocity, softmax_f64, AttentionType::Softmax, Precision::Float64)
    ->Args({4096, 2})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(velocity, l2_f32, AttentionType::L2, Precision::Float32)
    ->Args({16384, 2})
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
