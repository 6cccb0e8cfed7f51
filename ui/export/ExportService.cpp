#include "ui/export/ExportService.h"

#include "engine/flows/Sampling.h"
#include "engine/gaussian/MomentField.h"
#include "engine/gaussian/MomentFiles.h"
#include "engine/gaussian/MomentSolver.h"
#include "engine/io/Npy.h"
#include "engine/io/Trajectory.h"
#include "engine/media/FrameSink.h"
#include "engine/runner/RunHistory.h"
#include "engine/scene/RunBudget.h"
#include "render/GlApi.h"
#include "render/animation/AnimationExporter.h"
#include "render/animation/FlowAnimator.h"
#include "ui/widgets/OffThread.h"

#include <QDir>
#include <QFile>
#include <QImage>
#include <QOffscreenSurface>
#include <QOpenGLWidget>
#include <QPainter>
#include <QRegularExpression>
#include <QSaveFile>
#include <QSvgGenerator>
#include <QWidget>

namespace flowscope {

namespace {

QString native(const QString& path) {
    return QDir::toNativeSeparators(path);
}

QString text(const std::exception& e) {
    return QString::fromStdString(e.what());
}

// The sink of an animation at `path` (.mp4, .gif or a PNG directory); null with *why.
std::unique_ptr<FrameSink> openSink(const QString& path, const AnimationOptions& options, QString* why) {
    VideoOptions video;
    video.width = options.width;
    video.height = options.height;
    video.fps = options.fps;
    try {
        return openFrameSink(QFile::encodeName(path).toStdString(), video);
    } catch (const std::exception& e) {
        *why = QObject::tr("Cannot export to %1:\n%2").arg(native(path), text(e));
        return nullptr;
    }
}

// The sampler's job off the UI thread, progress as done/1000; false when cancelled.
bool runSamplingJob(const std::function<void(const flows::SamplingProgress&)>& job,
                    const ExportProgress& progress) {
    try {
        runOffThread([&](const JobProgress& p) { job(p); },
                     [&](double f) { return !progress || progress(long(f * 1000.0), 1000); });
    } catch (const flows::SamplingCancelled&) {
        return false;
    }
    return true;
}

} // namespace

ExportResult ExportResult::cancelled() {
    return {Kind::Cancelled, QObject::tr("Export cancelled; nothing was written.")};
}

// ---------------------------------------------------------------------------------------------------------
// OffscreenGl

OffscreenGl::OffscreenGl() : previous_(QOpenGLContext::currentContext()), gl_(std::make_unique<GlApi>()) {
    previousSurface_ = previous_ ? previous_->surface() : nullptr;
    QSurfaceFormat format = QSurfaceFormat::defaultFormat();
    if (format.version() < qMakePair(3, 3)) {
        format.setVersion(3, 3);
        format.setProfile(QSurfaceFormat::CoreProfile);
    }
    surface_ = std::make_unique<QOffscreenSurface>();
    surface_->setFormat(format);
    surface_->create();
    context_ = std::make_unique<QOpenGLContext>();
    context_->setFormat(format);
    if (!surface_->isValid() || !context_->create() || !makeCurrent()) {
        error_ = QObject::tr("no OpenGL context for offscreen drawing");
        return;
    }
    std::string why;
    QOpenGLContext* context = context_.get();
    if (!gl_->load([context](const char* name) { return GlApi::Proc(context->getProcAddress(name)); }, &why))
        error_ = QString::fromStdString(why);
}

OffscreenGl::~OffscreenGl() {
    if (context_ && QOpenGLContext::currentContext() == context_.get()) context_->doneCurrent();
    if (previous_ && previousSurface_) previous_->makeCurrent(previousSurface_);
}

bool OffscreenGl::makeCurrent() {
    return context_->makeCurrent(surface_.get());
}

// ---------------------------------------------------------------------------------------------------------
// Pictures of widgets

ExportResult exportWidgetPng(QWidget* shown, const QString& path) {
    QImage image;
    // A view draws its picture for an export, without the controls floating over it (the Quick controls, a
    // hover's tooltip): it reads this property while it paints.
    if (shown) shown->setProperty(kExportingProperty, true);
    if (auto* gl = qobject_cast<QOpenGLWidget*>(shown))
        image = gl->grabFramebuffer();
    else if (shown)
        image = shown->grab().toImage();
    if (shown) shown->setProperty(kExportingProperty, false);
    QSaveFile file(path); // atomic: a failed write leaves no partial file under the name
    if (image.isNull() || !file.open(QIODevice::WriteOnly) || !image.save(&file, "PNG") || !file.commit())
        return ExportResult::failed(
            QObject::tr("Cannot write %1: %2")
                .arg(path, image.isNull() ? QObject::tr("nothing drawn") : file.errorString()));
    return ExportResult::done();
}

ExportResult exportPlots(QWidget* plots, const QString& path, const QString& title) {
    const bool svg = path.endsWith(QStringLiteral(".svg"), Qt::CaseInsensitive);
    if (!svg && !path.endsWith(QStringLiteral(".png"), Qt::CaseInsensitive))
        return ExportResult::failed(
            QObject::tr("Cannot write %1: plots are exported as .svg or .png").arg(path));
    if (!plots || plots->width() < 2 || plots->height() < 2)
        return ExportResult::failed(
            QObject::tr("Nothing to export: the plots are hidden (show the Plots panel)"));
    QSaveFile file(path); // atomic: a failed write leaves no partial file under the name
    bool ok = file.open(QIODevice::WriteOnly);
    if (ok && svg) {
        // Everything the plots draw goes through QPainter, so the SVG is vector graphics: text stays text.
        QSvgGenerator generator;
        generator.setOutputDevice(&file);
        generator.setSize(plots->size());
        generator.setViewBox(QRect(QPoint(0, 0), plots->size()));
        generator.setTitle(title);
        QPainter painter;
        ok = painter.begin(&generator);
        if (ok) {
            plots->render(&painter);
            ok = painter.end();
        }
    } else if (ok) {
        const QImage image = plots->grab().toImage(); // at the screen's device pixel ratio
        ok = !image.isNull() && image.save(&file, "PNG");
    }
    if (!ok || !file.commit())
        return ExportResult::failed(QObject::tr("Cannot write %1: %2").arg(path, file.errorString()));
    return ExportResult::done();
}

// ---------------------------------------------------------------------------------------------------------
// Runs

ExportResult exportTrajectory(const RunHistory* history, const QString& path, bool asFloat32) {
    std::vector<RecordedFrame> frames;
    if (history) frames = history->since(0);
    std::vector<const Tokens*> tokens;
    std::vector<double> times;
    for (const RecordedFrame& f : frames)
        if (f.tokens) {
            tokens.push_back(f.tokens.get());
            times.push_back(f.t);
        }
    if (tokens.empty())
        return ExportResult::failed(QObject::tr("Nothing to export: the run has no recorded frame yet."));
    QString timesPath = path;
    timesPath.replace(QRegularExpression(QStringLiteral("\\.npy$")), QString());
    timesPath += QStringLiteral("_times.npy");
    try {
        writeTrajectoryNpy(path.toStdString(), tokens, asFloat32);
        writeNpy(timesPath.toStdString(), {std::int64_t(times.size())}, times.data(), false);
    } catch (const std::exception& e) {
        return ExportResult::failed(QObject::tr("Cannot export the trajectory:\n%1").arg(text(e)));
    }
    return ExportResult::done();
}

ExportResult exportMoments(const Scene& scene, const QString& path, const ExportProgress& progress) {
    try {
        makeMomentField(scene);  // refuses attention without moment equations
        initialGaussians(scene); // and a non-Gaussian initial distribution
    } catch (const std::exception& e) {
        return ExportResult::failed(QObject::tr("This scene has no moment trajectories:\n%1").arg(text(e)));
    }
    try {
        const MomentSolveOptions options =
            boundedMomentOptions(scene, defaultMemoryLimit(), false, "half this machine's memory");
        std::vector<MomentTrajectory> trajectories;
        bool cancelled = false;
        runOffThread(
            [&](const JobProgress& p) {
                trajectories =
                    solveAllMoments(scene, options, [&p](int done, int total) { p(double(done) / total); });
            },
            [&](double f) { return !(cancelled = progress && !progress(long(f * 1000.0), 1000)); });
        if (cancelled) return ExportResult::cancelled(); // the solver cannot stop early: nothing is written
        writeMomentsNpy(QFile::encodeName(path).toStdString(), trajectories);
    } catch (const std::exception& e) {
        return ExportResult::failed(QObject::tr("Cannot export the moment trajectories:\n%1").arg(text(e)));
    }
    return ExportResult::done();
}

ExportResult exportSceneAnimation(const Scene& scene, const AnimationOptions& options, const QString& path,
                                  const ExportProgress& progress) {
    if (const auto why = animationOptionsError(scene, options))
        return ExportResult::failed(
            QObject::tr("Cannot export the animation:\n%1").arg(QString::fromStdString(*why)));
    // The output first: a path the sinks cannot take fails before any work. From here on a cancel or a
    // failure destroys the sink unfinished, which leaves nothing under the name.
    QString error;
    std::unique_ptr<FrameSink> sink = openSink(path, options, &error);
    if (!sink) return ExportResult::failed(error);

    bool cancelled = false;
    {
        OffscreenGl context;
        if (!context.ok()) {
            error = context.error();
        } else {
            // progress() may repaint the views (their contexts become current): ours is made current again.
            const auto report = [&](long done) {
                const bool go = !progress || progress(done, options.frames);
                context.makeCurrent();
                return go;
            };
            AnimationExporter exporter(scene, options);
            bool ok = false;
            try {
                ok = exporter.initialize(context.gl()) && exporter.solve([&] { return !report(0); });
                context.makeCurrent();
                ok = ok && exporter.run(*sink, report);
                if (ok) sink->finish();
            } catch (const std::exception& e) {
                ok = false;
                error = text(e);
            }
            if (!ok && error.isEmpty()) {
                const QString what = QString::fromStdString(exporter.error());
                switch (exporter.failure()) {
                case AnimationExporter::Failure::Cancelled:
                    cancelled = true;
                    break;
                case AnimationExporter::Failure::Size:
                    error = QObject::tr("Size: %1").arg(what);
                    break;
                case AnimationExporter::Failure::Hud:
                    error = QObject::tr("Heads-up display: %1").arg(what);
                    break;
                case AnimationExporter::Failure::View:
                    error =
                        QObject::tr("View (%1): %2").arg(QString::fromLatin1(toString(options.view)), what);
                    break;
                default:
                    error = what;
                }
            }
            context.makeCurrent();
            exporter.release();
        }
    }
    if (cancelled) return ExportResult::cancelled(); // the unfinished sink removes what it wrote aside
    if (!error.isEmpty())
        return ExportResult::failed(
            QObject::tr("Cannot export the animation to %1:\n%2").arg(native(path), error));
    return ExportResult::done();
}

ExportResult exportFlowAnimation(std::vector<flows::TrainerConfig> configs, const AnimationOptions& options,
                                 const QString& path, const ExportProgress& progress) {
    if (const auto why = animationOptionsError(Scene(), options))
        return ExportResult::failed(
            QObject::tr("Cannot export the animation:\n%1").arg(QString::fromStdString(*why)));
    if (configs.empty()) return ExportResult::failed(QObject::tr("Cannot export the animation:\nno trainer"));
    const flows::TrainerConfig& first = configs.front();
    const std::string dataName = first.dataset.empty() ? std::string("your points") : first.dataset;
    std::unique_ptr<FlowAnimator> animator;
    try {
        animator = std::make_unique<FlowAnimator>(std::move(configs), options, dataName);
    } catch (const std::exception& e) {
        return ExportResult::failed(QObject::tr("Cannot export the animation:\n%1").arg(text(e)));
    }
    QString error;
    std::unique_ptr<FrameSink> sink = openSink(path, options, &error);
    if (!sink) return ExportResult::failed(error);
    // A cancel or a failure destroys the sink unfinished, which leaves nothing under the name.
    try {
        if (!animator->run(*sink, [&](long done) { return !progress || progress(done, options.frames); }))
            return ExportResult::cancelled();
        sink->finish();
    } catch (const std::exception& e) {
        return ExportResult::failed(
            QObject::tr("Cannot export the animation to %1:\n%2").arg(native(path), text(e)));
    }
    return ExportResult::done();
}

// ---------------------------------------------------------------------------------------------------------
// Flows

ExportResult exportFlowSamples(const flows::FlowModel<float>& model, const QString& path, int n,
                               std::uint64_t seed, const ExportProgress& progress) {
    if (n < 1 || n > (1 << 26))
        return ExportResult::failed(QObject::tr("Samples: n must be in [1, %1], got %2").arg(1 << 26).arg(n));
    try {
        ad::Matrix<float> X;
        const auto job = [&](const flows::SamplingProgress& p) {
            X = flows::sampleFlow(model, flows::baseSamples(model.config().d, n, seed), 2000, false, nullptr,
                                  nullptr, p);
        };
        if (!runSamplingJob(job, progress)) return ExportResult::cancelled();
        flows::writeSamplesNpy(path.toStdString(), X);
    } catch (const std::exception& e) {
        return ExportResult::failed(QObject::tr("Cannot export the samples:\n%1").arg(text(e)));
    }
    return ExportResult::done();
}

ExportResult exportFlowDensity(const flows::FlowModel<float>& model, const QString& path, int grid,
                               double extent, int references, const ExportProgress& progress) {
    try {
        flows::DensityGrid rho;
        const auto job = [&](const flows::SamplingProgress& p) {
            rho = flows::densityGrid(model, grid, extent, references, 0, p);
        };
        if (!runSamplingJob(job, progress)) return ExportResult::cancelled();
        flows::writeDensityNpy(path.toStdString(), rho);
    } catch (const std::exception& e) {
        return ExportResult::failed(QObject::tr("Cannot export the density:\n%1").arg(text(e)));
    }
    return ExportResult::done();
}

} // namespace flowscope
