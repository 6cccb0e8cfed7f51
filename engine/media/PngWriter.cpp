#include "engine/media/PngWriter.h"

#include "engine/io/AtomicFile.h"

#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace flowscope {

namespace {

namespace fs = std::filesystem;

void putU32(std::vector<std::uint8_t>& out, std::uint32_t v) {
    out.push_back(std::uint8_t(v >> 24));
    out.push_back(std::uint8_t(v >> 16));
    out.push_back(std::uint8_t(v >> 8));
    out.push_back(std::uint8_t(v));
}

// A chunk: big-endian length, type, data, CRC-32 of type and data.
void putChunk(std::vector<std::uint8_t>& out, const char* type, const std::uint8_t* data, std::size_t n) {
    putU32(out, std::uint32_t(n));
    const std::size_t start = out.size();
    out.insert(out.end(), type, type + 4);
    if (n) out.insert(out.end(), data, data + n);
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32(crc, out.data() + start, uInt(4 + n));
    putU32(out, std::uint32_t(crc));
}

int paeth(int a, int b, int c) {
    const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
    if (pa <= pb && pa <= pc) return a;
    return pb <= pc ? b : c;
}

// Filters one row of n bytes (bpp bytes per pixel) with filter type f (0 none, 1 sub, 2 up, 3 average,
// 4 Paeth) into out; prev is the previous unfiltered row (zeros above the first row).
void filterRow(int f, const std::uint8_t* row, const std::uint8_t* prev, int n, int bpp, std::uint8_t* out) {
    for (int i = 0; i < n; ++i) {
        const int a = i >= bpp ? row[i - bpp] : 0, b = prev[i], c = i >= bpp ? prev[i - bpp] : 0;
        int pred = 0;
        switch (f) {
        case 1:
            pred = a;
            break;
        case 2:
            pred = b;
            break;
        case 3:
            pred = (a + b) / 2;
            break;
        case 4:
            pred = paeth(a, b, c);
            break;
        default:
            break;
        }
        out[i] = std::uint8_t(row[i] - pred);
    }
}

} // namespace

std::vector<std::uint8_t> encodePng(int w, int h, const std::uint8_t* rgba, int stride) {
    if (w <= 0 || h <= 0 || !rgba || stride < 4 * w)
        throw std::invalid_argument("encodePng: bad image (" + std::to_string(w) + "x" + std::to_string(h) +
                                    ", stride " + std::to_string(stride) + ")");
    bool opaque = true;
    for (int y = 0; y < h && opaque; ++y) {
        const std::uint8_t* p = rgba + std::size_t(y) * std::size_t(stride);
        for (int x = 0; x < w; ++x)
            if (p[4 * x + 3] != 255) {
                opaque = false;
                break;
            }
    }
    const int bpp = opaque ? 3 : 4, n = w * bpp;

    // Filtered scanlines: one filter-type byte, then the row filtered with the type whose output has the
    // least sum of |signed byte| (the heuristic the PNG specification recommends).
    std::vector<std::uint8_t> raw(std::size_t(h) * std::size_t(n + 1));
    const std::size_t len = static_cast<std::size_t>(n);
    std::vector<std::uint8_t> row(len), prev(len, 0), trial(len);
    for (int y = 0; y < h; ++y) {
        const std::uint8_t* src = rgba + std::size_t(y) * std::size_t(stride);
        if (opaque) {
            for (int x = 0; x < w; ++x) std::memcpy(&row[std::size_t(3 * x)], src + 4 * x, 3);
        } else {
            std::memcpy(row.data(), src, std::size_t(n));
        }
        std::uint8_t* dst = &raw[std::size_t(y) * std::size_t(n + 1)];
        long best = -1;
        for (int f = 0; f < 5; ++f) {
            filterRow(f, row.data(), prev.data(), n, bpp, trial.data());
            long cost = 0;
            for (int i = 0; i < n; ++i) cost += std::abs(int(std::int8_t(trial[std::size_t(i)])));
            if (best < 0 || cost < best) {
                best = cost;
                dst[0] = std::uint8_t(f);
                std::memcpy(dst + 1, trial.data(), std::size_t(n));
            }
        }
        std::swap(row, prev);
    }

    z_stream zs{};
    if (deflateInit(&zs, 6) != Z_OK) throw std::runtime_error("encodePng: zlib deflateInit failed");
    std::vector<std::uint8_t> packed(deflateBound(&zs, uLong(raw.size())));
    zs.next_in = raw.data();
    zs.avail_in = uInt(raw.size());
    zs.next_out = packed.data();
    zs.avail_out = uInt(packed.size());
    const int rc = deflate(&zs, Z_FINISH);
    packed.resize(zs.total_out);
    deflateEnd(&zs);
    if (rc != Z_STREAM_END) throw std::runtime_error("encodePng: zlib deflate failed");

    std::vector<std::uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    std::vector<std::uint8_t> ihdr;
    putU32(ihdr, std::uint32_t(w));
    putU32(ihdr, std::uint32_t(h));
    // Bit depth 8; colour type 2 (RGB) or 6 (RGBA); deflate; adaptive filtering; not interlaced.
    ihdr.insert(ihdr.end(), {8, std::uint8_t(opaque ? 2 : 6), 0, 0, 0});
    putChunk(png, "IHDR", ihdr.data(), ihdr.size());
    // IDAT chunks of at most 1 MiB (any split is valid; chunk lengths must stay below 2^31).
    const std::size_t chunk = std::size_t(1) << 20;
    for (std::size_t off = 0; off < packed.size(); off += chunk)
        putChunk(png, "IDAT", packed.data() + off, std::min(chunk, packed.size() - off));
    putChunk(png, "IEND", nullptr, 0);
    return png;
}

