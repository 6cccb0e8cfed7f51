// Flowscope engine: a sweep's training modes (docs/sweeps.md#flow-sweeps), the part of Sweep.cpp that trains
// flows instead of simulating scenes.
//
//   flow       the base is an object of training settings, named as engine/flows/TrainerSettings.h names
//              them ({"dataset": "moons", "lambda0": 0.1, "iterations": 1000}); an axis sets one of them
//              ("/lambda0"). A run trains a generative flow (FlowTrainer) and evaluates it once.
//   posterior  the base is an inverse problem (engine/inverse/Problem.h): an object, a problem file (a path
//              with '/' or ending in .json, relative to the spec) or a shipped problem's name
//              (assets/problems, beside the presets); an axis sets a field of it ("/flow/lambda0"). A run
//              trains a posterior flow (PosteriorFlow) and samples it once.
// A run's seed is the spec's seed plus its replicate, the same in every cell: cells differ in their settings
// only, so that two cells (or two sweeps of the same seed) compare flows trained from the same seeds.
#pragma once

#include "engine/sweep/Sweep.h"

#include <optional>
#include <string>

namespace flowscope {

// Reads a training mode's base into s.base (with "set" applied, `set` as in scene sweeps) and checks it as
// the run will read it. Throws SweepError naming the field ("/base/lambda0: expected a positive number, got
// -1").
void resolveTrainingBase(const JsonReader& base, const std::string& specDir, const std::string& presetDir,
                         const std::optional<JsonReader>& set, SweepSpec& s);

// checkSweep of a training mode: every axis value alone (errors name it), then every cell's settings read
// and validated (nothing trained). No memory budget or time estimate: a training's cost is not modelled.
SweepCheck checkTrainingSweep(const SweepSpec& spec);

// runSweepRun of a training mode: trains the run's flow and measures it.
SweepRunResult runTrainingRun(const SweepSpec& spec, long run);

// Shared with the scene modes (Sweep.cpp): "set" ({"/pointer": value}) applied to a base, a SweepError at the
// field; and a cell as a message names it, "cell 17 (lambda0 = 0.1, layers = 8)".
void applySweepSet(const std::optional<JsonReader>& set, JsonReader::Json& base);
std::string describeSweepCell(const SweepSpec& spec, const SweepPoint& p);

} // namespace flowscope
