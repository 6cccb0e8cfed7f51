// Flowscope media: PNG files (one image, and numbered sequences for animations). Written with zlib only:
// 8-bit RGB when every pixel is opaque, 8-bit RGBA otherwise, each row with the PNG filter that makes it
// smallest by the usual heuristic (least sum of absolute filtered bytes).
#pragma once

#include "engine/media/FrameSink.h"

#include <cstdint>
#include <string>
#include <vector>

namespace flowscope {

// The PNG file's bytes for w x h RGBA8 pixels whose rows are `stride` bytes apart.
std::vector<std::uint8_t> encodePng(int w, int h, const std::uint8_t* rgba, int stride);

// Writes encodePng(...) atomically to `path` (engine/io/AtomicFile.h); std::runtime_error names the path.
void writePng(const std::string& path, int w, int h, const std::uint8_t* rgba, int stride);

// A numbered PNG sequence dir/frame_00000.png, frame_00001.png, ... Frames go into a staged folder beside
// `dir` (stagedPathFor), which finish() renames to `dir`. A `dir` that exists and is not empty is refused (at
// construction and again at finish) rather than mixing two exports' frames; an empty one is replaced.
class PngSequenceWriter : public FrameSink {
  public:
    PngSequenceWriter(const std::string& dir, int width, int height);
    ~PngSequenceWriter() override;
    PngSequenceWriter(const PngSequenceWriter&) = delete;
    PngSequenceWriter& operator=(const PngSequenceWriter&) = delete;

    void addFrame(const std::uint8_t* rgba, int strideBytes) override;
    void finish() override;
    int frameCount() const { return frames_; }

  private:
    std::string dir_, tmp_;
    int width_, height_, frames_ = 0;
    bool finished_ = false;
};

} // namespace flowscope
