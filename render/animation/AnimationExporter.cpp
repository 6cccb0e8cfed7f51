#include "render/animation/AnimationExporter.h"

#include "engine/dynamics/Observables.h"
#include "engine/dynamics/Simulation.h"
#include "engine/media/FrameSink.h"
#include "engine/runner/Snapshot.h"
#include "render/ConeData.h"
#include "render/picture/ConePicture.h"
#include "render/picture/Hud.h"
#include "render/picture/ParticlePicture.h"
#include "render/picture/PlotDecorations.h"

#include <QFontMetricsF>
#include <QGuiApplication>
#include <QPainter>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <iomanip>
#include <mutex>
#include <sstream>

namespace flowscope {

// --- Options ---

namespace {

constexpr double kDotsPerMeter = 3779.53; // 96 dpi, the logical resolution the app's views have on a desktop

std::string number(double v) {
    std::ostringstream s;
    s << std::setprecision(4) << v;
    return s.str();
}

// Makes `context` the current ImGui context for its lifetime, then restores the one that was current (the
// app's views have their own: an export must not leave its context current under them).
class ImGuiContextScope {
  public:
    explicit ImGuiContextScope(ImGuiContext* context) : previous_(ImGui::GetCurrentContext()) {
        ImGui::SetCurrentContext(context);
    }
    ~ImGuiContextScope() { ImGui::SetCurrentContext(previous_); }
    ImGuiContextScope(const ImGuiContextScope&) = delete;
    ImGuiContextScope& operator=(const ImGuiContextScope&) = delete;

