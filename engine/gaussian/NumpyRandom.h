// Flowscope engine: a bit-exact port of numpy's legacy RandomState (np.random.seed / rand / randn), so that
// the experiments of the papers' scripts (docs/math/gaussian.md#presets, #rank-histograms) draw exactly the
// matrices the authors drew.
//
//  * Generator: MT19937 seeded with init_genrand(seed) (what RandomState(int) and np.random.seed(int) do):
//        key[0] = seed,  key[i] = 1812433253 * (key[i-1] ^ (key[i-1] >> 30)) + i   (mod 2^32), i = 1..623.
//  * random_sample():  a = next32() >> 5, b = next32() >> 6,  u = (a * 2^26 + b) / 2^53   in [0, 1).
//  * gauss() (legacy standard_normal, polar Box-Muller with one cached value):
//        repeat x1 = 2u - 1, x2 = 2u - 1, r2 = x1^2 + x2^2 until 0 < r2 < 1;
//        f = sqrt(-2 log(r2) / r2); cache f x1; return f x2.
//    The cache persists across calls (rand() does not touch it); seed() clears it.
//  * rand(r, c) / randn(r, c) fill an r x c array in row-major (C) order, as numpy does.
// Test vectors: seed 0 gives rand() = 0.5488135039273248 and randn() = 1.764052345967664, 0.4001572083672233.
#pragma once

#include "engine/core/Types.h"

#include <array>
#include <cstdint>

namespace flowscope {

class NumpyRandom {
  public:
    explicit NumpyRandom(std::uint32_t seed = 0) { seed_(seed); }

    // np.random.seed(seed): re-initialises the generator and clears the cached normal.
    void seed(std::uint32_t s) { seed_(s); }

    std::uint32_t nextUint32();
    double randomSample(); // np.random.random_sample() / rand()
    double gauss();        // np.random.standard_normal() / randn()

    Mat rand(int rows, int cols);  // np.random.rand(rows, cols)
    Mat randn(int rows, int cols); // np.random.randn(rows, cols)

  private:
    void seed_(std::uint32_t s);
    void reload();

    static constexpr int kN = 624;
    std::array<std::uint32_t, kN> key_{};
    int pos_ = kN;
    bool hasGauss_ = false;
    double gauss_ = 0.0;
};

} // namespace flowscope
