// flowscope-cli bench view: the particle view drawn while a run steps, as the app's Particles tab does it,
// but headless (EGL, no Qt, no display), so that it measures on a GPU machine without a desktop.
//
// The run is the app's own: a SimulationRunner (the worker thread, its record gate and its snapshots) on the
// chosen backend. With gl it computes in an OpenGL context of the drawing context's share group, so its
// stepper publishes a device copy of the tokens that the drawing thread draws without a download (the app's
// path); with vulkan or cpu the snapshot's tokens are uploaded as vertices whenever they change. The drawing
// thread (this one) takes the latest snapshot at each frame, draws the points with the app's PointRenderer
// into an offscreen framebuffer of --size and waits for the GPU to finish (glFinish: the frame is done, as a
// swap would need). What the view adds on top (the grid, text, the heads-up display, plots) is Qt painting on
// the CPU and not part of this measure; the plots' data, the records, are computed by the run as in the app.
//
// The baseline is the same run in the same process without drawing: the ratio says what drawing costs the
// run.
#include "Commands.h"

#include "engine/core/Text.h"
#include "engine/runner/SimulationRunner.h"

#if FLOWSCOPE_HAVE_HEADLESS_DRAWING
#include "engine/backend/Registry.h"
#include "engine/gpu/gl/GlContext.h"
#include "render/OffscreenTarget.h"
#include "render/PointRenderer.h"
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <thread>

