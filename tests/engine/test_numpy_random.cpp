// NumpyRandom reproduces numpy's legacy RandomState draws bit for bit (docs/math/gaussian.md#presets).
#include "engine/gaussian/NumpyRandom.h"

#include <gtest/gtest.h>

using namespace flowscope;

TEST(NumpyRandom, Mt19937ReferenceOutput) {
    // init_genrand(5489) is the reference seeding of Matsumoto & Nishimura (std::mt19937's default).
    NumpyRandom r(5489);
    EXPECT_EQ(r.nextUint32(), 3499211612U);
    NumpyRandom s(5489);
    for (int i = 0; i < 9999; ++i) s.nextUint32();
    EXPECT_EQ(s.nextUint32(), 4123659995U); // the 10000th output, as required by the C++ standard
}

TEST(NumpyRandom, SeedZeroUniformAndNormal) {
    NumpyRandom r(0);
    EXPECT_EQ(r.randomSample(), 0.5488135039273248);
    EXPECT_NEAR(r.randomSample(), 0.7151893663724195, 1e-16);
    EXPECT_NEAR(r.randomSample(), 0.6027633760716439, 1e-16);

    r.seed(0);
    EXPECT_EQ(r.gauss(), 1.764052345967664);
    EXPECT_EQ(r.gauss(), 0.4001572083672233);
    const double more[] = {0.9787379841057392, 2.240893199201458, 1.8675579901499675, -0.977277879876411};
    for (double v : more) EXPECT_NEAR(r.gauss(), v, 1e-15);
}

TEST(NumpyRandom, SeedFortyTwo) {
    NumpyRandom r(42);
    EXPECT_NEAR(r.randomSample(), 0.3745401188473625, 1e-16);
    r.seed(42);
    EXPECT_NEAR(r.gauss(), 0.4967141530112327, 1e-15);
    EXPECT_NEAR(r.gauss(), -0.13826430117118466, 1e-15);
}

// P-ZERO (seed 35): Q = rand(2, 2), then V0 = randn(2, 2), row-major fills.
TEST(NumpyRandom, DigestPresetZeroDraws) {
    NumpyRandom r(35);
    const Mat Q = r.rand(2, 2);
    EXPECT_NEAR(Q(0, 0), 0.4580549482, 1e-10);
    EXPECT_NEAR(Q(0, 1), 0.308349607, 1e-9);
    EXPECT_NEAR(Q(1, 0), 0.231487045, 1e-9);
    EXPECT_NEAR(Q(1, 1), 0.2774245518, 1e-10);
    const Mat V0 = r.randn(2, 2);
    EXPECT_NEAR(V0(0, 0), -1.421597835, 1e-9);
    EXPECT_NEAR(V0(0, 1), 0.805255988, 1e-9);
    EXPECT_NEAR(V0(1, 0), 1.148861761, 1e-9);
    EXPECT_NEAR(V0(1, 1), 1.169428397, 1e-9);
}

// P-LINE (seed 36): q = randn(1, 2) normalised.
TEST(NumpyRandom, DigestPresetLineDraw) {
    NumpyRandom r(36);
    const Mat q = r.randn(1, 2);
    const Mat qn = q / q.norm();
    EXPECT_NEAR(qn(0, 0), 0.4063236467, 1e-10);
    EXPECT_NEAR(qn(0, 1), 0.9137292236, 1e-10);
}

TEST(NumpyRandom, GaussCachePersistsAcrossCallsAndSeedClearsIt) {
    // randn(1, 3) then randn(1, 1) draws the same four normals as randn(1, 4): the odd one is cached.
    NumpyRandom a(7), b(7);
    const Mat x = a.randn(1, 3), y = a.randn(1, 1), z = b.randn(1, 4);
    EXPECT_EQ(x(0, 0), z(0, 0));
    EXPECT_EQ(x(0, 2), z(0, 2));
    EXPECT_EQ(y(0, 0), z(0, 3));
    // A uniform draw between does not consume the cached normal.
    NumpyRandom c(7);
    c.randn(1, 3);
    c.randomSample();
    EXPECT_EQ(c.gauss(), z(0, 3));
    // Re-seeding drops the cache.
    NumpyRandom e(7);
    e.randn(1, 1);
    e.seed(7);
    EXPECT_EQ(e.gauss(), z(0, 0));
}
