// Flowscope engine: the 2-D toy datasets of FFJORD / OT-Flow (lib/toy_data.py), seeded, and user points.
//
// The recipes follow toy_data.py and the sklearn generators it calls constant for constant
// (docs/math/flows.md#datasets); the .cpp spells each one out. Deliberate differences from the Python code:
//  * Every generator draws from the one seeded stream, including 2spirals and checkerboard (the original
//    draws those from the global np.random, so seeding never made them reproducible).
//  * Exactly n rows always: pinwheel gives the n % 5 extra points to the first arms, 2spirals the extra point
//    to the first spiral (the original returns 5*(n/5) and 2*(n/2) rows).
//  * Double precision throughout (the original casts some sets to float32).
//  * The random stream is ours (Rng below), so values differ from numpy's; the laws are the same.
#pragma once

#include "engine/core/Types.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace flowscope::flows {

// A portable random stream: std::mt19937_64, whose output sequence the C++ standard fixes, with our own
// transforms, because std::uniform_real_distribution and std::normal_distribution are implementation-defined.
// The same seed gives the same numbers with every standard library.
class Rng {
  public:
    explicit Rng(std::uint64_t seed = 0) : engine_(seed) {}

    void seed(std::uint64_t s) {
        engine_.seed(s);
        hasSpare_ = false;
    }
    std::uint64_t nextUint64() { return engine_(); }
    double uniform() { return double(engine_() >> 11) * 0x1.0p-53; } // [0, 1), 53 random bits
    double normal();                                                 // N(0, 1), Marsaglia's polar method
    std::uint64_t below(std::uint64_t n); // uniform on {0, ..., n-1}, unbiased; n >= 1

  private:
    std::mt19937_64 engine_;
    bool hasSpare_ = false;
    double spare_ = 0.0;
};

// swissroll, circles, rings, moons, 8gaussians, pinwheel, 2spirals, checkerboard.
std::vector<std::string> datasetNames();
bool isDatasetName(const std::string& name);

// n x 2 samples (one per row) of the named dataset, fully determined by (name, n, seed). The second form
// continues an existing stream. Throws std::invalid_argument for an unknown name (listing the valid ones) or
// a negative n.
Mat sampleDataset(const std::string& name, int n, std::uint64_t seed);
Mat sampleDataset(const std::string& name, int n, Rng& rng);

// Points from a .npy (float32/float64/int, C order, shape n x d) or a .csv / .txt (n rows of d numbers,
// optional header line), chosen by extension. d >= 1 is accepted; the caller checks d. Throws
// std::runtime_error naming the problem: missing or empty file, not a 2-D array, no rows, no columns, a NaN
// or an infinity (with its 0-based row and column).
Mat loadPoints(const std::string& path);

// Draws rows of a fixed point set (points drawn or loaded by the user) uniformly with replacement, plus an
// optional N(0, jitter^2 I) perturbation so that a model does not collapse onto the exact points.
class PointSampler {
  public:
    // Throws std::invalid_argument for an empty set or a negative jitter.
    PointSampler(Mat points, std::uint64_t seed, double jitter = 0.0);

    Mat sample(int n);
    void reseed(std::uint64_t seed) { rng_.seed(seed); }

    const Mat& points() const { return points_; }
    double jitter() const { return jitter_; }

  private:
    Mat points_;
    double jitter_;
    Rng rng_;
};

} // namespace flowscope::flows
