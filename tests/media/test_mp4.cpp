// Tests of the MP4 writer (engine/media/Mp4Writer.cpp): what it writes is reopened with libavformat and
// decoded with libavcodec, and the decoded frames are compared with the sources. Skipped in builds without
// libav.
#include "MediaTestUtil.h"
#include "Mp4Decode.h"

#include "engine/media/Mp4Writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

namespace flowscope {
namespace {

using test::Image;
using test::TempDir;
namespace fs = std::filesystem;

#ifdef FLOWSCOPE_HAVE_LIBAV

struct VideoInfo {
    unsigned streams = 0;
    AVCodecID codec = AV_CODEC_ID_NONE;
    int width = 0, height = 0;
    AVRational frameRate{0, 1};
    AVColorSpace colorSpace = AVCOL_SPC_UNSPECIFIED;
    int frames = 0;
    std::vector<double> psnr; // per decoded frame, against the source
};

// Decodes `path`; each frame is converted back to RGBA (with the colour matrix the stream is tagged with) and
// compared with source(frame index) over the source's size.
VideoInfo decodeMp4(const std::string& path, const std::function<Image(int)>& source) {
    VideoInfo info;
    const AVStream* stream = nullptr;
    test::decodeMp4Frames(
        path,
        [&](const AVFormatContext& format, const AVStream& s) {
            stream = &s;
            info.streams = format.nb_streams;
            info.codec = s.codecpar->codec_id;
            info.width = s.codecpar->width;
            info.height = s.codecpar->height;
            info.frameRate = s.avg_frame_rate;
            info.colorSpace = s.codecpar->color_space;
        },
        [&](const AVFrame& frame, const std::vector<std::uint8_t>& rgba) {
            // Presentation order: the frame's index from its timestamp.
            const double t = double(frame.best_effort_timestamp) * av_q2d(stream->time_base);
            const Image src = source(int(std::lround(t * av_q2d(info.frameRate))));
            double se = 0;
            for (int y = 0; y < src.h; ++y)
                for (int x = 0; x < src.w; ++x)
                    for (int a = 0; a < 3; ++a) {
                        const double d =
                            double(rgba[(std::size_t(y) * std::size_t(frame.width) + std::size_t(x)) * 4 +
                                        std::size_t(a)]) -
                            src.at(x, y)[a];
                        se += d * d;
                    }
            const double mse = se / (3.0 * src.w * src.h);
            info.psnr.push_back(mse > 0 ? 10 * std::log10(255.0 * 255.0 / mse) : 99);
            ++info.frames;
        });
    return info;
}

// The top-level MP4 boxes in order ("+faststart" puts moov before mdat).
std::vector<std::string> topLevelBoxes(const std::string& path) {
    const std::vector<std::uint8_t> b = test::readBytes(path);
    std::vector<std::string> boxes;
    for (std::size_t pos = 0; pos + 8 <= b.size();) {
        std::uint64_t size = std::uint64_t(b[pos]) << 24 | std::uint64_t(b[pos + 1]) << 16 |
                             std::uint64_t(b[pos + 2]) << 8 | b[pos + 3];
        boxes.emplace_back(reinterpret_cast<const char*>(&b[pos + 4]), 4);
        if (size == 1 && pos + 16 <= b.size()) {
            size = 0;
            for (int i = 0; i < 8; ++i) size = size << 8 | b[pos + 8 + std::size_t(i)];
        }
        if (size == 0) break; // to the end of the file
        if (size < 8) throw std::runtime_error("bad MP4 box size");
        pos += size;
    }
    return boxes;
}

Image particles(int w, int h, int t) {
    Image img(w, h);
    test::renderParticles(img, t);
    return img;
}

// 720p at 30 fps, CRF 20: one H.264 stream of the right size, rate and frame count, tagged BT.709, index
// first. PSNR bound 35 dB (an RMS error of 4.5 levels): the RGBA -> yuv420p -> RGBA round trip alone caps
// this scene of small saturated discs at 42.4 dB (4:2:0 halves the chroma resolution; measured without
// encoding), and x264 at CRF 20 costs about 2 dB more (measured values are printed). A wrong colour matrix
// (BT.601 against BT.709), a chroma or row shift, or frames out of order each fall well below 35 dB.
TEST(Mp4, RoundTripsThroughLibavcodec) {
    if (!Mp4Writer::available()) GTEST_SKIP() << "built without libav";
    TempDir dir;
    const int n = 45, w = 1280, h = 720;
    const std::string path = dir.file("video.mp4");
    {
        Mp4Writer mp4(path, w, h, {30, 20});
        for (int t = 0; t < n; ++t) {
            const Image f = particles(w, h, t);
            mp4.addFrame(f.px.data(), f.stride);
        }
        mp4.finish();
    }
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"video.mp4"});
    const VideoInfo v = decodeMp4(path, [&](int t) { return particles(w, h, t); });
    EXPECT_EQ(v.streams, 1u);
    EXPECT_EQ(v.codec, AV_CODEC_ID_H264);
    EXPECT_EQ(v.width, w);
    EXPECT_EQ(v.height, h);
    EXPECT_EQ(v.frameRate.num, 30);
    EXPECT_EQ(v.frameRate.den, 1);
    EXPECT_EQ(v.colorSpace, AVCOL_SPC_BT709);
    EXPECT_EQ(v.frames, n);
    ASSERT_FALSE(v.psnr.empty());
    double mean = 0;
    for (double p : v.psnr) mean += p / double(v.psnr.size());
    const double worst = *std::min_element(v.psnr.begin(), v.psnr.end());
    std::printf("720p CRF 20: PSNR mean %.1f dB, worst frame %.1f dB, %.0f kB for %d frames\n", mean, worst,
                double(fs::file_size(path)) / 1e3, n);
    EXPECT_GT(worst, 35.0);
    const auto boxes = topLevelBoxes(path);
    const auto moov = std::find(boxes.begin(), boxes.end(), "moov"),
               mdat = std::find(boxes.begin(), boxes.end(), "mdat");
    ASSERT_NE(moov, boxes.end());
    ASSERT_NE(mdat, boxes.end());
    EXPECT_LT(moov - boxes.begin(), mdat - boxes.begin()) << "+faststart: moov before mdat";
}

