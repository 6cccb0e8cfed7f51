#include "engine/media/FrameSink.h"

#include "engine/io/OutputSet.h"
#include "engine/media/GifWriter.h"
#include "engine/media/Mp4Writer.h"
#include "engine/media/PngWriter.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <unistd.h>

namespace flowscope {

FrameSink::~FrameSink() = default;

std::string temporaryPathFor(const std::string& path) {
    return stagedPathFor(path);
}

namespace {

// Whether s ends with the lower-case `suffix`, in any case (".GIF" too).
bool endsWith(const std::string& s, const std::string& suffix) {
    if (s.size() < suffix.size()) return false;
    return std::equal(suffix.rbegin(), suffix.rend(), s.rbegin(), [](char lower, char c) {
        return std::tolower(static_cast<unsigned char>(c)) == lower;
    });
}

} // namespace

std::unique_ptr<FrameSink> openFrameSink(const std::string& path, const VideoOptions& options) {
    if (options.width <= 0 || options.height <= 0)
        throw std::invalid_argument("cannot export to " + path + ": frame size " +
                                    std::to_string(options.width) + "x" + std::to_string(options.height) +
                                    " is not positive");
    if (!(options.fps > 0) || !std::isfinite(options.fps))
        throw std::invalid_argument("cannot export to " + path + ": fps must be positive");
    if (endsWith(path, ".mp4"))
        return std::make_unique<Mp4Writer>(path, options.width, options.height,
                                           Mp4Options{options.fps, options.crf});
    if (endsWith(path, ".gif")) {
        GifOptions gif;
        gif.fps = options.fps;
        gif.colors = options.gifColors;
        gif.dither = options.gifDither;
        gif.ditherAbove = options.gifDitherAbove;
        gif.tolerance = options.gifTolerance;
        return std::make_unique<GifWriter>(path, options.width, options.height, gif);
    }
    std::error_code ec;
    if (!path.empty() && (path.back() == '/' || std::filesystem::is_directory(path, ec)))
        return std::make_unique<PngSequenceWriter>(path, options.width, options.height);
    throw std::invalid_argument("cannot export to '" + path +
                                "': unknown format; use a path ending in .mp4 (H.264 video), .gif (animated "
                                "GIF) or / (a directory of numbered PNG frames)");
}

} // namespace flowscope
