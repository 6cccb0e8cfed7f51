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

enum class View { Particles, Cone, Disc };

struct Options {
    std::string scenePath;
    std::vector<std::string> settings; // --set POINTER=VALUE
    View view = View::Particles;
    long frames = 120;
    double fps = 30.0;
    int width = 1280, height = 720;
    std::string out;
    bool hud = false;
    std::optional<std::string> caption; // "auto" or a text ({t} is replaced by the frame's time)
    std::optional<double> dtPerFrame;
    bool particles = true; // run the particle simulation (cone and disc views: its covariance dot)
    double maxTime = 0;    // --max-time (0: off)
};

View parseView(const std::string& text) {
    if (text == "particles") return View::Particles;
    if (text == "cone") return View::Cone;
    if (text == "disc") return View::Disc;
    throw UsageError("--view: expected particles, cone, disc or training, got " + quoteForMessage(text));
}

Options parseOptions(const Args& raw) {
    ArgParser p(raw);
    Options o;
    const std::string view = p.option("--view", "particles");
    const std::string frames = p.option("--frames");
    const std::string fps = p.option("--fps");
    const std::string size = p.option("--size", "1280x720");
    o.out = p.option("--out");
    const bool hud = p.flag("--hud");
    const bool noHud = p.flag("--no-hud");
    const std::string caption = p.option("--caption");
    const std::string dt = p.option("--dt-per-frame");
    o.particles = !p.flag("--no-particles");
    o.settings = p.options("--set");
    o.maxTime = maxTimeOption(p);
    p.rejectUnknown();
    if (p.positional.size() != 1)
        throw UsageError("expected one SCENE.json (usage: render SCENE.json --view particles|cone|disc --out "
                         "anim.mp4|anim.gif|frames/)");
    o.scenePath = p.positional[0];
    if (o.out.empty()) throw UsageError("--out anim.mp4|anim.gif|frames/ is required");
    o.view = parseView(view);
    if (!frames.empty()) o.frames = parseLong(frames, "--frames", 1, 1000000);
    if (!fps.empty()) {
        o.fps = parsePositive(fps, "--fps");
        if (o.fps > 240) throw UsageError("--fps: expected at most 240, got " + quoteForMessage(fps));
    }
    parseSize(size, o.width, o.height);
    if (hud && noHud) throw UsageError("--hud and --no-hud: give one of them");
    o.hud = hud;
    if (o.hud && o.view != View::Particles)
        throw UsageError(
            "--hud: only the particles view has a heads-up display (the cone and disc views show "
            "the time in their legend; --caption auto adds it to any view)");
    if (p.flag("--caption")) throw UsageError("--caption needs a value: auto or a text");
    if (!caption.empty()) o.caption = caption;
    if (!dt.empty()) o.dtPerFrame = parsePositive(dt, "--dt-per-frame");
    if (o.view == View::Particles && !o.particles)
        throw UsageError(
            "--no-particles: only for the cone and disc views (the particles view shows the particles)");
    return o;
}

const char* viewName(View v) {
    return v == View::Particles ? "particles" : v == View::Cone ? "cone" : "disc";
}

} // namespace

int renderScene(const Args& raw) {
    const Options o = parseOptions(raw);
    const Scene scene = withSetOptions(loadSceneOrShareString(o.scenePath), o.settings); // validates first
    if (o.view != View::Particles)
        if (const auto why = coneUnsupported(scene))
            throw UsageError(std::string("--view ") + viewName(o.view) + ": " + *why);
    const double h = scene.integrator.T / scene.integrator.steps;
    const double dt = o.dtPerFrame.value_or(h * std::max(scene.output.every, 1));
    // Whole integrator steps per frame (the nearest), for the HUD's rate: steps per second of video.
    const double stepsPerFrame = dt / h;
    if (o.view == View::Particles || o.particles) { // the particle run up to the last frame's time
        Scene run = scene;
        run.integrator.steps =
            int(std::clamp(std::round(stepsPerFrame * double(o.frames - 1)), 1.0, 2147483647.0));
        run.output.every = int(std::clamp(std::round(stepsPerFrame), 1.0, 2147483647.0));
        announceRunCost(particleRunCost(run, false), o.maxTime, "render");
    }

    // The output first: a path the sinks cannot take is an input error, found before any work. From here on
    // Ctrl+C (or a failure) leaves nothing under that name.
    const std::unique_ptr<FrameSink> sink = openOutput(o.out, o.width, o.height, o.fps);
    const CancelOnSignal cancelOnSignal;

    GlApi gl;
    const auto context = openDrawingContext("render", gl);
    if (!context) return 1;

    const auto app = makeOffscreenApplication();
    // The frames are composed by the GUI's exporter (render/animation/AnimationExporter); declared after the
    // EGL context and the application, it releases its GL objects and widgets while both still exist.
    AnimationOptions options;
    options.view = o.view == View::Particles ? AnimationView::Particles
                   : o.view == View::Cone    ? AnimationView::Cone
                                             : AnimationView::Disc;
    options.frames = o.frames;
    options.fps = o.fps;
    options.width = o.width;
    options.height = o.height;
    options.dtPerFrame = o.dtPerFrame;
    options.hud = o.hud;
    options.caption = o.caption;
    options.particles = o.particles;
    AnimationExporter exporter(scene, options);
    if (!exporter.initialize(gl)) {
        if (exporter.failure() == AnimationExporter::Failure::Size)
            throw UsageError("--size: " + exporter.error());
        std::cerr << "flowscope-cli render: "
                  << (exporter.failure() == AnimationExporter::Failure::Hud ? "--hud: " : "")
                  << exporter.error() << "\n";
        return 1;
    }
    if (o.view != View::Particles) {
        std::cerr << "solving the moment equations of " << scene.name << "...\n";
        if (!exporter.solve([] { return gCancel != 0; })) {
            if (exporter.failure() == AnimationExporter::Failure::Cancelled) throw Cancelled();
            std::cerr << "flowscope-cli render: --view " << viewName(o.view) << ": " << exporter.error()
                      << "\n";
            return 1;
        }
    }

    std::cerr << "render " << scene.name << " (" << viewName(o.view) << "): " << o.frames << " frames of "
              << o.width << "x" << o.height << " at " << o.fps << " fps, dt = " << number(dt)
              << " per frame (t from 0 to " << number(dt * double(o.frames - 1)) << "), to " << o.out << "\n";
    if (o.out.size() > 4 && o.out.compare(o.out.size() - 4, 4, ".mp4") == 0 && (o.width % 2 || o.height % 2))
        std::cerr << "note: an MP4 needs even sizes: " << o.width << "x" << o.height << " is encoded as "
                  << o.width + o.width % 2 << "x" << o.height + o.height % 2 << ", its last "
                  << (o.width % 2 && o.height % 2 ? "column and row"
                      : o.width % 2               ? "column"
                                                  : "row")
                  << " repeated\n";
    if (o.dtPerFrame && std::abs(stepsPerFrame - std::round(stepsPerFrame)) > 1e-6 && exporter.simulation())
        std::cerr << "note: dt is not a multiple of the scene's step h = " << number(h)
                  << "; the particles show the step nearest each frame's time\n";

    FrameProgress progress(o.frames);
    QImage frame;
    for (long k = 0; k < o.frames; ++k) {
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
