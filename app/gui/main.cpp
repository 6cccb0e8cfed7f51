// flowscope: the desktop application.
//
//   flowscope [SCENE.json|SHARE] [--screenshot out.png [--after-steps K]] [--max-speed] [--size WxH]
//             [--train DATASET [--side-by-side]] [--transformer A|B] [--model MODEL.safetensors]
//
// Without a scene it reopens the last session's scene (window layout, theme and view options too), else the
// preset "default.json" (or a built-in default when that file is missing), and starts playing. With
// --screenshot nothing of the last session is restored, so pictures are reproducible. --screenshot waits
// until the run reaches step K (or finishes), saves the window as a PNG and exits: tests and humans use it to
// look at what the application draws. --train opens the Flows tab and trains a flow on a toy dataset with the
// Training panel's default settings (the particle run stays paused); with --screenshot, K counts training
// iterations and the picture is taken once the view shows iteration K. --transformer does the same in the
// Transformers tab: a continuous-time Transformer on task A or B with the Transformer panel's defaults
// (λ_OT above the threshold, compared with λ_OT = 0). --model opens a trained flow or Transformer in its tab
// (File ▸ Open trained model), paused; with --screenshot the picture is taken once the view shows it.
#include "engine/backend/Registry.h"
#include "engine/core/Text.h"
#include "engine/io/AtomicFile.h"
#include "engine/io/OutputSet.h"
#include "engine/scene/DefaultScene.h"
#include "engine/scene/SceneShareString.h"
#include "ui/panels/FlowPanel.h"
#include "ui/panels/TransformerPanel.h"
#include "ui/shell/MainWindow.h"
#include "ui/shell/OpenGLSetup.h"
#include "ui/views/ConeView.h"
#include "ui/views/FlowView.h"
#include "ui/views/ParticleView.h"
#include "ui/views/TransformerView.h"
#include "ui/widgets/Theme.h"
#include "ui/workspaces/flows/FlowsWorkspace.h"
#include "ui/workspaces/inverse/InverseWorkspace.h"
#include "ui/workspaces/particles/ParticlesWorkspace.h"
#include "ui/workspaces/transformers/TransformersWorkspace.h"

#include <QApplication>
#include <QBuffer>
#include <QCommandLineParser>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QMessageBox>
#include <QRegularExpression>
#include <QScreen>
#include <QSettings>
#include <QTimer>
#include <cerrno>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#ifndef FLOWSCOPE_PRESET_DIR
#define FLOWSCOPE_PRESET_DIR ""
#endif

// --- Options ---

