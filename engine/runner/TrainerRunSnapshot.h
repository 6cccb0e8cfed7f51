// Flowscope engine: what every live training run publishes (TrainerRun.h), around one State per trainer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace flowscope {

// The snapshot of a TrainerRun: its trainers' states, the configured run first.
template <class State> struct TrainerRunSnapshot {
    std::uint64_t generation = 0; // grows with every start(): tells runs apart
    bool playing = false;
    bool comparison = false;          // a baseline trains beside the configured run (trainers.size() == 2)
    double iterationsPerSecond = 0.0; // advances per second (each steps every trainer once)
    std::vector<State> trainers;      // the configured run first, then the baseline
    std::string error;                // why training stopped or failed; empty while it can go on

    long iteration() const { return trainers.empty() ? 0 : trainers.front().iteration; }
};

} // namespace flowscope