// Odd sizes are padded by one pixel (last column and row repeated); a fractional rate is kept exactly. The
// PSNR over the source's pixels shows they stayed in place (a one-pixel shift costs over 10 dB here). This
// small frame is denser (30 particles in 321x241), and yuv420p alone caps it near 39 dB: bound 34 dB.
TEST(Mp4, OddSizeIsPaddedByOnePixel) {
    if (!Mp4Writer::available()) GTEST_SKIP() << "built without libav";
    TempDir dir;
    const int n = 12, w = 321, h = 241;
    const std::string path = dir.file("odd.mp4");
    auto source = [&](int t) {
        Image img(w, h);
        test::renderParticles(img, t, 30);
        return img;
    };
    Mp4Writer mp4(path, w, h, {30000.0 / 1001.0, 18});
    for (int t = 0; t < n; ++t) {
        const Image f = source(t);
        mp4.addFrame(f.px.data(), f.stride);
    }
    mp4.finish();
    const VideoInfo v = decodeMp4(path, source);
    EXPECT_EQ(v.width, w + 1);
    EXPECT_EQ(v.height, h + 1);
    EXPECT_EQ(v.frameRate.num, 30000);
    EXPECT_EQ(v.frameRate.den, 1001);
    EXPECT_EQ(v.frames, n);
    for (double p : v.psnr) EXPECT_GT(p, 34.0);
    std::printf("321x241 CRF 18: PSNR worst frame %.1f dB\n",
                *std::min_element(v.psnr.begin(), v.psnr.end()));
}

TEST(Mp4, RejectsBadOptions) {
    TempDir dir;
    EXPECT_THROW(Mp4Writer(dir.file("a.mp4"), 64, 64, {30, 52}), std::invalid_argument);
    EXPECT_THROW(Mp4Writer(dir.file("a.mp4"), 64, 64, {0, 20}), std::invalid_argument);
    EXPECT_THROW(Mp4Writer(dir.file("a.mp4"), 0, 64), std::invalid_argument);
    EXPECT_TRUE(dir.entries().empty());
}

#else

TEST(Mp4, RoundTripsThroughLibavcodec) {
    GTEST_SKIP() << "built without libav (FLOWSCOPE_HAVE_LIBAV)";
}

TEST(Mp4, UnavailableIsAClearError) {
    EXPECT_FALSE(Mp4Writer::available());
    try {
        Mp4Writer("x.mp4", 64, 64);
        FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("x.mp4"), std::string::npos) << e.what();
    }
}

#endif

} // namespace
} // namespace flowscope