namespace {

struct Options {
    QString scene;
    QString screenshot;
    long afterSteps = 0;
    double timeoutSeconds = 300.0;
    bool maxSpeed = false;
    bool cone = false;
    bool frameStats = false;
    QString backend; // empty: the saved choice (or the CPU)
    QSize size{1280, 800};
    bool sizeGiven = false; // --size: exactly that; else 1280x800 bounded by the screen
    QString train;          // a toy dataset to train a flow on (the Flows tab); empty: none
    bool sideBySide = false;
    QString transformer;    // "A" or "B": a continuous-time Transformer to train (the Transformers tab)
    QString model;          // a trained model to open (the Flows, Transformers or Inverse tab)
    bool posterior = false; // the screenshot waits for the Inverse tab's opened posterior (--model)
};

Options parseOptions(QCoreApplication& app) {
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Flowscope: the particle dynamics of Transformers."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(
        QStringLiteral("scene"),
        QStringLiteral("Scene file (JSON), or a scene share string (fs1....), to open."),
        QStringLiteral("[SCENE.json|SHARE]"));
    const QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                        QStringLiteral("Save the window as a PNG, then exit."),
                                        QStringLiteral("out.png"));
    const QCommandLineOption afterSteps(QStringLiteral("after-steps"),
                                        QStringLiteral("With --screenshot: wait until step K (or the end)."),
                                        QStringLiteral("K"), QStringLiteral("0"));
    const QCommandLineOption timeout(QStringLiteral("timeout"),
                                     QStringLiteral("With --screenshot: give up after this many seconds."),
                                     QStringLiteral("seconds"), QStringLiteral("300"));
    const QCommandLineOption maxSpeed(QStringLiteral("max-speed"),
                                      QStringLiteral("Step as fast as possible (no 120 steps/s cap)."));
    const QCommandLineOption frameStats(
        QStringLiteral("frame-stats"),
        QStringLiteral("With --screenshot: print the particle view's paint time and the UI thread's event "
                       "latency (a 5 ms timer's lateness) measured while the run went on."));
    const QCommandLineOption view(QStringLiteral("view"),
                                  QStringLiteral("Central view to show: particles or cone."),
                                  QStringLiteral("particles|cone"), QStringLiteral("particles"));
    const QCommandLineOption size(QStringLiteral("size"), QStringLiteral("Window size in logical pixels."),
                                  QStringLiteral("WxH"), QStringLiteral("1280x800"));
    // The backend ids come from the registry (engine/backend/Registry.h).
    QStringList backendIds;
    for (const flowscope::BackendInfo& b : flowscope::listBackends())
        backendIds << QString::fromStdString(b.id);
    const QCommandLineOption backend(
        QStringLiteral("backend"),
        QStringLiteral("Where velocities are computed: %1.").arg(backendIds.join(QStringLiteral(", "))),
        backendIds.join(QLatin1Char('|')));
    const QCommandLineOption train(
        QStringLiteral("train"),
        QStringLiteral("Open the Flows tab and train a flow on this toy dataset "
                       "(8gaussians, moons, ...); --after-steps counts iterations."),
        QStringLiteral("DATASET"));
    const QCommandLineOption sideBySide(QStringLiteral("side-by-side"),
                                        QStringLiteral("With --train: with and without the RWPO layer."));
    const QCommandLineOption transformer(
        QStringLiteral("transformer"),
        QStringLiteral("Open the Transformers tab and train a continuous-time Transformer on task A or B "
                       "beside lambda_OT = 0; --after-steps counts iterations."),
        QStringLiteral("A|B"));
    const QCommandLineOption model(
        QStringLiteral("model"),
        QStringLiteral("Open a trained flow, Transformer or posterior (.safetensors) in its tab."),
        QStringLiteral("MODEL.safetensors"));
    parser.addOptions({screenshot, afterSteps, timeout, maxSpeed, size, view, frameStats, backend, train,
                       sideBySide, transformer, model});
    parser.process(app);

    // A bad option: one line naming it, exit code 2 (before any window opens).
    const auto fail = [](const QString& option, const QString& message) {
        std::fprintf(stderr, "flowscope: --%s: %s\n", qPrintable(option), qPrintable(message));
        std::exit(2);
    };
    const auto got = [](const QString& value) {
        return QString::fromStdString(", got " + flowscope::quoteForMessage(value.toStdString()));
    };
    Options o;
    const QStringList positional = parser.positionalArguments();
    if (positional.size() > 1)
        fail(QStringLiteral("scene"),
             QStringLiteral("one SCENE.json or share string at most, got %1 arguments")
                 .arg(positional.size()));
    if (!positional.isEmpty()) o.scene = positional.front();
    o.screenshot = parser.value(screenshot);
    bool ok = true;
    o.afterSteps = parser.value(afterSteps).toLong(&ok);
    if (!ok || o.afterSteps < 0)
        fail(QStringLiteral("after-steps"),
             "expected a non-negative integer" + got(parser.value(afterSteps)));
    o.timeoutSeconds = parser.value(timeout).toDouble(&ok);
    if (!ok || !(o.timeoutSeconds > 0) || o.timeoutSeconds > 1e6)
        fail(QStringLiteral("timeout"), "expected seconds in (0, 1e6]" + got(parser.value(timeout)));
    o.maxSpeed = parser.isSet(maxSpeed);
    o.frameStats = parser.isSet(frameStats);
    o.backend = parser.value(backend);
    if (!o.backend.isEmpty() && !backendIds.contains(o.backend))
        fail(QStringLiteral("backend"),
             "expected one of " + backendIds.join(QStringLiteral(", ")) + got(o.backend));
    o.cone = parser.value(view) == QStringLiteral("cone");
    if (!o.cone && parser.value(view) != QStringLiteral("particles"))
        fail(QStringLiteral("view"), "expected particles or cone" + got(parser.value(view)));
    const auto m = QRegularExpression(QStringLiteral("^(\\d{1,5})x(\\d{1,5})$")).match(parser.value(size));
    if (!m.hasMatch() || m.captured(1).toInt() < 320 || m.captured(2).toInt() < 200 ||
        m.captured(1).toInt() > 16384 || m.captured(2).toInt() > 16384)
        fail(QStringLiteral("size"), "expected WxH from 320x200 to 16384x16384" + got(parser.value(size)));
    o.size = QSize(m.captured(1).toInt(), m.captured(2).toInt());
    o.sizeGiven = parser.isSet(size);
    o.train = parser.value(train);
    o.sideBySide = parser.isSet(sideBySide);
    if (o.sideBySide && o.train.isEmpty())
        fail(QStringLiteral("side-by-side"), QStringLiteral("goes with --train"));
    o.transformer = parser.value(transformer);
    if (!o.transformer.isEmpty() &&
        (o.transformer != QStringLiteral("A") && o.transformer != QStringLiteral("B")))
        fail(QStringLiteral("transformer"), "expected A or B" + got(o.transformer));
    if (!o.transformer.isEmpty() && !o.train.isEmpty())
        fail(QStringLiteral("transformer"), QStringLiteral("give --train or --transformer, not both"));
    o.model = parser.value(model);
    if (!o.model.isEmpty() && (!o.train.isEmpty() || !o.transformer.isEmpty()))
        fail(QStringLiteral("model"),
             QStringLiteral("opens a trained model: not with --train or --transformer"));
    // The screenshot's file is checked now, not after the run (engine/io/OutputSet.h).
    if (!o.screenshot.isEmpty()) {
        try {
            const flowscope::OutputSet check({o.screenshot.toStdString()},
                                             {o.scene.toStdString(), o.model.toStdString()}, "--screenshot");
        } catch (const flowscope::OutputError& e) {
            std::fprintf(stderr, "flowscope: %s\n", e.what());
            std::exit(2);
        }
    }
    return o;
}

