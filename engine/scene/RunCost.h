// Flowscope engine: how long a run will take, estimated before it starts (docs/outputs.md, "Time").
//
// A particle run's work is known from its scene: the field evaluations (steps times the integrator's stages),
// each costing N^2 pair interactions per head for the pairwise variants (N^2 / 2 masked), times Sinkhorn's
// row and column passes, or N d^2 for linear attention; and the O(N^2) entropy pass at every record. The
// estimate divides that work by rates measured with flowscope-cli on this project's reference machine (two
// cores; docs/outputs.md gives them), so it is right within a factor of a few on a laptop. It serves three
// things: a notice before a run that will take more than a minute, the refusal of --max-time, and the time
// left on the progress line (which then follows the measured speed).
#pragma once

#include "engine/scene/Scene.h"

#include <string>

namespace flowscope {

struct RunCost {
    double seconds = 0;      // the estimate, on the reference machine
    std::string pointer;     // the field that drives it most (as RunBudget's)
    std::string explanation; // the work in words, with the fields that set it
};

// A particle run of `scene` on the CPU (`gpu`: a GPU backend, taken as 100x the CPU's float32 rate).
RunCost particleRunCost(const Scene& scene, bool gpu);

// "" when the estimate is under a minute, else one line for the terminal: "this run will take about 3 h 5
// min (...); --max-time refuses such runs".
std::string runCostNotice(const RunCost& cost);

// Throws SceneError at cost.pointer when maxSeconds > 0 and the estimate exceeds it; the message gives the
// estimate, the work and the fields that drive it.
void checkRunCost(const RunCost& cost, double maxSeconds);

// "90", "90s", "5m", "1.5h", "2d" -> seconds (a bare number is seconds). Throws std::invalid_argument with
// the accepted forms for anything else, zero or negative.
double parseDuration(const std::string& text);
// 4.2 -> "4.2 s", 200 -> "3 min 20 s", 3900 -> "1 h 5 min", 3e6 -> "35 days".
std::string formatDuration(double seconds);

} // namespace flowscope
