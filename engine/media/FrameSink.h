// Flowscope media: the sink that exported animations are written to. A sink takes RGBA8 frames one at a
// time and writes one file (or one directory) in finish(). The format comes from the path:
//   "*.mp4"                          H.264 in MP4 (Mp4Writer.h; needs libav at build time)
//   "*.gif"                          animated GIF89a (GifWriter.h)
//   "dir/" or an existing directory  numbered PNGs dir/frame_00000.png, ... (PngWriter.h)
// Sinks are atomic like engine/io/AtomicFile.h: they write to a staged name (stagedPathFor) beside the target
// and rename it in finish(); a sink destroyed without finish() (cancelled export, exception) removes its
// temporary file or directory and leaves nothing under the final name.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace flowscope {

struct VideoOptions {
    int width = 0, height = 0; // every frame has this size
    double fps = 30;
    int crf = 20;          // H.264 constant rate factor, 0 (lossless) .. 51; 18-23 is visually good
    bool gifDither = true; // Floyd-Steinberg error diffusion when a GIF frame needs more than gifColors
    // ... only where the palette's mean squared error (RGB, 8-bit units) exceeds this (GifOptions): a
    // smooth density heat map is not dithered, a gradient colour bar is.
    double gifDitherAbove = 12.0;
    int gifColors = 256; // GIF palette size, 2..256
    // Pixels within this many levels per channel of what the GIF shows are not re-encoded (GifOptions): an
    // invisible difference that halves a training animation (slowly changing heat map). 0: exact.
    int gifTolerance = 2;
};

class FrameSink {
  public:
    virtual ~FrameSink();
    // One frame of width x height RGBA8 pixels, rows strideBytes apart (top row first). Alpha is ignored by
    // the video formats (frames are opaque renders); PNGs keep it.
    virtual void addFrame(const std::uint8_t* rgba, int strideBytes) = 0;
    // Writes the final file: flushes the encoder and renames the temporary file to the target path. Calling
    // addFrame or finish afterwards is a std::logic_error. Throws std::runtime_error when no frame was added.
    virtual void finish() = 0;
};

// Opens the sink for `path` (formats above). std::invalid_argument for another extension or bad options,
// std::runtime_error when the temporary file cannot be created (e.g. the directory does not exist), naming
// the path. MP4 frames of odd width or height are padded by one pixel (the last column or row repeated):
// H.264 in yuv420p needs even sizes, and a resizable window gives odd ones often.
std::unique_ptr<FrameSink> openFrameSink(const std::string& path, const VideoOptions& options);

// Where a sink writes before the final rename: stagedPathFor(path) (engine/io/OutputSet.h), a name that
// recovery recognises as Flowscope's own.
std::string temporaryPathFor(const std::string& path);

} // namespace flowscope
