// flowscope-cli render: what its headless exports share (the scene views in Render.cpp, the training view
// in RenderFlow.cpp): a QGuiApplication on Qt's "offscreen" platform, Ctrl+C that cancels an export, the
// --size option and the summary's numbers (frame images and the caption strip come from
// render/animation/AnimationExporter.h).
#pragma once

#if FLOWSCOPE_HAVE_RENDER

#include "Commands.h"
#include "render/animation/AnimationExporter.h"
#include "render/picture/PlotDecorations.h"

#include <QFont>
#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <QRectF>
#include <QString>

#include <chrono>
#include <csignal>
#include <memory>
#include <signal.h>
#include <stdexcept>
#include <string>

namespace flowscope::cli {

constexpr int kMaxSide = kAnimationMaxSide; // pixels; GL limits are checked too

// Set by SIGINT/SIGTERM while a CancelOnSignal lives: an export stops at its next step and its sink,
// destroyed without finish(), removes its temporary file.
extern volatile std::sig_atomic_t gCancel;

// Installs the handlers for its lifetime (before it, a signal ends the process with nothing written).
class CancelOnSignal {
  public:
    CancelOnSignal();
    ~CancelOnSignal();
    CancelOnSignal(const CancelOnSignal&) = delete;
    CancelOnSignal& operator=(const CancelOnSignal&) = delete;

  private:
    struct sigaction oldInt_ = {}, oldTerm_ = {};
};

// Thrown where an export sees gCancel; the command's entry point catches it (exit code 130).
struct Cancelled : std::runtime_error {
    Cancelled() : std::runtime_error("cancelled") {}
};

// render/picture's offscreen QGuiApplication (fonts and QPainter for the pictures, no window system, the
// app's dark palette), with Qt's expected warnings on such a platform silenced.
std::unique_ptr<QGuiApplication> makeOffscreenApplication();

// --size WIDTHxHEIGHT, each from 16 to kMaxSide; throws UsageError naming --size.
void parseSize(const std::string& text, int& width, int& height);

// A number with four significant digits ("0.0125", "1.5e+04").
std::string number(double v);

// "1.3 MiB", "56 KiB": a file's size, or the total of a directory's files (frames/); "?" if unreadable.
std::string fileSize(const std::string& path);

// "wrote OUT (F frames, SIZE) in S s, R frames/s" on stderr, without the newline: a command adds its notes.
void printWrote(const std::string& out, long frames, double seconds);

// An export's progress on stderr, "frame K/F, R frames/s": on a terminal one line rewritten every frame,
// else a line every tenth of the frames. The clock starts when it is made.
class FrameProgress {
  public:
    explicit FrameProgress(long frames);
    // `done` frames are written.
    void report(long done);
    // Ends the terminal's line after the last report.
    void endLine() const;
    // After the last frame: ends the line, finishes `sink` (the file appears under `out`) and prints
    // printWrote's summary, without the newline.
    void finish(FrameSink& sink, const std::string& out) const;
    // Since the start.
    double seconds() const;

  private:
    long frames_;
    bool tty_;
    std::chrono::steady_clock::time_point start_;
    long lastReported_ = -1;
};

// The sink of --out for frames of width x height at fps (engine/media: .mp4, .gif or a PNG directory);
// a path the sinks cannot take is a UsageError naming --out.
std::unique_ptr<FrameSink> openOutput(const std::string& out, int width, int height, double fps);

// The two exports renderCommand (RenderCommon.cpp) picks between: a scene's views (Render.cpp) and
// --view training (RenderFlow.cpp). They throw Cancelled when a signal stops them.
int renderScene(const Args& args);
int renderFlow(const Args& args);

} // namespace flowscope::cli

#endif
