// Tests of the animated GIF writer (engine/media/GifWriter.cpp), decoding what it wrote with the strict
// decoder of MediaTestUtil.h.
#include "MediaTestUtil.h"

#include "engine/media/GifWriter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

namespace flowscope {
namespace {

using test::decodeGif;
using test::GifFile;
using test::Image;
using test::sameRgb;
using test::TempDir;
namespace fs = std::filesystem;

// 16 colours in vertical stripes.
Image stripes(int w, int h) {
    Image img(w, h);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const int c = (x / 4) % 16;
            img.set(x, y, 16 * c, 255 - 16 * c, (c * 97) % 256);
        }
    return img;
}

// A disc of colour (r, g, b) drawn without antialiasing (no new colours).
void disc(Image& img, double cx, double cy, double radius, int r, int g, int b) {
    for (int y = 0; y < img.h; ++y)
        for (int x = 0; x < img.w; ++x)
            if (std::hypot(x + 0.5 - cx, y + 0.5 - cy) <= radius) img.set(x, y, r, g, b);
}

// 256 distinct colours in 4x3 blocks (at 64x48; taller images repeat them), block row b shifted by shift(b).
template <class Shift> Image colors256(int w, int h, Shift shift) {
    Image img(w, h);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const int c = ((y / 3) * 16 + x / 4 + shift(y / 3)) % 256;
            img.set(x, y, c, (c * 7) % 256, 255 - c);
        }
    return img;
}

// A smooth gradient with 65536 colours on a 2-D colour surface.
Image gradient(int w, int h) {
    Image img(w, h);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            img.set(x, y, x * 255 / (w - 1), y * 255 / (h - 1), (x + y) * 255 / (w + h - 2));
    return img;
}

GifFile writeAndDecode(const std::string& path, const std::vector<Image>& frames, const GifOptions& options) {
    GifWriter gif(path, frames[0].w, frames[0].h, options);
    for (const Image& f : frames) gif.addFrame(f.px.data(), f.stride);
    gif.finish();
    return decodeGif(path);
}

// Mean absolute error per channel, and the same for 8x8 block means (what dithering is meant to preserve).
std::pair<double, double> meanErrors(const std::vector<std::uint8_t>& canvas, const Image& img) {
    double pixel = 0, block = 0;
    for (int y = 0; y < img.h; ++y)
        for (int x = 0; x < img.w; ++x)
            for (int a = 0; a < 3; ++a)
                pixel += std::abs(int(canvas[(std::size_t(y) * img.w + x) * 3 + a]) - int(img.at(x, y)[a]));
    int blocks = 0;
    for (int by = 0; by + 8 <= img.h; by += 8)
        for (int bx = 0; bx + 8 <= img.w; bx += 8, ++blocks)
            for (int a = 0; a < 3; ++a) {
                double s = 0;
                for (int y = by; y < by + 8; ++y)
                    for (int x = bx; x < bx + 8; ++x)
                        s += int(canvas[(std::size_t(y) * img.w + x) * 3 + a]) - int(img.at(x, y)[a]);
                block += std::abs(s / 64);
            }
    return {pixel / (3.0 * img.w * img.h), block / (3.0 * blocks)};
}

class GifExact : public ::testing::TestWithParam<bool> {};

// --- Exact round trips ---

