#include "ui/shell/OpenGLSetup.h"

#include <QCoreApplication>
#include <QOffscreenSurface>
#include <QOpenGLContext>
#include <QSurfaceFormat>

namespace flowscope {

void requestOpenGLCore() {
    QSurfaceFormat format;
    format.setRenderableType(QSurfaceFormat::OpenGL);
    format.setVersion(kGLMajor, kGLMinor);
    format.setProfile(QSurfaceFormat::CoreProfile);
    format.setDepthBufferSize(0);
    format.setStencilBufferSize(8); // QPainter's GL engine clips with the stencil buffer
    QSurfaceFormat::setDefaultFormat(format);
    QCoreApplication::setAttribute(Qt::AA_ShareOpenGLContexts);
}

bool openGLCoreAvailable(QString* why) {
    QOpenGLContext context;
    context.setFormat(QSurfaceFormat::defaultFormat());
    if (!context.create()) {
        if (why) *why = QStringLiteral("no OpenGL context could be created");
        return false;
    }
    QOffscreenSurface surface;
    surface.setFormat(context.format());
    surface.create();
    const QSurfaceFormat f = context.format();
    const bool ok = surface.isValid() && context.makeCurrent(&surface) && f.version() >= qMakePair(3, 3);
    if (!ok && why)
        *why = QStringLiteral("OpenGL %1.%2 obtained, 3.3 core needed")
                   .arg(f.majorVersion())
                   .arg(f.minorVersion());
    context.doneCurrent();
    return ok;
}

} // namespace flowscope
