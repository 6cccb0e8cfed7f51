// flowscope-cli render --view training: an animation of a generative flow being trained, drawn without a
// display and encoded by engine/media's FrameSink (MP4, GIF or numbered PNGs).
//
// Option parsing and the loop only. The frames are render/animation/FlowAnimator's, the composer of the
// GUI's export too: the Flows tab's own picture (QPainter only, no OpenGL) on a QGuiApplication of Qt's
// "offscreen" platform,
// the trainers (flows::FlowTrainer with the options of `flowscope-cli train`) stepped on this thread.
//
// Time is the iteration index, never the wall clock: frame k shows the model(s) after k * K iterations (K =
// --iters-per-frame; frame 0 is the initial model), so the same command gives the same frames bit for bit.
// --side-by-side trains with and without the RWPO layer on the same data stream, as the app does.
#include "Commands.h"

#if FLOWSCOPE_HAVE_RENDER

#include "RenderCommon.h"
#include "engine/core/Text.h"
#include "engine/media/FrameSink.h"
#include "engine/runner/FlowRunner.h"
#include "render/animation/FlowAnimator.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <unistd.h>

namespace flowscope::cli {

namespace {

struct Options {
    flows::TrainerConfig config;
    bool sideBySide = false;
    AnimationOptions animation; // view = Training
    std::string out;
    std::string dataName; // the dataset's name, or the --data file's name
};

bool has(const Args& raw, const std::string& word) {
    return std::find(raw.begin(), raw.end(), word) != raw.end();
}

Options parseOptions(const Args& raw) {
    // Options of the scene views, and of train, that mean nothing here: said so rather than "unknown".
    for (const char* sceneOnly : {"--dt-per-frame", "--no-particles"})
        if (has(raw, sceneOnly))
            throw UsageError(
                std::string(sceneOnly) +
                ": only for the particles, cone and disc views (the training view's frames step by "
                "--iters-per-frame iterations)");
    for (const char* trainOnly : {"--iters", "--eval-every", "--quiet"})
        if (has(raw, trainOnly))
            throw UsageError(
                std::string(trainOnly) +
                ": not for the training view, which runs --frames x --iters-per-frame iterations "
                "(held-out metrics every 200, as in the app)");
    if (has(raw, "--hud"))
        throw UsageError("--hud: the training view has no heads-up display (its plots show the curves; "
                         "--caption auto adds the iteration, lambda, beta and the loss)");

    ArgParser p(raw);
    Options o;
    AnimationOptions& a = o.animation;
    a.view = AnimationView::Training;
    p.option("--view"); // "training": how the command came here
    const std::string frames = p.option("--frames");
    const std::string fps = p.option("--fps");
    const std::string size = p.option("--size", "1280x720");
    const std::string perFrame = p.option("--iters-per-frame", "10");
    const std::string pictureSamples = p.option("--picture-samples");
    o.out = p.option("--out");
    const std::string caption = p.option("--caption");
    if (p.flag("--caption")) throw UsageError("--caption needs a value: auto or a text");
    p.flag("--no-hud");
    o.sideBySide = p.flag("--side-by-side");
    const auto data = std::find(raw.begin(), raw.end(), "--data");
    if (data != raw.end() && data + 1 != raw.end())
        o.dataName = std::filesystem::path(*(data + 1)).filename().string();
    o.config = parseTrainerConfig(p); // what `train` takes, with its defaults
    p.rejectUnknown();
    if (!p.positional.empty())
        throw UsageError(
            "the training view takes no SCENE.json (it trains on --dataset NAME or --data FILE), "
            "got " +
            quoteForMessage(p.positional[0]));
    if (o.out.empty()) throw UsageError("--out anim.mp4|anim.gif|frames/ is required");
    if (o.sideBySide && !o.config.flow.rwpo)
        throw UsageError("--side-by-side trains with and without the RWPO layer: leave out --no-rwpo");
    if (!frames.empty()) a.frames = parseLong(frames, "--frames", 1, kAnimationMaxFrames);
    a.itersPerFrame = parseLong(perFrame, "--iters-per-frame", 1, kAnimationMaxItersPerFrame);
    if (!fps.empty()) {
        a.fps = parsePositive(fps, "--fps");
        if (a.fps > kAnimationMaxFps)
            throw UsageError("--fps: expected at most 240, got " + quoteForMessage(fps));
    }
    if (!pictureSamples.empty())
        a.pictureSamples = int(parseLong(pictureSamples, "--picture-samples", kAnimationMinPictureSamples,
                                         kAnimationMaxPictureSamples));
    parseSize(size, a.width, a.height);
    if (!caption.empty()) a.caption = caption;
    if (o.dataName.empty()) o.dataName = o.config.dataset;
    return o;
}

} // namespace

int renderFlow(const Args& raw) {
    const Options o = parseOptions(raw);
    const AnimationOptions& a = o.animation;
    const auto app = makeOffscreenApplication();
    // The trainers first: a config the trainer refuses is an input error, found before any output.
    std::unique_ptr<FlowAnimator> animator;
    try {
        animator = std::make_unique<FlowAnimator>(trainingConfigs(o.config, o.sideBySide), a, o.dataName);
    } catch (const std::invalid_argument& e) {
        const std::string what = e.what();
        throw UsageError(what.rfind("size: ", 0) == 0 ? "--size: " + what.substr(6) : what);
    }
    const bool tty = ::isatty(2);
    animator->setEventHandler([&](const flows::FlowTrainer& t, const flows::TrainEvent& e) {
        std::cerr << (tty ? "\r" : "")
                  << (o.sideBySide ? (t.config().flow.rwpo ? "with RWPO, " : "without RWPO, ") : "")
                  << "iter " << e.iteration << ": " << e.message << "\n";
    });

    // The output: a path the sinks cannot take is an input error too. From here on Ctrl+C (or a failure)
    // leaves nothing under that name.
    const std::unique_ptr<FrameSink> sink = openOutput(o.out, a.width, a.height, a.fps);
    const CancelOnSignal cancelOnSignal;

    std::cerr << "render training on " << o.dataName << " ("
              << (o.sideBySide         ? "with and without RWPO"
                  : o.config.flow.rwpo ? "with RWPO"
                                       : "without RWPO")
              << "): " << a.frames << " frames of " << a.width << "x" << a.height << " at " << a.fps
              << " fps, " << a.itersPerFrame << " iterations per frame (iterations 0 to "
              << animator->lastIteration() << "), to " << o.out << "\n";

    FrameProgress progress(a.frames);
    long shown = 0;
    // Called between iterations too (to poll for Ctrl+C): a report only when a frame is new.
    const bool done = animator->run(*sink, [&](long done) {
        if (gCancel) return false;
        if (done == shown) return true;
        shown = done;
        progress.report(done);
        return true;
    });
    if (!done) throw Cancelled();
    progress.finish(*sink, o.out);
    const auto trainers = animator->trainers();
    std::cerr << "; iteration " << trainers.front()->iteration();
    for (const flows::FlowTrainer* t : trainers) {
        std::cerr << (o.sideBySide ? (t->config().flow.rwpo ? ", RWPO: " : ", OT-Flow: ") : ", ")
                  << trainerParameters(*t);
        if (t->stopped() && !t->events().empty())
            std::cerr << "; training stopped at iteration " << t->events().back().iteration << ": "
                      << t->events().back().message;
    }
    std::cerr << "\n";
    return 0;
}

} // namespace flowscope::cli

#endif
