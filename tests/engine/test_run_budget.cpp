// engine/scene/RunBudget: what a run will need, known before it starts. The estimate must bound what a run
// really allocates (measured with mallinfo2 around a run), name the field that drives it, and refuse above
// the limit with that field's JSON pointer.
#include "engine/dynamics/Simulation.h"
#include "engine/gaussian/MomentSolver.h"
#include "engine/scene/RunBudget.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <malloc.h>

namespace flowscope {
namespace {

Scene particles(int n, int d, int steps, int every) {
    Scene s;
    s.n = n;
    s.d = d;
    s.initial.mean = Vec::Zero(d);
    s.initial.cov = Mat::Identity(d, d);
    s.attention.heads = {{Mat::Identity(d, d), Mat::Identity(d, d), -0.5 * Mat::Identity(d, d)}};
    s.integrator.method = Method::Rk4;
    s.integrator.steps = steps;
    s.output.every = every;
    return s;
}

std::string refusal(const RunBudget& b, std::uint64_t limit) {
    try {
        checkRunBudget(b, limit, "the test's limit");
    } catch (const SceneError& e) {
        return e.pointer + " | " + e.what();
    }
    return "accepted";
}

TEST(RunBudget, BoundsWhatARunReallyKeeps) {
#ifdef FLOWSCOPE_SANITIZED
    GTEST_SKIP() << "AddressSanitizer's allocator is not glibc's: mallinfo2 does not see it";
#endif
    for (const auto& [n, d, steps, every] : {std::tuple{400, 2, 60, 1}, {1500, 3, 40, 4}, {64, 8, 200, 7}}) {
        const Scene s = particles(n, d, steps, every);
        const RunBudget b = particleRunBudget(s, false);
        EXPECT_EQ(b.records, std::floor(double(steps) / every) + 2);
        const std::size_t before = mallinfo2().uordblks;
        std::size_t peak = before;
        {
            Simulation sim(s);
            while (sim.step()) peak = std::max(peak, std::size_t(mallinfo2().uordblks));
            EXPECT_EQ(long(sim.history().size()), steps / every + 1 + (steps % every != 0)); // t = 0, the end
            peak = std::max(peak, std::size_t(mallinfo2().uordblks));
        }
        const double used = double(peak - before);
        EXPECT_LE(used, b.bytes) << n << " x " << d << ", " << steps << " / " << every;
        EXPECT_GE(used, 0.25 * b.bytes) << "an estimate far above the truth refuses runs that fit";
    }
}

TEST(RunBudget, RefusesAboveTheLimitNamingTheFieldThatDrivesIt) {
    Scene s = particles(2048, 2, 2147483647, 5);
    EXPECT_NE(refusal(particleRunBudget(s, true), defaultMemoryLimit()).find("/integrator/steps | "),
              std::string::npos);
    s = particles(16777216, 1024, 10, 1);
    const std::string why = refusal(particleRunBudget(s, true), defaultMemoryLimit());
    EXPECT_EQ(why.rfind("/n | ", 0), 0u) << why;
    EXPECT_NE(why.find("16777216 x 1024 tokens"), std::string::npos) << why;
    EXPECT_NE(why.find("the test's limit"), std::string::npos) << why;
    EXPECT_EQ(refusal(particleRunBudget(particles(50, 2, 20, 2), true), 1 << 20), "accepted");
    // No limit grants more than the machine has (memory and swap): a limit of 1000 TiB still refuses it.
    ASSERT_GT(machineMemory(), defaultMemoryLimit());
    const std::string above = refusal(particleRunBudget(s, true), std::uint64_t(1000) << 40);
    EXPECT_EQ(above.rfind("/n | ", 0), 0u) << above;
    EXPECT_NE(above.find("more than this machine has"), std::string::npos) << above;
    EXPECT_NE(above.find("1000.0 TiB cannot grant it"), std::string::npos) << above;

    Scene g = particles(64, 2, 100, 1);
    g.moments.method = MomentMethod::PaperEuler;
    g.moments.maxIter = 1000000000;
    EXPECT_EQ(refusal(momentsRunBudget(g, false), defaultMemoryLimit()).rfind("/moments/max_iter | ", 0), 0u);
    g.moments.method = MomentMethod::Adaptive;
    g.moments.grid = {1000, 1000};
    EXPECT_EQ(refusal(momentsRunBudget(g, true), defaultMemoryLimit()).rfind("/moments/grid | ", 0), 0u);
    EXPECT_EQ(momentsRunBudget(g, false).records, 1e6 * 102);
}

// Every shipped scene fits the budget of a modest machine (8 GiB), as a particle run with its output and in
// the Gaussian mode with JSON output: a limit must never refuse the paper's own figures. (Fig 3(a) has 40 x
// 40 paper-Euler trajectories of up to 100000 steps, 58 GiB if each ran to max_iter; all blow up within a few
// hundred steps.)
TEST(RunBudget, EveryPresetFitsAModestMachine) {
    int presets = 0;
    for (const auto& e : std::filesystem::directory_iterator(FLOWSCOPE_PRESET_DIR)) {
        if (e.path().extension() != ".json") continue;
        SCOPED_TRACE(e.path().filename().string());
        const Scene s = loadScene(e.path().string());
        EXPECT_EQ(refusal(particleRunBudget(s, true), std::uint64_t(8) << 30), "accepted");
        EXPECT_EQ(refusal(momentsRunBudget(s, true), std::uint64_t(8) << 30), "accepted");
        ++presets;
    }
    EXPECT_GE(presets, 40);
}

// Paper Euler: the total is bounded while the run goes. Trajectories that neither blow up nor converge run to
// max_iter; past maxRecordedStates the solve stops with the field that drives it.
TEST(RunBudget, PaperEulerTrajectoriesStopAtTheRecordedStatesLimit) {
    Scene s = particles(64, 2, 100, 1);
    s.attention.heads = {{Mat::Identity(2, 2), Mat::Identity(2, 2), Mat::Zero(2, 2)}}; // V = 0: nothing moves
    s.moments.method = MomentMethod::PaperEuler;
    s.moments.maxIter = 500;
    s.moments.grid.nu = s.moments.grid.nc = 6;
    MomentSolveOptions o = momentOptions(s);
    double total = 0;
    for (const MomentTrajectory& t : solveAllMoments(s, o)) {
        EXPECT_EQ(t.event, MomentEvent::MaxIter);
        total += double(t.states.size());
    }
    EXPECT_GT(total, 3000.0);
    o.maxRecordedStates = 3000;
    try {
        solveAllMoments(s, o);
        ADD_FAILURE() << "the limit was not enforced";
    } catch (const SceneError& e) {
        EXPECT_EQ(e.pointer, "/moments/max_iter");
        EXPECT_NE(std::string(e.what()).find("3000 states"), std::string::npos) << e.what();
    }
}

TEST(RunBudget, TheAppsLiveRunKeepsOnlyItsHistoryBudget) {
    const Scene s = particles(100000, 3, 1000000, 1); // 10^6 frames of 2.4 MB: 2.4 TB if all were kept
    const RunBudget all = particleRunBudget(s, false), live = liveRunBudget(s, std::uint64_t(512) << 20);
    EXPECT_GT(all.bytes, 1e12);
    EXPECT_LT(live.bytes, 1.0e9);
    EXPECT_EQ(live.records, std::floor(double(512 << 20) / (8.0 * 100000 * 4)) + 2);
}

TEST(RunBudget, SizesReadAndPrint) {
    EXPECT_EQ(parseByteSize("512M"), 512ull << 20);
    EXPECT_EQ(parseByteSize("8G"), 8ull << 30);
    EXPECT_EQ(parseByteSize("1.5GiB"), 3ull << 29);
    EXPECT_EQ(parseByteSize("2e9"), 2000000000ull);
    EXPECT_EQ(parseByteSize("4kb"), 4096ull);
    for (const char* bad : {"", "G", "0", "-1G", "1X", "lots", "1e30T", "nan"})
        EXPECT_THROW(parseByteSize(bad), std::invalid_argument) << bad;
    EXPECT_EQ(formatBytes(512), "512 B");
    EXPECT_EQ(formatBytes(1536), "1.5 KiB");
    EXPECT_EQ(formatBytes(3.0 * (1ull << 30)), "3.0 GiB");
}

} // namespace
} // namespace flowscope
