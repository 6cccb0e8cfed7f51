#include "engine/gaussian/NumpyRandom.h"

#include "engine/core/PolarNormal.h"

#include <cmath>

namespace flowscope {

namespace {
constexpr int kM = 397;
constexpr std::uint32_t kMatrixA = 0x9908b0dfU;
constexpr std::uint32_t kUpperMask = 0x80000000U;
constexpr std::uint32_t kLowerMask = 0x7fffffffU;
} // namespace

void NumpyRandom::seed_(std::uint32_t s) {
    key_[0] = s;
    for (int i = 1; i < kN; ++i)
        key_[std::size_t(i)] =
            1812433253U * (key_[std::size_t(i - 1)] ^ (key_[std::size_t(i - 1)] >> 30)) + std::uint32_t(i);
    pos_ = kN;
    hasGauss_ = false;
    gauss_ = 0.0;
}

// The standard MT19937 state transition (Matsumoto & Nishimura), as in numpy's mt19937_gen.
void NumpyRandom::reload() {
    auto twist = [](std::uint32_t a, std::uint32_t b, std::uint32_t m) {
        const std::uint32_t y = (a & kUpperMask) | (b & kLowerMask);
        return m ^ (y >> 1) ^ ((y & 1U) ? kMatrixA : 0U);
    };
    int i = 0;
    for (; i < kN - kM; ++i) key_[std::size_t(i)] = twist(key_[i], key_[i + 1], key_[i + kM]);
    for (; i < kN - 1; ++i) key_[std::size_t(i)] = twist(key_[i], key_[i + 1], key_[i + kM - kN]);
    key_[kN - 1] = twist(key_[kN - 1], key_[0], key_[kM - 1]);
    pos_ = 0;
}

std::uint32_t NumpyRandom::nextUint32() {
    if (pos_ == kN) reload();
    std::uint32_t y = key_[std::size_t(pos_++)];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= (y >> 18);
    return y;
}

double NumpyRandom::randomSample() {
    const std::uint32_t a = nextUint32() >> 5, b = nextUint32() >> 6;
    return (double(a) * 67108864.0 + double(b)) / 9007199254740992.0;
}

double NumpyRandom::gauss() {
    if (hasGauss_) {
        hasGauss_ = false;
        const double cached = gauss_;
        gauss_ = 0.0;
        return cached;
    }
    const auto [first, second] = polarNormalPair([this] { return randomSample(); });
    gauss_ = first;
    hasGauss_ = true;
    return second;
}

Mat NumpyRandom::rand(int rows, int cols) {
    Mat m(rows, cols);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) m(r, c) = randomSample();
    return m;
}

Mat NumpyRandom::randn(int rows, int cols) {
    Mat m(rows, cols);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) m(r, c) = gauss();
    return m;
}

} // namespace flowscope
