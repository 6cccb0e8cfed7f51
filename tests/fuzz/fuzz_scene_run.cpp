// The scene -> run path: every scene sceneFromJson accepts, made small (n <= 24, d <= 6, at most 12 nominal
// steps, a 4 x 4 cone grid, paper Euler at most 400 iterations), must run to its end or to an event and stop:
// the particle run takes exactly its nominal steps or ends early with an event, Dormand-Prince included (its
// sub-step cap), and the Gaussian mode ends every trajectory. A hang is libFuzzer's -timeout, a crash or a
// non-std::exception is a finding; a std::exception (a refused variant, a missing token file) is a clean no.
#include "FuzzInput.h"

#include "engine/dynamics/Simulation.h"
#include "engine/gaussian/MomentField.h"
#include "engine/gaussian/MomentSolver.h"
#include "engine/scene/RunBudget.h"
#include "engine/scene/Scene.h"

#include <algorithm>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace flowscope;
    const std::string text(reinterpret_cast<const char*>(data), size);
    fuzz::load([&] {
        Scene s = sceneFromJson(text, "/nonexistent-flowscope-fuzz");
        if (s.d > 6) return;
        s.n = std::min(s.n, 24);
        s.integrator.steps = std::min(s.integrator.steps, 12);
        s.output.every = std::min(s.output.every, 4);
        checkRunBudget(particleRunBudget(s, true), std::uint64_t(64) << 20, "the fuzz limit");
        Simulation sim(s);
        long steps = 0;
        while (sim.step())
            if (++steps > s.integrator.steps) std::abort(); // a step that did not advance
        if (!sim.event() && sim.stepIndex() != s.integrator.steps) std::abort();

        s.moments.maxIter = std::min(s.moments.maxIter, 400L);
        s.moments.grid.nu = std::min(s.moments.grid.nu, 4);
        s.moments.grid.nc = std::min(s.moments.grid.nc, 4);
        checkRunBudget(momentsRunBudget(s, false), std::uint64_t(64) << 20, "the fuzz limit");
        makeMomentField(s); // throws for the variants the Gaussian mode refuses
        for (const MomentTrajectory& t : solveAllMoments(s, momentOptions(s)))
            if (t.times.empty() || t.times.size() != t.states.size()) std::abort();
    });
    return 0;
}
