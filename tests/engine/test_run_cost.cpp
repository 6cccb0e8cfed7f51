// RunCost (engine/scene/RunCost.h): the estimate scales as the work does, names the field that drives it,
// and --max-time's durations read and print.
#include "engine/scene/RunCost.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

using namespace flowscope;

namespace {

Scene particles(int n, int d, int steps, AttentionType type = AttentionType::Softmax) {
    Scene s;
    s.n = n;
    s.d = d;
    s.attention.type = type;
    s.attention.heads = {{Mat::Identity(d, d), Mat::Identity(d, d), -Mat::Identity(d, d)}};
    s.integrator.steps = steps;
    s.output.every = steps;
    s.output.entropy = false;
    return s;
}

double seconds(const Scene& s) {
    return particleRunCost(s, false).seconds;
}

} // namespace

TEST(RunCost, ScalesAsTheWorkDoes) {
    const Scene base = particles(1000, 2, 10);
    EXPECT_NEAR(seconds(particles(2000, 2, 10)) / seconds(base), 4.0, 1e-12); // N^2
    EXPECT_NEAR(seconds(particles(1000, 2, 30)) / seconds(base), 3.0, 1e-12); // steps
    Scene s = base;
    s.attention.masked = true;
    EXPECT_NEAR(seconds(s) / seconds(base), 0.5, 1e-12);
    s = base;
    s.integrator.method = Method::Euler;
    EXPECT_NEAR(seconds(s) / seconds(base), 0.25, 1e-12); // RK4 evaluates the field four times a step
    s = base;
    s.precision = Precision::Float32;
    EXPECT_LT(seconds(s), seconds(base) / 2); // twice the lanes
    s = base;
    s.attention.heads.push_back(s.attention.heads[0]);
    EXPECT_NEAR(seconds(s) / seconds(base), 2.0, 1e-12);
    // Linear attention is O(N d^2): doubling N doubles it.
    EXPECT_NEAR(seconds(particles(2000, 2, 10, AttentionType::Linear)) /
                    seconds(particles(1000, 2, 10, AttentionType::Linear)),
                2.0, 1e-12);
    // Sinkhorn adds its passes; the entropy pass adds a pass at each record.
    s = base;
    s.attention.type = AttentionType::Sinkhorn;
    EXPECT_GT(seconds(s), 10 * seconds(base));
    s = base;
    s.output.entropy = true;
    s.output.every = 1;
    EXPECT_GT(seconds(s), seconds(base));
    EXPECT_GT(particleRunCost(s, false).seconds, particleRunCost(s, true).seconds * 10); // a GPU backend
}

TEST(RunCost, NamesTheFieldThatDrivesItAndRefusesAboveMaxTime) {
    const RunCost big = particleRunCost(particles(16777216, 2, 1), false);
    EXPECT_EQ(big.pointer, "/n");
    EXPECT_GT(big.seconds, 86400.0); // 2.8e14 pairs
    EXPECT_NE(runCostNotice(big).find("this run will take about"), std::string::npos);
    EXPECT_EQ(runCostNotice(particleRunCost(particles(64, 2, 10), false)), "");
    EXPECT_EQ(particleRunCost(particles(64, 2, 2147483647), false).pointer, "/integrator/steps");
    Scene s = particles(256, 2, 10, AttentionType::Sinkhorn);
    s.attention.sinkhornIterations = 1000000;
    EXPECT_EQ(particleRunCost(s, false).pointer, "/attention/sinkhorn/iterations");
    EXPECT_NO_THROW(checkRunCost(big, 0)); // off
    try {
        checkRunCost(big, 3600);
        FAIL() << "accepted";
    } catch (const SceneError& e) {
        EXPECT_EQ(e.pointer, "/n");
        EXPECT_NE(std::string(e.what()).find("above --max-time 1 h 0 min"), std::string::npos) << e.what();
    }
}

TEST(RunCost, DurationsReadAndPrint) {
    EXPECT_EQ(parseDuration("90"), 90);
    EXPECT_EQ(parseDuration("90s"), 90);
    EXPECT_EQ(parseDuration("5m"), 300);
    EXPECT_EQ(parseDuration("1.5h"), 5400);
    EXPECT_EQ(parseDuration("2d"), 172800);
    for (const char* bad : {"", "0", "-5m", "soon", "5 m", "1e999", "nan", "3w"})
        EXPECT_THROW(parseDuration(bad), std::invalid_argument) << bad;
    EXPECT_EQ(formatDuration(4.21), "4.2 s");
    EXPECT_EQ(formatDuration(200), "3 min 20 s");
    EXPECT_EQ(formatDuration(3900), "1 h 5 min");
    EXPECT_EQ(formatDuration(3e6), "35 days");
    EXPECT_EQ(formatDuration(INFINITY), "forever");
}
