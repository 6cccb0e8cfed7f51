// Flowscope animation: an animation of one of a scene's views, composed frame by frame offscreen. The one
// frame composer of `flowscope-cli render` (EGL context) and of the GUI's File ▸ Export ▸ Animation (a Qt
// offscreen context).
//
// The pictures are the ones the app's views draw (render/picture: ParticlePicture, ConePicture; no widgets),
// drawn through their render() into an OffscreenTarget of the caller's current OpenGL context. Each frame is
// composed as the app composes it: what the picture paints under its OpenGL part, the OpenGL part (drawn into
// a transparent framebuffer and laid over it), what the picture paints on top, then
// the Dear ImGui heads-up display (hud, in an ImGui context of its own) and a caption strip above the view.
//
// Time is the frame index, never the wall clock: frame k shows simulation time t_k = k * dt. The particle
// simulation (a Simulation of its own, from t = 0) advances by whole steps of the scene's integrator to the
// step nearest t_k (the cone and disc views run it too, for the particles' covariance dot; particles = false
// leaves it out); the cone's moment trajectories are read at t_k.
//
// Use, with a QGuiApplication, a current OpenGL 3.3 context and a GlApi loaded from it:
//   AnimationExporter e(scene, options);
//   if (!e.initialize(gl) || !e.solve(cancelled)) ... e.failure(), e.error()
//   e.run(sink, progress) or e.renderFrame(k, image) for k = 0, 1, ...
//   destroy e while the context is still current (it releases its GL objects).
#pragma once

#include "engine/scene/Scene.h"
#include "render/GlApi.h"
#include "render/OffscreenTarget.h"

#include <QFont>
#include <QImage>
#include <QPainter>
#include <QRectF>
#include <QString>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace flowscope {

class ConePicture;
struct PlotStyle;
class FrameSink;
class ParticlePicture;
class Simulation;
struct Snapshot;

// Particles, cone and disc animate a scene (AnimationExporter); Training animates the Flows tab's training
// (FlowAnimator).
enum class AnimationView { Particles, Cone, Disc, Training };
// "particles", "cone", "disc", "training" (the CLI's --view values).
const char* toString(AnimationView view);

struct AnimationOptions {
    AnimationView view = AnimationView::Particles;
    long frames = 120;
    double fps = 30.0;
    int width = 1280, height = 720; // the whole frame in pixels, caption strip included
    // Simulation time per frame; nullopt: the integrator step h = T / steps times output.every.
    std::optional<double> dtPerFrame;
    bool hud = false;                   // the heads-up display (particles view only)
    std::optional<std::string> caption; // "auto" (name, figure, parameters, t) or a text ({t}: the time)
    bool particles = true;              // cone and disc views: run the particles for their covariance dot
    // Training view: iterations per frame (frame k shows iteration k * itersPerFrame) and the generated
    // samples (and data points) in each picture. The caption's text replaces {iteration} instead of {t}.
    long itersPerFrame = 10;
    int pictureSamples = 1000;
};

inline constexpr int kAnimationMinSide = 16, kAnimationMaxSide = 8192; // pixels (GL limits checked too)
inline constexpr long kAnimationMaxFrames = 1000000;
inline constexpr double kAnimationMaxFps = 240.0;
inline constexpr long kAnimationMaxItersPerFrame = 1000000;
inline constexpr int kAnimationMinPictureSamples = 2, kAnimationMaxPictureSamples = 100000;

// A frame image (ARGB32 premultiplied) of `width` x `height` pixels at 96 dpi, the logical resolution the
// app's views have on a desktop, so text comes out at the size it has there.
QImage newFrameImage(int width, int height);

// The caption strip above an exported view: `left` and `right` on one line, `left` elided where it meets
// `right`; in a strip of two lines' height, `left` on the first line and `right` on the second,
// right-aligned. On the plot background with a grid-coloured line under it. captionFont() is its font,
// captionStripHeight() its height in pixels for `lines` lines. The training animation of flowscope-cli render
// draws its caption with them too.
QFont captionFont();
int captionStripHeight(const QFont& font, int lines = 1);
// Whether `left` and `right` need two lines in a strip `width` pixels wide (left would be elided on one).
bool captionNeedsTwoLines(const QFont& font, double width, const QString& left, const QString& right);
void paintCaptionStrip(QPainter& p, const QRectF& strip, const QString& left, const QString& right,
                       const QFont& font, const PlotStyle& style);