void writePng(const std::string& path, int w, int h, const std::uint8_t* rgba, int stride) {
    const std::vector<std::uint8_t> png = encodePng(w, h, rgba, stride);
    writeFileAtomically(path, [&](std::ostream& out) {
        out.write(reinterpret_cast<const char*>(png.data()), std::streamsize(png.size()));
    });
}

PngSequenceWriter::PngSequenceWriter(const std::string& dir, int width, int height)
    : dir_(dir), width_(width), height_(height) {
    if (width <= 0 || height <= 0)
        throw std::invalid_argument("PNG sequence " + dir + ": bad frame size " + std::to_string(width) +
                                    "x" + std::to_string(height));
    while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
    std::error_code ec;
    if (fs::exists(dir_, ec)) {
        // The caller's choice of path: invalid_argument, which front ends report as bad input.
        if (!fs::is_directory(dir_, ec))
            throw std::invalid_argument("PNG sequence " + dir_ + ": exists and is not a directory");
        if (!fs::is_empty(dir_, ec))
            throw std::invalid_argument("PNG sequence " + dir_ +
                                        ": directory is not empty; refusing to mix frames of two exports "
                                        "(choose a new or empty directory)");
    }
    tmp_ = temporaryPathFor(dir_);
    if (fs::exists(tmp_, ec))
        throw std::runtime_error("PNG sequence " + dir_ + ": temporary directory " + tmp_ +
                                 " already exists (left by an interrupted export?)");
    if (!fs::create_directory(tmp_, ec))
        throw std::runtime_error("PNG sequence " + dir_ + ": cannot create " + tmp_ + " (" + ec.message() +
                                 ")");
}

PngSequenceWriter::~PngSequenceWriter() {
    if (!finished_) {
        std::error_code ec; // a destructor must not throw; what cannot be removed stays
        fs::remove_all(tmp_, ec);
    }
}

void PngSequenceWriter::addFrame(const std::uint8_t* rgba, int strideBytes) {
    if (finished_) throw std::logic_error("PNG sequence " + dir_ + ": addFrame after finish");
    char name[32];
    std::snprintf(name, sizeof name, "/frame_%05d.png", frames_);
    writePng(tmp_ + name, width_, height_, rgba, strideBytes);
    ++frames_;
}

void PngSequenceWriter::finish() {
    if (finished_) throw std::logic_error("PNG sequence " + dir_ + ": finish called twice");
    if (frames_ == 0) throw std::runtime_error("PNG sequence " + dir_ + ": no frames were added");
    std::error_code ec;
    // Checked again: the directory may have been filled since the export started. An empty directory is
    // replaced by rename(2) itself.
    if (fs::exists(dir_, ec) && (!fs::is_directory(dir_, ec) || !fs::is_empty(dir_, ec)))
        throw std::runtime_error("PNG sequence " + dir_ + ": target appeared and is not an empty directory");
    fs::rename(tmp_, dir_, ec);
    if (ec)
        throw std::runtime_error("PNG sequence " + dir_ + ": cannot rename " + tmp_ + " (" + ec.message() +
                                 ")");
    finished_ = true;
}

} // namespace flowscope