// Frames of at most 256 colours are written with exactly their colours: every decoded canvas equals its
// source, with or without dithering (an exact palette leaves no error to diffuse). The sequence changes the
// palette (16 colours, 18, 256, back), moves a disc (small rectangles with transparency) and has a frame
// whose 256 colours leave no slot for transparency.
TEST_P(GifExact, FewColourFramesRoundTripExactly) {
    TempDir dir;
    std::vector<Image> frames;
    frames.push_back(stripes(64, 51));
    for (int i = 0; i < 4; ++i) {
        Image f = stripes(64, 51);
        disc(f, 10 + 8 * i, 20, 6, 255, 255, 255);
        disc(f, 50 - 3 * i, 30, 4, 1, 2, 3);
        frames.push_back(f);
    }
    // 51 rows: block row 16 repeats the first 16 colours. Then every block row but the last changes colour
    // (all 256 colours change, some pixels are kept: no slot left for transparency), then a disc in a colour
    // the 256 have, then back to 16 colours (a new palette).
    frames.push_back(colors256(64, 51, [](int) { return 0; }));
    frames.push_back(colors256(64, 51, [](int row) { return row < 16 ? 1 : 0; }));
    Image partly = frames.back();
    disc(partly, 30, 30, 5, 2, 14, 253); // colour 2 of colors256
    frames.push_back(partly);
    frames.push_back(stripes(64, 51));

    GifOptions options;
    options.dither = GetParam();
    const GifFile gif = writeAndDecode(dir.file("exact.gif"), frames, options);
    ASSERT_EQ(gif.width, 64);
    ASSERT_EQ(gif.height, 51);
    ASSERT_EQ(gif.frames.size(), frames.size());
    for (std::size_t i = 0; i < frames.size(); ++i)
        EXPECT_TRUE(sameRgb(gif.frames[i].canvas, frames[i])) << "frame " << i;
    // The disc frames hold only the rectangle around the discs' old and new positions.
    for (int i = 2; i <= 4; ++i) {
        EXPECT_LT(gif.frames[std::size_t(i)].w * gif.frames[std::size_t(i)].h, 64 * 51 / 2) << "frame " << i;
        EXPECT_TRUE(gif.frames[std::size_t(i)].transparent) << "frame " << i;
    }
    EXPECT_EQ(gif.frames[0].w * gif.frames[0].h, 64 * 51);
    EXPECT_FALSE(gif.frames[6].transparent); // 256 changed colours
    EXPECT_TRUE(gif.frames[7].transparent);
    EXPECT_LT(gif.frames[7].w * gif.frames[7].h, 200);
}

INSTANTIATE_TEST_SUITE_P(Dither, GifExact, ::testing::Bool());

// The LZW coder at its edges: a 1x1 image, 2 and 3 colours (minimum code size 2), long runs of one colour
// (long dictionary strings), and 256-colour noise that fills the 4096-code table many times over (clear
// codes, growth from 9 to 12 bits). All must decode exactly.
TEST(GifWriter, LzwEdgeCasesRoundTripExactly) {
    TempDir dir;
    std::mt19937 rng(7);
    {
        Image one(1, 1);
        one.set(0, 0, 9, 8, 7);
        const GifFile gif = writeAndDecode(dir.file("one.gif"), {one}, {});
        ASSERT_EQ(gif.frames.size(), 1u);
        EXPECT_TRUE(sameRgb(gif.frames[0].canvas, one));
    }
    for (int colors : {2, 3}) {
        Image img(97, 31);
        for (int y = 0; y < img.h; ++y)
            for (int x = 0; x < img.w; ++x) {
                const int c = int(rng() % unsigned(colors));
                img.set(x, y, 100 * c, 50 * c, 255 - 100 * c);
            }
        const GifFile gif = writeAndDecode(dir.file("few.gif"), {img}, {});
        ASSERT_EQ(gif.frames.size(), 1u);
        EXPECT_TRUE(sameRgb(gif.frames[0].canvas, img)) << colors << " colours";
    }
    {
        Image flat(1000, 700);
        for (int y = 0; y < flat.h; ++y)
            for (int x = 0; x < flat.w; ++x) flat.set(x, y, 20, 30, y < 350 ? 40 : 41);
        const GifFile gif = writeAndDecode(dir.file("flat.gif"), {flat}, {});
        ASSERT_EQ(gif.frames.size(), 1u);
        EXPECT_TRUE(sameRgb(gif.frames[0].canvas, flat));
    }
    {
        std::vector<std::array<int, 3>> palette(256);
        for (auto& c : palette) c = {int(rng() % 256), int(rng() % 256), int(rng() % 256)};
        std::vector<Image> frames;
        for (int f = 0; f < 3; ++f) {
            Image noise(300, 200);
            for (int y = 0; y < noise.h; ++y)
                for (int x = 0; x < noise.w; ++x) {
                    const auto& c = palette[rng() % (f == 1 ? 255 : 256)];
                    noise.set(x, y, c[0], c[1], c[2]);
                }
            frames.push_back(noise);
        }
        const GifFile gif = writeAndDecode(dir.file("noise.gif"), frames, {});
        ASSERT_EQ(gif.frames.size(), 3u);
        for (int f = 0; f < 3; ++f)
            EXPECT_TRUE(sameRgb(gif.frames[std::size_t(f)].canvas, frames[std::size_t(f)]));
    }
}

