// flowscope-cli render --view training: an animation of a generative flow being trained, drawn without a
// display and encoded by engine/media's FrameSink (MP4, GIF or numbered PNGs).
//
// Composition only. The picture is the app's own "Flows" view (ui/TrainingView, QPainter only), made as a
// widget that is never shown, on a QApplication of Qt's "offscreen" platform: no OpenGL is involved. The
// trainers are the app's (flows::FlowTrainer with the options of `flowscope-cli train`), stepped here on the
// calling thread by the runner's own step (stepTrainer: held-out metrics every 200 iterations, as in the
// app), and each frame's snapshot carries pictures made by the runner's own TrainingPictureMaker.
//
// Time is the iteration index, never the wall clock: frame k shows the model(s) after k * K iterations (K =
// --iters-per-frame; frame 0 is the initial model), so the same command gives the same frames bit for bit.
// --side-by-side trains with and without the RWPO layer on the same data stream, as the app does.
#include "Commands.h"

#if FLOWSCOPE_HAVE_RENDER

#include "RenderCommon.h"
#include "engine/flows/Trainer.h"
#include "engine/media/FrameSink.h"
#include "engine/runner/TrainerSteps.h"
#include "engine/runner/TrainingRunner.h"
#include "ui/TrainingView.h"

#include <QPainter>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <unistd.h>

namespace flowscope::cli {

namespace {

struct Options {
    flows::TrainerConfig config;
    bool sideBySide = false;
    long itersPerFrame = 10;
    int pictureSamples = TrainingOptions().samples;
    long frames = 120;
    double fps = 30.0;
    int width = 1280, height = 720;
    std::string out;
    std::optional<std::string> caption; // "auto" or a text ({iteration} is replaced by the frame's iteration)
    std::string dataName;               // the dataset's name, or the --data file's name
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
    if (!p.unknown().empty()) throw UsageError("unknown option " + p.unknown());
    if (!p.positional.empty())
        throw UsageError(
            "the training view takes no SCENE.json (it trains on --dataset NAME or --data FILE), "
            "got '" +
            p.positional[0] + "'");
    if (o.out.empty()) throw UsageError("--out anim.mp4|anim.gif|frames/ is required");
    if (o.sideBySide && !o.config.flow.rwpo)
        throw UsageError("--side-by-side trains with and without the RWPO layer: leave out --no-rwpo");
    if (!frames.empty()) o.frames = parseLong(frames, "--frames", 1, 1000000);
    o.itersPerFrame = parseLong(perFrame, "--iters-per-frame", 1, 1000000);
    if (!fps.empty()) {
        o.fps = parsePositive(fps, "--fps");
        if (o.fps > 240) throw UsageError("--fps: expected at most 240, got '" + fps + "'");
    }
    if (!pictureSamples.empty())
        o.pictureSamples = int(parseLong(pictureSamples, "--picture-samples", 2, 100000));
    parseSize(size, o.width, o.height);
    if (!caption.empty()) o.caption = caption;
    if (o.dataName.empty()) o.dataName = o.config.dataset;
    // As `train` decays the learning rate over its --iters, this decays it over the whole animation.
    o.config.adam.decaySteps = std::max(1L, (o.frames - 1) * o.itersPerFrame);
    // As the app's Training panel: held-out metrics on 1000 points (O(n²) per layer with the RWPO layer).
    o.config.evalSamples = 1000;
    return o;
}

// One trainer of the animation and its data points (the same in every picture).
struct Slot {
    std::unique_ptr<flows::FlowTrainer> trainer;
    Mat data;
    std::size_t eventsShown = 0;
};

// "λ = 0.0123, β = 1.04, loss = 2.31" of a trainer (λ and β only with the RWPO layer).
std::string parameters(const flows::FlowTrainer& t) {
    std::string text;
    if (t.config().flow.rwpo)
        text = "\u03bb = " + number(t.model().params().lambda()) +
               ", \u03b2 = " + number(t.model().params().beta()) + ", ";
    return text +
           "loss = " + (t.history().empty() ? std::string("\u2013") : number(t.history().back().terms.loss));
}

// The strip above the view: --caption's text, or (auto) the data and the model(s) on the left, the
// iteration, λ, β and the loss on the right.
class TrainingCaption {
  public:
    TrainingCaption(std::string spec, std::string dataName)
        : spec_(std::move(spec)), data_(std::move(dataName)) {}
    int height() const { return captionStripHeight(font_); }
    void paint(QPainter& p, const QRectF& strip, const std::vector<Slot>& runs) const {
        const long iteration = runs.front().trainer->iteration();
        QString left, right;
        if (spec_ == "auto") {
            std::string l = data_ + "  \u00b7  ", r = "iteration " + std::to_string(iteration);
            if (runs.size() == 2) {
                l += "with and without RWPO";
                for (const Slot& s : runs)
                    r += std::string("    ") + (s.trainer->config().flow.rwpo ? "RWPO: " : "OT-Flow: ") +
                         parameters(*s.trainer);
            } else {
                l += runs.front().trainer->config().flow.rwpo ? "with RWPO" : "without RWPO (OT-Flow)";
                r += "    " + parameters(*runs.front().trainer);
            }
            left = QString::fromStdString(l);
            right = QString::fromStdString(r);
        } else {
            left = QString::fromStdString(spec_);
            left.replace(QStringLiteral("{iteration}"), QString::number(iteration));
        }
        paintCaptionStrip(p, strip, left, right, font_, PlotStyle());
    }

