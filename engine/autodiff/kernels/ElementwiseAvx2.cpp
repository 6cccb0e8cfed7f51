// AVX2+FMA build of the tape's float32 elementwise passes (engine/autodiff/kernels/Elementwise.h; this file
// is compiled with -mavx2 -mfma). No Eigen here: its templates compiled with these flags would be merged by
// the linker with the baseline build's.
#include "engine/autodiff/kernels/Elementwise.h"

#include <cstdint>
#include <cstring>

namespace flowscope::ad::kernel::avx2 {
namespace {

#include "VectorMath.inc"

v8f select(v8i mask, v8f yes, v8f no) {
    return bits<v8f>((mask & bits<v8i>(yes)) | (~mask & bits<v8i>(no)));
}
v8f absOf(v8f x) {
    return bits<v8f>(bits<v8i>(x) & splat(0x7fffffff));
}

v8f tanh8(v8f x) {
    const v8f a = absOf(x), z = x * x;
    // |x| < 0.5: tanh x = x (1 - z/3 + 2z²/15 - 17z³/315 + 62z⁴/2835 - 1382z⁵/155925 + 21844z⁶/6081075 -
    // 929569z⁷/638512875), z = x²; the next term is below 1e-8 relative.
    v8f p = splat(-929569.0f / 638512875.0f);
    p = p * z + splat(21844.0f / 6081075.0f);
    p = p * z + splat(-1382.0f / 155925.0f);
    p = p * z + splat(62.0f / 2835.0f);
    p = p * z + splat(-17.0f / 315.0f);
    p = p * z + splat(2.0f / 15.0f);
    p = p * z + splat(-1.0f / 3.0f);
    const v8f series = x + x * (z * p);
    // |x| >= 0.5: sign(x) (1 - e) / (1 + e), e = e^{-2|x|} <= 1/e, so 1 - e loses no more than a bit.
    const v8f e = expNonPositive(splat(-2.0f) * a);
    const v8f magnitude = (splat(1.0f) - e) / (splat(1.0f) + e);
    const v8f far = bits<v8f>(bits<v8i>(magnitude) | (bits<v8i>(x) & splat(std::int32_t(0x80000000u))));
    return select(a < splat(0.5f), series, far);
}

// log(2 cosh a) from t = tanh a: |a| + log 2 - log(1 + |t|), and log(1 + u) = 2 atanh(s) with s = u / (2 + u)
// in [0, 1/3] (u = |t| in [0, 1]): 2 (s + s³/3 + ... + s¹³/13), the next term below 2e-8 relative.
v8f logCosh8(v8f a, v8f t) {
    const v8f u = absOf(t);
    const v8f s = u / (splat(2.0f) + u), s2 = s * s;
    v8f q = splat(1.0f / 13.0f);
    q = q * s2 + splat(1.0f / 11.0f);
    q = q * s2 + splat(1.0f / 9.0f);
    q = q * s2 + splat(1.0f / 7.0f);
    q = q * s2 + splat(1.0f / 5.0f);
    q = q * s2 + splat(1.0f / 3.0f);
    const v8f log1pu = splat(2.0f) * (s + s * (s2 * q));
    return absOf(a) + splat(0.693147181f) - log1pu;
}

// y[i] = f(x0[i], x1[i], y[i]) eight lanes at a time (y read only with ReadY); the last n mod 8 through a
// zero-padded block.
template <bool ReadY, class F>
void forEach8(long n, float* y, F f, const float* x0, const float* x1 = nullptr) {
    long i = 0;
    for (; i + 8 <= n; i += 8)
        store(y + i, f(load(x0 + i), x1 ? load(x1 + i) : v8f{}, ReadY ? load(y + i) : v8f{}));
    if (i == n) return;
    float b0[8] = {}, b1[8] = {}, by[8] = {};
    const std::size_t bytes = std::size_t(n - i) * sizeof(float);
    std::memcpy(b0, x0 + i, bytes);
    if (x1) std::memcpy(b1, x1 + i, bytes);
    if (ReadY) std::memcpy(by, y + i, bytes);
    store(by, f(load(b0), load(b1), load(by)));
    std::memcpy(y + i, by, bytes);
}

} // namespace

void tanh(const float* x, float* y, long n) {
    forEach8<false>(
        n, y, [](v8f v, v8f, v8f) { return tanh8(v); }, x);
}

void logCosh(const float* a, const float* t, float* y, long n) {
    forEach8<false>(
        n, y, [](v8f av, v8f tv, v8f) { return logCosh8(av, tv); }, a, t);
}

void tanhBackward(const float* g, const float* t, float* y, long n, bool add) {
    if (add) {
        forEach8<true>(
            n, y, [](v8f gv, v8f tv, v8f yv) { return yv + gv * (splat(1.0f) - tv * tv); }, g, t);
    } else {
        forEach8<false>(
            n, y, [](v8f gv, v8f tv, v8f) { return gv * (splat(1.0f) - tv * tv); }, g, t);
    }
}

} // namespace flowscope::ad::kernel::avx2