// --- Timing of frames ---

// Delays: frame i ends at round(100 (i + 1) / fps) cs, so at 30 fps each delay is 3 or 4 cs and 30 frames
// last exactly 100 cs; at 24 fps, 4 or 5 cs. The NETSCAPE2.0 extension loops forever (0) or n times.
TEST(GifWriter, DelaysFollowTheFrameRateAndTheAnimationLoops) {
    TempDir dir;
    for (double fps : {30.0, 24.0, 12.5}) {
        std::vector<Image> frames;
        const int n = 30;
        for (int i = 0; i < n; ++i) {
            Image f = stripes(40, 30);
            disc(f, 5 + i, 15, 4, 255, 255, 255);
            frames.push_back(f);
        }
        GifOptions options;
        options.fps = fps;
        const GifFile gif = writeAndDecode(dir.file("timing.gif"), frames, options);
        ASSERT_EQ(gif.frames.size(), std::size_t(n)) << fps;
        EXPECT_EQ(gif.loopCount, 0);
        int total = 0;
        for (const auto& f : gif.frames) {
            EXPECT_GE(f.delayCs, int(std::floor(100 / fps))) << fps;
            EXPECT_LE(f.delayCs, int(std::ceil(100 / fps))) << fps;
            EXPECT_EQ(f.disposal, 1);
            total += f.delayCs;
        }
        EXPECT_NEAR(total, 100.0 * n / fps, 1.0) << fps;
    }
    Image still = stripes(8, 8);
    GifOptions three;
    three.loopCount = 3;
    EXPECT_EQ(writeAndDecode(dir.file("loop.gif"), {still}, three).loopCount, 3);
}

// A frame identical to the last written one is not written; its time goes to that frame. Above 50 fps a
// frame starting less than 2 cs after the last written one is dropped (browsers show 0-1 cs as 10 cs).
TEST(GifWriter, RepeatedFramesMergeAndHighFrameRatesKeepTwoCentiseconds) {
    TempDir dir;
    std::vector<Image> frames;
    const int position[10] = {5, 8, 11, 11, 11, 11, 11, 20, 23, 26}; // frames 2..6 are the same picture
    for (int i = 0; i < 10; ++i) {
        Image f = stripes(40, 30);
        disc(f, position[i], 15, 4, 255, 255, 255);
        frames.push_back(f);
    }
    GifOptions ten;
    ten.fps = 10;
    GifFile gif = writeAndDecode(dir.file("merge.gif"), frames, ten);
    ASSERT_EQ(gif.frames.size(), 6u);
    const int expected[] = {10, 10, 50, 10, 10, 10};
    for (int i = 0; i < 6; ++i) EXPECT_EQ(gif.frames[std::size_t(i)].delayCs, expected[i]) << i;
    EXPECT_TRUE(sameRgb(gif.frames[2].canvas, frames[6]));
    EXPECT_TRUE(sameRgb(gif.frames[5].canvas, frames[9]));

    frames.clear();
    for (int i = 0; i < 60; ++i) {
        Image f = stripes(80, 30);
        disc(f, 5 + i, 15, 4, 255, 255, 255);
        frames.push_back(f);
    }
    GifOptions fast;
    fast.fps = 100;
    gif = writeAndDecode(dir.file("fast.gif"), frames, fast);
    EXPECT_EQ(gif.frames.size(), 30u);
    int total = 0;
    for (const auto& f : gif.frames) {
        EXPECT_GE(f.delayCs, 2);
        total += f.delayCs;
    }
    EXPECT_EQ(total, 60);
}

