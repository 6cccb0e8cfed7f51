// Flow trainings small enough for tests, shared by the engine and UI test executables.
#pragma once

#include "engine/flows/Trainer.h"
#include "engine/runner/FlowRunner.h"

#include <cstdint>
#include <string>

namespace flowscope::test {

// A flow on `dataset` tiny enough that a step takes well under a millisecond: 2 layers of width 8, batch 64,
// 64 evaluation samples, the model's `seed` and data seed 5.
inline flows::TrainerConfig tinyFlowConfig(const std::string& dataset, bool rwpo, std::uint64_t seed) {
    flows::TrainerConfig c;
    c.dataset = dataset;
    c.batch = 64;
    c.evalSamples = 64;
    c.flow.layers = 2;
    c.flow.width = 8;
    c.flow.rwpo = rwpo;
    c.flow.seed = seed;
    c.dataSeed = 5;
    return c;
}

// Training pictures cheap enough to make after every step: 200 samples, 16 trajectories, a 16x16 grid and no
// evaluation.
inline FlowRunOptions smallPictures() {
    FlowRunOptions o;
    o.samples = 200;
    o.trajectorySamples = 16;
    o.gridSize = 16;
    o.evaluateEvery = 0;
    return o;
}

} // namespace flowscope::test
