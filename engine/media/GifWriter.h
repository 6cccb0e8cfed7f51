// Flowscope media: animated GIF89a, written from scratch and streamed frame by frame.
//
// Palette. Each frame is quantised on its own, so frames are written as they come (an animation of 720p
// frames is far too large to hold in memory for a whole-film palette). A frame (or rather its changed
// rectangle, below) with at most `colors` distinct colours gets exactly those colours and round-trips
// losslessly. Otherwise a palette is made by median cut over a histogram of the pixels (32768 cells of 5
// bits per channel, each keeping its pixels' exact mean colour), refined by three k-means (Lloyd) passes.
// The previous frame's palette is kept instead when it serves the new pixels nearly as well (mean squared
// error within 5%): that spares 768 bytes and avoids colour flicker between frames. The first frame's
// palette is the global colour table; others are local tables.
//
// Dithering (switchable): Floyd-Steinberg error diffusion in serpentine order, applied only to frames that
// are quantised (an exact palette has no error to diffuse), and optionally only where the quantisation error
// is large enough for banding to show (ditherAbove).
//
// Frame differences. Every frame after the first holds only the bounding rectangle of the pixels that
// changed since the last written frame (by more than `tolerance` per channel: lossy, off by default), with
// disposal "do not dispose"; inside it, unchanged pixels are the transparent index (one palette slot is kept
// for it), which also leaves their earlier dithering in place (no shimmering backgrounds) and gives LZW long
// runs. (When the changed pixels need all `colors` exact colours no slot is left for transparency, and the
// unchanged ones are written too.) A frame identical to the last written one is not written: its duration is
// added to the last frame's.
//
// Timing. GIF delays are whole centiseconds. Frame i ends at round(100 (i+1) / fps) cs, so rounding never
// accumulates (30 fps gives 3, 4, 3, 3, 4, 3, ... and 100 cs per 30 frames). Browsers show delays below
// 2 cs as 10 cs, so above 50 fps a frame that would start less than 2 cs after the last written one is
// dropped (its time goes to that frame); up to 50 fps every frame is written.
//
// Alpha is ignored: frames are opaque renders. The animation loops `loopCount` times (0: forever) through
// the NETSCAPE2.0 application extension.
#pragma once

#include "engine/media/FrameSink.h"

#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace flowscope {

struct GifOptions {
    double fps = 30;
    int colors = 256; // palette size, 2..256
    bool dither = true;
    // Dither only the frames whose palette's mean squared error (summed over R, G, B, in 8-bit units)
    // exceeds this: below it banding is not visible and the error diffusion's noise only costs bytes (a
    // smooth heat map: 2-4, dithered 1.8x larger; a gradient colour bar: 30-45). 0: every quantised frame.
    double ditherAbove = 0;
    // Lossy frame differencing: a pixel whose every channel is within `tolerance` of the source colour the
    // GIF shows there (the last written one) is kept as it is. 0: only identical pixels are kept. The shown
    // picture stays within `tolerance` (plus the quantisation) of every frame, and slowly varying areas (a
    // density heat map) are not re-encoded at every frame.
    int tolerance = 0;
    int loopCount = 0; // 0: loop forever
};

class GifWriter : public FrameSink {
  public:
    // Opens its staged file (temporaryPathFor); std::runtime_error naming `path` when it cannot be created,
    // std::invalid_argument for bad sizes or options.
    GifWriter(const std::string& path, int width, int height, const GifOptions& options = {});
    ~GifWriter() override; // without finish(): closes and removes the temporary file
    GifWriter(const GifWriter&) = delete;
    GifWriter& operator=(const GifWriter&) = delete;

    void addFrame(const std::uint8_t* rgba, int strideBytes) override;
    void finish() override;

    int framesAdded() const { return added_; }
    int framesWritten() const { return written_; } // fewer when identical frames were merged

  private:
    using Rgb = std::array<std::uint8_t, 3>;
    // An encoded frame waiting for its duration: image descriptor onwards, and its transparency.
    struct Pending {
        std::vector<std::uint8_t> image;
        bool transparent = false;
        std::uint8_t transparentIndex = 0;
        int startCs = 0;
    };

    void encodeFrame(const std::uint8_t* rgba, int stride, int x0, int y0, int x1, int y1, bool diff);
    // Whether a source pixel (RGB) counts as the one shown (RGB of last_): equal within options_.tolerance.
    bool same(const std::uint8_t* rgb, const std::uint8_t* shown) const;
    int nearestIndex(int r, int g, int b);
    void writePending(int endCs);
    void writeBytes(const void* data, std::size_t n);

    std::string path_, tmp_;
    int width_, height_;
    GifOptions options_;
    std::FILE* file_ = nullptr;
    bool finished_ = false;
    int added_ = 0, written_ = 0;
    std::vector<std::uint8_t> last_;        // the last written frame, RGB, width*height*3
    std::vector<std::uint8_t> globalTable_; // the first frame's colour table (3 bytes per entry)
    std::vector<Rgb> palette_;              // the last frame's colours (the transparent slot not included)
    // Exact nearest-colour search: for each 6-6-6 bit colour cell, the palette_ entries that can be nearest
    // to some colour in it (offset into cellPool_: a count, then the indices), filled on first use; -1:
    // unset.
    std::vector<std::int32_t> cellStart_;
    std::vector<std::uint8_t> cellPool_;
    std::vector<std::uint8_t> indices_; // scratch: the rectangle's palette indices
    Pending pending_;
    bool hasPending_ = false;
};

} // namespace flowscope