// --- Dithering and changed rectangles ---

// A smooth gradient of 65536 colours in 256: a palette on a 2-D colour surface has about 16 x 16 cells of
// 16 levels, so the nearest colour is off by up to 8 levels in R and G (mean 4) and less in B: a mean
// absolute error per channel below 4 without dithering (measured 3.5). Floyd-Steinberg adds noise to each
// pixel (bound 6, 1.5 times that; measured 4.3) but keeps local means: averaged over an 8x8 block, noise of
// ~4 levels per pixel shrinks towards 4 / 8 = 0.5 (measured 0.66, bound 1), where the undithered error,
// smooth over the block, stays (measured 2.7; dithering must at least halve it).
TEST(GifWriter, DitheredGradientKeepsLocalMeans) {
    TempDir dir;
    const Image img = gradient(256, 256);
    // The mean absolute errors (per pixel, per 8x8 block) of the gradient written with `colors` colours,
    // undithered and dithered (printed).
    const auto errors = [&](int colors) {
        GifOptions options;
        options.colors = colors;
        std::pair<double, double> e[2]; // [dither]
        for (const bool dither : {false, true}) {
            options.dither = dither;
            const std::string name = std::to_string(colors) + (dither ? "-dithered.gif" : "-plain.gif");
            e[dither] = meanErrors(writeAndDecode(dir.file(name), {img}, options).frames.at(0).canvas, img);
        }
        std::printf(
            "gradient 256x256, %d colours: pixel MAE %.2f (plain) %.2f (dithered); 8x8 block MAE %.2f "
            "(plain) %.2f (dithered)\n",
            colors, e[0].first, e[1].first, e[0].second, e[1].second);
        return std::make_pair(e[0], e[1]);
    };
    const auto [plain, dithered] = errors(256);
    EXPECT_LT(plain.first, 4.0);
    EXPECT_LT(dithered.first, 6.0);
    EXPECT_LT(dithered.second, 1.0);
    EXPECT_LT(dithered.second, 0.5 * plain.second);

    // 16 colours: cells of about 64 levels. Block means near the gradient's corners lie outside the convex
    // hull of the palette (box means), where no dithering reaches, so only the comparison is asserted.
    const auto [coarsePlain, coarse] = errors(16);
    EXPECT_LT(coarse.second, 0.5 * coarsePlain.second);
}

// An animation of many-coloured frames (quantised, dithered): after the first frame only changed rectangles
// are written, and every decoded frame stays as close to its source as the first one.
TEST(GifWriter, ParticleAnimationWritesChangedRectangles) {
    TempDir dir;
    std::vector<Image> frames;
    for (int t = 0; t < 8; ++t) {
        Image f(240, 160);
        test::renderParticles(f, t, 12);
        frames.push_back(f);
    }
    const GifFile gif = writeAndDecode(dir.file("particles.gif"), frames, {});
    ASSERT_EQ(gif.frames.size(), frames.size());
    const double first = meanErrors(gif.frames[0].canvas, frames[0]).first;
    for (std::size_t i = 0; i < frames.size(); ++i) {
        const auto e = meanErrors(gif.frames[i].canvas, frames[i]);
        EXPECT_LT(e.first, first + 0.5) << "frame " << i;
        EXPECT_LT(e.second, 1.0) << "frame " << i;
        if (i > 0) {
            EXPECT_TRUE(gif.frames[i].transparent) << "frame " << i;
        }
    }
}

// --- Bad options and error bounds ---

