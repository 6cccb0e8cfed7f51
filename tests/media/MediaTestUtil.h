// Helpers of the media tests: synthetic frames and a small strict GIF decoder that is the oracle of the GIF
// writer (LZW with code-size growth and clear codes, global and local colour tables, frame rectangles,
// transparency, disposal, the NETSCAPE2.0 loop count). The temporary directory is tests/TempDir.h.
#pragma once

#include "../TempDir.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace flowscope::test {

namespace fs = std::filesystem;

// An RGBA8 image, rows `stride` bytes apart.
struct Image {
    int w = 0, h = 0, stride = 0;
    std::vector<std::uint8_t> px;
    Image() = default;
    Image(int width, int height, int padBytes = 0)
        : w(width), h(height), stride(4 * width + padBytes),
          px(std::size_t(stride) * std::size_t(height), 0) {}
    std::uint8_t* at(int x, int y) { return &px[std::size_t(y) * std::size_t(stride) + 4 * std::size_t(x)]; }
    const std::uint8_t* at(int x, int y) const {
        return &px[std::size_t(y) * std::size_t(stride) + 4 * std::size_t(x)];
    }
    void set(int x, int y, int r, int g, int b, int a = 255) {
        std::uint8_t* p = at(x, y);
        p[0] = std::uint8_t(r), p[1] = std::uint8_t(g), p[2] = std::uint8_t(b), p[3] = std::uint8_t(a);
    }
};

// A scene like Flowscope's particle views: a smooth dark background and `count` antialiased discs moving on
// circles of different radii and speeds. Frame t of an animation; deterministic.
inline void renderParticles(Image& img, int t, int count = 300) {
    const double cx = img.w / 2.0, cy = img.h / 2.0, scale = std::min(img.w, img.h) / 2.0;
    for (int y = 0; y < img.h; ++y)
        for (int x = 0; x < img.w; ++x) {
            const double u = double(x) / img.w, v = double(y) / img.h;
            const double r2 = ((u - 0.5) * (u - 0.5) + (v - 0.5) * (v - 0.5)) * 4;
            img.set(x, y, int(10 + 25 * v + 15 * (1 - r2)), int(12 + 10 * u), int(30 + 30 * (1 - v)));
        }
    for (int i = 0; i < count; ++i) {
        const double radius = scale * (0.1 + 0.85 * std::fmod(i * 0.618034, 1.0));
        const double phase = i * 2.399963, speed = 0.02 + 0.03 * std::fmod(i * 0.414214, 1.0);
        const double px = cx + radius * std::cos(phase + speed * t),
                     py = cy + radius * 0.8 * std::sin(phase + speed * t);
        const double rad = 2.5 + 3.0 * std::fmod(i * 0.7548777, 1.0);
        const int cr = int(80 + 175 * std::fmod(i * 0.31, 1.0)),
                  cg = int(80 + 175 * std::fmod(i * 0.53, 1.0)),
                  cb = int(80 + 175 * std::fmod(i * 0.71, 1.0));
        for (int y = std::max(0, int(py - rad - 1)); y <= std::min(img.h - 1, int(py + rad + 1)); ++y)
            for (int x = std::max(0, int(px - rad - 1)); x <= std::min(img.w - 1, int(px + rad + 1)); ++x) {
                const double d = std::hypot(x + 0.5 - px, y + 0.5 - py);
                const double a = std::clamp(rad + 0.5 - d, 0.0, 1.0); // coverage
                if (a <= 0) continue;
                std::uint8_t* p = img.at(x, y);
                p[0] = std::uint8_t(std::lround(p[0] * (1 - a) + cr * a));
                p[1] = std::uint8_t(std::lround(p[1] * (1 - a) + cg * a));
                p[2] = std::uint8_t(std::lround(p[2] * (1 - a) + cb * a));
            }
    }
}

inline std::vector<std::uint8_t> readBytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// ---------------------------------------------------------------------------------------------------------
// GIF decoder

struct GifFrame {
    int x = 0, y = 0, w = 0, h = 0;
    int delayCs = 0, disposal = 0;
    bool transparent = false, localTable = false;
    int transparentIndex = 0;
    std::vector<std::uint8_t> canvas; // RGB of the whole screen after this frame is drawn
};

