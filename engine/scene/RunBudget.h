// Flowscope engine: what a run will need, known before it starts (docs/outputs.md, "Limits").
//
// A scene fixes how many records its run keeps and how large each is, so the memory a run needs is known
// before the first step. The CLI (and the app when it opens a scene) refuses a run whose estimate exceeds
// the limit, with exit code 2 and the fields that drive it, instead of running into std::bad_alloc hours
// later. The estimate counts what grows with the scene: the recorded frames (tokens, per-token entropies,
// moments), the copy an output file is assembled in, and the integrator's and field's working arrays; the
// fixed footprint of the program (tens of MB) is not in it.
#pragma once

#include "engine/scene/Scene.h"

#include <cstdint>
#include <string>

namespace flowscope {

struct RunBudget {
    double bytes = 0;        // the estimated peak memory of the run's data
    double records = 0;      // frames (particles) or recorded states over all trajectories (moments)
    std::string pointer;     // the field that drives the estimate most
    std::string explanation; // how the estimate is made up, in words with the fields that set it
};

// A particle run (Simulation) that keeps every recorded frame; `withOutput` adds the array a trajectory file
// is assembled in (flowscope-cli simulate).
RunBudget particleRunBudget(const Scene& scene, bool withOutput);
// The bytes one recorded moment state costs (covariance, mean, time; and its JSON text when `jsonOutput`).
double momentStateBytes(const Scene& scene, bool jsonOutput);
// A live run in the app, whose history keeps at most `historyBytes` of recorded frames (RunHistory).
RunBudget liveRunBudget(const Scene& scene, std::uint64_t historyBytes);
// The Gaussian mode (moments): every trajectory's recorded states (adaptive); for paper Euler, whose
// trajectories stop at blow-up or convergence long before max_iter, one trajectory's worst case (the total is
// bounded as the run goes: MomentSolveOptions::maxRecordedStates). `jsonOutput`: the JSON document they are
// written as (about 48 bytes a number), else the .npy arrays (8).
RunBudget momentsRunBudget(const Scene& scene, bool jsonOutput);

// Half this machine's physical memory (8 GiB when it cannot be read).
std::uint64_t defaultMemoryLimit();
// All the memory this machine has, physical and swap (sysinfo(2)): what no limit can raise (0: unknown).
std::uint64_t machineMemory();

// Throws SceneError at budget.pointer when budget.bytes > limitBytes, or exceeds machineMemory() whatever the
// limit; the message gives the estimate, the limit, what drives it and `hint` (where the limit comes from,
// how to change it).
void checkRunBudget(const RunBudget& budget, std::uint64_t limitBytes, const std::string& hint);

// The hint of the CLI's commands, which take --max-memory.
inline constexpr const char* kMaxMemoryHint =
    "--max-memory sets it; the default is half this machine's memory";

// "512M", "8G", "1.5GiB", "2e9" -> bytes (K/M/G/T are powers of 1024; a bare number is bytes). Throws
// std::invalid_argument with the accepted forms.
std::uint64_t parseByteSize(const std::string& text);
// 1536 -> "1.5 KiB", 3e9 -> "2.8 GiB".
std::string formatBytes(double bytes);

} // namespace flowscope
