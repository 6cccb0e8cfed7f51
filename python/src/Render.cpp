// flowscope.render: an animation of a scene's view drawn headless and encoded to MP4, GIF or PNGs, as
// flowscope-cli render draws it (app/cli/Render.cpp): the app's pictures (render/animation's
// AnimationExporter) on a QGuiApplication of Qt's "offscreen" platform, OpenGL from an EGL surfaceless
// context. Where the module is built without them (no Qt Gui pictures, no EGL), render raises RuntimeError.
#include "Common.h"
#include "Progress.h"

#include <cmath>

#ifndef FLOWSCOPE_HAVE_RENDER
#define FLOWSCOPE_HAVE_RENDER 0
#endif

#if FLOWSCOPE_HAVE_RENDER
#include "engine/core/Text.h"
#include "engine/gpu/gl/GlContext.h"
#include "engine/media/FrameSink.h"
#include "render/ConeData.h"
#include "render/GlApi.h"
#include "render/animation/AnimationExporter.h"
#include "render/picture/Theme.h"

#include <EGL/egl.h>
#include <QGuiApplication>
#include <QImage>

#include <iostream>
#endif

namespace flowscope::py {

namespace {

#if FLOWSCOPE_HAVE_RENDER

// Qt's warnings on stderr, less the one expected on a server (no XDG runtime directory), as the CLI's.
void quietQtMessages(QtMsgType type, const QMessageLogContext&, const QString& message) {
    if (message.startsWith(QLatin1String("QStandardPaths: XDG_RUNTIME_DIR"))) return;
    if (type != QtDebugMsg && type != QtInfoMsg) std::cerr << "Qt: " << message.toStdString() << "\n";
}

// The process's QGuiApplication, made on first use on Qt's "offscreen" platform (no display; OpenGL comes
// from EGL), with the app's dark palette; it lives until the process ends.
void ensureApplication() {
    if (QCoreApplication::instance()) return;
    qInstallMessageHandler(quietQtMessages);
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    qputenv("QT_QPA_OFFSCREEN_NO_GLX", "1");
    static int argc = 1;
    static char name[] = "flowscope";
    static char* argv[] = {name, nullptr};
    new QGuiApplication(argc, argv);
    QGuiApplication::setPalette(themePalette(ThemeKind::Dark));
}

AnimationView viewNamed(const std::string& view) {
    if (view == "particles") return AnimationView::Particles;
    if (view == "cone") return AnimationView::Cone;
    if (view == "disc") return AnimationView::Disc;
    throw InputError("view", "expected \"particles\", \"cone\" or \"disc\", got " + quoteForMessage(view));
}

#endif

void render(const pb::handle& sceneArg, const pb::handle& pathArg, const std::string& view, long frames,
            double fps, std::pair<int, int> size, std::optional<double> dtPerFrame, bool hud,
            std::optional<std::string> caption, bool particles, const pb::object& progressArg) {
#if FLOWSCOPE_HAVE_RENDER
    const Scene scene = toScene(sceneArg);
    const std::string path = pathText(pathArg);
    AnimationOptions o;
    o.view = viewNamed(view);
    o.frames = frames, o.fps = fps, o.width = size.first, o.height = size.second;
    o.dtPerFrame = dtPerFrame, o.hud = hud, o.caption = caption, o.particles = particles;
    if (frames < 1 || frames > kAnimationMaxFrames)
        throw InputError("frames", "expected 1 to " + std::to_string(kAnimationMaxFrames) + ", got " +
                                       std::to_string(frames));
    if (!(fps > 0) || fps > kAnimationMaxFps) throw InputError("fps", "expected a rate in (0, 240] frames/s");
    for (int side : {size.first, size.second})
        if (side < kAnimationMinSide || side > kAnimationMaxSide)
            throw InputError("size", "expected (width, height) in pixels, each from 16 to " +
                                         std::to_string(kAnimationMaxSide));
    if (dtPerFrame && !(std::isfinite(*dtPerFrame) && *dtPerFrame > 0))
        throw InputError("dt_per_frame", "expected a positive number");
    if (hud && o.view != AnimationView::Particles)
        throw InputError("hud", "only the particles view has a heads-up display");
    if (!particles && o.view == AnimationView::Particles)
        throw InputError("particles", "the particles view needs the particle simulation");
    if (caption && caption->empty()) throw InputError("caption", "expected \"auto\" or a text, got \"\"");
    if (o.view != AnimationView::Particles)
        if (const auto why = coneUnsupported(scene)) throw InputError("view", *why);
    if (const auto why = animationOptionsError(scene, o)) throw InputError("options", *why);

    VideoOptions video;
    video.width = o.width, video.height = o.height, video.fps = o.fps;
    std::unique_ptr<FrameSink> sink;
    try {
        sink = openFrameSink(path, video); // nothing under `path` until finish()
    } catch (const std::invalid_argument& e) {
        throw InputError("path", e.what());
    } catch (const std::runtime_error& e) {
        throw InputError("path", e.what());
    }
    ensureApplication();

    Progress progress(progressArg, "render " + scene.name, frames, "frame");
    double fraction = 0;
    Interruptible guard([&] {
        if (progress) progress(fraction);
    });
    const auto cancelled = [&] { return !guard.poll(); };
    std::string failure;
    guard.run([&] {
        // On this thread: the EGL context is current here, and Qt's painting belongs to the application's
        // thread. The exporter is declared after the context, so it releases its GL objects while it exists.
        std::string why;
        const auto context = GlContext::createHeadless(&why);
        if (!context) {
            failure = "render: no OpenGL for headless drawing (EGL surfaceless): " + why;
            return;
        }
        GlApi gl;
        if (!gl.load([](const char* name) { return GlApi::Proc(eglGetProcAddress(name)); }, &why)) {
            failure = "render: " + why;
            return;
        }
        AnimationExporter exporter(scene, o);
        if (!exporter.initialize(gl) || !exporter.solve(cancelled)) {
            if (exporter.failure() != AnimationExporter::Failure::Cancelled)
                failure = "render: " + exporter.error();
            return;
        }
        QImage frame;
        for (long k = 0; k < o.frames; ++k) {
            if (!exporter.renderFrame(k, frame, cancelled)) return; // Ctrl+C: the sink removes its file
            sink->addFrame(frame.constBits(), int(frame.bytesPerLine()));
            fraction = double(k + 1) / double(o.frames);
            if (!guard.poll()) return;
        }
        sink->finish();
    });
    if (!failure.empty()) throw std::runtime_error(failure);
#else
    (void)sceneArg, (void)pathArg, (void)view, (void)frames, (void)fps, (void)size, (void)dtPerFrame;
    (void)hud, (void)caption, (void)particles, (void)progressArg;
    throw std::runtime_error(
        "render: this flowscope module was built without the headless renderer (it needs the app's "
        "pictures, CMake option FLOWSCOPE_BUILD_GUI with Qt 6 Gui and Dear ImGui, the OpenGL backend and "
        "EGL: libegl-dev); flowscope-cli render makes the same animations where it has them");
#endif
}

} // namespace

void bindRender(pb::module_& m) {
    m.attr("HAVE_RENDER") = bool(FLOWSCOPE_HAVE_RENDER);
    m.def(
        "render", &render, pb::arg("scene"), pb::arg("path"), pb::kw_only(), pb::arg("view") = "particles",
        pb::arg("frames") = 120, pb::arg("fps") = 30.0, pb::arg("size") = std::pair<int, int>(1280, 720),
        pb::arg("dt_per_frame") = pb::none(), pb::arg("hud") = false, pb::arg("caption") = pb::none(),
        pb::arg("particles") = true, pb::arg("progress") = pb::none(),
        R"(render(scene, path, *, view="particles", frames=120, fps=30, size=(1280, 720), dt_per_frame=None, hud=False, caption=None, particles=True, progress=None)

Draws an animation of one of the scene's views, as ``flowscope-cli render SCENE --out PATH`` does, with
the app's own pictures, headless (EGL surfaceless: Mesa's llvmpipe where there is no GPU). Frame k shows
simulation time t_k = k · dt_per_frame (default: the integrator step h = T / steps times output.every);
the particles advance by whole integrator steps to the step nearest t_k, the cone's moment trajectories
Σ(t), α(t) are read at t_k.

path          "anim.mp4" (H.264), "anim.gif", or "dir/" (numbered PNGs dir/frame_00000.png, ...); nothing
              is left under it when the call fails or is interrupted
view          "particles", "cone" or "disc" (the latter two: the Gaussian mode's covariance cone)
size          (width, height) of the whole frame in pixels, caption strip included
hud, caption  the heads-up display (particles view); a caption strip: "auto" or a text ({t}: the time)
particles     cone and disc views: run the particles for their covariance dot
progress      None: a tqdm bar once the call has run 2 s; False: nothing; a callable taking the fraction
              done; True or "auto": a tqdm bar from the start (docs/python.md)

RuntimeError where this module was built without the renderer (flowscope.HAVE_RENDER is False) or where
no EGL device is found. The GIL is released while it draws; Ctrl+C stops it between frames.)");
}

} // namespace flowscope::py