// The default simulation time per frame: h * max(output.every, 1).
double defaultDtPerFrame(const Scene& scene);
// "softmax, β = 1, N = 2048, d = 2" and the parameters that make the attention variant.
std::string sceneParameters(const Scene& scene);
// Why `options` cannot animate `scene` (one sentence naming the field as the export dialog labels it), or
// nullopt (the scene is not looked at for the training view). The CLI checks its options itself, with its own
// option names.
std::optional<std::string> animationOptionsError(const Scene& scene, const AnimationOptions& options);

class AnimationExporter {
  public:
    // What went wrong, for callers that word it by field (the CLI maps each to its option).
    enum class Failure {
        None,
        Size,      // the frame size (the caption leaves no room, or the GL limits)
        Hud,       // the ImGui heads-up display could not start
        Drawing,   // the view cannot draw in this context
        View,      // the scene cannot be shown in this view (the cone's message)
        Cancelled, // a cancel callback said so
    };
    // Progress after each frame: frames done so far; return false to cancel.
    using Progress = std::function<bool(long done)>;
    using Cancelled = std::function<bool()>;

    AnimationExporter(const Scene& scene, const AnimationOptions& options);
    ~AnimationExporter(); // release()
    AnimationExporter(const AnimationExporter&) = delete;
    AnimationExporter& operator=(const AnimationExporter&) = delete;

    // The caption, the framebuffer, the HUD's ImGui context and the view, in the current OpenGL context (gl:
    // its entry points, alive until release()). False with failure() and error() set.
    bool initialize(const GlApi& gl);
    // Cone and disc views: integrates the moment trajectories (off this thread; this one runs a local event
    // loop meanwhile, polling `cancelled` every 50 ms). False on cancel or when the view cannot show the
    // scene. Nothing to do for the particles view.
    bool solve(const Cancelled& cancelled = {});
    // Frame k (t = k * dt) as RGBA8888, options().width x height. Frames are meant in increasing order (the
    // simulation only steps forward; an earlier frame restarts it from t = 0). False only when `cancelled`
    // returned true between simulation steps.
    bool renderFrame(long k, QImage& rgba, const Cancelled& cancelled = {});
    // Every frame into `sink` (not finished: the caller calls sink.finish()). False when cancelled.
    // Exceptions from the sink pass through.
    bool run(FrameSink& sink, const Progress& progress = {});
    // Releases every GL object and the views' offscreen state; the context of initialize() must be current.
    void release();

    Failure failure() const { return failure_; }
    const std::string& error() const { return error_; }
    const Scene& scene() const { return scene_; }
    const AnimationOptions& options() const { return options_; }
    double dt() const { return dt_; }
    double step() const { return h_; } // the scene's integrator step h
    int captionHeight() const { return captionHeight_; }
    // The particle simulation (null with particles = false); its state is that of the last frame drawn.
    const Simulation* simulation() const { return sim_.get(); }
    // The picture drawing the frames (one of them is null), e.g. for where a token lands (worldToPixel; add
    // captionHeight() to y).
    const ParticlePicture* particlePicture() const { return particlePicture_.get(); }
    const ConePicture* conePicture() const { return conePicture_.get(); }

  private:
    class OffscreenImGui;
    class Caption;

    bool fail(Failure failure, std::string message);
    void drawLayer(const std::function<void()>& draw);

    const Scene scene_;
    const AnimationOptions options_;
    double h_ = 0.0, dt_ = 0.0;
    const GlApi* gl_ = nullptr;
    Failure failure_ = Failure::None;
    std::string error_;

    std::unique_ptr<Caption> caption_;
    int captionHeight_ = 0, viewHeight_ = 0;
    OffscreenTarget target_;
    std::unique_ptr<OffscreenImGui> imgui_;
    std::unique_ptr<ParticlePicture> particlePicture_;
    std::unique_ptr<ConePicture> conePicture_;
    bool viewInitialized_ = false;
    std::unique_ptr<Simulation> sim_;
    QImage viewImage_, frame_;
    std::vector<std::uint8_t> pixels_;
};

} // namespace flowscope
