#include "ui/views/SharedGlBackend.h"

#include "engine/backend/Registry.h"

#include <QOffscreenSurface>
#include <QOpenGLContext>

namespace flowscope {

namespace {

bool takesGlHost(const std::string& id) {
    for (const BackendInfo& b : listBackends())
        if (b.id == id) return b.available && b.takesGlHost;
    return false;
}

} // namespace

SimulationRunner::BackendOpener backendOpener(const std::string& id,
                                              std::unique_ptr<QOffscreenSurface>& surface) {
    if (!takesGlHost(id)) return [id] { return openBackend(id); };
    if (!surface) {
        surface = std::make_unique<QOffscreenSurface>();
        surface->setFormat(QSurfaceFormat::defaultFormat());
        surface->create();
    }
    return [id, s = surface.get()]() -> ComputeBackend {
        // The context lives with the backend (BackendHost::keepAlive) and dies on this, the worker, thread.
        auto context = std::make_shared<QOpenGLContext>();
        QOpenGLContext* share = QOpenGLContext::globalShareContext();
        context->setShareContext(share);
        context->setFormat(QSurfaceFormat::defaultFormat());
        if (!s || !s->isValid() || !context->create() || !context->makeCurrent(s))
            throw BackendError("backend " + id + " is unavailable: no OpenGL context could be made current");
        BackendHost host;
        QOpenGLContext* ctx = context.get();
        host.getProcAddress = [ctx](const char* name) { return GlProc(ctx->getProcAddress(name)); };
        // Device copies are only drawable where the views can see this context's buffers.
        const bool sharing = share && QOpenGLContext::areSharing(ctx, share);
        host.shareGroup = sharing ? share->shareGroup() : nullptr;
        host.fieldsOnly = !sharing;
        host.keepAlive = context;
        return openBackend(id, &host);
    };
}

} // namespace flowscope