// Opens the requested scene, or the default preset, or the built-in default. False (after telling the user)
// when an explicitly requested scene cannot be opened in screenshot mode, where nobody can read a dialog.
bool openInitialScene(flowscope::MainWindow& w, const Options& o,
                      const std::optional<std::pair<flowscope::Scene, QString>>& last) {
    auto& particles = w.workspace<flowscope::ParticlesWorkspace>();
    if (o.scene.isEmpty() && last && particles.setScene(last->first, last->second)) return true;
    if (!o.scene.isEmpty()) {
        // A share string in place of the path (an existing file of that name wins), as flowscope-cli takes.
        const bool share =
            flowscope::looksLikeShareString(o.scene.toStdString()) && !QFileInfo::exists(o.scene);
        if (share ? w.openShareString(o.scene) : particles.openSceneFile(o.scene)) return true;
        std::fprintf(stderr, "flowscope: %s\n", qPrintable(w.lastError()));
        if (!o.screenshot.isEmpty()) return false;
        QMessageBox::warning(nullptr, QStringLiteral("Flowscope"), w.lastError());
    }
    const QString preset = QStringLiteral(FLOWSCOPE_PRESET_DIR "/default.json");
    if (QFileInfo::exists(preset)) {
        if (particles.openSceneFile(preset)) return true;
        std::fprintf(stderr, "flowscope: %s\n", qPrintable(w.lastError()));
    }
    return particles.setScene(flowscope::builtinDefaultScene());
}