struct GifFile {
    int width = 0, height = 0;
    int loopCount = -1; // -1: no NETSCAPE2.0 extension
    std::vector<GifFrame> frames;
};

// LZW-decodes one image's data (sub-blocks already joined) into exactly `count` indices; throws on a code
// that cannot occur, on missing end-of-information, and on a pixel count other than `count`.
inline std::vector<std::uint8_t> lzwDecode(const std::vector<std::uint8_t>& data, int minCodeSize,
                                           std::size_t count) {
    if (minCodeSize < 2 || minCodeSize > 8) throw std::runtime_error("bad LZW minimum code size");
    const int clear = 1 << minCodeSize, eoi = clear + 1;
    std::vector<int> prefix(4096, -1), suffix(4096, 0), length(4096, 1);
    for (int i = 0; i < clear; ++i) suffix[std::size_t(i)] = i;
    int codeSize = minCodeSize + 1, next = clear + 2, prev = -1;
    std::size_t bitPos = 0;
    std::vector<std::uint8_t> out, s;
    auto firstOf = [&](int code) {
        while (prefix[std::size_t(code)] >= 0) code = prefix[std::size_t(code)];
        return suffix[std::size_t(code)];
    };
    auto emit = [&](int code) {
        s.resize(std::size_t(length[std::size_t(code)]));
        for (std::size_t i = s.size(); i-- > 0; code = prefix[std::size_t(code)])
            s[i] = std::uint8_t(suffix[std::size_t(code)]);
        out.insert(out.end(), s.begin(), s.end());
    };
    for (;;) {
        if (bitPos + std::size_t(codeSize) > data.size() * 8)
            throw std::runtime_error("LZW data ends without EOI");
        int code = 0;
        for (int b = 0; b < codeSize; ++b, ++bitPos) code |= ((data[bitPos / 8] >> (bitPos % 8)) & 1) << b;
        if (code == clear) {
            codeSize = minCodeSize + 1, next = clear + 2, prev = -1;
            continue;
        }
        if (code == eoi) break;
        if (prev < 0) {
            if (code > clear) throw std::runtime_error("LZW: first code after clear is not a literal");
            emit(code);
            prev = code;
            continue;
        }
        if (code > next || (code == next && next >= 4096)) throw std::runtime_error("LZW: impossible code");
        if (next < 4096) {
            const int first = code < next ? firstOf(code) : firstOf(prev);
            prefix[std::size_t(next)] = prev;
            suffix[std::size_t(next)] = first;
            length[std::size_t(next)] = length[std::size_t(prev)] + 1;
            ++next;
            if (next == (1 << codeSize) && codeSize < 12) ++codeSize;
        }
        emit(code);
        prev = code;
    }
    if (out.size() != count)
        throw std::runtime_error("LZW: " + std::to_string(out.size()) + " pixels, expected " +
                                 std::to_string(count));
    return out;
}

