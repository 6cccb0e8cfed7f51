// engine/gaussian/MomentFiles: moment trajectories as (R, K, d, d), (R, K, d) and (R, K) arrays, NaN after
// a trajectory's last record; bad input refused before any file is written.
#include "../TempDir.h"

#include "engine/gaussian/MomentFiles.h"
#include "engine/io/Npy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

namespace flowscope {
namespace {

GaussianState state(double m0, double m1, double a, double c, double b) {
    GaussianState s;
    s.mean = Vec(2);
    s.mean << m0, m1;
    s.cov = Mat(2, 2);
    s.cov << a, c, c, b;
    return s;
}

TEST(MomentFiles, ArraysHoldEveryRecordAndNanAfterAShortTrajectory) {
    test::TempDir dir("moments");
    MomentTrajectory longer, shorter;
    longer.times = {0.0, 0.5, 1.0};
    longer.states = {state(1, 2, 3, 0.5, 4), state(5, 6, 7, 0.25, 8), state(9, 10, 11, -1, 12)};
    shorter.times = {0.0, 0.3};
    shorter.states = {state(-1, -2, 2, 0, 2), state(-3, -4, 1, 0.1, 3)};
    const std::string path = dir.file("m.npy");
    writeMomentsNpy(path, {shorter, longer});
    EXPECT_EQ(momentsCompanionPath(path, "means"), dir.file("m_means.npy"));
    EXPECT_EQ(momentsCompanionPath(dir.file("x"), "times"), dir.file("x_times.npy"));

    const NpyArray covs = readNpy(path), means = readNpy(dir.file("m_means.npy")),
                   times = readNpy(dir.file("m_times.npy"));
    EXPECT_EQ(covs.shape, (std::vector<std::int64_t>{2, 3, 2, 2}));
    EXPECT_EQ(means.shape, (std::vector<std::int64_t>{2, 3, 2}));
    EXPECT_EQ(times.shape, (std::vector<std::int64_t>{2, 3}));
    // Trajectory 0 (the shorter): two records, then NaN.
    EXPECT_EQ(times.data[1], 0.3);
    EXPECT_TRUE(std::isnan(times.data[2]));
    EXPECT_EQ(means.data[1 * 2 + 1], -4.0);
    EXPECT_TRUE(std::isnan(means.data[2 * 2]));
    EXPECT_EQ(covs.data[(1 * 2 + 0) * 2 + 1], 0.1); // Σ_01 at record 1
    for (int k = 0; k < 4; ++k) EXPECT_TRUE(std::isnan(covs.data[2 * 4 + k]));
    // Trajectory 1: all three records, C order (r, k, a, b).
    EXPECT_EQ(times.data[3 + 2], 1.0);
    EXPECT_EQ(means.data[(3 + 2) * 2 + 0], 9.0);
    EXPECT_EQ(covs.data[((3 + 1) * 2 + 1) * 2 + 1], 8.0);  // Σ_11 at record 1
    EXPECT_EQ(covs.data[((3 + 2) * 2 + 1) * 2 + 0], -1.0); // Σ_10 at record 2
}

TEST(MomentFiles, BadTrajectoriesAreRefusedAndNothingIsWritten) {
    test::TempDir dir("moments-bad");
    const std::string path = dir.file("m.npy");
    EXPECT_THROW(writeMomentsNpy(path, {}), std::invalid_argument);
    MomentTrajectory a, b;
    a.times = {0.0};
    a.states = {state(0, 0, 1, 0, 1)};
    b.times = {0.0};
    b.states = {GaussianState{Vec::Zero(3), Mat::Identity(3, 3)}};
    EXPECT_THROW(writeMomentsNpy(path, {a, b}), std::invalid_argument);
    a.times = {0.0, 1.0}; // two times, one state
    EXPECT_THROW(writeMomentsNpy(path, {a}), std::invalid_argument);
    EXPECT_TRUE(std::filesystem::is_empty(dir.str()));
}

} // namespace
} // namespace flowscope
