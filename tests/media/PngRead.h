// Reads a PNG back with libpng's simplified API as 8-bit RGBA (sRGB, not premultiplied, rows tightly
// packed): the oracle of the PNG writer and what the render tests read exported frames with. Link PNG::PNG.
#pragma once

#include <png.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace flowscope::test {

struct Png {
    int width = 0, height = 0;
    bool hasAlpha = false; // whether the file itself stores alpha
    std::vector<std::uint8_t> rgba;
    const std::uint8_t* at(int x, int y) const {
        return &rgba[(std::size_t(y) * std::size_t(width) + std::size_t(x)) * 4];
    }
};

// Throws std::runtime_error naming the file and libpng's reason.
inline Png readPng(const std::string& path) {
    png_image image{};
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&image, path.c_str()))
        throw std::runtime_error("libpng cannot read " + path + ": " + image.message);
    Png out;
    out.width = int(image.width), out.height = int(image.height);
    out.hasAlpha = image.format & PNG_FORMAT_FLAG_ALPHA;
    image.format = PNG_FORMAT_RGBA;
    out.rgba.resize(PNG_IMAGE_SIZE(image));
    if (!png_image_finish_read(&image, nullptr, out.rgba.data(), 0, nullptr))
        throw std::runtime_error("libpng cannot decode " + path + ": " + image.message);
    return out;
}

} // namespace flowscope::test
