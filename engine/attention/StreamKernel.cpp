#include "engine/attention/StreamKernel.h"

#include "engine/core/Cancel.h"
#include "engine/core/Cpu.h"
#include "engine/core/Parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
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

// Scalar reference for any scalar type (for d > 64, where the SIMD kernel's stack arrays end).
template <class S> void referenceRange(const StreamArgs<S>& a, int b, int e) {
    const int d = a.d;
    std::vector<S> q(d), num(d);
    for (int i = b; i < e; ++i) {
        for (int c = 0; c < d; ++c) q[c] = a.queries[std::size_t(c) * a.nq + i];
        const int end = a.causal ? i + 1 : a.n;
        auto score = [&](int j) {
            S s = a.bias ? a.bias[j] : S(0);
            for (int c = 0; c < d; ++c) s += q[c] * a.keys[std::size_t(c) * a.n + j];
            return s - a.decay * S(std::abs(j - i));
        };
        S m = 0;
        const bool exps = a.weighting == Weighting::Softmax || a.weighting == Weighting::Exp;
        if (exps) {
            m = -std::numeric_limits<S>::infinity();
            for (int j = 0; j < end; ++j) m = std::max(m, score(j));
        }
        S den = 0, ent = 0;
        std::fill(num.begin(), num.end(), S(0));
        for (int j = 0; j < end; ++j) {
            const S s = score(j);
            S w;
            switch (a.weighting) {
            case Weighting::Softmax:
            case Weighting::Exp:
                w = std::exp(s - m);
                break;
            case Weighting::Relu:
                w = std::max(s, S(0));
                break;
            default:
                w = S(1) / (S(1) + std::exp(-s));
                break;
            }
            den += w;
            if (a.ent) ent += w * (s - m);
            if (a.values)
                for (int c = 0; c < d; ++c) num[c] += w * a.keys[std::size_t(c) * a.n + j];
        }
        a.den[i] = den;
        if (a.max) a.max[i] = m;
        if (a.ent) a.ent[i] = exps ? ent : S(0);
        if (a.values)
            for (int c = 0; c < d; ++c) a.num[std::size_t(c) * a.nq + i] = num[c];
    }
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
    const RangeFn<float> fn = a.d <= 64 ? gFloatKernel : &referenceRange<float>;
    runCancellable(a.n, a.nq, [&](std::size_t b, std::size_t e) { fn(a, int(b), int(e)); });
}

void streamKernel(const StreamArgs<double>& a) {
    check(a);
    const RangeFn<double> fn = a.d <= 64 ? gDoubleKernel : &referenceRange<double>;
    runCancellable(a.n, a.nq, [&](std::size_t b, std::size_t e) { fn(a, int(b), int(e)); });
}

} // namespace flowscope