namespace flowscope::cli {

#if FLOWSCOPE_HAVE_HEADLESS_DRAWING

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

// The mean and the 99th percentile of `v` (milliseconds); zeros when empty.
std::pair<double, double> meanAndP99(std::vector<double> v) {
    if (v.empty()) return {0.0, 0.0};
    double sum = 0.0;
    for (double x : v) sum += x;
    std::sort(v.begin(), v.end());
    const std::size_t k = std::min(v.size() - 1, std::size_t(0.99 * double(v.size())));
    return {sum / double(v.size()), v[k]};
}

// Waits until the run has taken `steps` steps (the backend is open and its kernels are built); false after
// 60 s or when the run stopped.
bool waitForSteps(const SimulationRunner& runner, long steps) {
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (Clock::now() < deadline) {
        const auto s = runner.snapshot();
        if (s && s->step >= steps) return true;
        if (s && (s->finished || !s->error.empty() || s->event)) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
}

struct Span {
    long step = 0;
    std::size_t records = 0;
    Clock::time_point at;
};

Span now(const SimulationRunner& runner) {
    const auto s = runner.snapshot();
    return {s->step, s->history ? s->history->size() : 0, Clock::now()};
}

// One vertex per token at its first three coordinates, in the view's one colour.
std::vector<PointVertex> vertices(const Tokens& X) {
    std::vector<PointVertex> v(std::size_t(X.rows()));
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
        PointVertex& p = v[std::size_t(i)];
        p = {0.0f, 0.0f, 0.0f, 0.35f, 0.62f, 0.95f, 1.0f};
        if (X.cols() > 0) p.x = float(X(i, 0));
        if (X.cols() > 1) p.y = float(X(i, 1));
        if (X.cols() > 2) p.z = float(X(i, 2));
    }
    return v;
}

struct ViewOptions {
    std::string backend;
    int d = 3;
    int every = 4; // records every K steps (device runs: at most ~15 a second, as in the app)
    Method method = Method::Euler;
    double seconds = 3.0;
    int width = 1280, height = 800;
    double fps = 60.0; // 0: as fast as the frames go
    bool json = false;
};

// What one N measured.
struct ViewRow {
    std::string backendRun; // the snapshot's name of what runs
    double aloneStepsPerSecond = 0.0, stepsPerSecond = 0.0, recordsPerSecond = 0.0;
    double framesPerSecond = 0.0, frameMs = 0.0, frameMsP99 = 0.0, lateMs = 0.0, lateMsP99 = 0.0;
    long frames = 0, framesFromDevice = 0, uploads = 0;
    double litFraction = 0.0; // of the last frame's pixels, not the background: the points were drawn
};

ViewRow measure(const ViewOptions& o, int n, GlContext& drawContext, const GlApi& gl) {
    Scene scene = benchScene(o.d, n, o.method, 1 << 20); // a run that outlasts the measure
    scene.output.every = o.every;
    ViewRow row;
    SimulationRunner runner;
    runner.setMaxStepsPerSecond(0.0); // the app's "max speed": steps as fast as they go
    if (o.backend == "gl") {
        // The app's path: the run computes in a context of the drawing context's share group, so that its
        // device copies of the tokens are drawable here. The context lives with the backend and goes on the
        // worker thread.
        runner.setBackend([&drawContext]() -> ComputeBackend {
            std::string why;
            std::shared_ptr<GlContext> context = GlContext::createHeadless(&why, &drawContext);
            if (!context) throw BackendError("backend gl is unavailable: " + why);
            BackendHost host;
            host.getProcAddress = GlContext::procLoader();
            host.shareGroup = &drawContext;
            host.keepAlive = context;
            return openBackend("gl", &host);
        });
    } else if (o.backend != "cpu") {
        runner.setBackend([id = o.backend] { return openBackend(id); });
    }

    // The baseline: the run alone, nothing drawn.
    runner.start(scene);
    runner.play();
    if (!waitForSteps(runner, 3))
        throw std::runtime_error("the run did not start: " + runner.snapshot()->error);
    const Span a0 = now(runner);
    std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
    // At least one step in the span, however busy the machine (a rate of 0 would be no measure).
    if (!waitForSteps(runner, a0.step + 1))
        throw std::runtime_error("the run stopped stepping: " + runner.snapshot()->error);
    const Span a1 = now(runner);
    row.aloneStepsPerSecond = double(a1.step - a0.step) / seconds(a1.at - a0.at);
    row.backendRun = runner.snapshot()->backend;
    if (!runner.snapshot()->backendNote.empty())
        row.backendRun += " (" + runner.snapshot()->backendNote + ")";

    // The same run, drawn. Back to the initial tokens, so that both measures step the same cloud.
    PointRenderer renderer;
    OffscreenTarget target;
    std::string why;
    if (!renderer.initialize(gl)) throw std::runtime_error("the point renderer failed: " + renderer.log());
    if (!target.create(gl, o.width, o.height, &why)) throw UsageError("--size: " + why);
    runner.start(scene);
    if (!waitForSteps(runner, 3))
        throw std::runtime_error("the run did not restart: " + runner.snapshot()->error);

    // The cloud is N(0, I) contracting: [-4, 4] in x, the same scale in y, z squashed into the clip range.
    const float aspect = float(o.width) / float(o.height);
    Eigen::Matrix4f viewProjection = Eigen::Matrix4f::Identity();
    viewProjection(0, 0) = 0.25f / aspect;
    viewProjection(1, 1) = 0.25f;
    viewProjection(2, 2) = 0.125f;
    Eigen::Matrix4f project = Eigen::Matrix4f::Zero(); // the device copy's first three coordinates
    for (int k = 0; k < std::min(o.d, 3); ++k) project(k, k) = 1.0f;
    const float pointPixels = float(pointDiameter(n));

    std::shared_ptr<const Snapshot> shown;
    Tokens uploaded;
    std::vector<double> frameMs, lateMs;
    const auto period = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(o.fps > 0.0 ? 1.0 / o.fps : 0.0));
    const Span b0 = now(runner);
    const auto end =
        b0.at + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
    auto due = b0.at;
    // The span lasts `seconds`, and on a busy machine until it holds a frame and a step as well; a run that
    // takes no step within a minute more has stalled.
    const auto measured = [&] {
        const auto s = runner.snapshot();
        return row.frames > 0 && (s->step > b0.step || s->finished || !s->error.empty() || s->event);
    };
    const auto stalled = end + std::chrono::seconds(60);
    while (Clock::now() < end || !measured()) {
        if (Clock::now() > stalled) throw std::runtime_error("the run stopped stepping while drawn");
        if (o.fps > 0.0) {
            std::this_thread::sleep_until(due);
            lateMs.push_back(1e3 * seconds(Clock::now() - due));
            due += period;
            if (Clock::now() > due) due = Clock::now(); // a missed frame is dropped, not caught up
        }
        const auto start = Clock::now();
        const auto s = runner.snapshot();
        if (s != shown) {
            // The app keeps its vertices while a device run republishes the same downloaded tokens.
            const bool same = uploaded.rows() == s->tokens.rows() && uploaded.cols() == s->tokens.cols() &&
                              uploaded == s->tokens;
            if (!same) {
                renderer.upload(PointRenderer::Points, vertices(s->tokens));
                uploaded = s->tokens;
                ++row.uploads;
            }
            shown = s;
        }
        target.begin(0.07f, 0.08f, 0.10f, 1.0f);
        bool fromDevice = false;
        if (s->device && s->device->shareGroup == &drawContext)
            fromDevice = renderer.drawDevicePoints(*s->device, project, Eigen::Vector3f::Zero(),
                                                   viewProjection, pointPixels);
        if (!fromDevice) renderer.drawPoints(viewProjection, pointPixels);
        gl.Finish();
        frameMs.push_back(1e3 * seconds(Clock::now() - start));
        ++row.frames;
        row.framesFromDevice += fromDevice ? 1 : 0;
    }
    const Span b1 = now(runner);
    runner.pause();
    const double drawn = seconds(b1.at - b0.at);
    row.stepsPerSecond = double(b1.step - b0.step) / drawn;
    row.recordsPerSecond = double(b1.records - b0.records) / drawn;
    row.framesPerSecond = double(row.frames) / drawn;
    std::tie(row.frameMs, row.frameMsP99) = meanAndP99(frameMs);
    std::tie(row.lateMs, row.lateMsP99) = meanAndP99(lateMs);

