// flowscope-cli render --view training end to end, with no display: the frames' count and size read back from
// the files, the same command giving the same bytes, the model visibly training, the MP4 and GIF checked
// frame by frame against the PNG sequence of the same command, the data points drawn where the view's
// projection puts them, option errors, and an interrupted export leaving nothing behind. Skips where the
// build has no render command.
#include "../CliRun.h"
#include "../TempDir.h"
#include "../media/MediaTestUtil.h"
#include "../media/Mp4Decode.h"
#include "../media/PngRead.h"

#include "engine/flows/Trainer.h"
#include "engine/media/Mp4Writer.h"
#include "engine/runner/FlowRunner.h"
#include "render/picture/FlowsPicture.h"
#include "render/picture/OffscreenApplication.h"
#include "render/picture/ViewTransform.h"

#include <QFontMetricsF>
#include <QGuiApplication>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <memory>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace flowscope::test {
namespace {

using Result = CliResult;

// Runs flowscope-cli with `args` (shell words) without a display.
Result cli(const std::string& args) {
    return runCli(FLOWSCOPE_CLI, args, "env -u DISPLAY -u WAYLAND_DISPLAY");
}

#define SKIP_UNLESS_RENDERED(r)                                                                              \
    do {                                                                                                     \
        if ((r).out.find("not available in this build") != std::string::npos) GTEST_SKIP() << (r).out;       \
    } while (0)

// A small, quick training: 3 frames 2 iterations apart on moons, a small batch and few samples drawn.
const std::string kSmall =
    "render --view training --dataset moons --batch 64 --picture-samples 200 --frames 3 "
    "--iters-per-frame 2 --size 320x200";

std::vector<std::string> sortedEntries(const std::string& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

std::string frameName(int k) {
    char name[32];
    std::snprintf(name, sizeof name, "frame_%05d.png", k);
    return name;
}

// Mean absolute difference per RGB channel between two RGB(A) pictures of the same size.
double meanAbsDiff(const std::uint8_t* a, int strideA, const std::uint8_t* b, int strideB, int pixels) {
    double sum = 0;
    for (int i = 0; i < pixels; ++i)
        for (int c = 0; c < 3; ++c) sum += std::abs(int(a[i * strideA + c]) - int(b[i * strideB + c]));
    return sum / (3.0 * pixels);
}

// The offscreen QGuiApplication of the in-process checks (the picture's geometry), on the platform and
// palette the CLI draws with, so that fonts and therefore layouts match.
QGuiApplication& application() {
    static std::unique_ptr<QGuiApplication> app = makeOffscreenApplication("flowscope_render_training_tests");
    return *app;
}

// The square of trainer k's scatter in a FlowsPicture of `size` showing `trainers` trainers: the picture's
// own pictureRect, less the title band above and the legend band below (FlowsPicture::paintPicture's layout).
QRectF scatterSquare(QSize size, int trainers, int k) {
    application();
    auto snapshot = std::make_shared<FlowSnapshot>();
    snapshot->comparison = trainers == 2;
    snapshot->trainers.resize(std::size_t(trainers));
    FlowsPicture picture;
    picture.setFont(QGuiApplication::font());
    picture.setSize(size);
    picture.show(snapshot);
    const QRectF area = picture.pictureRect(k);
    const double line = QFontMetricsF(QGuiApplication::font()).height();
    const double side = std::max(0.0, std::min(area.width(), area.height() - 2 * (line + 6)));
    return {area.left() + (area.width() - side) / 2, area.top() + line + 4 + 2, side, side};
}

TEST(RenderFlowCli, PngFramesAreDeterministicAndShowTheModelTraining) {
    TempDir dir("render_training");
    const Result first = cli(kSmall + " --out " + dir.file("a") + "/");
    SKIP_UNLESS_RENDERED(first);
    ASSERT_EQ(first.code, 0) << first.out;
    EXPECT_NE(first.out.find("frames/s"), std::string::npos) << first.out; // the progress and summary lines
    EXPECT_NE(first.out.find("wrote"), std::string::npos) << first.out;
    const std::vector<std::string> expected = {frameName(0), frameName(1), frameName(2)};
    ASSERT_EQ(sortedEntries(dir.file("a")), expected); // as many frames as --frames
    for (const std::string& name : expected) {
        const Png png = readPng(dir.file("a/" + name));
        EXPECT_EQ(png.width, 320);
        EXPECT_EQ(png.height, 200);
        EXPECT_EQ(png.at(0, 0)[3], 255); // opaque
    }

    // Time is the iteration, not the clock: a second run writes the same bytes.
    const Result second = cli(kSmall + " --out " + dir.file("b") + "/");
    ASSERT_EQ(second.code, 0) << second.out;
    ASSERT_EQ(sortedEntries(dir.file("b")), expected);
    for (const std::string& name : expected)
        EXPECT_EQ(readBytes(dir.file("a/" + name)), readBytes(dir.file("b/" + name))) << name;

    // The model trained: inside the scatter's square (not only the title and the curves), frame 2 differs
    // from frame 0.
    const Png f0 = readPng(dir.file("a/" + frameName(0))), f2 = readPng(dir.file("a/" + frameName(2)));
    const QRect square = scatterSquare(QSize(320, 200), 1, 0).toRect().adjusted(1, 1, -1, -1);
    ASSERT_GT(square.width(), 20);
    int differ = 0;
    for (int y = square.top(); y <= square.bottom(); ++y)
        for (int x = square.left(); x <= square.right(); ++x)
            differ += std::memcmp(f0.at(x, y), f2.at(x, y), 3) != 0;
    EXPECT_GT(differ, square.width() * square.height() / 50) << "of " << square.width() * square.height();
}

// The data points (grey, under the samples) of frame 0 are where the view's projection of the square
// [-4, 4]² puts them: most of their pixels are light grey, while the same points mirrored in y (not the
// moons, which have no such symmetry) mostly are not.
TEST(RenderFlowCli, DataPointsAreDrawnWhereTheViewProjectsThem) {
    TempDir dir("render_training");
    const Result r = cli(
        "render --view training --dataset moons --batch 64 --picture-samples 400 --frames 1 --size 640x400 "
        "--out " +
        dir.file("f") + "/");
    SKIP_UNLESS_RENDERED(r);
    ASSERT_EQ(r.code, 0) << r.out;
    const Png frame = readPng(dir.file("f/" + frameName(0)));

    flows::TrainerConfig config; // the data points depend on the dataset and the pictures' seed only
    config.dataset = "moons";
    config.batch = 64;
    const flows::FlowTrainer trainer(config);
    FlowRunOptions options;
    options.samples = 400; // --picture-samples
    const Mat data = FlowPictureMaker(options, 2).data(trainer);
    ASSERT_EQ(data.rows(), options.samples);

    const QRectF square = scatterSquare(QSize(640, 400), 1, 0);
    ViewTransform view;
    view.setViewportSize(square.size());
    view.frame(
        QRectF(-options.gridExtent, -options.gridExtent, 2 * options.gridExtent, 2 * options.gridExtent),
        0.0);
    // Light grey: the data colour (0xa8, 0xad, 0xb8) at alpha 140 over the dark background or the faint heat
    // map; the samples are orange (blue far below red), the heat map blue (red far below blue).
    auto grey = [&](QPointF world) {
        const QPointF pixel = square.topLeft() + view.worldToPixel(world);
        const int x = int(std::floor(pixel.x())), y = int(std::floor(pixel.y()));
        if (x < 0 || y < 0 || x >= frame.width || y >= frame.height) return false;
        const std::uint8_t* p = frame.at(x, y);
        return p[0] >= 0x58 && std::abs(int(p[2]) - int(p[0])) <= 0x30;
    };
    int onData = 0, mirrored = 0, counted = 0;
    for (Eigen::Index i = 0; i < data.rows(); ++i) {
        if (std::abs(data(i, 0)) > 3.9 || std::abs(data(i, 1)) > 3.9) continue;
        ++counted;
        onData += grey({data(i, 0), data(i, 1)});
        mirrored += grey({data(i, 0), -data(i, 1)});
    }
    ASSERT_GT(counted, data.rows() / 2);
    EXPECT_GT(onData, counted * 6 / 10) << "mirrored: " << mirrored << " of " << counted;
    EXPECT_LT(mirrored, counted * 3 / 10) << "on the data: " << onData << " of " << counted;
}

#ifdef FLOWSCOPE_HAVE_LIBAV
// Decodes every frame of an MP4 into RGBA, in presentation order.
std::vector<std::vector<std::uint8_t>> decodeMp4(const std::string& path, int* width, int* height) {
    std::vector<std::pair<std::int64_t, std::vector<std::uint8_t>>> frames;
    decodeMp4Frames(
        path,
        [&](const AVFormatContext&, const AVStream& stream) {
            *width = stream.codecpar->width;
            *height = stream.codecpar->height;
        },
        [&](const AVFrame& frame, const std::vector<std::uint8_t>& rgba) {
            frames.emplace_back(frame.best_effort_timestamp, rgba);
        });
    std::sort(frames.begin(), frames.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::vector<std::uint8_t>> out;
    for (auto& f : frames) out.push_back(std::move(f.second));
    return out;
}
#endif

// The acceptance check of the issue in small: an MP4 and a GIF of a flow training on moons, made headless by
// the CLI and checked frame by frame against the PNG frames of the same command (the same frames, since time
// is the iteration).
TEST(RenderFlowCli, Mp4AndGifHoldTheSameFramesAsThePngs) {
    TempDir dir("render_training");
    const std::string args = kSmall + " --fps 10 --side-by-side --caption auto";
    const Result png = cli(args + " --out " + dir.file("png") + "/");
    SKIP_UNLESS_RENDERED(png);
    ASSERT_EQ(png.code, 0) << png.out;
    std::vector<Png> frames;
    for (int k = 0; k < 3; ++k) frames.push_back(readPng(dir.file("png/" + frameName(k))));

    const Result gif = cli(args + " --out " + dir.file("anim.gif"));
    ASSERT_EQ(gif.code, 0) << gif.out;
    const GifFile decoded = decodeGif(dir.file("anim.gif"));
    EXPECT_EQ(decoded.width, 320);
    EXPECT_EQ(decoded.height, 200);
    ASSERT_EQ(decoded.frames.size(), 3u);
    for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(decoded.frames[std::size_t(k)].delayCs, 10); // 10 fps
        // 256 colours per frame: close to the PNG, and closer to its own frame than to the other ones.
        const double same = meanAbsDiff(decoded.frames[std::size_t(k)].canvas.data(), 3,
                                        frames[std::size_t(k)].rgba.data(), 4, 320 * 200);
        EXPECT_LT(same, 3.0) << "frame " << k;
        const double other = meanAbsDiff(decoded.frames[std::size_t(k)].canvas.data(), 3,
                                         frames[std::size_t((k + 2) % 3)].rgba.data(), 4, 320 * 200);
        EXPECT_LT(same, other) << "frame " << k;
    }

    if (!Mp4Writer::available()) GTEST_SKIP() << "no MP4 encoder in this build";
    const Result mp4 = cli(args + " --out " + dir.file("anim.mp4"));
    ASSERT_EQ(mp4.code, 0) << mp4.out;
    EXPECT_EQ(sortedEntries(dir.str()), (std::vector<std::string>{"anim.gif", "anim.mp4", "png"}));
#ifdef FLOWSCOPE_HAVE_LIBAV
    int width = 0, height = 0;
    const auto video = decodeMp4(dir.file("anim.mp4"), &width, &height);
    EXPECT_EQ(width, 320);
    EXPECT_EQ(height, 200);
    ASSERT_EQ(video.size(), 3u);
    for (int k = 0; k < 3; ++k) {
        const double same =
            meanAbsDiff(video[std::size_t(k)].data(), 4, frames[std::size_t(k)].rgba.data(), 4, 320 * 200);
        EXPECT_LT(same, 6.0) << "frame " << k; // H.264 with 4:2:0 chroma
        const double other = meanAbsDiff(video[std::size_t(k)].data(), 4,
                                         frames[std::size_t((k + 2) % 3)].rgba.data(), 4, 320 * 200);
        EXPECT_LT(same, other) << "frame " << k;
    }
#endif
}

TEST(RenderFlowCli, BadOptionsExitTwoNamingTheOptionAndWriteNothing) {
    TempDir dir("render_training");
    struct Case {
        std::string args, mention;
    };
    for (const Case& c :
         {Case{"--dataset spiral", "--dataset"}, Case{"--iters-per-frame 0", "--iters-per-frame"},
          Case{"--iters-per-frame ten", "--iters-per-frame"}, Case{"--hud", "--hud"},
          Case{"--side-by-side --no-rwpo", "--no-rwpo"}, Case{"--frames 0", "--frames"},
          Case{"--size 10x10", "--size"}, Case{"--batch 1", "--batch"}, Case{"--lr 0", "--lr"},
          Case{"--dt-per-frame 0.1", "--dt-per-frame"}, Case{"--iters 100", "--iters"},
          Case{"--data " + dir.file("missing.npy"), "--data"}, Case{"--dataset moons --data x.csv", "--data"},
          Case{"--colour red", "--colour"}}) {
        const Result r = cli("render --view training " + c.args + " --out " + dir.file("x.gif"));
        SKIP_UNLESS_RENDERED(r);
        EXPECT_EQ(r.code, 2) << c.args << ": " << r.out;
        EXPECT_NE(r.out.find(c.mention), std::string::npos) << c.args << ": " << r.out;
    }
    const Result scene = cli("render --view training scene.json --out " + dir.file("x.gif"));
    EXPECT_EQ(scene.code, 2) << scene.out;
    EXPECT_NE(scene.out.find("SCENE.json"), std::string::npos) << scene.out;
    const Result ext = cli("render --view training --out " + dir.file("x.webm"));
    EXPECT_EQ(ext.code, 2) << ext.out;
    EXPECT_NE(ext.out.find("--out"), std::string::npos) << ext.out;
    EXPECT_TRUE(dir.entries().empty());
}

TEST(RenderFlowCli, InterruptedExportLeavesNothingUnderTheName) {
    TempDir dir("render_training");
    const Result probe =
        cli("render --view training --frames 1 --size 64x64 --batch 16 --picture-samples 50 --out " +
            dir.file("p.gif"));
    SKIP_UNLESS_RENDERED(probe);
    ASSERT_EQ(probe.code, 0) << probe.out;
    fs::remove(dir.file("p.gif"));

    const std::string out = dir.file("long.gif");
    std::vector<std::string> words = {
        FLOWSCOPE_CLI, "render",   "--view", "training", "--batch", "16",    "--picture-samples",
        "50",          "--frames", "100000", "--size",   "64x64",   "--out", out};
    expectInterruptLeavesNothing(words, out, dir);
}

} // namespace
} // namespace flowscope::test