  private:
    std::string spec_, data_;
    QFont font_ = captionFont();
};

// The snapshot the app's runner would publish for these trainers now (pictures made at their iteration).
std::shared_ptr<const TrainingSnapshot> snapshotOf(const std::vector<Slot>& runs,
                                                   const TrainingPictureMaker& pictures,
                                                   const TrainingOptions& options, bool playing,
                                                   double iterationsPerSecond) {
    auto s = std::make_shared<TrainingSnapshot>();
    s->generation = 1;
    s->playing = playing;
    s->sideBySide = runs.size() == 2;
    s->iterationsPerSecond = iterationsPerSecond;
    for (const Slot& slot : runs) {
        s->trainers.push_back(trainerState(*slot.trainer, options.maxEvents));
        s->trainers.back().picture = pictures.make(*slot.trainer, slot.data);
        if (s->error.empty() && slot.trainer->stopped() && !slot.trainer->events().empty())
            s->error = (s->sideBySide ? s->trainers.back().label + ": " : std::string()) +
                       slot.trainer->events().back().message;
    }
    return s;
}

int renderTraining(const Args& raw) {
    const Options o = parseOptions(raw);
    // The trainers first: a config the trainer refuses is an input error, found before any output.
    std::vector<Slot> runs;
    for (const flows::TrainerConfig& c : trainingConfigs(o.config, o.sideBySide)) {
        Slot slot;
        try {
            slot.trainer = std::make_unique<flows::FlowTrainer>(c);
        } catch (const std::invalid_argument& e) {
            throw UsageError(e.what());
        }
        runs.push_back(std::move(slot));
    }
    TrainingOptions options; // the app's: 1000 samples and data points, a 64² density grid
    options.samples = o.pictureSamples;
    const TrainingPictureMaker pictures(options, o.config.flow.d);
    for (Slot& slot : runs) slot.data = pictures.data(*slot.trainer);

    // The output: a path the sinks cannot take is an input error too. From here on Ctrl+C (or a failure)
    // leaves nothing under that name.
    VideoOptions video;
    video.width = o.width;
    video.height = o.height;
    video.fps = o.fps;
    std::unique_ptr<FrameSink> sink;
    try {
        sink = openFrameSink(o.out, video);
    } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--out: ") + e.what());
    }
    const CancelOnSignal cancelOnSignal;

    const auto app = makeOffscreenApplication();
    std::optional<TrainingCaption> caption;
    if (o.caption) caption.emplace(*o.caption, o.dataName);
    const int captionHeight = caption ? caption->height() : 0;
    const int viewHeight = o.height - captionHeight;
    if (viewHeight < 16)
        throw UsageError("--size: " + std::to_string(o.height) +
                         " pixels leave no room for the view under the caption");

    // The view, never shown: its own drawing code, at the frame's size.
    std::shared_ptr<const TrainingSnapshot> snapshot;
    TrainingView view;
    view.setPlotStyle(PlotStyle());
    view.resize(o.width, viewHeight);
    view.setSource([&snapshot] { return snapshot; });