// --- Screenshots and their timing ---

// Measures how promptly the UI thread serves events while the simulation runs: a 5 ms timer records how
// late each tick comes (the time between ticks minus 5 ms). A frozen UI shows as large lateness.
struct LatencyProbe {
    QElapsedTimer clock;
    qint64 last = -1;
    std::vector<double> lateMs;
    void tick() {
        const qint64 now = clock.nsecsElapsed();
        if (last >= 0) lateMs.push_back(std::max(0.0, double(now - last) * 1e-6 - 5.0));
        last = now;
    }
};

// A screenshot's wait on a training workspace (Flows, Transformers, Inverse): once its run reaches iteration
// `after` (or stops), it is paused, which makes the worker draw a picture of the last iteration; ready when
// every trainer's picture is of its iteration. The view is refreshed when ready or `late`.
template <class Workspace> bool trainingReady(Workspace& w, long after, bool late) {
    const auto t = w.runner().snapshot();
    const bool reached = t && (t->iteration() >= after || !t->error.empty());
    if (reached) w.runner().pause();
    bool shown = reached && !t->playing;
    if (shown)
        for (const auto& trainer : t->trainers)
            shown = shown && trainer.picture && trainer.picture->iteration == trainer.iteration;
    if (shown || late) w.view()->refresh();
    return shown;
}

// Polls the runner (no extra thread, no waiting in the UI thread) and saves the window once the run is far
// enough. Exit codes: 0 saved, 1 could not save, 3 timed out (the image is saved anyway).
void scheduleScreenshot(QApplication& app, flowscope::MainWindow& w, const Options& o) {
    // The probe belongs to both timers' slots (they go with the timers, children of app), never to one of
    // them: app.exit() ends the event loop only after the current dispatch, and Qt fires every timer already
    // due in one pass, so the 5 ms tick can still run after the screenshot slot has finished. Deleting the
    // probe there was a use-after-free (now and then glibc's "double free or corruption"). The screenshot
    // slot stops the tick before it reads the statistics.
    const auto probe = std::make_shared<LatencyProbe>();
    QTimer* tick = nullptr;
    if (o.frameStats) {
        tick = new QTimer(&app);
        tick->setTimerType(Qt::PreciseTimer);
        probe->clock.start();
        QObject::connect(tick, &QTimer::timeout, &app, [probe] { probe->tick(); });
        tick->start(5);
    }
    auto* timer = new QTimer(&app);
    auto* clock = new QElapsedTimer;
    clock->start();
    QObject::connect(timer, &QTimer::timeout, &app, [&app, &w, o, timer, clock, probe, tick] {
        auto& particles = w.workspace<flowscope::ParticlesWorkspace>();
        auto& flows = w.workspace<flowscope::FlowsWorkspace>();
        auto& transformers = w.workspace<flowscope::TransformersWorkspace>();
        auto& inverse = w.workspace<flowscope::InverseWorkspace>();
        const auto s = particles.runner().snapshot();
        const bool late = clock->elapsed() > qint64(o.timeoutSeconds * 1000.0);
        if (!o.train.isEmpty()) {
            if (!trainingReady(flows, o.afterSteps, late) && !late) return;
        } else if (!o.transformer.isEmpty()) {
            if (!trainingReady(transformers, o.afterSteps, late) && !late) return;
        } else if (o.posterior) {
            if (!trainingReady(inverse, o.afterSteps, late) && !late) return;
        } else {
            const bool ready = s && (s->step >= o.afterSteps || s->finished || !s->error.empty()) &&
                               !particles.coneView()->solving();
            if (!ready && !late) return;
        }
        timer->stop();
        if (tick) tick->stop();
        delete clock;
        particles.pause(); // the Play action and the HUD both say so in the picture
        flows.runner().pause();
        transformers.runner().pause();
        inverse.runner().pause();
        particles.particleView()->refresh(); // draw exactly the state that satisfied the condition
        const QImage image = w.grabWindowImage();
        QByteArray png;
        QBuffer buffer(&png);
        buffer.open(QIODevice::WriteOnly);
        try {
            if (!image.save(&buffer, "PNG")) throw std::runtime_error("cannot encode the window as PNG");
            flowscope::writeFileAtomically(o.screenshot.toStdString(), [&](std::ostream& out) {
                out.write(png.constData(), std::streamsize(png.size()));
            });
        } catch (const std::exception& e) {
            std::fprintf(stderr, "flowscope: --screenshot: %s\n", e.what());
            app.exit(1);
            return;
        }
        if (late) std::fprintf(stderr, "flowscope: timed out before step %ld\n", o.afterSteps);
        if (o.frameStats && s && o.train.isEmpty() && o.transformer.isEmpty()) {
            std::vector<double> v = probe->lateMs;
            std::sort(v.begin(), v.end());
            const auto q = [&v](double p) {
                return v.empty() ? 0.0 : v[std::size_t(p * double(v.size() - 1))];
            };
            double mean = 0.0;
            for (double x : v) mean += x / double(std::max<std::size_t>(v.size(), 1));
            std::printf("{\"n\": %ld, \"steps\": %ld, \"steps_per_second\": %.1f, \"paint_ms\": %.2f, "
                        "\"ui_late_ms_mean\": %.2f, \"ui_late_ms_p50\": %.2f, \"ui_late_ms_p99\": %.2f, "
                        "\"ui_late_ms_max\": %.2f, \"ticks\": %zu}\n",
                        long(s->tokens.rows()), s->step, s->stepsPerSecond,
                        particles.particleView()->frameMilliseconds(), mean, q(0.5), q(0.99),
                        v.empty() ? 0.0 : v.back(), v.size());
        }
        app.exit(late ? 3 : 0);
    });
    timer->start(20);
}

