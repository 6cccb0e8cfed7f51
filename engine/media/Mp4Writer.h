// Flowscope media: H.264 video in an MP4 file, through FFmpeg's libavcodec/libavformat/libswscale.
//
// The encoder is libx264 when libavcodec has it (Debian's does), else libavcodec's default H.264 encoder.
// Frames are converted from RGBA to yuv420p with BT.709 coefficients, limited range, and the stream is
// tagged so (players assume BT.709 for HD anyway); quality is constant (CRF), the time base is 1/fps with
// one tick per frame, and "+faststart" puts the index at the front so a browser can start playing before
// the whole file has arrived. yuv420p needs even sizes: an odd width or height is padded by one pixel, the
// last column or row repeated, so the video is (width + 1) or (height + 1) pixels.
//
// The libraries are not linked: they are opened (dlopen, by the soname of the headers built against) when an
// MP4 is first written or asked about (available()), so a process that does neither does not load them.
// Without libav at build time (FLOWSCOPE_HAVE_LIBAV undefined), or when the libraries cannot be loaded, the
// constructor throws std::runtime_error saying so.
#pragma once

#include "engine/media/FrameSink.h"

#include <memory>
#include <string>

namespace flowscope {

struct Mp4Options {
    double fps = 30;
    int crf = 20; // 0..51: 0 lossless, 18-23 visually good, +6 about halves the size
};

class Mp4Writer : public FrameSink {
  public:
    // Opens the encoder and its staged file (temporaryPathFor); std::runtime_error naming `path` when either
    // fails, std::invalid_argument for bad sizes or options.
    Mp4Writer(const std::string& path, int width, int height, const Mp4Options& options = {});
    ~Mp4Writer() override; // without finish(): frees the encoder and removes the temporary file
    Mp4Writer(const Mp4Writer&) = delete;
    Mp4Writer& operator=(const Mp4Writer&) = delete;

    void addFrame(const std::uint8_t* rgba, int strideBytes) override;
    void finish() override; // flushes the encoder, writes the index, renames to the final path

    int framesAdded() const { return frames_; }
    // Whether libav was built against, loads, and has an H.264 encoder; if not, why (else ""). The first
    // call loads the libraries.
    static bool available() { return unavailableReason().empty(); }
    static std::string unavailableReason();

  private:
    struct State; // the libav objects
    std::unique_ptr<State> state_;
    std::string path_;
    int width_, height_, frames_ = 0;
    bool finished_ = false;
};

} // namespace flowscope
