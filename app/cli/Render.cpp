// flowscope-cli render: an animation of one of a scene's views, drawn without a display and encoded by
// engine/media's FrameSink (MP4, GIF or numbered PNGs).
//
// Composition only. The pictures are the app's own views (ui/ParticleView, ui/ConeView), made as widgets that
// are never shown: a QApplication on Qt's "offscreen" platform (no X, no Wayland) gives them fonts and
// QPainter, and a headless EGL context (engine/gpu/GlContext: surfaceless, Mesa's llvmpipe where there is no
// GPU) gives the shared renderers (render/) a framebuffer. Each frame is composed as the app composes it:
// what the view paints under its OpenGL part, the OpenGL part (drawn into a transparent framebuffer and laid
// over it), what the view paints on top, then the Dear ImGui heads-up display (--hud) and a caption strip
// (--caption) above the view.
//
// Time is the frame index, never the wall clock: frame k shows simulation time t_k = k * dt. The particle
// simulation advances by whole steps of the scene's integrator to the step nearest t_k (the cone and disc
// views run it too, for the particles' covariance dot the app draws there; --no-particles leaves it out);
// the cone's moment trajectories are read at t_k.
#include "Commands.h"

#if FLOWSCOPE_HAVE_RENDER

#include "engine/dynamics/Observables.h"
#include "engine/dynamics/Simulation.h"
#include "engine/gpu/GlContext.h"
#include "engine/media/FrameSink.h"
#include "engine/runner/SimulationRunner.h"
#include "render/GlApi.h"
#include "render/OffscreenTarget.h"
#include "ui/ConeData.h"
#include "ui/ConeView.h"
#include "ui/Hud.h"
#include "ui/ImGuiLayer.h"
#include "ui/ParticleView.h"
#include "ui/PlotDecorations.h"
#include "ui/Theme.h"

#include <EGL/egl.h>
#include <QApplication>
#include <QEventLoop>
#include <QFontMetricsF>
#include <QImage>
#include <QPainter>
#include <QTimer>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <cfloat>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <unistd.h>

