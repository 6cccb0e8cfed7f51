// flowscope-cli render: the helpers its headless exports share (RenderCommon.h).
#include "RenderCommon.h"

#if FLOWSCOPE_HAVE_RENDER

#include "Commands.h"
#include "engine/core/Text.h"
#include "engine/media/FrameSink.h"
#include "engine/scene/RunCost.h"
#include "render/picture/OffscreenApplication.h"

#include <QFontMetricsF>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <regex>
#include <sstream>
#include <unistd.h>

namespace flowscope::cli {

volatile std::sig_atomic_t gCancel = 0;

namespace {

extern "C" void onCancelSignal(int) {
    gCancel = 1;
}

// Qt's warnings, less two that are expected here: the views are QOpenGLWidgets on a platform without OpenGL
// (they draw through EGL instead, never through Qt), and no XDG runtime directory exists on a server.
void quietQtMessages(QtMsgType type, const QMessageLogContext&, const QString& message) {
    if (message.startsWith(QLatin1String("QOpenGLWidget is not supported")) ||
        message.startsWith(QLatin1String("QStandardPaths: XDG_RUNTIME_DIR")))
        return;
    if (type != QtDebugMsg && type != QtInfoMsg) std::cerr << "Qt: " << message.toStdString() << "\n";
}

} // namespace

CancelOnSignal::CancelOnSignal() {
    gCancel = 0;
    struct sigaction sa = {};
    sa.sa_handler = onCancelSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &oldInt_);
    sigaction(SIGTERM, &sa, &oldTerm_);
}

CancelOnSignal::~CancelOnSignal() {
    sigaction(SIGINT, &oldInt_, nullptr);
    sigaction(SIGTERM, &oldTerm_, nullptr);
}

std::unique_ptr<QGuiApplication> makeOffscreenApplication() {
    qInstallMessageHandler(quietQtMessages);
    return flowscope::makeOffscreenApplication("flowscope-cli");
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
                     " (e.g. 1280x720), got " + quoteForMessage(text));
}

std::string number(double v) {
    std::ostringstream s;
    s << std::setprecision(4) << v;
    return s.str();
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

void printWrote(const std::string& out, long frames, double seconds) {
    std::cerr << "wrote " << out << " (" << frames << " frames, " << fileSize(out) << ") in " << std::fixed
              << std::setprecision(1) << seconds << " s, " << double(frames) / std::max(seconds, 1e-9)
              << " frames/s" << std::defaultfloat;
}

FrameProgress::FrameProgress(long frames)
    : frames_(frames), tty_(::isatty(2)), start_(std::chrono::steady_clock::now()) {}

double FrameProgress::seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void FrameProgress::report(long done) {
    if (!tty_ && done * 10 / frames_ == lastReported_) return; // elsewhere a line every tenth
    lastReported_ = done * 10 / frames_;
    const double rate = double(done) / std::max(seconds(), 1e-9);
    std::cerr << (tty_ ? "\r" : "") << "frame " << done << "/" << frames_ << ", " << std::fixed
              << std::setprecision(1) << rate << " frames/s" << std::defaultfloat;
    if (done < frames_) std::cerr << ", " << formatDuration(double(frames_ - done) / rate) << " left   ";
    std::cerr << (tty_ ? "" : "\n") << std::flush;
}

void FrameProgress::endLine() const {
    if (tty_) std::cerr << "\n";
}

void FrameProgress::finish(FrameSink& sink, const std::string& out) const {
    endLine();
    sink.finish();
    printWrote(out, frames_, seconds());
}

std::unique_ptr<FrameSink> openOutput(const std::string& out, int width, int height, double fps) {
    VideoOptions video;
    video.width = width;
    video.height = height;
    video.fps = fps;
    try {
        return openFrameSink(out, video);
    } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--out: ") + e.what());
    }
}

// A Cancelled export ends with exit code 130 and the note that nothing was written: its sink and every GL
// object are gone by then, so nothing is left under --out.
int renderCommand(const Args& args) {
    const auto view = std::find(args.begin(), args.end(), "--view");
    const bool training = view != args.end() && view + 1 != args.end() && view[1] == "training";
    try {
        return training ? renderFlow(args) : renderScene(args);
    } catch (const Cancelled&) {
        std::cerr << "\nflowscope-cli render: cancelled; nothing was written\n";
        return 130;
    }
}

} // namespace flowscope::cli

#else // a build without the pictures (Qt Gui) or without EGL: both forms of render say so

#include "Commands.h"

#include <iostream>

namespace flowscope::cli {

int renderCommand(const Args&) {
    std::cerr
        << "flowscope-cli render: not available in this build (it draws the app's pictures with the OpenGL "
           "backend's EGL: configure with -DFLOWSCOPE_BUILD_GUI=ON -DFLOWSCOPE_BUILD_GPU=ON, libegl-dev "
           "installed)\n";
    return 1;
}

} // namespace flowscope::cli

#endif
