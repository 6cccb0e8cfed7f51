// flowscope-cli render: an animation of one of a scene's views, drawn without a display and encoded by
// engine/media's FrameSink (MP4, GIF or numbered PNGs).
//
// Composition only. The pictures are the app's own (render/picture: ParticlePicture, ConePicture; the views
// wrap the same ones), with no widgets: a QGuiApplication on Qt's "offscreen" platform (no X, no Wayland)
// gives them fonts and QPainter, and a headless EGL context (engine/gpu/GlContext: surfaceless, Mesa's
// llvmpipe where there is no GPU) gives the shared renderers (render/) a framebuffer. Each frame is composed
// as the app composes it: what the view paints under its OpenGL part, the OpenGL part (drawn into a
// transparent framebuffer and laid over it), what the view paints on top, then the Dear ImGui heads-up
// display (--hud) and a caption strip
// (--caption) above the view. The frames are composed by render/animation/AnimationExporter, the composer of
// the GUI's File ▸ Export ▸ Animation too; this file is the options, the EGL context and the loop.
//
// Time is the frame index, never the wall clock: frame k shows simulation time t_k = k * dt. The particle
// simulation advances by whole steps of the scene's integrator to the step nearest t_k (the cone and disc
// views run it too, for the particles' covariance dot the app draws there; --no-particles leaves it out);
// the cone's moment trajectories are read at t_k.
#include "Commands.h"

#if FLOWSCOPE_HAVE_RENDER

#include "RenderCommon.h"
#include "engine/core/Text.h"
#include "engine/dynamics/Observables.h"
#include "engine/dynamics/Simulation.h"
#include "engine/gpu/gl/GlContext.h"
#include "engine/media/FrameSink.h"
#include "engine/scene/SceneShareString.h"
#include "render/ConeData.h"
#include "render/GlApi.h"
#include "render/animation/AnimationExporter.h"

#include <QGuiApplication>
#include <QImage>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>

