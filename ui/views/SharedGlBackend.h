// Flowscope UI: the OpenGL compute backend in the views' share group.
//
// The headless backend (engine/gpu/common/Backend.h) computes in an EGL context of its own, whose buffers no
// window can see. The GUI's opens a Qt context that shares objects with every view (Qt's global share
// context; requestOpenGLCore sets AA_ShareOpenGLContexts), current on the simulation thread on an offscreen
// surface. Runs that the OpenGL stepper can take keep their tokens on the GPU, and the particle view draws
// the device copies they publish (Snapshot::device) straight from GPU memory.
#pragma once

#include "engine/runner/SimulationRunner.h"

#include <memory>

class QOffscreenSurface;

namespace flowscope {

// The surface the worker's context is made current on: create it on the GUI thread (Qt requires it) and
// keep it until the runner using the opener is gone.
std::unique_ptr<QOffscreenSurface> makeComputeSurface();

// An opener for SimulationRunner::setBackend (runs on the worker thread). Throws BackendError when no
// OpenGL 4.3 context can be made or it lacks compute; when the context cannot share with the views, the
// backend has no stepper (velocities are read back every stage, the view draws the downloaded tokens).
SimulationRunner::BackendOpener sharedGlBackendOpener(QOffscreenSurface* surface);

} // namespace flowscope
