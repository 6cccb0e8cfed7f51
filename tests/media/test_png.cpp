// Tests of the PNG writer (engine/media/PngWriter.cpp): what it writes is read back with libpng, an
// independent decoder, and compared byte for byte.
#include "MediaTestUtil.h"
#include "PngRead.h"

#include "engine/media/PngWriter.h"

#include <gtest/gtest.h>
#include <png.h>

#include <random>

namespace flowscope {
namespace {

using test::Image;
using test::Png;
using test::readPng;
using test::TempDir;
namespace fs = std::filesystem;

void expectSame(const Png& d, const Image& img) {
    ASSERT_EQ(d.width, img.w);
    ASSERT_EQ(d.height, img.h);
    for (int y = 0; y < img.h; ++y)
        ASSERT_EQ(std::memcmp(&d.rgba[std::size_t(y) * std::size_t(img.w) * 4], img.at(0, y),
                              std::size_t(img.w) * 4),
                  0)
            << "row " << y;
}

// Opaque images are written as RGB, others as RGBA; rows with padding (stride > 4 w), odd sizes, noise (every
// filter type wins somewhere) and smooth content all come back exactly.
TEST(Png, RoundTripsExactlyThroughLibpng) {
    TempDir dir;
    std::mt19937 rng(3);
    Image smooth(37, 23, 12);
    test::renderParticles(smooth, 5, 10);
    Image noisy(301, 201);
    for (auto& v : noisy.px) v = std::uint8_t(rng());
    Image translucent = smooth;
    for (int y = 0; y < translucent.h; ++y)
        for (int x = 0; x < translucent.w; ++x) translucent.at(x, y)[3] = std::uint8_t((x * 7 + y * 3) % 256);
    Image single(1, 1);
    single.set(0, 0, 1, 2, 3, 4);

    struct Case {
        const char* name;
        const Image* img;
        bool alpha;
    };
    for (const Case& c : {Case{"smooth.png", &smooth, false}, Case{"noisy.png", &noisy, true},
                          Case{"translucent.png", &translucent, true}, Case{"single.png", &single, true}}) {
        writePng(dir.file(c.name), c.img->w, c.img->h, c.img->px.data(), c.img->stride);
        const Png d = readPng(dir.file(c.name));
        EXPECT_EQ(d.hasAlpha, c.alpha) << c.name;
        expectSame(d, *c.img);
    }
    // A flat 720p frame compresses to almost nothing.
    Image flat(1280, 720);
    for (int y = 0; y < flat.h; ++y)
        for (int x = 0; x < flat.w; ++x) flat.set(x, y, 12, 20, 40);
    writePng(dir.file("flat.png"), flat.w, flat.h, flat.px.data(), flat.stride);
    expectSame(readPng(dir.file("flat.png")), flat);
    EXPECT_LT(fs::file_size(dir.file("flat.png")), 10000u);
}

// writePng is atomic: a missing directory gives std::runtime_error naming the path and leaves nothing.
TEST(Png, MissingDirectoryIsAClearErrorAndLeavesNothing) {
    TempDir dir;
    Image img(4, 4);
    const std::string path = dir.file("missing/frame.png");
    try {
        writePng(path, 4, 4, img.px.data(), img.stride);
        FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
    EXPECT_TRUE(dir.entries().empty());
    EXPECT_THROW(writePng(dir.file("x.png"), 4, 4, img.px.data(), 15), std::invalid_argument);
    EXPECT_TRUE(dir.entries().empty());
}

} // namespace
} // namespace flowscope