    const long lastIteration = (o.frames - 1) * o.itersPerFrame;
    std::cerr << "render training on " << o.dataName << " ("
              << (o.sideBySide         ? "with and without RWPO"
                  : o.config.flow.rwpo ? "with RWPO"
                                       : "without RWPO")
              << "): " << o.frames << " frames of " << o.width << "x" << o.height << " at " << o.fps
              << " fps, " << o.itersPerFrame << " iterations per frame (iterations 0 to " << lastIteration
              << "), to " << o.out << "\n";

    const bool tty = ::isatty(2);
    const auto start = std::chrono::steady_clock::now();
    auto elapsed = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    QImage viewImage = newFrameImage(o.width, viewHeight);
    QImage frame = caption ? newFrameImage(o.width, o.height) : QImage();
    long lastReported = -1;

    for (long k = 0; k < o.frames; ++k) {
        if (k > 0)
            for (long i = 0; i < o.itersPerFrame; ++i)
                for (Slot& slot : runs) {
                    if (gCancel) throw Cancelled();
                    stepTrainer(*slot.trainer, options.evaluateEvery); // nothing once it has stopped
                    const auto& events = slot.trainer->events();
                    for (; slot.eventsShown < events.size(); ++slot.eventsShown)
                        std::cerr << (tty ? "\r" : "")
                                  << (o.sideBySide ? (slot.trainer->config().flow.rwpo ? "with RWPO, "
                                                                                       : "without RWPO, ")
                                                   : "")
                                  << "iter " << events[slot.eventsShown].iteration << ": "
                                  << events[slot.eventsShown].message << "\n";
                }
        if (gCancel) throw Cancelled();

        snapshot = snapshotOf(runs, pictures, options, k + 1 < o.frames, double(o.itersPerFrame) * o.fps);
        view.refresh();
        viewImage.fill(Qt::transparent);
        view.render(&viewImage);

        const QImage* out = &viewImage;
        if (caption) {
            QPainter p(&frame);
            caption->paint(p, QRectF(0, 0, o.width, captionHeight), runs);
            p.drawImage(0, captionHeight, viewImage);
            p.end();
            out = &frame;
        }
        const QImage rgba = out->convertToFormat(QImage::Format_RGBA8888);
        sink->addFrame(rgba.constBits(), int(rgba.bytesPerLine()));

        const long done = k + 1;
        if (tty) {
            std::cerr << "\rframe " << done << "/" << o.frames << ", " << std::fixed << std::setprecision(1)
                      << double(done) / std::max(elapsed(), 1e-9) << " frames/s" << std::defaultfloat
                      << std::flush;
        } else if (done * 10 / o.frames != lastReported) { // a line every tenth
            lastReported = done * 10 / o.frames;
            std::cerr << "frame " << done << "/" << o.frames << ", " << std::fixed << std::setprecision(1)
                      << double(done) / std::max(elapsed(), 1e-9) << " frames/s\n"
                      << std::defaultfloat;
        }
    }
    if (tty) std::cerr << "\n";
    sink->finish();
    const double seconds = elapsed();
    printWrote(o.out, o.frames, seconds);
    std::cerr << "; iteration " << runs.front().trainer->iteration();
    for (const Slot& slot : runs) {
        const flows::FlowTrainer& t = *slot.trainer;
        std::cerr << (o.sideBySide ? (t.config().flow.rwpo ? ", RWPO: " : ", OT-Flow: ") : ", ")
                  << parameters(t);
        if (t.stopped() && !t.events().empty())
            std::cerr << "; training stopped at iteration " << t.events().back().iteration << ": "
                      << t.events().back().message;
    }
    std::cerr << "\n";
    return 0;
}

} // namespace

int renderTrainingCommand(const Args& args) {
    return runCancellable(renderTraining, args);
}

} // namespace flowscope::cli

#else // a build without the GUI (Qt) or without EGL

namespace flowscope::cli {

int renderTrainingCommand(const Args&) {
    std::cerr
        << "flowscope-cli render: not available in this build (it draws the GUI's views: configure with "
           "-DFLOWSCOPE_BUILD_GUI=ON -DFLOWSCOPE_BUILD_GPU=ON, libegl-dev installed)\n";
    return 1;
}

} // namespace flowscope::cli

#endif
