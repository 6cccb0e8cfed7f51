// Flowscope UI: opening the registry's backends for the live run, the OpenGL one in the views' share group.
//
// A headless GL backend (engine/backend/Registry.h) computes in an EGL context of its own, whose buffers no
// window can see. For the GUI, a backend that takes a host context gets a Qt context that shares objects
// with every view (Qt's global share context; requestOpenGLCore sets AA_ShareOpenGLContexts), current on the
// simulation thread on an offscreen surface, and the registry builds the backend in it (BackendHost). Runs
// that the OpenGL stepper can take keep their tokens on the GPU, and the particle view draws the device
// copies they publish (Snapshot::device) straight from GPU memory.
#pragma once

#include "engine/runner/SimulationRunner.h"

#include <memory>
#include <string>

class QOffscreenSurface;

namespace flowscope {

// An opener for SimulationRunner::setBackend (it runs on the worker thread) of the registry's backend `id`.
// Call it on the GUI thread: for a backend that takes a host GL context it creates `surface` when there is
// none yet (Qt requires the GUI thread); keep the surface until the runner using the opener is gone. The
// opener throws BackendError when the backend cannot be opened; when the Qt context cannot share with the
// views, the GL backend has no stepper (velocities are read back every stage, the view draws the downloaded
// tokens).
SimulationRunner::BackendOpener backendOpener(const std::string& id,
                                              std::unique_ptr<QOffscreenSurface>& surface);

} // namespace flowscope