TEST(GifWriter, RejectsBadOptionsAndMisuse) {
    TempDir dir;
    GifOptions bad;
    bad.tolerance = 256;
    EXPECT_THROW(GifWriter(dir.file("a.gif"), 4, 4, bad), std::invalid_argument);
    bad = {};
    bad.ditherAbove = -1;
    EXPECT_THROW(GifWriter(dir.file("a.gif"), 4, 4, bad), std::invalid_argument);
    bad = {};
    bad.colors = 1;
    EXPECT_THROW(GifWriter(dir.file("a.gif"), 4, 4, bad), std::invalid_argument);
    bad = {};
    bad.fps = 0;
    EXPECT_THROW(GifWriter(dir.file("a.gif"), 4, 4, bad), std::invalid_argument);
    EXPECT_THROW(GifWriter(dir.file("a.gif"), 0, 4), std::invalid_argument);
    GifWriter gif(dir.file("a.gif"), 4, 4);
    Image img(4, 4);
    EXPECT_THROW(gif.addFrame(img.px.data(), 8), std::invalid_argument);
    EXPECT_THROW(gif.finish(), std::runtime_error); // no frames
    gif.addFrame(img.px.data(), img.stride);
    gif.finish();
    EXPECT_THROW(gif.addFrame(img.px.data(), img.stride), std::logic_error);
    EXPECT_THROW(gif.finish(), std::logic_error);
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"a.gif"});
}

// Lossy differencing: a few-colour picture (exact palette) brightening by one level per frame, with a disc
// that moves. With tolerance t every decoded frame stays within t of its source at every pixel (the error
// never accumulates: a kept pixel is compared with the colour it shows, not with the last frame), the moving
// disc is exact, and the file is smaller than the exact one, which re-encodes the whole picture each frame.
TEST(GifWriter, ToleranceBoundsTheErrorOfEveryFrame) {
    TempDir dir;
    std::vector<Image> frames;
    for (int t = 0; t < 12; ++t) {
        Image img = stripes(64, 48);
        for (int y = 0; y < img.h; ++y)
            for (int x = 0; x < img.w; ++x) {
                std::uint8_t* p = img.at(x, y);
                for (int a = 0; a < 3; ++a) p[a] = std::uint8_t(std::min(255, p[a] + t));
            }
        disc(img, 10 + 3 * t, 24, 6, 255, 255, 255);
        frames.push_back(img);
    }
    GifOptions options;
    options.tolerance = 2;
    const GifFile lossy = writeAndDecode(dir.file("lossy.gif"), frames, options);
    const GifFile exact = writeAndDecode(dir.file("exact.gif"), frames, {});
    ASSERT_EQ(lossy.frames.size(), frames.size());
    ASSERT_EQ(exact.frames.size(), frames.size());
    int worst = 0, kept = 0;
    for (std::size_t k = 0; k < frames.size(); ++k) {
        const auto& canvas = lossy.frames[k].canvas;
        for (int y = 0; y < 48; ++y)
            for (int x = 0; x < 64; ++x) {
                const std::uint8_t* want = frames[k].at(x, y);
                const std::uint8_t* got = &canvas[(std::size_t(y) * 64 + std::size_t(x)) * 3];
                int d = 0;
                for (int a = 0; a < 3; ++a) d = std::max(d, std::abs(int(got[a]) - int(want[a])));
                worst = std::max(worst, d);
                kept += d > 0;
            }
        EXPECT_TRUE(sameRgb(exact.frames[k].canvas, frames[k])) << "the exact file at frame " << k;
    }
    EXPECT_LE(worst, 2);
    EXPECT_GT(kept, 0); // some pixels did show an earlier colour
    EXPECT_LT(fs::file_size(dir.file("lossy.gif")), fs::file_size(dir.file("exact.gif")));
}

// ditherAbove: a frame whose quantisation error is below the threshold is written as without dithering,
// byte for byte; above it, as with dithering (the 65536-colour gradient's error is some tens).
TEST(GifWriter, DitherOnlyAboveTheQuantisationError) {
    TempDir dir;
    const Image img = gradient(128, 128);
    auto bytes = [&](const char* name, bool dither, double above) {
        GifOptions options;
        options.dither = dither;
        options.ditherAbove = above;
        writeAndDecode(dir.file(name), {img}, options);
        return test::readBytes(dir.file(name));
    };
    const auto plain = bytes("plain.gif", false, 0), dithered = bytes("dithered.gif", true, 0);
    ASSERT_NE(plain, dithered);
    EXPECT_EQ(bytes("high.gif", true, 1e6), plain);
    EXPECT_EQ(bytes("low.gif", true, 1.0), dithered);
}

} // namespace
} // namespace flowscope