inline GifFile decodeGif(const std::string& path) {
    const std::vector<std::uint8_t> b = readBytes(path);
    std::size_t pos = 0;
    auto need = [&](std::size_t n) {
        if (pos + n > b.size()) throw std::runtime_error("GIF truncated at byte " + std::to_string(pos));
    };
    auto u8 = [&]() {
        need(1);
        return int(b[pos++]);
    };
    auto u16 = [&]() {
        need(2);
        pos += 2;
        return int(b[pos - 2]) | int(b[pos - 1]) << 8;
    };
    auto table = [&](int bits) {
        const std::size_t n = std::size_t(3) << bits;
        need(n);
        std::vector<std::uint8_t> t(b.begin() + std::ptrdiff_t(pos), b.begin() + std::ptrdiff_t(pos + n));
        pos += n;
        return t;
    };
    auto subBlocks = [&]() {
        std::vector<std::uint8_t> data;
        for (int n = u8(); n != 0; n = u8()) {
            need(std::size_t(n));
            data.insert(data.end(), b.begin() + std::ptrdiff_t(pos), b.begin() + std::ptrdiff_t(pos) + n);
            pos += std::size_t(n);
        }
        return data;
    };

    need(6);
    if (std::memcmp(b.data(), "GIF89a", 6) != 0) throw std::runtime_error("not a GIF89a file");
    pos = 6;
    GifFile gif;
    gif.width = u16();
    gif.height = u16();
    const int screen = u8();
    u8(); // background colour index
    u8(); // aspect
    std::vector<std::uint8_t> global;
    if (screen & 0x80) global = table((screen & 7) + 1);

    std::vector<std::uint8_t> canvas(std::size_t(gif.width) * std::size_t(gif.height) * 3, 0), saved;
    GifFrame gce; // the pending graphic control extension
    int prevDisposal = 0, px = 0, py = 0, pw = 0, ph = 0;
    for (;;) {
        const int block = u8();
        if (block == 0x3b) break; // trailer
        if (block == 0x21) {
            const int label = u8();
            if (label == 0xf9) {
                if (u8() != 4) throw std::runtime_error("bad graphic control extension");
                const int packed = u8();
                gce.disposal = (packed >> 2) & 7;
                gce.transparent = packed & 1;
                gce.delayCs = u16();
                gce.transparentIndex = u8();
                if (u8() != 0) throw std::runtime_error("graphic control extension not terminated");
            } else if (label == 0xff) {
                const std::vector<std::uint8_t> id = subBlocks(); // id and the data blocks, joined
                if (id.size() >= 14 && std::memcmp(id.data(), "NETSCAPE2.0", 11) == 0 && id[11] == 1)
                    gif.loopCount = id[12] | id[13] << 8;
            } else {
                subBlocks();
            }
            continue;
        }
        if (block != 0x2c) throw std::runtime_error("unexpected block " + std::to_string(block));
        GifFrame f = gce;
        gce = GifFrame{};
        f.x = u16(), f.y = u16(), f.w = u16(), f.h = u16();
        const int packed = u8();
        if (packed & 0x40) throw std::runtime_error("interlaced images are not expected");
        if (f.x + f.w > gif.width || f.y + f.h > gif.height || f.w == 0 || f.h == 0)
            throw std::runtime_error("frame rectangle outside the screen");
        std::vector<std::uint8_t> local;
        if (packed & 0x80) local = table((packed & 7) + 1), f.localTable = true;
        const std::vector<std::uint8_t>& colors = f.localTable ? local : global;
        if (colors.empty()) throw std::runtime_error("frame without a colour table");
        const int minCodeSize = u8();
        const std::vector<std::uint8_t> idx =
            lzwDecode(subBlocks(), minCodeSize, std::size_t(f.w) * std::size_t(f.h));

        // The previous frame's disposal, then this frame.
        if (prevDisposal == 2)
            for (int y = py; y < py + ph; ++y)
                std::fill_n(&canvas[(std::size_t(y) * gif.width + px) * 3], pw * 3, 0);
        if (prevDisposal == 3) canvas = saved;
        saved = canvas;
        for (int y = 0; y < f.h; ++y)
            for (int x = 0; x < f.w; ++x) {
                const int i = idx[std::size_t(y) * std::size_t(f.w) + std::size_t(x)];
                if (f.transparent && i == f.transparentIndex) continue;
                if (std::size_t(i) * 3 >= colors.size())
                    throw std::runtime_error("index outside the colour table");
                std::memcpy(&canvas[(std::size_t(f.y + y) * gif.width + std::size_t(f.x + x)) * 3],
                            &colors[std::size_t(i) * 3], 3);
            }
        f.canvas = canvas;
        prevDisposal = f.disposal, px = f.x, py = f.y, pw = f.w, ph = f.h;
        gif.frames.push_back(std::move(f));
    }
    return gif;
}

// Whether a decoded GIF canvas (RGB) equals an image's RGB exactly.
inline bool sameRgb(const std::vector<std::uint8_t>& canvas, const Image& img) {
    for (int y = 0; y < img.h; ++y)
        for (int x = 0; x < img.w; ++x)
            if (std::memcmp(&canvas[(std::size_t(y) * img.w + x) * 3], img.at(x, y), 3) != 0) return false;
    return true;
}

} // namespace flowscope::test