namespace flowscope::cli {

namespace {

struct Options {
    std::string scenePath;
    std::vector<std::string> settings; // --set POINTER=VALUE
    AnimationOptions animation;        // view: particles, cone or disc
    std::string out;
    double maxTime = 0; // --max-time (0: off)
};

AnimationView parseView(const std::string& text) {
    if (text == "particles") return AnimationView::Particles;
    if (text == "cone") return AnimationView::Cone;
    if (text == "disc") return AnimationView::Disc;
    throw UsageError("--view: expected particles, cone, disc or training, got " + quoteForMessage(text));
}

Options parseOptions(const Args& raw) {
    ArgParser p(raw);
    Options o;
    AnimationOptions& a = o.animation;
    const std::string view = p.option("--view", "particles");
    const std::string frames = p.option("--frames");
    const std::string fps = p.option("--fps");
    const std::string size = p.option("--size", "1280x720");
    o.out = p.option("--out");
    const bool hud = p.flag("--hud");
    const bool noHud = p.flag("--no-hud");
    const std::string caption = p.option("--caption");
    const std::string dt = p.option("--dt-per-frame");
    a.particles = !p.flag("--no-particles");
    o.settings = p.options("--set");
    o.maxTime = maxTimeOption(p);
    p.rejectUnknown();
    if (p.positional.size() != 1)
        throw UsageError("expected one SCENE.json (usage: render SCENE.json --view particles|cone|disc --out "
                         "anim.mp4|anim.gif|frames/)");
    o.scenePath = p.positional[0];
    if (o.out.empty()) throw UsageError("--out anim.mp4|anim.gif|frames/ is required");
    a.view = parseView(view);
    if (!frames.empty()) a.frames = parseLong(frames, "--frames", 1, 1000000);
    if (!fps.empty()) {
        a.fps = parsePositive(fps, "--fps");
        if (a.fps > 240) throw UsageError("--fps: expected at most 240, got " + quoteForMessage(fps));
    }
    parseSize(size, a.width, a.height);
    if (hud && noHud) throw UsageError("--hud and --no-hud: give one of them");
    a.hud = hud;
    if (a.hud && a.view != AnimationView::Particles)
        throw UsageError(
            "--hud: only the particles view has a heads-up display (the cone and disc views show "
            "the time in their legend; --caption auto adds it to any view)");
    if (p.flag("--caption")) throw UsageError("--caption needs a value: auto or a text");
    if (!caption.empty()) a.caption = caption;
    if (!dt.empty()) a.dtPerFrame = parsePositive(dt, "--dt-per-frame");
    if (a.view == AnimationView::Particles && !a.particles)
        throw UsageError(
            "--no-particles: only for the cone and disc views (the particles view shows the particles)");
    return o;
}

} // namespace

int renderScene(const Args& raw) {
    const Options o = parseOptions(raw);
    const AnimationOptions& a = o.animation;
    const Scene scene = withSetOptions(loadSceneOrShareString(o.scenePath), o.settings); // validates first
    if (a.view != AnimationView::Particles)
        if (const auto why = coneUnsupported(scene))
            throw UsageError(std::string("--view ") + toString(a.view) + ": " + *why);
    const double h = scene.integrator.T / scene.integrator.steps;
    const double dt = a.dtPerFrame.value_or(h * std::max(scene.output.every, 1));
    // Whole integrator steps per frame (the nearest), for the HUD's rate: steps per second of video.
    const double stepsPerFrame = dt / h;
    if (a.view == AnimationView::Particles || a.particles) { // the particle run up to the last frame's time
        Scene run = scene;
        run.integrator.steps =
            int(std::clamp(std::round(stepsPerFrame * double(a.frames - 1)), 1.0, 2147483647.0));
        run.output.every = int(std::clamp(std::round(stepsPerFrame), 1.0, 2147483647.0));
        announceRunCost(particleRunCost(run, false), o.maxTime, "render");
    }

    // The output first: a path the sinks cannot take is an input error, found before any work. From here on
    // Ctrl+C (or a failure) leaves nothing under that name.
    const std::unique_ptr<FrameSink> sink = openOutput(o.out, a.width, a.height, a.fps);
    const CancelOnSignal cancelOnSignal;

    GlApi gl;
    const auto context = openDrawingContext("render", gl);
    if (!context) return 1;

    const auto app = makeOffscreenApplication();
    // The frames are composed by the GUI's exporter (render/animation/AnimationExporter); declared after the
    // EGL context and the application, it releases its GL objects and widgets while both still exist.
    AnimationExporter exporter(scene, a);
    if (!exporter.initialize(gl)) {
        if (exporter.failure() == AnimationExporter::Failure::Size)
            throw UsageError("--size: " + exporter.error());
        std::cerr << "flowscope-cli render: "
                  << (exporter.failure() == AnimationExporter::Failure::Hud ? "--hud: " : "")
                  << exporter.error() << "\n";
        return 1;
    }
    if (a.view != AnimationView::Particles) {
        std::cerr << "solving the moment equations of " << scene.name << "...\n";
        if (!exporter.solve([] { return gCancel != 0; })) {
            if (exporter.failure() == AnimationExporter::Failure::Cancelled) throw Cancelled();
            std::cerr << "flowscope-cli render: --view " << toString(a.view) << ": " << exporter.error()
                      << "\n";
            return 1;
        }
    }

    std::cerr << "render " << scene.name << " (" << toString(a.view) << "): " << a.frames << " frames of "
              << a.width << "x" << a.height << " at " << a.fps << " fps, dt = " << number(dt)
              << " per frame (t from 0 to " << number(dt * double(a.frames - 1)) << "), to " << o.out << "\n";
    if (o.out.size() > 4 && o.out.compare(o.out.size() - 4, 4, ".mp4") == 0 && (a.width % 2 || a.height % 2))
        std::cerr << "note: an MP4 needs even sizes: " << a.width << "x" << a.height << " is encoded as "
                  << a.width + a.width % 2 << "x" << a.height + a.height % 2 << ", its last "
                  << (a.width % 2 && a.height % 2 ? "column and row"
                      : a.width % 2               ? "column"
                                                  : "row")
                  << " repeated\n";
    if (a.dtPerFrame && std::abs(stepsPerFrame - std::round(stepsPerFrame)) > 1e-6 && exporter.simulation())
        std::cerr << "note: dt is not a multiple of the scene's step h = " << number(h)
                  << "; the particles show the step nearest each frame's time\n";

    FrameProgress progress(a.frames);
    QImage frame;
    for (long k = 0; k < a.frames; ++k) {
        if (!exporter.renderFrame(k, frame, [] { return gCancel != 0; })) throw Cancelled();
        sink->addFrame(frame.constBits(), int(frame.bytesPerLine()));
        progress.report(k + 1);
    }
    progress.finish(*sink, o.out);
    if (const Simulation* sim = exporter.simulation(); sim && sim->event())
        std::cerr << "; the particles stopped at t = " << number(sim->event()->t) << ": "
                  << sim->event()->message;
    std::cerr << "\n";
    return 0;
}

} // namespace flowscope::cli

#endif
