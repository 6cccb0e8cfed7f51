#include "ui/views/SharedGlBackend.h"

#include "ui/shell/OpenGLSetup.h"

#include <QOffscreenSurface>
#include <QOpenGLContext>

#if FLOWSCOPE_HAVE_GPU
#include "engine/gpu/gl/GlFunctions.h"
#include "engine/gpu/gl/GlKernelField.h"
#include "engine/gpu/gl/GlStepper.h"
#endif

namespace flowscope {

std::unique_ptr<QOffscreenSurface> makeComputeSurface() {
    auto surface = std::make_unique<QOffscreenSurface>();
    surface->setFormat(QSurfaceFormat::defaultFormat());
    surface->create();
    return surface;
}

SimulationRunner::BackendOpener sharedGlBackendOpener(QOffscreenSurface* surface) {
    return [surface]() -> ComputeBackend {
#if FLOWSCOPE_HAVE_GPU
        // The context and the functions loaded from it live together, and die on this (the worker) thread.
        struct Device {
            QOpenGLContext context;
            GlFunctions gl;
        };
        auto device = std::make_shared<Device>();
        QOpenGLContext* share = QOpenGLContext::globalShareContext();
        device->context.setShareContext(share);
        device->context.setFormat(QSurfaceFormat::defaultFormat());
        if (!surface || !surface->isValid() || !device->context.create() ||
            !device->context.makeCurrent(surface))
            throw BackendError("backend gl is unavailable: no OpenGL context could be made current");
        std::string why;
        QOpenGLContext* ctx = &device->context;
        if (!device->gl.load([ctx](const char* name) { return GlProc(ctx->getProcAddress(name)); },
                             GlFunctions::Use::Compute, &why))
            throw BackendError("backend gl is unavailable: " + why);

        ComputeBackend b;
        b.kind = "gl";
        b.device = device->gl.describe();
        const GlFunctions* gl = &device->gl;
        b.makeField = [gl](const AttentionSpec& spec, int d, Precision) { return makeGlField(spec, d, *gl); };
        // Device copies are only drawable where the views can see this context's buffers.
        if (share && QOpenGLContext::areSharing(ctx, share)) {
            const void* group = share->shareGroup();
            b.makeStepper = [gl, group](const AttentionSpec& spec, const IntegratorSpec& integrator, int d) {
                auto stepper = std::make_unique<GlStepper>(spec, integrator, d, *gl);
                stepper->setShareGroup(group);
                return std::unique_ptr<DeviceStepper>(std::move(stepper));
            };
        }
        b.context = device;
        return b;
#else
        (void)surface;
        throw BackendError("backend gl is unavailable: this build has no GPU backends");
#endif
    };
}

} // namespace flowscope
