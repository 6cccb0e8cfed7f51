// Flowscope UI: File ▸ Export as a service. Free functions over what the app shows (a widget, a run's
// history, a scene, a model) that write one output atomically and return what happened as a value: done,
// cancelled (nothing written), or failed with a message naming the output and the reason. They open no
// dialog; the workspaces' menu entries ask for a path and options, call them, and show the result.
//
// Every writer goes through engine/io's atomic files or an engine/media FrameSink, so a failure or a cancel
// leaves nothing under the name (and an existing file untouched).
#pragma once

#include "engine/flows/Flow.h"
#include "engine/flows/Trainer.h"
#include "engine/scene/Scene.h"

#include <QOpenGLContext>
#include <QPointer>
#include <QString>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

class QOffscreenSurface;
class QSurface;
class QWidget;

namespace flowscope {

class FrameSink;
struct GlApi;
class RunHistory;
struct AnimationOptions;

struct ExportResult {
    enum class Kind { Done, Cancelled, Failed };
    Kind kind = Kind::Done;
    QString message; // why it failed; for a cancel, that nothing was written

    static ExportResult done() { return {}; }
    static ExportResult failed(QString why) { return {Kind::Failed, std::move(why)}; }
    static ExportResult cancelled();
    bool ok() const { return kind == Kind::Done; }
};

// progress(done, total) after each unit of work; false cancels.
using ExportProgress = std::function<bool(long done, long total)>;

// The widget as a PNG: a GL view at its framebuffer's resolution, any other at the screen's. While it is
// grabbed, its property kExportingProperty is true: a view then leaves out the controls that float over its
// picture.
inline constexpr char kExportingProperty[] = "flowscopeExporting";
ExportResult exportWidgetPng(QWidget* shown, const QString& path);
// Plots as .svg (vector: they all draw through QPainter) or .png.
ExportResult exportPlots(QWidget* plots, const QString& path, const QString& title);
// Every recorded frame that still has its tokens as one (frames, N, d) .npy, and their times in
// "<name>_times.npy".
ExportResult exportTrajectory(const RunHistory* history, const QString& path, bool asFloat32 = false);
// The scene's mean/covariance ODE solutions (Gaussian mode), solved off the UI thread with progress(done,
// 1000): the bytes of flowscope-cli moments --out.
ExportResult exportMoments(const Scene& scene, const QString& path, const ExportProgress& progress = {});
// The scene from t = 0 drawn offscreen frame by frame (the frames of flowscope-cli render) on this thread in
// an OffscreenGl context; progress(0, frames) while the cone's trajectories are solved.
ExportResult exportSceneAnimation(const Scene& scene, const AnimationOptions& options, const QString& path,
                                  const ExportProgress& progress = {});
// One or two trainers trained afresh from iteration 0 (the frames of flowscope-cli render --view training).
ExportResult exportFlowAnimation(std::vector<flows::TrainerConfig> configs, const AnimationOptions& options,
                                 const QString& path, const ExportProgress& progress = {});
// n samples of a flow from a seed, and its density on a grid (flowscope-cli sample / density), off the UI
// thread with progress(done, 1000).
ExportResult exportFlowSamples(const flows::FlowModel<float>& model, const QString& path, int n,
                               std::uint64_t seed, const ExportProgress& progress = {});
ExportResult exportFlowDensity(const flows::FlowModel<float>& model, const QString& path, int grid,
                               double extent, int references, const ExportProgress& progress = {});

// An OpenGL 3.3 core context of its own on an offscreen surface, current while the guard lives; the
// context current before (a view's) is current again when it goes. makeCurrent() again after anything that
// may have switched contexts (a progress callback repainting the views).
class OffscreenGl {
  public:
    OffscreenGl();
    ~OffscreenGl();
    OffscreenGl(const OffscreenGl&) = delete;
    OffscreenGl& operator=(const OffscreenGl&) = delete;

    bool ok() const { return error_.isEmpty(); }
    QString error() const { return error_; } // why there is no context
    bool makeCurrent();
    GlApi& gl() { return *gl_; }

  private:
    QPointer<QOpenGLContext> previous_;
    QSurface* previousSurface_ = nullptr;
    std::unique_ptr<QOffscreenSurface> surface_;
    std::unique_ptr<QOpenGLContext> context_;
    std::unique_ptr<GlApi> gl_;
    QString error_;
};

} // namespace flowscope
