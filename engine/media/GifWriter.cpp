#include "engine/media/GifWriter.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <unordered_set>

namespace flowscope {

// --- Palettes: median cut and k-means ---

namespace {

using Rgb = std::array<std::uint8_t, 3>;

std::uint32_t colorKey(const std::uint8_t* p) {
    return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16;
}

int dist2(int r, int g, int b, const Rgb& c) {
    const int dr = r - c[0], dg = g - c[1], db = b - c[2];
    return dr * dr + dg * dg + db * db;
}

// A colour-histogram cell: its pixels' mean colour and their count.
struct Point {
    float c[3];
    float w;
};

float dist2(const Point& p, const Rgb& c) {
    const float dr = p.c[0] - c[0], dg = p.c[1] - c[1], db = p.c[2] - c[2];
    return dr * dr + dg * dg + db * db;
}

int nearestTo(const std::vector<Rgb>& palette, const Point& p) {
    int best = 0;
    float bestD = dist2(p, palette[0]);
    for (std::size_t j = 1; j < palette.size(); ++j) {
        const float d = dist2(p, palette[j]);
        if (d < bestD) bestD = d, best = int(j);
    }
    return best;
}

Rgb roundColor(const double* c) {
    Rgb out;
    for (int a = 0; a < 3; ++a) out[std::size_t(a)] = std::uint8_t(std::clamp(std::lround(c[a]), 0L, 255L));
    return out;
}

// Median cut: starting from one box holding every point, split the box with the largest squared error
// about its mean, along its axis of largest variance, at the weighted median, until there are k boxes (or
// no box has any spread left). The palette is the boxes' weighted means.
std::vector<Rgb> medianCut(std::vector<Point>& pts, int k) {
    struct Box {
        std::size_t begin, end;
        double sse = 0, mean[3] = {};
        int axis = 0;
    };
    auto measure = [&](Box& b) {
        double w = 0, s[3] = {}, s2[3] = {};
        for (std::size_t i = b.begin; i < b.end; ++i)
            for (int a = 0; a < 3; ++a) {
                const double v = pts[i].c[a];
                if (a == 0) w += pts[i].w;
                s[a] += pts[i].w * v;
                s2[a] += pts[i].w * v * v;
            }
        b.sse = 0;
        double largest = -1;
        for (int a = 0; a < 3; ++a) {
            b.mean[a] = s[a] / w;
            const double spread = std::max(0.0, s2[a] - s[a] * b.mean[a]); // sum of w (c - mean)^2
            b.sse += spread;
            if (spread > largest) largest = spread, b.axis = a;
        }
        if (b.end - b.begin < 2) b.sse = 0;
    };
    std::vector<Box> boxes(1);
    boxes[0].begin = 0;
    boxes[0].end = pts.size();
    measure(boxes[0]);
    while (int(boxes.size()) < k) {
        std::size_t pick = 0;
        for (std::size_t i = 1; i < boxes.size(); ++i)
            if (boxes[i].sse > boxes[pick].sse) pick = i;
        Box b = boxes[pick];
        if (b.sse <= 0) break;
        const int axis = b.axis;
        std::sort(pts.begin() + std::ptrdiff_t(b.begin), pts.begin() + std::ptrdiff_t(b.end),
                  [axis](const Point& p, const Point& q) { return p.c[axis] < q.c[axis]; });
        double total = 0, acc = 0;
        for (std::size_t i = b.begin; i < b.end; ++i) total += pts[i].w;
        std::size_t cut = b.begin + 1;
        for (std::size_t i = b.begin; i < b.end; ++i) {
            acc += pts[i].w;
            if (acc >= 0.5 * total) {
                cut = i + 1;
                break;
            }
        }
        cut = std::clamp(cut, b.begin + 1, b.end - 1);
        Box lo, hi;
        lo.begin = b.begin, lo.end = cut, hi.begin = cut, hi.end = b.end;
        measure(lo);
        measure(hi);
        boxes[pick] = lo;
        boxes.push_back(hi);
    }
    std::vector<Rgb> palette;
    for (const Box& b : boxes) palette.push_back(roundColor(b.mean));
    // Distinct entries only: rounding can merge two boxes' means.
    std::sort(palette.begin(), palette.end());
    palette.erase(std::unique(palette.begin(), palette.end()), palette.end());
    return palette;
}

// Lloyd iterations: each entry moves to the weighted mean of the points nearest to it.
void refineKMeans(const std::vector<Point>& pts, std::vector<Rgb>& palette, int iterations) {
    for (int it = 0; it < iterations; ++it) {
        std::vector<double> sum(palette.size() * 4, 0.0);
        for (const Point& p : pts) {
            double* s = &sum[std::size_t(nearestTo(palette, p)) * 4];
            for (int a = 0; a < 3; ++a) s[a] += p.w * p.c[a];
            s[3] += p.w;
        }
        for (std::size_t j = 0; j < palette.size(); ++j) {
            const double* s = &sum[j * 4];
            if (s[3] <= 0) continue;
            const double mean[3] = {s[0] / s[3], s[1] / s[3], s[2] / s[3]};
            palette[j] = roundColor(mean);
        }
    }
    std::sort(palette.begin(), palette.end());
    palette.erase(std::unique(palette.begin(), palette.end()), palette.end());
}

double meanSquaredError(const std::vector<Point>& pts, const std::vector<Rgb>& palette) {
    double e = 0, w = 0;
    for (const Point& p : pts) {
        e += p.w * dist2(p, palette[std::size_t(nearestTo(palette, p))]);
        w += p.w;
    }
    return w > 0 ? e / w : 0;
}

// --- LZW and the file's bytes ---

// LZW-compressed GIF image data: the minimum code size byte, 255-byte sub-blocks, a zero terminator.
// Codes start at minCodeSize + 1 bits and grow by one when the next code to be assigned needs it (in step
// with a decoder, which assigns each code one step later than the encoder); at 4095 assigned codes the
// table is cleared (as giflib does), and every image starts with a clear code.
void lzwEncode(const std::uint8_t* idx, std::size_t n, int minCodeSize, std::vector<std::uint8_t>& out) {
    struct BitSink {
        std::vector<std::uint8_t>& out;
        std::uint32_t acc = 0;
        int bits = 0, len = 0;
        std::uint8_t block[255] = {};
        void byte(std::uint8_t b) {
            block[len++] = b;
            if (len == 255) flushBlock();
        }
        void flushBlock() {
            out.push_back(std::uint8_t(len));
            out.insert(out.end(), block, block + len);
            len = 0;
        }
        void put(int code, int size) { // little-endian bit order
            acc |= std::uint32_t(code) << bits;
            for (bits += size; bits >= 8; bits -= 8, acc >>= 8) byte(std::uint8_t(acc & 0xff));
        }
        void finish() {
            if (bits > 0) byte(std::uint8_t(acc & 0xff));
            if (len > 0) flushBlock();
            out.push_back(0);
        }
    } sink{out};

    // Dictionary (prefix code, next index) -> code, as an open-addressing hash table. 8192 slots for at most
    // 4095 entries keeps probe chains short.
    constexpr int kSlots = 8192, kMaxCodes = 4095;
    std::vector<std::int32_t> keys(kSlots, -1);
    std::vector<std::int16_t> codes(kSlots);
    const int clear = 1 << minCodeSize, eoi = clear + 1;
    int codeSize = minCodeSize + 1, next = clear + 2;

    out.push_back(std::uint8_t(minCodeSize));
    sink.put(clear, codeSize);
    int cur = idx[0];
    for (std::size_t i = 1; i < n; ++i) {
        const int k = idx[i];
        const std::int32_t key = (cur << 8) | k;
        std::uint32_t slot = (std::uint32_t(key) * 2654435761u) >> 19; // top 13 bits: 0..8191
        while (keys[slot] != -1 && keys[slot] != key) slot = (slot + 1) & (kSlots - 1);
        if (keys[slot] == key) {
            cur = codes[slot];
            continue;
        }
        sink.put(cur, codeSize);
        if (next < kMaxCodes) {
            keys[slot] = key;
            codes[slot] = std::int16_t(next++);
            if (next > (1 << codeSize) && codeSize < 12) ++codeSize;
        } else {
            sink.put(clear, codeSize);
            std::fill(keys.begin(), keys.end(), -1);
            codeSize = minCodeSize + 1;
            next = clear + 2;
        }
        cur = k;
    }
    sink.put(cur, codeSize);
    // The decoder assigns one more code on reading `cur`, and widens its codes if that fills the width.
    if (next == (1 << codeSize) && codeSize < 12) ++codeSize;
    sink.put(eoi, codeSize);
    sink.finish();
}

void putU16(std::vector<std::uint8_t>& out, int v) {
    out.push_back(std::uint8_t(v & 0xff));
    out.push_back(std::uint8_t((v >> 8) & 0xff));
}

// log2 of the colour table size for `entries` colours (a GIF table has 2^(1..8) entries).
int tableBits(int entries) {
    int b = 1;
    while ((1 << b) < entries) ++b;
    return b;
}

} // namespace

GifWriter::GifWriter(const std::string& path, int width, int height, const GifOptions& options)
    : path_(path), width_(width), height_(height), options_(options) {
    if (width <= 0 || height <= 0 || width > 65535 || height > 65535)
        throw std::invalid_argument("GIF " + path + ": frame size " + std::to_string(width) + "x" +
                                    std::to_string(height) + " is outside 1..65535");
    if (!(options.fps > 0) || !std::isfinite(options.fps))
        throw std::invalid_argument("GIF " + path + ": fps must be positive");
    if (options.colors < 2 || options.colors > 256)
        throw std::invalid_argument("GIF " + path + ": colours must be 2..256, not " +
                                    std::to_string(options.colors));
    if (!(options.ditherAbove >= 0) || !std::isfinite(options.ditherAbove))
        throw std::invalid_argument("GIF " + path + ": ditherAbove must be a finite number >= 0");
    if (options.tolerance < 0 || options.tolerance > 255)
        throw std::invalid_argument("GIF " + path + ": tolerance must be 0..255, not " +
                                    std::to_string(options.tolerance));
    if (options.loopCount < 0 || options.loopCount > 65535)
        throw std::invalid_argument("GIF " + path + ": loop count must be 0..65535");
    tmp_ = temporaryPathFor(path);
    file_ = std::fopen(tmp_.c_str(), "wb");
    if (!file_)
        throw std::runtime_error("cannot write GIF " + path + ": cannot create " + tmp_ + " (" +
                                 std::strerror(errno) + ")");
    last_.assign(std::size_t(width) * std::size_t(height) * 3, 0);
}

// --- GifWriter: frames, palettes and changed rectangles ---

GifWriter::~GifWriter() {
    if (file_) std::fclose(file_);
    if (!finished_) std::remove(tmp_.c_str());
}

void GifWriter::writeBytes(const void* data, std::size_t n) {
    if (std::fwrite(data, 1, n, file_) != n)
        throw std::runtime_error("writing GIF " + path_ + " failed (" + std::strerror(errno) + ")");
}

int GifWriter::nearestIndex(int r, int g, int b) {
    const int cell = (r >> 2) << 12 | (g >> 2) << 6 | (b >> 2);
    if (cellStart_[std::size_t(cell)] < 0) {
        // Candidates: entries within d + 2 R of the cell's centre c, where d is the distance from c to its
        // nearest entry and R bounds the distance from c to any colour in the cell. For a colour q there,
        // the nearest entry p* has |p* - c| <= |p* - q| + R <= |p_c - q| + R <= d + 2 R, so it is among them.
        const int cr = (r & ~3) + 2, cg = (g & ~3) + 2, cb = (b & ~3) + 2;
        int dmin = 1 << 30;
        for (const Rgb& p : palette_) dmin = std::min(dmin, dist2(cr, cg, cb, p));
        const double radius = std::sqrt(12.0); // offsets -2..+1 per channel: |(2, 2, 2)|
        const double limit = std::sqrt(double(dmin)) + 2 * radius;
        const int limit2 = int(limit * limit) + 1;
        // Stored as (count - 1, indices...): 1..256 candidates.
        const std::size_t start = cellPool_.size();
        cellPool_.push_back(0);
        for (std::size_t j = 0; j < palette_.size(); ++j)
            if (dist2(cr, cg, cb, palette_[j]) <= limit2) cellPool_.push_back(std::uint8_t(j));
        cellPool_[start] = std::uint8_t(cellPool_.size() - start - 2);
        cellStart_[std::size_t(cell)] = std::int32_t(start);
    }
    const std::uint8_t* c = &cellPool_[std::size_t(cellStart_[std::size_t(cell)])];
    int best = c[1], bestD = dist2(r, g, b, palette_[c[1]]);
    for (int i = 2; i <= c[0] + 1; ++i) {
        const int d = dist2(r, g, b, palette_[c[i]]);
        if (d < bestD) bestD = d, best = c[i];
    }
    return best;
}

void GifWriter::encodeFrame(const std::uint8_t* rgba, int stride, int x0, int y0, int x1, int y1, bool diff) {
    const int rw = x1 - x0, rh = y1 - y0, maxColors = options_.colors;
    auto src = [&](int x, int y) { return rgba + std::size_t(y) * std::size_t(stride) + 4 * std::size_t(x); };
    auto lastAt = [&](int x, int y) {
        return &last_[(std::size_t(y) * std::size_t(width_) + std::size_t(x)) * 3];
    };
    // Kept pixels did not change since the last written frame (within the tolerance): they become the
    // transparent index.
    bool keep = diff;
    auto kept = [&](int x, int y) { return keep && same(src(x, y), lastAt(x, y)); };

    // The changed pixels' distinct colours, as long as they fit in the palette; and whether any is kept.
    std::unordered_set<std::uint32_t> colors;
    bool anyKept = false, fits = true;
    for (int y = y0; y < y1 && (fits || !anyKept); ++y) {
        std::uint32_t prev = 0xffffffff;
        for (int x = x0; x < x1; ++x) {
            if (kept(x, y)) {
                anyKept = true;
                continue;
            }
            const std::uint32_t k = colorKey(src(x, y));
            if (!fits || k == prev) continue;
            prev = k;
            colors.insert(k);
            fits = int(colors.size()) <= maxColors;
        }
    }
    keep = anyKept;
    if (fits && anyKept && int(colors.size()) == maxColors) {
        // No slot left for transparency: write the kept pixels too, if their colours are already there.
        bool allThere = true;
        for (int y = y0; y < y1 && allThere; ++y)
            for (int x = x0; x < x1 && allThere; ++x) allThere = colors.count(colorKey(src(x, y))) > 0;
        if (allThere)
            keep = false;
        else
            fits = false;
    }
    const int realColors = maxColors - (keep ? 1 : 0);

    std::vector<Rgb> palette;
    bool quantised = false;
    double quantisationError = 0; // the palette's mean squared error over the pixels (RGB, 8-bit units)
    if (fits) {
        // Exact: the previous palette when it holds every colour (and leaves room for transparency).
        bool reuse = !palette_.empty() && int(palette_.size()) <= realColors;
        if (reuse) {
            std::unordered_set<std::uint32_t> have;
            for (const Rgb& p : palette_) have.insert(colorKey(p.data()));
            for (std::uint32_t k : colors)
                if (!have.count(k)) {
                    reuse = false;
                    break;
                }
        }
        if (reuse) {
            palette = palette_;
        } else {
            for (std::uint32_t k : colors)
                palette.push_back({std::uint8_t(k), std::uint8_t(k >> 8), std::uint8_t(k >> 16)});
            std::sort(palette.begin(), palette.end());
        }
    } else {
        quantised = true;
        // Histogram of the changed pixels over 5-5-5 bit cells, each keeping its pixels' exact mean colour.
        std::vector<std::uint64_t> hist(32768 * 4, 0);
        for (int y = y0; y < y1; ++y)
            for (int x = x0; x < x1; ++x) {
                if (kept(x, y)) continue;
                const std::uint8_t* p = src(x, y);
                std::uint64_t* h = &hist[std::size_t((p[0] >> 3) << 10 | (p[1] >> 3) << 5 | (p[2] >> 3)) * 4];
                h[0] += p[0], h[1] += p[1], h[2] += p[2], h[3] += 1;
            }
        std::vector<Point> pts;
        for (std::size_t i = 0; i < 32768; ++i) {
            const std::uint64_t* h = &hist[i * 4];
            if (h[3] == 0) continue;
            const double n = double(h[3]);
            pts.push_back({{float(h[0] / n), float(h[1] / n), float(h[2] / n)}, float(n)});
        }
        palette = medianCut(pts, realColors);
        refineKMeans(pts, palette, 3);
        quantisationError = meanSquaredError(pts, palette);
        // Keep the previous palette when it is about as good: no flicker, no local table, a warm lookup.
        if (!palette_.empty() && int(palette_.size()) <= realColors) {
            const double previous = meanSquaredError(pts, palette_);
            if (previous <= 1.05 * quantisationError) {
                palette = palette_;
                quantisationError = previous;
            }
        }
    }
    if (palette != palette_ || cellStart_.empty()) {
        palette_ = palette;
        cellStart_.assign(std::size_t(1) << 18, -1);
        cellPool_.clear();
    }

    // Palette indices of the rectangle: Floyd-Steinberg in serpentine order when quantised and dithering
    // (errors in 1/16ths, one guard cell at either end of a row), the nearest colour otherwise. A kept pixel
    // neither takes nor passes on error: what it shows was settled when it was last written.
    const int transparentIndex = int(palette.size());
    indices_.resize(std::size_t(rw) * std::size_t(rh));
    if (quantised && options_.dither && quantisationError > options_.ditherAbove) {
        std::vector<int> errCur(std::size_t(rw + 2) * 3, 0), errNext(std::size_t(rw + 2) * 3, 0);
        for (int y = 0; y < rh; ++y) {
            const int dir = y % 2 == 0 ? 1 : -1;
            std::fill(errNext.begin(), errNext.end(), 0);
            for (int i = 0; i < rw; ++i) {
                const int x = dir > 0 ? i : rw - 1 - i;
                std::uint8_t& out = indices_[std::size_t(y) * std::size_t(rw) + std::size_t(x)];
                if (kept(x0 + x, y0 + y)) {
                    out = std::uint8_t(transparentIndex);
                    continue;
                }
                const std::uint8_t* p = src(x0 + x, y0 + y);
                const int* e = &errCur[std::size_t(x + 1) * 3];
                int want[3];
                for (int a = 0; a < 3; ++a) want[a] = std::clamp(p[a] + ((e[a] + 8) >> 4), 0, 255);
                const int j = nearestIndex(want[0], want[1], want[2]);
                out = std::uint8_t(j);
                for (int a = 0; a < 3; ++a) {
                    const int err = want[a] - palette[std::size_t(j)][std::size_t(a)];
                    errCur[std::size_t(x + 1 + dir) * 3 + std::size_t(a)] += 7 * err;
                    errNext[std::size_t(x + 1 - dir) * 3 + std::size_t(a)] += 3 * err;
                    errNext[std::size_t(x + 1) * 3 + std::size_t(a)] += 5 * err;
                    errNext[std::size_t(x + 1 + dir) * 3 + std::size_t(a)] += err;
                }
            }
            std::swap(errCur, errNext);
        }
    } else {
        for (int y = 0; y < rh; ++y) {
            std::uint32_t prevKey = 0xffffffff;
            int prevIndex = 0;
            for (int x = 0; x < rw; ++x) {
                std::uint8_t& out = indices_[std::size_t(y) * std::size_t(rw) + std::size_t(x)];
                if (kept(x0 + x, y0 + y)) {
                    out = std::uint8_t(transparentIndex);
                    continue;
                }
                const std::uint8_t* p = src(x0 + x, y0 + y);
                const std::uint32_t k = colorKey(p);
                if (k != prevKey) prevKey = k, prevIndex = nearestIndex(p[0], p[1], p[2]);
                out = std::uint8_t(prevIndex);
            }
        }
    }

    // The colour table: the palette, the transparent slot, zeros up to a power of two.
    const int bits = tableBits(int(palette.size()) + (keep ? 1 : 0));
    std::vector<std::uint8_t> table(std::size_t(3) << bits, 0);
    for (std::size_t j = 0; j < palette.size(); ++j)
        std::copy(palette[j].begin(), palette[j].end(), &table[3 * j]);
    const bool first = written_ == 0 && !hasPending_;
    if (first) globalTable_ = table;
    const bool local = table != globalTable_;

    // Image descriptor, local table, LZW data.
    std::vector<std::uint8_t>& img = pending_.image;
    img.clear();
    img.push_back(0x2c);
    putU16(img, x0);
    putU16(img, y0);
    putU16(img, rw);
    putU16(img, rh);
    img.push_back(local ? std::uint8_t(0x80 | (bits - 1)) : 0); // not interlaced, table not sorted
    if (local) img.insert(img.end(), table.begin(), table.end());
    lzwEncode(indices_.data(), indices_.size(), std::max(2, bits), img);
    pending_.transparent = keep;
    pending_.transparentIndex = std::uint8_t(keep ? transparentIndex : 0);

    // What is shown now: the written pixels' colours (a kept one still shows its earlier colour).
    for (int y = y0; y < y1; ++y)
        for (int x = x0; x < x1; ++x)
            if (!kept(x, y)) std::memcpy(lastAt(x, y), src(x, y), 3);
}

void GifWriter::writePending(int endCs) {
    if (written_ == 0) {
        // Header, logical screen (global table, 8 bits per primary), the table, NETSCAPE2.0 looping.
        std::vector<std::uint8_t> head = {'G', 'I', 'F', '8', '9', 'a'};
        putU16(head, width_);
        putU16(head, height_);
        const int bits = tableBits(int(globalTable_.size() / 3));
        head.insert(head.end(), {std::uint8_t(0x80 | 0x70 | (bits - 1)), 0, 0});
        head.insert(head.end(), globalTable_.begin(), globalTable_.end());
        const char app[] = "NETSCAPE2.0";
        head.insert(head.end(), {0x21, 0xff, 11});
        head.insert(head.end(), app, app + 11);
        head.insert(head.end(), {3, 1});
        putU16(head, options_.loopCount);
        head.push_back(0);
        writeBytes(head.data(), head.size());
    }
    // Graphic control extension: disposal 1 (leave the frame in place), the delay, the transparent index.
    const int delay = std::clamp(endCs - pending_.startCs, 0, 65535);
    const std::uint8_t gce[8] = {0x21,
                                 0xf9,
                                 4,
                                 std::uint8_t(1 << 2 | (pending_.transparent ? 1 : 0)),
                                 std::uint8_t(delay & 0xff),
                                 std::uint8_t(delay >> 8),
                                 pending_.transparentIndex,
                                 0};
    writeBytes(gce, sizeof gce);
    writeBytes(pending_.image.data(), pending_.image.size());
    ++written_;
    hasPending_ = false;
}

bool GifWriter::same(const std::uint8_t* rgb, const std::uint8_t* shown) const {
    const int t = options_.tolerance;
    if (t == 0) return std::memcmp(rgb, shown, 3) == 0;
    return std::abs(int(rgb[0]) - int(shown[0])) <= t && std::abs(int(rgb[1]) - int(shown[1])) <= t &&
           std::abs(int(rgb[2]) - int(shown[2])) <= t;
}

void GifWriter::addFrame(const std::uint8_t* rgba, int strideBytes) {
    if (finished_) throw std::logic_error("GIF " + path_ + ": addFrame after finish");
    if (!rgba || strideBytes < 4 * width_)
        throw std::invalid_argument("GIF " + path_ + ": bad frame (stride " + std::to_string(strideBytes) +
                                    " for width " + std::to_string(width_) + ")");
    // Frame i is shown from round(100 i / fps) cs to round(100 (i + 1) / fps) cs.
    const int startCs = int(std::lround(100.0 * added_ / options_.fps));
    if (!hasPending_ && written_ == 0) {
        encodeFrame(rgba, strideBytes, 0, 0, width_, height_, false);
        pending_.startCs = startCs;
        hasPending_ = true;
        ++added_;
        return;
    }
    // The rectangle of pixels that differ from the last written frame.
    int x0 = width_, x1 = 0, y0 = height_, y1 = 0;
    for (int y = 0; y < height_; ++y) {
        const std::uint8_t* row = rgba + std::size_t(y) * std::size_t(strideBytes);
        const std::uint8_t* old = &last_[std::size_t(y) * std::size_t(width_) * 3];
        int a = 0, b = width_ - 1;
        while (a < width_ && same(row + 4 * a, old + 3 * a)) ++a;
        if (a == width_) continue;
        while (same(row + 4 * b, old + 3 * b)) --b;
        x0 = std::min(x0, a), x1 = std::max(x1, b + 1), y0 = std::min(y0, y), y1 = y + 1;
    }
    // Unchanged, or too soon after the last written frame (above 50 fps): the last frame is shown longer.
    if (x1 <= x0 || startCs - pending_.startCs < 2) {
        ++added_;
        return;
    }
    writePending(startCs);
    encodeFrame(rgba, strideBytes, x0, y0, x1, y1, true);
    pending_.startCs = startCs;
    hasPending_ = true;
    ++added_;
}

void GifWriter::finish() {
    if (finished_) throw std::logic_error("GIF " + path_ + ": finish called twice");
    if (added_ == 0) throw std::runtime_error("GIF " + path_ + ": no frames were added");
    writePending(int(std::lround(100.0 * added_ / options_.fps)));
    writeBytes(";", 1); // trailer
    const bool ok = std::fflush(file_) == 0 && !std::ferror(file_);
    const bool closed = std::fclose(file_) == 0;
    file_ = nullptr;
    if (!ok || !closed) throw std::runtime_error("writing GIF " + path_ + " failed");
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0)
        throw std::runtime_error("cannot rename " + tmp_ + " to GIF " + path_ + " (" + std::strerror(errno) +
                                 ")");
    finished_ = true;
}

} // namespace flowscope