    std::vector<std::uint8_t> rgba;
    target.read(rgba);
    long lit = 0;
    for (std::size_t i = 0; i + 3 < rgba.size(); i += 4)
        lit += (rgba[i + 2] > 60) ? 1 : 0; // the points' blue against the background's 26
    row.litFraction = double(lit) / double(std::max<std::size_t>(rgba.size() / 4, 1));
    target.destroy();
    renderer.destroy();
    return row;
}

} // namespace

int benchView(const Args& args) {
    ArgParser p(args);
    ViewOptions o;
    o.json = p.flag("--json");
    o.backend = p.option("--backend", "gl");
    o.d = int(parseLong(p.option("--d", "3"), "--d", 1, 64));
    const auto ns = parseTokenCounts(p.option("--n", "65536"));
    o.every = int(parseLong(p.option("--every", "4"), "--every", 1, 1 << 20));
    o.method = parseRunMethod(p.option("--method", "euler"));
    o.seconds = parsePositive(p.option("--seconds", "3"), "--seconds");
    o.fps = parsePositive(p.option("--fps", "60"), "--fps", true);
    const std::string size = p.option("--size", "1280x800");
    p.rejectUnknown();
    if (!p.positional.empty()) throw UsageError("unexpected argument " + quoteForMessage(p.positional[0]));
    if (o.seconds > 600) throw UsageError("--seconds: at most 600");
    char rest = 0;
    if (std::sscanf(size.c_str(), "%dx%d%c", &o.width, &o.height, &rest) != 2 || o.width < 16 ||
        o.height < 16 || o.width > 8192 || o.height > 8192)
        throw UsageError("--size: expected WIDTHxHEIGHT, each from 16 to 8192, got " + quoteForMessage(size));
    openCliBackend(o.backend); // an unknown or unavailable backend is named before any work

    GlApi gl;
    const auto drawContext = openDrawingContext("bench view", gl);
    if (!drawContext) return 1;
    if (!o.json)
        std::cout << "the particle view drawn while the run steps: softmax d = " << o.d << ", "
                  << toString(o.method) << ", " << o.width << "x" << o.height << ", "
                  << (o.fps > 0 ? "frames paced at " + std::to_string(int(o.fps)) + " Hz" : "frames unpaced")
                  << ", " << o.seconds << " s each (drawing: " << drawContext->describe() << ")\n";
    for (const long n : ns) {
        const ViewRow r = measure(o, int(n), *drawContext, gl);
        const nlohmann::json row = {
            {"bench", "view"},
            {"backend", o.backend},
            {"run", r.backendRun},
            {"n", n},
            {"d", o.d},
            {"method", toString(o.method)},
            {"width", o.width},
            {"height", o.height},
            {"fps_target", o.fps},
            {"steps_per_second_alone", r.aloneStepsPerSecond},
            {"steps_per_second", r.stepsPerSecond},
            {"ratio_to_stepping_alone", r.aloneStepsPerSecond / std::max(r.stepsPerSecond, 1e-9)},
            {"records_per_second", r.recordsPerSecond},
            {"frames_per_second", r.framesPerSecond},
            {"frame_ms", r.frameMs},
            {"frame_ms_p99", r.frameMsP99},
            {"late_ms", r.lateMs},
            {"late_ms_p99", r.lateMsP99},
            {"frames", r.frames},
            {"frames_from_device", r.framesFromDevice},
            {"vertex_uploads", r.uploads},
            {"lit_fraction", r.litFraction}};
        if (o.json) {
            std::cout << row.dump() << std::endl;
            continue;
        }
        std::cout << std::fixed << std::setprecision(1) << "N = " << n << " (" << r.backendRun
                  << "): " << r.framesPerSecond << " frames/s (a frame " << std::setprecision(2) << r.frameMs
                  << " ms, p99 " << r.frameMsP99 << "; late " << r.lateMs << " ms, p99 " << r.lateMsP99
                  << "), " << std::setprecision(1) << r.stepsPerSecond << " steps/s drawn against "
                  << r.aloneStepsPerSecond << " alone, " << r.recordsPerSecond << " records/s; "
                  << r.framesFromDevice << " of " << r.frames << " frames from the device copy, " << r.uploads
                  << " vertex uploads\n";
    }
    return 0;
}

#else

int benchView(const Args&) {
    std::cerr << "flowscope-cli bench view: not in this build (it needs the GPU backends, EGL and render/)\n";
    return 1;
}

#endif

} // namespace flowscope::cli
