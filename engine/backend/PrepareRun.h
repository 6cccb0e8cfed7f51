// Flowscope engine: the one contract between a particle run and its backend.
//
// Every front end that runs a scene's particles (the app's runner, flowscope-cli simulate, bench run, the
// sweeps, Python's simulate and Run) starts it here: prepareRun asks the backend whether it can run the scene
// (ComputeBackend::supports: the GPU passes' limits, a CPU device's token cap) before anything is made, so a
// refusal is one message up front, naming the scene field, instead of an exception in the middle of a run.
// What a refusal does is the front end's choice: a batch run fails (exit code 2, a ValueError), the app falls
// back to the CPU and shows why.
#pragma once

#include "engine/backend/ComputeBackend.h"
#include "engine/dynamics/Simulation.h"

#include <memory>
#include <string>

namespace flowscope {

enum class OnRefusal {
    Fail,      // throw the refusal as a SceneError at the field it names
    UseTheCpu, // run on the CPU, with the refusal as the note
};

struct PreparedRun {
    FieldFactory makeField;     // the backend's fields, or the CPU's
    StepperFactory makeStepper; // the backend's whole steps on the device; empty on the CPU
    bool onBackend = true;      // false: the backend refused and the CPU runs the scene
    std::string note;           // why the CPU runs it (UseTheCpu); empty otherwise

    // The run: a Simulation of `scene` on these fields, with the device steps where the backend has them
    // (Simulation::setStepper keeps the fields when its stepper refuses the scene, and says why).
    std::unique_ptr<Simulation> start(const Scene& scene) const;
};

// Asks `backend` about `scene` and returns how to run it; throws SceneError on a refusal under Fail (the
// pointer is the field the refusal names, "/attention/positional_decay"; the message the backend's).
PreparedRun prepareRun(const ComputeBackend& backend, const Scene& scene,
                       OnRefusal onRefusal = OnRefusal::Fail);

} // namespace flowscope
