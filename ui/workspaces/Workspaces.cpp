#include "ui/workspaces/Workspaces.h"

#include "ui/workspaces/flows/FlowsWorkspace.h"
#include "ui/workspaces/inverse/InverseWorkspace.h"
#include "ui/workspaces/models/ModelsWorkspace.h"
#include "ui/workspaces/particles/ParticlesWorkspace.h"
#include "ui/workspaces/sweeps/SweepsWorkspace.h"
#include "ui/workspaces/transformers/TransformersWorkspace.h"

namespace flowscope {

// Made in this order (each adds its tool bars to the window as it is made). Sweeps and Models open their
// scenes in the Particles workspace.
QList<Workspace*> makeWorkspaces(QMainWindow* host) {
    auto* particles = new ParticlesWorkspace(host);
    return {
        particles,
        new FlowsWorkspace(host),
        new TransformersWorkspace(host),
        new InverseWorkspace(host),
        new SweepsWorkspace(host, particles),
        new ModelsWorkspace(host, particles),
    };
}

} // namespace flowscope