// --- Start-up ---

void nameTheApplication() {
    QCoreApplication::setApplicationName(QStringLiteral("Flowscope"));
    QCoreApplication::setApplicationVersion(QStringLiteral("0.1.0"));
}

// --help and --version print and exit: they need no window system, so they work without a display.
bool asksOnlyForText(int argc, char** argv) {
    for (int i = 1; i < argc; ++i)
        for (const char* flag : {"-h", "--help", "--help-all", "-v", "--version"})
            if (std::strcmp(argv[i], flag) == 0) return true;
    return false;
}

// Without XDG_RUNTIME_DIR (containers, Xvfb, ssh sessions) Qt warns on every start and then uses
// <temp>/runtime-<uid> anyway. That directory, made private (0700) as Qt requires, is set here first, so
// nothing is printed; where it cannot be made or is not ours, the variable stays unset and Qt says so.
void provideRuntimeDir() {
    if (!qEnvironmentVariableIsEmpty("XDG_RUNTIME_DIR")) return;
    const QByteArray dir = QFile::encodeName(QDir::tempPath()) + "/runtime-" + QByteArray::number(getuid());
    if (::mkdir(dir.constData(), 0700) != 0 && errno != EEXIST) return;
    struct stat st = {};
    if (::lstat(dir.constData(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
        (st.st_mode & 0777) != 0700)
        return;
    qputenv("XDG_RUNTIME_DIR", dir);
}

} // namespace

int main(int argc, char** argv) {
    provideRuntimeDir();
    if (asksOnlyForText(argc, argv)) {
        QCoreApplication core(argc, argv);
        nameTheApplication();
        parseOptions(core); // prints and exits
        return 0;
    }
    flowscope::requestOpenGLCore(); // before QApplication: the default format is read at context creation
    QApplication app(argc, argv);
    nameTheApplication();
    flowscope::applyDarkTheme(app);
    const Options options = parseOptions(app);

    QApplication::setOrganizationName(QStringLiteral("Flowscope"));
    flowscope::MainWindow window;
    auto& particles = window.workspace<flowscope::ParticlesWorkspace>();
    auto& flows = window.workspace<flowscope::FlowsWorkspace>();
    auto& transformers = window.workspace<flowscope::TransformersWorkspace>();
    particles.setPresetDirectory(QStringLiteral(FLOWSCOPE_PRESET_DIR));
    // A first window no larger than the screen's free area (a 1024x640 screen gets 1024x640, not 1280x800
    // running off it); --size is taken as asked.
    QSize size = options.size;
    QSize available;
    if (const QScreen* screen = QGuiApplication::primaryScreen())
        available = screen->availableGeometry().size();
    if (!options.sizeGiven && available.isValid()) size = size.boundedTo(available);
    window.resize(size);
    // A first window that fills the screen's free area in either direction is maximized instead: the window
    // manager puts its frame (a title bar of 20 to 40 px) around the content, so a 1280x800 window on a
    // 1280x800 screen would have its status bar below the screen. Later launches restore the window's saved
    // geometry.
    const bool fillsTheScreen = available.isValid() && (size.width() >= available.width() ||
                                                        size.height() >= available.height() - 40);
    const bool maximize = !options.sizeGiven && options.screenshot.isEmpty() && fillsTheScreen &&
                          !QSettings().contains(QStringLiteral("window/geometry"));
    std::optional<std::pair<flowscope::Scene, QString>> last;
    if (options.screenshot.isEmpty()) {
        window.restoreSettings();
        last = particles.savedScene();
    }
    if (!openInitialScene(window, options, last)) return 2;
    particles.setMaxSpeed(options.maxSpeed);
    if (options.cone) window.showPage(particles.coneView());
    if (!options.backend.isEmpty()) particles.setBackend(options.backend);
    if (maximize)
        window.showMaximized();
    else
        window.show();
    if (!options.transformer.isEmpty()) {
        const auto task =
            options.transformer == QStringLiteral("A") ? flowscope::ot::Task::A : flowscope::ot::Task::B;
        if (!transformers.start(flowscope::TransformerPanel::defaults(task), true, true)) {
            std::fprintf(stderr, "flowscope: %s\n", qPrintable(window.lastError()));
            return 2;
        }
        window.showPage(transformers.view());
        window.hideWelcome(); // what was asked for is shown
    } else if (options.train.isEmpty()) {
        window.whenSeen(particles, [&particles] { particles.play(); });
    } else {
        flowscope::flows::TrainerConfig config = flows.panel()->config();
        config.dataset = options.train.toStdString();
        if (!flows.start(config, options.sideBySide, true)) {
            std::fprintf(stderr, "flowscope: %s\n", qPrintable(window.lastError()));
            return 2;
        }
        window.showPage(flows.view());
        window.hideWelcome();
    }
    Options shot = options;
    if (!options.model.isEmpty()) {
        if (!window.openModelFile(options.model)) {
            std::fprintf(stderr, "flowscope: %s\n", qPrintable(window.lastError()));
            return 2;
        }
        // The screenshot waits for the opened model's picture as for a training run's (at iteration 0), in
        // the tab that opened it.
        flowscope::Workspace* opened = window.activeWorkspace();
        if (opened == &flows)
            shot.train = QStringLiteral("model");
        else if (opened == &transformers)
            shot.transformer = QStringLiteral("model");
        else
            shot.posterior = true;
        shot.afterSteps = 0; // an opened model is paused: its picture at its own iteration is the one to take
    }
    if (!shot.screenshot.isEmpty()) scheduleScreenshot(app, window, shot);
    return app.exec();
}