namespace flowscope::cli {

namespace {

enum class View { Particles, Cone, Disc };

constexpr int kMaxSide = 8192;            // pixels; GL limits are checked too
constexpr double kDotsPerMeter = 3779.53; // 96 dpi, the logical resolution the app's views have on a desktop

struct Options {
    std::string scenePath;
    View view = View::Particles;
    long frames = 120;
    double fps = 30.0;
    int width = 1280, height = 720;
    std::string out;
    bool hud = false;
    std::optional<std::string> caption; // "auto" or a text ({t} is replaced by the frame's time)
    std::optional<double> dtPerFrame;
    bool particles = true; // run the particle simulation (cone and disc views: its covariance dot)
};

View parseView(const std::string& text) {
    if (text == "particles") return View::Particles;
    if (text == "cone") return View::Cone;
    if (text == "disc") return View::Disc;
    throw UsageError("--view: expected particles, cone or disc, got '" + text + "'");
}

void parseSize(const std::string& text, int& width, int& height) {
    std::smatch m;
    static const std::regex pattern("^([0-9]{1,5})x([0-9]{1,5})$");
    if (std::regex_match(text, m, pattern)) {
        width = std::stoi(m[1]);
        height = std::stoi(m[2]);
        if (width >= 16 && height >= 16 && width <= kMaxSide && height <= kMaxSide) return;
    }
    throw UsageError("--size: expected WIDTHxHEIGHT in pixels, each from 16 to " + std::to_string(kMaxSide) +
                     " (e.g. 1280x720), got '" + text + "'");
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
    if (!p.unknown().empty()) throw UsageError("unknown option " + p.unknown());
    if (p.positional.size() != 1)
        throw UsageError("expected one SCENE.json (usage: render SCENE.json --view particles|cone|disc --out "
                         "anim.mp4|anim.gif|frames/)");
    o.scenePath = p.positional[0];
    if (o.out.empty()) throw UsageError("--out anim.mp4|anim.gif|frames/ is required");
    o.view = parseView(view);
    if (!frames.empty()) o.frames = parseLong(frames, "--frames", 1, 1000000);
    if (!fps.empty()) {
        o.fps = parsePositive(fps, "--fps");
        if (o.fps > 240) throw UsageError("--fps: expected at most 240, got '" + fps + "'");
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

// Set by SIGINT/SIGTERM while a sink is open: the loop stops at the next step and the sink, destroyed without
// finish(), removes its temporary file.
volatile std::sig_atomic_t gCancel = 0;

extern "C" void onCancelSignal(int) {
    gCancel = 1;
}

// Installs the handlers for its lifetime (before it, a signal ends the process with nothing written).
class CancelOnSignal {
  public:
    CancelOnSignal() {
        gCancel = 0;
        struct sigaction sa = {};
        sa.sa_handler = onCancelSignal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &oldInt_);
        sigaction(SIGTERM, &sa, &oldTerm_);
    }
    ~CancelOnSignal() {
        sigaction(SIGINT, &oldInt_, nullptr);
        sigaction(SIGTERM, &oldTerm_, nullptr);
    }
    CancelOnSignal(const CancelOnSignal&) = delete;
    CancelOnSignal& operator=(const CancelOnSignal&) = delete;

  private:
    struct sigaction oldInt_ = {}, oldTerm_ = {};
};

struct Cancelled : std::runtime_error {
    Cancelled() : std::runtime_error("cancelled") {}
};

// Qt's warnings, less two that are expected here: the views are QOpenGLWidgets on a platform without OpenGL
// (they draw through EGL instead, never through Qt), and no XDG runtime directory exists on a server.
void quietQtMessages(QtMsgType type, const QMessageLogContext&, const QString& message) {
    if (message.startsWith(QLatin1String("QOpenGLWidget is not supported")) ||
        message.startsWith(QLatin1String("QStandardPaths: XDG_RUNTIME_DIR")))
        return;
    if (type != QtDebugMsg && type != QtInfoMsg) std::cerr << "Qt: " << message.toStdString() << "\n";
}

// A QApplication on the "offscreen" platform: fonts, QPainter and widgets that are never shown, with no
// window system at all (Qt's GLX is kept out too: OpenGL comes from EGL).
std::unique_ptr<QApplication> makeOffscreenApplication() {
    qInstallMessageHandler(quietQtMessages);
    qputenv("QT_QPA_PLATFORM", "offscreen");
    qputenv("QT_QPA_OFFSCREEN_NO_GLX", "1");
    static int argc = 1;
    static char name[] = "flowscope-cli";
    static char* argv[] = {name, nullptr};
    auto app = std::make_unique<QApplication>(argc, argv);
    applyDarkTheme(*app);
    return app;
}

// A Dear ImGui context drawing into the headless context, with the app's style and fonts.
class OffscreenImGui {
  public:
    bool initialize(std::string* whyNot) {
        context_ = ImGui::CreateContext();
        ImGui::SetCurrentContext(context_);
        ImGuiIO& io = ImGui::GetIO();
        io.IniFilename = nullptr;
        io.LogFilename = nullptr;
        applyImGuiStyle();
        buildImGuiFonts(1.0);
        if (!ImGui_ImplOpenGL3_Init("#version 330 core")) {
            *whyNot = "the Dear ImGui OpenGL 3 backend could not start in the headless context";
            ImGui::DestroyContext(context_);
            context_ = nullptr;
            return false;
        }
        return true;
    }
    ~OffscreenImGui() {
        if (!context_) return;
        ImGui::SetCurrentContext(context_);
        ImGui_ImplOpenGL3_Shutdown();
        ImGui::DestroyContext(context_);
    }
    // One ImGui frame of `size` logical pixels whose windows `build` makes, drawn into the bound framebuffer.
    // Auto-sized windows take two frames to settle; the first call draws a few frames unseen first.
    template <class Build> void frame(QSize size, double deltaTime, Build build) {
        ImGui::SetCurrentContext(context_);
        ImGuiIO& io = ImGui::GetIO();
        for (int k = settled_ ? 0 : 2; k >= 0; --k) {
            io.DisplaySize = ImVec2(float(size.width()), float(size.height()));
            io.DisplayFramebufferScale = ImVec2(1.0f, 1.0f);
            io.DeltaTime = float(deltaTime);
            io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
            ImGui_ImplOpenGL3_NewFrame();
            ImGui::NewFrame();
            build();
            ImGui::Render();
            if (k == 0) ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
        }
        settled_ = true;
    }

  private:
    ImGuiContext* context_ = nullptr;
    bool settled_ = false;
};

std::string number(double v) {
    std::ostringstream s;
    s << std::setprecision(4) << v;
    return s.str();
}

// "softmax, β = 1, N = 2048, d = 2" and the parameters that make the variant.
std::string sceneParameters(const Scene& s) {
    const AttentionSpec& a = s.attention;
    std::string text = toString(a.type);
    if (a.masked) text += " (masked)";
    if (a.headCount() > 1) text += ", " + std::to_string(a.headCount()) + " heads";
    text += ", \u03b2 = " + number(a.beta);
    if (a.type == AttentionType::Sinkhorn) text += ", \u03b5 = " + number(a.sinkhornEps);
    if (a.type == AttentionType::Rwpo) text += ", \u03bb = " + number(a.lambda) + ", h = " + number(a.h);
    return text + ", N = " + std::to_string(s.n) + ", d = " + std::to_string(s.d);
}

// The strip above the view: --caption's text, or (auto) the scene's name and figure on the left, its
// parameters and the time on the right.
class Caption {
  public:
    Caption(std::string spec, const Scene& scene, double dt)
        : spec_(std::move(spec)), scene_(scene), dt_(dt) {
        font_ = QApplication::font();
        font_.setPointSizeF(10.5);
    }
    // Height of the strip in pixels (at 96 dpi).
    int height() const {
        QImage probe(1, 1, QImage::Format_ARGB32_Premultiplied);
        probe.setDotsPerMeterX(int(kDotsPerMeter));
        probe.setDotsPerMeterY(int(kDotsPerMeter));
        return int(std::ceil(QFontMetricsF(font_, &probe).height() + 2 * kPad));
    }
    void paint(QPainter& p, const QRectF& strip, double t, const PlotStyle& style) const {
        const QString time = QStringLiteral("t = ") + formatTick(t, dt_ > 0 ? dt_ / 10 : 1e-3);
        QString left, right;
        if (spec_ == "auto") {
            left = QString::fromStdString(scene_.name.empty() ? std::string("scene") : scene_.name);
            if (!scene_.figure.empty())
                left += QStringLiteral("  \u00b7  ") + QString::fromStdString(scene_.figure);
            right = QString::fromStdString(sceneParameters(scene_)) + QStringLiteral("    ") + time;
        } else {
            left = QString::fromStdString(spec_);
            left.replace(QStringLiteral("{t}"), formatTick(t, dt_ > 0 ? dt_ / 10 : 1e-3));
        }
        p.fillRect(strip, style.background);
        p.setPen(QPen(style.grid, 1.0));
        p.drawLine(strip.bottomLeft() + QPointF(0, -0.5), strip.bottomRight() + QPointF(0, -0.5));
        p.setFont(font_);
        const QFontMetricsF fm(font_, p.device());
        const QRectF text = strip.adjusted(kPad * 1.5, 0, -kPad * 1.5, 0);
        const double rightWidth = right.isEmpty() ? 0.0 : fm.horizontalAdvance(right);
        p.setPen(style.label.lighter(140));
        if (!right.isEmpty()) p.drawText(text, Qt::AlignRight | Qt::AlignVCenter, right);
        const double room = std::max(0.0, text.width() - rightWidth - (right.isEmpty() ? 0.0 : 3 * kPad));
        p.drawText(QRectF(text.left(), text.top(), room, text.height()), Qt::AlignLeft | Qt::AlignVCenter,
                   fm.elidedText(left, Qt::ElideRight, room));
    }

  private:
    static constexpr double kPad = 6.0;
    std::string spec_;
    const Scene& scene_;
    double dt_;
    QFont font_;
};

QImage newImage(int width, int height) {
    QImage image(width, height, QImage::Format_ARGB32_Premultiplied);
    image.setDotsPerMeterX(int(kDotsPerMeter));
    image.setDotsPerMeterY(int(kDotsPerMeter));
    return image;
}

std::string fileSize(const std::string& path) {
    std::error_code ec;
    std::uintmax_t bytes = 0;
    if (std::filesystem::is_directory(path, ec)) {
        for (const auto& e : std::filesystem::directory_iterator(path, ec))
            if (e.is_regular_file(ec)) bytes += e.file_size(ec);
    } else {
        bytes = std::filesystem::file_size(path, ec);
    }
    if (ec) return "?";
    std::ostringstream s;
    s << std::fixed << std::setprecision(bytes >= (1u << 20) ? 1 : 0);
    if (bytes >= (1u << 20))
        s << double(bytes) / double(1u << 20) << " MiB";
    else
        s << double(bytes) / 1024.0 << " KiB";
    return s.str();
}

int render(const Args& raw) {
    const Options o = parseOptions(raw);
    const Scene scene = loadSceneArg(o.scenePath); // validates before any output
    if (o.view != View::Particles)
        if (const auto why = coneUnsupported(scene))
            throw UsageError(std::string("--view ") + viewName(o.view) + ": " + *why);
    const double h = scene.integrator.T / scene.integrator.steps;
    const double dt = o.dtPerFrame.value_or(h * std::max(scene.output.every, 1));
    // Whole integrator steps per frame (the nearest), for the HUD's rate: steps per second of video.
    const double stepsPerFrame = dt / h;

    // The output first: a path the sinks cannot take is an input error, found before any work. From here on
    // Ctrl+C (or a failure) leaves nothing under that name.
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

    std::string why;
    const auto context = GlContext::createHeadless(&why);
    if (!context) {
        std::cerr << "flowscope-cli render: no OpenGL for headless drawing (EGL surfaceless): " << why
                  << "\n";
        return 1;
    }
    GlApi gl;
    if (!gl.load([](const char* name) { return GlApi::Proc(eglGetProcAddress(name)); }, &why)) {
        std::cerr << "flowscope-cli render: " << why << "\n";
        return 1;
    }

    const auto app = makeOffscreenApplication();
    std::optional<Caption> caption;
    if (o.caption) caption.emplace(*o.caption, scene, dt);
    const int captionHeight = caption ? caption->height() : 0;
    const int viewHeight = o.height - captionHeight;
    if (viewHeight < 16)
        throw UsageError("--size: " + std::to_string(o.height) +
                         " pixels leave no room for the view under the caption");

    OffscreenTarget target;
    if (!target.create(gl, o.width, viewHeight, &why)) throw UsageError("--size: " + why);
    std::optional<OffscreenImGui> imgui;
    if (o.hud) {
        imgui.emplace();
        if (!imgui->initialize(&why)) {
            std::cerr << "flowscope-cli render: --hud: " << why << "\n";
            return 1;
        }
    }

    // The views, never shown: their own drawing code, at the frame's size.
    std::unique_ptr<ParticleView> particleView;
    std::unique_ptr<ConeView> coneView;
    QString viewError;
    if (o.view == View::Particles) {
        particleView = std::make_unique<ParticleView>();
        particleView->resize(o.width, viewHeight);
        particleView->setScene(scene);
        if (!particleView->initializeOffscreen(gl, &viewError)) {
            std::cerr << "flowscope-cli render: the particle view cannot draw here: "
                      << viewError.toStdString() << "\n";
            return 1;
        }
    } else {
        coneView = std::make_unique<ConeView>();
        coneView->resize(o.width, viewHeight);
        if (!coneView->initializeOffscreen(gl, &viewError)) {
            std::cerr << "flowscope-cli render: the cone view cannot draw here: " << viewError.toStdString()
                      << "\n";
            return 1;
        }
        // The moment trajectories are integrated off the calling thread; wait for them here.
        QEventLoop loop;
        QObject::connect(coneView.get(), &ConeView::solved, &loop, &QEventLoop::quit);
        QTimer poll; // Ctrl+C ends the wait (the solve itself finishes before the process exits)
        QObject::connect(&poll, &QTimer::timeout, &loop, [&loop] {
            if (gCancel) loop.quit();
        });
        poll.start(50);
        std::cerr << "solving the moment equations of " << scene.name << "...\n";
        coneView->setScene(scene);
        if (coneView->solving()) loop.exec();
        if (gCancel) {
            coneView->releaseOffscreen();
            throw Cancelled();
        }
        coneView->setMode(o.view == View::Disc ? ConeMode::Disc : ConeMode::Cone);
        if (!coneView->message().isEmpty()) {
            std::cerr << "flowscope-cli render: --view " << viewName(o.view) << ": "
                      << coneView->message().toStdString() << "\n";
            coneView->releaseOffscreen();
            return 1;
        }
    }
    // Released while the EGL context is still current, whatever happens below.
    struct Release {
        ParticleView* particles;
        ConeView* cone;
        ~Release() {
            if (particles) particles->releaseOffscreen();
            if (cone) cone->releaseOffscreen();
        }
    } release{particleView.get(), coneView.get()};

    std::unique_ptr<Simulation> sim;
    if (o.particles) sim = std::make_unique<Simulation>(scene);
    std::shared_ptr<const Snapshot> snapshot;
    if (particleView) particleView->setSource([&snapshot] { return snapshot; });
    const std::string backend = scene.precision == Precision::Float32 ? "CPU float32" : "CPU float64";

    std::cerr << "render " << scene.name << " (" << viewName(o.view) << "): " << o.frames << " frames of "
              << o.width << "x" << o.height << " at " << o.fps << " fps, dt = " << number(dt)
              << " per frame (t from 0 to " << number(dt * double(o.frames - 1)) << "), to " << o.out << "\n";
    if (o.dtPerFrame && std::abs(stepsPerFrame - std::round(stepsPerFrame)) > 1e-6 && sim)
        std::cerr << "note: dt is not a multiple of the scene's step h = " << number(h)
                  << "; the particles show the step nearest each frame's time\n";

    const bool tty = ::isatty(2);
    const auto start = std::chrono::steady_clock::now();
    auto elapsed = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    QImage viewImage = newImage(o.width, viewHeight);
    QImage frame = caption ? newImage(o.width, o.height) : QImage();
    std::vector<std::uint8_t> pixels;
    const OffscreenLayer glLayer = [&](const std::function<void()>& draw) {
        target.begin();
        draw();
        target.read(pixels);
        const QImage layer(pixels.data(), o.width, viewHeight, o.width * 4,
                           QImage::Format_RGBA8888_Premultiplied);
        QPainter p(&viewImage);
        p.drawImage(0, 0, layer);
    };
    long lastReported = -1;

    for (long k = 0; k < o.frames; ++k) {
        const double t = double(k) * dt;
        if (sim) {
            // Whole steps up to the one nearest t.
            while (!sim->finished() && sim->time() + 0.5 * h <= t + 1e-9 * h) {
                if (gCancel) throw Cancelled();
                sim->step();
                sim->takeHistory(); // the recorded frames are not needed: keep memory flat
            }
        }
        if (gCancel) throw Cancelled();

        if (particleView) {
            auto s = std::make_shared<Snapshot>();
            s->generation = 1;
            s->t = sim->time();
            s->step = sim->stepIndex();
            s->totalSteps = scene.integrator.steps;
            s->horizon = scene.integrator.T;
            s->tokens = sim->tokens();
            s->finished = sim->finished();
            s->event = sim->event();
            s->observables = sim->lastObservables();
            s->playing = !sim->finished();
            s->backend = backend;
            s->stepsPerSecond = s->playing ? stepsPerFrame * o.fps : 0.0;
            snapshot = std::move(s);
            particleView->refresh();
            particleView->renderOffscreen(viewImage, o.hud, glLayer);
            if (imgui) {
                HudStats stats = particleView->hudStats();
                stats.frameMs = 1000.0 / o.fps; // the video's frame time, not this machine's
                glLayer(
                    [&] { imgui->frame(QSize(o.width, viewHeight), 1.0 / o.fps, [&] { drawHud(stats); }); });
            }
        } else {
            coneView->setTime(t);
            if (sim && scene.d == 2) coneView->setCurrentCovariance(tokenCovariance(sim->tokens()));
            coneView->renderOffscreen(viewImage, glLayer);
        }

        const QImage* out = &viewImage;
        if (caption) {
            QPainter p(&frame);
            caption->paint(p, QRectF(0, 0, o.width, captionHeight), particleView ? sim->time() : t,
                           PlotStyle());
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
    std::cerr << "wrote " << o.out << " (" << o.frames << " frames, " << fileSize(o.out) << ") in "
              << std::fixed << std::setprecision(1) << seconds << " s, "
              << double(o.frames) / std::max(seconds, 1e-9) << " frames/s" << std::defaultfloat;
    if (sim && sim->event())
        std::cerr << "; the particles stopped at t = " << number(sim->event()->t) << ": "
                  << sim->event()->message;
    std::cerr << "\n";
    return 0;
}

} // namespace

// Cancelled runs end here (the sink and every GL object are gone by now: nothing is left under --out).
int renderCommand(const Args& args) {
    try {
        return render(args);
    } catch (const Cancelled&) {
        std::cerr << "\nflowscope-cli render: cancelled; nothing was written\n";
        return 130;
    }
}

} // namespace flowscope::cli

#else // a build without the GUI (Qt) or without EGL

namespace flowscope::cli {

int renderCommand(const Args&) {
    std::cerr
        << "flowscope-cli render: not available in this build (it draws the GUI's views with the OpenGL "
           "backend's EGL: configure with -DFLOWSCOPE_BUILD_GUI=ON -DFLOWSCOPE_BUILD_GPU=ON, libegl-dev "
           "installed)\n";
    return 1;
}

} // namespace flowscope::cli

#endif