  private:
    ImGuiContext* previous_;
};

} // namespace

const char* toString(AnimationView view) {
    switch (view) {
    case AnimationView::Particles:
        return "particles";
    case AnimationView::Cone:
        return "cone";
    case AnimationView::Disc:
        return "disc";
    case AnimationView::Training:
        break;
    }
    return "training";
}

double defaultDtPerFrame(const Scene& scene) {
    const double h = scene.integrator.T / scene.integrator.steps;
    return h * std::max(scene.output.every, 1);
}

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

std::optional<std::string> animationOptionsError(const Scene& scene, const AnimationOptions& o) {
    const std::string sides = std::to_string(kAnimationMinSide) + " to " + std::to_string(kAnimationMaxSide);
    if (o.frames < 1 || o.frames > kAnimationMaxFrames)
        return "Frames: expected 1 to " + std::to_string(kAnimationMaxFrames) + ", got " +
               std::to_string(o.frames) + ".";
    if (!(o.fps > 0.0) || o.fps > kAnimationMaxFps)
        return "Frame rate: expected more than 0 and at most " + number(kAnimationMaxFps) +
               " frames/s, got " + number(o.fps) + ".";
    if (o.width < kAnimationMinSide || o.width > kAnimationMaxSide || o.height < kAnimationMinSide ||
        o.height > kAnimationMaxSide)
        return "Size: expected a width and height from " + sides + " pixels, got " + std::to_string(o.width) +
               "x" + std::to_string(o.height) + ".";
    if (o.dtPerFrame && !(std::isfinite(*o.dtPerFrame) && *o.dtPerFrame > 0.0))
        return "Time per frame: expected a positive number, got " + number(*o.dtPerFrame) + ".";
    if (o.hud && o.view != AnimationView::Particles)
        return std::string("Heads-up display: only the particles view has one (the cone and disc views show "
                           "the time in their legend; an automatic caption adds it to any view).");
    if (o.view == AnimationView::Particles && !o.particles)
        return std::string("Particles: the particles view needs the particle simulation.");
    if (o.caption && o.caption->empty()) return std::string("Caption: the custom text is empty.");
    if (o.view == AnimationView::Training) {
        if (o.itersPerFrame < 1 || o.itersPerFrame > kAnimationMaxItersPerFrame)
            return "Iterations per frame: expected 1 to " + std::to_string(kAnimationMaxItersPerFrame) +
                   ", got " + std::to_string(o.itersPerFrame) + ".";
        if (o.pictureSamples < kAnimationMinPictureSamples || o.pictureSamples > kAnimationMaxPictureSamples)
            return "Samples shown: expected " + std::to_string(kAnimationMinPictureSamples) + " to " +
                   std::to_string(kAnimationMaxPictureSamples) + ", got " + std::to_string(o.pictureSamples) +
                   ".";
        return std::nullopt;
    }
    if (o.view != AnimationView::Particles)
        if (const auto why = coneUnsupported(scene))
            return std::string(o.view == AnimationView::Cone ? "View (covariance cone): "
                                                             : "View (trace-1 disc): ") +
                   *why;
    return std::nullopt;
}

// --- ImGui off screen ---

// A Dear ImGui context drawing into the caller's OpenGL context, with the app's style and fonts. The OpenGL 3
// backend keeps its state (shaders, font texture) in the ImGui context's io.BackendRendererUserData, so this
// context shares nothing with the views' layers (ui/ImGuiLayer); every call makes it current and restores
// the previous ImGui context afterwards.
class AnimationExporter::OffscreenImGui {
  public:
    bool initialize(std::string* whyNot) {
        context_ = ImGui::CreateContext();
        const ImGuiContextScope scope(context_);
        ImGuiIO& io = ImGui::GetIO();
        io.IniFilename = nullptr;
        io.LogFilename = nullptr;
        applyImGuiStyle();
        buildImGuiFonts(1.0);
        if (!ImGui_ImplOpenGL3_Init("#version 330 core")) {
            *whyNot = "the Dear ImGui OpenGL 3 backend could not start in the headless context";
            ImGui::DestroyContext(context_); // leaves no context current; the scope restores the previous
            context_ = nullptr;
            return false;
        }
        return true;
    }
    // The backend deletes GL objects: the context it was initialized in must be current.
    ~OffscreenImGui() {
        if (!context_) return;
        ImGuiContext* previous = ImGui::GetCurrentContext();
        ImGui::SetCurrentContext(context_);
        ImGui_ImplOpenGL3_Shutdown();
        ImGui::DestroyContext(context_);
        ImGui::SetCurrentContext(previous == context_ ? nullptr : previous);
    }
    // One ImGui frame of `size` logical pixels whose windows `build` makes, drawn into the bound framebuffer.
    // Auto-sized windows take two frames to settle; the first call draws a few frames unseen first.
    template <class Build> void frame(QSize size, double deltaTime, Build build) {
        const ImGuiContextScope scope(context_);
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

QImage newFrameImage(int width, int height) {
    QImage image(width, height, QImage::Format_ARGB32_Premultiplied);
    image.setDotsPerMeterX(int(kDotsPerMeter));
    image.setDotsPerMeterY(int(kDotsPerMeter));
    return image;
}

// --- The caption strip ---

namespace {
constexpr double kCaptionPad = 6.0;
}

QFont captionFont() {
    QFont font = QGuiApplication::font();
    font.setPointSizeF(10.5);
    return font;
}

int captionStripHeight(const QFont& font, int lines) {
    const QImage probe = newFrameImage(1, 1);
    return int(std::ceil(lines * QFontMetricsF(font, &probe).height() + 2 * kCaptionPad));
}

bool captionNeedsTwoLines(const QFont& font, double width, const QString& left, const QString& right) {
    if (right.isEmpty()) return false;
    const QImage probe = newFrameImage(1, 1);
    const QFontMetricsF fm(font, &probe);
    return fm.horizontalAdvance(left) + 3 * kCaptionPad + fm.horizontalAdvance(right) >
           width - 3 * kCaptionPad;
}

void paintCaptionStrip(QPainter& p, const QRectF& strip, const QString& left, const QString& right,
                       const QFont& font, const PlotStyle& style) {
    p.fillRect(strip, style.background);
    p.setPen(QPen(style.grid, 1.0));
    p.drawLine(strip.bottomLeft() + QPointF(0, -0.5), strip.bottomRight() + QPointF(0, -0.5));
    p.setFont(font);
    const QFontMetricsF fm(font, p.device());
    const QRectF text = strip.adjusted(kCaptionPad * 1.5, 0, -kCaptionPad * 1.5, 0);
    p.setPen(style.label.lighter(140));
    if (strip.height() >= 2 * fm.height()) { // two lines: left above, right below
        const QRectF inner = text.adjusted(0, kCaptionPad, 0, -kCaptionPad);
        const QRectF top(inner.left(), inner.top(), inner.width(), inner.height() / 2);
        const QRectF bottom(inner.left(), top.bottom(), inner.width(), inner.height() / 2);
        p.drawText(top, Qt::AlignLeft | Qt::AlignVCenter, fm.elidedText(left, Qt::ElideRight, top.width()));
        p.drawText(bottom, Qt::AlignRight | Qt::AlignVCenter,
                   fm.elidedText(right, Qt::ElideLeft, bottom.width()));
        return;
    }
    const double rightWidth = right.isEmpty() ? 0.0 : fm.horizontalAdvance(right);
    if (!right.isEmpty()) p.drawText(text, Qt::AlignRight | Qt::AlignVCenter, right);
    const double room = std::max(0.0, text.width() - rightWidth - (right.isEmpty() ? 0.0 : 3 * kCaptionPad));
    p.drawText(QRectF(text.left(), text.top(), room, text.height()), Qt::AlignLeft | Qt::AlignVCenter,
               fm.elidedText(left, Qt::ElideRight, room));
}

// The strip above the view: the caption's text, or (auto) the scene's name and figure on the left, its
// parameters and the time on the right.
class AnimationExporter::Caption {
  public:
    Caption(std::string spec, const Scene& scene, double dt)
        : spec_(std::move(spec)), scene_(scene), dt_(dt) {
        font_ = captionFont();
    }
    // Two lines when the automatic caption's name and figure would be cut beside its parameters at the
    // widest time (the horizon) in `width` pixels.
    int height(int width) const {
        const auto [left, right] = texts(scene_.integrator.T);
        return captionStripHeight(font_, captionNeedsTwoLines(font_, width, left, right) ? 2 : 1);
    }
    void paint(QPainter& p, const QRectF& strip, double t, const PlotStyle& style) const {
        const auto [left, right] = texts(t);
        paintCaptionStrip(p, strip, left, right, font_, style);
    }

  private:
    std::pair<QString, QString> texts(double t) const {
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
        return {left, right};
    }

    std::string spec_;
    const Scene& scene_;
    double dt_;
    QFont font_;
};

AnimationExporter::AnimationExporter(const Scene& scene, const AnimationOptions& options)
    : scene_(scene), options_(options) {
    h_ = scene_.integrator.T / scene_.integrator.steps;
    dt_ = options_.dtPerFrame.value_or(defaultDtPerFrame(scene_));
}

// --- Exporting: setup, solve, frames ---

AnimationExporter::~AnimationExporter() {
    release();
}

bool AnimationExporter::fail(Failure failure, std::string message) {
    failure_ = failure;
    error_ = std::move(message);
    return false;
}

bool AnimationExporter::initialize(const GlApi& gl) {
    gl_ = &gl;
    const AnimationOptions& o = options_;
    if (o.view == AnimationView::Training)
        return fail(Failure::View, "the training view is not a scene's: FlowAnimator draws it");
    if (o.caption) caption_ = std::make_unique<Caption>(*o.caption, scene_, dt_);
    captionHeight_ = caption_ ? caption_->height(o.width) : 0;
    viewHeight_ = o.height - captionHeight_;
    if (viewHeight_ < 16)
        return fail(Failure::Size,
                    std::to_string(o.height) + " pixels leave no room for the view under the caption");

    std::string why;
    if (!target_.create(gl, o.width, viewHeight_, &why)) return fail(Failure::Size, why);
    if (o.hud) {
        imgui_ = std::make_unique<OffscreenImGui>();
        if (!imgui_->initialize(&why)) {
            imgui_.reset();
            return fail(Failure::Hud, why);
        }
    }

    // The views, never shown: their own drawing code, at the frame's size.
    if (o.view == AnimationView::Particles) {
        particlePicture_ = std::make_unique<ParticlePicture>();
        particlePicture_->setSize(QSizeF(o.width, viewHeight_));
        particlePicture_->setScene(scene_);
        particlePicture_->setStyle(PlotStyle());
        std::string why;
        if (!particlePicture_->initialize(gl, &why))
            return fail(Failure::Drawing, "the particle view cannot draw here: " + why);
    } else {
        conePicture_ = std::make_unique<ConePicture>();
        conePicture_->setSize(QSizeF(o.width, viewHeight_));
        std::string why;
        if (!conePicture_->initialize(gl, &why))
            return fail(Failure::Drawing, "the cone view cannot draw here: " + why);
    }
    viewInitialized_ = true;

    if (o.particles) sim_ = std::make_unique<Simulation>(scene_);
    viewImage_ = newFrameImage(o.width, viewHeight_);
    frame_ = caption_ ? newFrameImage(o.width, o.height) : QImage();
    return true;
}

bool AnimationExporter::solve(const Cancelled& cancelled) {
    if (!conePicture_) return true;
    if (const auto why = conePicture_->setScene(scene_)) return fail(Failure::View, *why);
    // The moment trajectories are integrated off this thread, so that a cancel ends the wait at once (the
    // solve itself finishes in the background and its result is dropped).
    struct Result {
        std::mutex mutex;
        std::condition_variable done;
        std::shared_ptr<const ConeData> data;
    };
    auto result = std::make_shared<Result>();
    runDetached([result, scene = scene_] {
        auto data = std::make_shared<const ConeData>(computeConeData(scene));
        const std::lock_guard lock(result->mutex);
        result->data = std::move(data);
        result->done.notify_all();
    });
    std::unique_lock lock(result->mutex);
    while (!result->data) {
        if (cancelled && cancelled()) return fail(Failure::Cancelled, "cancelled");
        result->done.wait_for(lock, std::chrono::milliseconds(50));
    }
    conePicture_->setData(result->data);
    conePicture_->setMode(options_.view == AnimationView::Disc ? ConeMode::Disc : ConeMode::Cone);
    conePicture_->setCurvesToTime(true); // an animation: the curves grow with the frames' time
    if (!conePicture_->message().isEmpty()) return fail(Failure::View, conePicture_->message().toStdString());
    return true;
}

void AnimationExporter::drawLayer(const std::function<void()>& draw) {
    target_.begin();
    draw();
    target_.read(pixels_);
    const QImage layer(pixels_.data(), options_.width, viewHeight_, options_.width * 4,
                       QImage::Format_RGBA8888_Premultiplied);
    QPainter p(&viewImage_);
    p.drawImage(0, 0, layer);
}

bool AnimationExporter::renderFrame(long k, QImage& rgba, const Cancelled& cancelled) {
    const AnimationOptions& o = options_;
    const double t = double(k) * dt_;
    if (sim_) {
        // An earlier frame than the last one drawn: from the beginning again.
        if (sim_->time() - 0.5 * h_ > t + 1e-9 * h_) sim_ = std::make_unique<Simulation>(scene_);
        // Whole steps up to the one nearest t.
        while (!sim_->finished() && sim_->time() + 0.5 * h_ <= t + 1e-9 * h_) {
            if (cancelled && cancelled()) return fail(Failure::Cancelled, "cancelled");
            sim_->step();
            sim_->takeHistory(); // the recorded frames are not needed: keep memory flat
        }
    }
    if (cancelled && cancelled()) return fail(Failure::Cancelled, "cancelled");

    const OffscreenLayer glLayer = [this](const std::function<void()>& draw) { drawLayer(draw); };
    if (particlePicture_) {
        auto s = std::make_shared<Snapshot>();
        s->generation = 1;
        s->t = sim_->time();
        s->step = sim_->stepIndex();
        s->totalSteps = scene_.integrator.steps;
        s->horizon = scene_.integrator.T;
        s->tokens = sim_->tokens();
        s->finished = sim_->finished();
        s->event = sim_->event();
        s->observables = sim_->lastObservables();
        s->playing = !sim_->finished();
        s->backend = scene_.precision == Precision::Float32 ? "CPU float32" : "CPU float64";
        // Whole integrator steps per frame (the nearest), for the HUD's rate: steps per second of video.
        s->stepsPerSecond = s->playing ? dt_ / h_ * o.fps : 0.0;
        particlePicture_->show(std::move(s));
        // No status box in a frame: with o.hud the heads-up display shows the numbers, without it the user
        // asked for none (the app's view draws the box when its HUD is hidden; an export is not the view).
        particlePicture_->render(viewImage_, true, glLayer);
        if (imgui_) {
            const HudStats stats = particlePicture_->hudStats(1000.0 / o.fps); // the video's frame time
            glLayer(
                [&] { imgui_->frame(QSize(o.width, viewHeight_), 1.0 / o.fps, [&] { drawHud(stats); }); });
        }
    } else {
        conePicture_->setTime(t);
        if (sim_ && scene_.d == 2) conePicture_->setCurrentCovariance(tokenCovariance(sim_->tokens()));
        // The particle run stopped (diverged, ...): from then on the frames say so, as the particle view
        // does.
        conePicture_->setParticleEvent(sim_ ? sim_->event() : std::nullopt);
        conePicture_->render(viewImage_, glLayer);
    }

    const QImage* out = &viewImage_;
    if (caption_) {
        QPainter p(&frame_);
        caption_->paint(p, QRectF(0, 0, o.width, captionHeight_), particlePicture_ ? sim_->time() : t,
                        PlotStyle());
        p.drawImage(0, captionHeight_, viewImage_);
        p.end();
        out = &frame_;
    }
    rgba = out->convertToFormat(QImage::Format_RGBA8888);
    return true;
}

bool AnimationExporter::run(FrameSink& sink, const Progress& progress) {
    QImage frame;
    for (long k = 0; k < options_.frames; ++k) {
        if (!renderFrame(k, frame)) return false;
        sink.addFrame(frame.constBits(), int(frame.bytesPerLine()));
        if (progress && !progress(k + 1)) return fail(Failure::Cancelled, "cancelled");
    }
    return true;
}

void AnimationExporter::release() {
    if (viewInitialized_) {
        if (particlePicture_) particlePicture_->release();
        if (conePicture_) conePicture_->release();
        viewInitialized_ = false;
    }
    imgui_.reset();
    target_.destroy();
}

} // namespace flowscope
