#include "engine/attention/StreamKernel.h"

#include "engine/core/Cancel.h"
#include "engine/core/Cpu.h"
#include "engine/core/Parallel.h"

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <vector>

namespace flowscope {

namespace generic {
void streamRange(const StreamArgs<float>& a, int b, int e);
void streamRange(const StreamArgs<double>& a, int b, int e);
double fmaThroughput(long iterations);
} // namespace generic
#ifdef FLOWSCOPE_HAVE_AVX2_KERNEL
namespace avx2 {
void streamRange(const StreamArgs<float>& a, int b, int e);
void streamRange(const StreamArgs<double>& a, int b, int e);
double fmaThroughput(long iterations);
} // namespace avx2
#endif

namespace {

template <class S> using RangeFn = void (*)(const StreamArgs<S>&, int, int);

// The SIMD kernel for this processor, in either precision (one choice for both).
template <class S> RangeFn<S> pickKernel() {
#ifdef FLOWSCOPE_HAVE_AVX2_KERNEL
    if (cpuHasAvx2Fma()) return &avx2::streamRange;
#endif
    return &generic::streamRange;
}

const RangeFn<float> gFloatKernel = pickKernel<float>();
const RangeFn<double> gDoubleKernel = pickKernel<double>();

// Grain: enough queries per chunk that a chunk costs ~>= 50k pair interactions.
std::size_t grainFor(int n, int nq) {
    const std::size_t perQuery = std::max(1, n);
    return std::max<std::size_t>(1, std::min<std::size_t>(std::size_t(nq) / 16 + 1, 65536 / perQuery + 1));
}

// d > 64, where the SIMD kernel's stack arrays end: the block of queries [b, e) as two matrix products. The
// scores against every key are one GEMM, Q_b Kᵀ ((e - b) x n, row-major so that a query's row is contiguous);
// each row becomes its weights in place (the same formulas as the SIMD kernel: max, then exp(s - m), relu or
// sigmoid, masked keys weighted 0); the numerators are a second GEMM, W K. The structure-of-arrays keys and
// queries are column-major matrices as they lie (coordinate c of key j at keys[c n + j]), so nothing is
// copied. A scalar loop over the pairs here walked those arrays with a stride of n per coordinate: a GPT-2
// head's scene (d = 768, n = 512) spent 78 % of its run in it.
template <class S> void blockedRange(const StreamArgs<S>& a, int b, int e) {
    using Matrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
    using RowMajor = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const Eigen::Map<const Matrix> K(a.keys, a.n, a.d);
    const Eigen::Map<const Matrix> Q(a.queries, a.nq, a.d);
    const int rows = e - b;
    RowMajor W(rows, a.n);
    W.noalias() = Q.middleRows(b, rows) * K.transpose();
    const bool exps = a.weighting == Weighting::Softmax || a.weighting == Weighting::Exp;
    for (int r = 0; r < rows; ++r) {
        const int i = b + r;
        const int end = a.causal ? i + 1 : a.n;
        S* w = W.row(r).data();
        S m = exps ? -std::numeric_limits<S>::infinity() : S(0);
        for (int j = 0; j < end; ++j) {
            w[j] += (a.bias ? a.bias[j] : S(0)) - a.decay * S(std::abs(j - i));
            if (exps) m = std::max(m, w[j]);
        }
        S den = 0, ent = 0;
        for (int j = 0; j < end; ++j) {
            const S s = w[j];
            switch (a.weighting) {
            case Weighting::Softmax:
            case Weighting::Exp:
                w[j] = std::exp(s - m);
                break;
            case Weighting::Relu:
                w[j] = std::max(s, S(0));
                break;
            default:
                w[j] = S(1) / (S(1) + std::exp(-s));
                break;
            }
            den += w[j];
            if (a.ent) ent += w[j] * (s - m);
        }
        std::fill(w + end, w + a.n, S(0));
        a.den[i] = den;
        if (a.max) a.max[i] = m;
        if (a.ent) a.ent[i] = exps ? ent : S(0);
    }
    if (a.values) Eigen::Map<Matrix>(a.num, a.nq, a.d).middleRows(b, rows).noalias() = W * K;
}

template <class S> void check(const StreamArgs<S>& a) {
    if (a.n < 0 || a.nq < 0 || a.d < 1 || !a.keys || !a.queries || !a.den || (a.values && !a.num))
        throw std::invalid_argument("streamKernel: incomplete arguments");
    if (a.causal && a.nq != a.n)
        throw std::invalid_argument("streamKernel: causal needs as many queries as keys");
    if (a.decay != S(0) && (a.nq != a.n || !(a.decay > S(0)) ||
                            (a.weighting != Weighting::Softmax && a.weighting != Weighting::Exp)))
        throw std::invalid_argument("streamKernel: a positional decay needs as many queries as keys, a "
                                    "positive slope and softmax or exp weights");
}

// parallelFor over the queries, skipping the chunks not yet started once a cancel is requested
// (engine/core/Cancel.h), and then throwing Cancelled.
void runCancellable(int n, int nq, const std::function<void(std::size_t, std::size_t)>& range) {
    std::atomic<bool>& cancel = cancelRequested();
    parallelFor(std::size_t(nq), grainFor(n, nq), [&](std::size_t b, std::size_t e) {
        if (!cancel.load(std::memory_order_relaxed)) range(b, e);
    });
    if (cancel.load()) throw Cancelled();
}

} // namespace

const char* streamKernelIsa() {
#ifdef FLOWSCOPE_HAVE_AVX2_KERNEL
    if (gFloatKernel == RangeFn<float>(&avx2::streamRange)) return "avx2-fma";
#endif
    return "generic";
}

double measuredFp32Peak(double seconds) {
    auto fma = &generic::fmaThroughput;
#ifdef FLOWSCOPE_HAVE_AVX2_KERNEL
    if (gFloatKernel == RangeFn<float>(&avx2::streamRange)) fma = &avx2::fmaThroughput;
#endif
    const long iterations = 1 << 20; // 10 * 8 * 2 * 2^20 = 168 Mflop per call
    const int threads = threadCount();
    std::atomic<long> calls{0};
    volatile double sink = 0;
    const auto t0 = std::chrono::steady_clock::now();
    parallelFor(std::size_t(threads), 1, [&](std::size_t, std::size_t) {
        double local = 0;
        while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds) {
            local += fma(iterations);
            ++calls;
        }
        sink = sink + local;
    });
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return double(calls.load()) * 10.0 * 8.0 * 2.0 * double(iterations) / elapsed;
}

void streamKernel(const StreamArgs<float>& a) {
    check(a);
    const RangeFn<float> fn = a.d <= 64 ? gFloatKernel : &blockedRange<float>;
    runCancellable(a.n, a.nq, [&](std::size_t b, std::size_t e) { fn(a, int(b), int(e)); });
}

void streamKernel(const StreamArgs<double>& a) {
    check(a);
    const RangeFn<double> fn = a.d <= 64 ? gDoubleKernel : &blockedRange<double>;
    runCancellable(a.n, a.nq, [&](std::size_t b, std::size_t e) { fn(a, int(b), int(e)); });
}

} // namespace flowscope
