// flowscope-cli render end to end, with no display (DISPLAY and WAYLAND_DISPLAY unset): frame counts and
// sizes read back from the files (GIF header and frames, PNG headers and pixels), option errors, no EGL, and
// a cancelled export leaving nothing behind. Skips where the build has no render command or no headless
// OpenGL.
#include "../CliRun.h"
#include "../TempDir.h"
#include "../media/MediaTestUtil.h"
#include "../media/PngRead.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
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

// Runs flowscope-cli with `args` (shell words) without a display; `env` adds variables ("A=1 B=2").
Result cli(const std::string& args, const std::string& env = "") {
    return runCli(FLOWSCOPE_CLI, args, "env -u DISPLAY -u WAYLAND_DISPLAY " + env);
}

std::string preset(const std::string& name) {
    return std::string(FLOWSCOPE_PRESET_DIR) + "/" + name + ".json";
}

// Skips the test when the output `r` says `reason` (this build or machine cannot render).
#define SKIP_IF_SAYS(r, reason)                                                                              \
    do {                                                                                                     \
        if ((r).out.find(reason) != std::string::npos) GTEST_SKIP() << (r).out;                              \
    } while (0)
// Skips the test when this build has no rendering.
#define SKIP_UNLESS_BUILT(r) SKIP_IF_SAYS(r, "not available in this build")
// Skips the test when this build or machine cannot render (the reason is in the output).
#define SKIP_UNLESS_RENDERED(r)                                                                              \
    do {                                                                                                     \
        SKIP_UNLESS_BUILT(r);                                                                                \
        SKIP_IF_SAYS(r, "no OpenGL for headless drawing");                                                   \
    } while (0)

// The run `r` was refused with exit code `code`, its output naming `mention`.
void expectRefused(const Result& r, int code, const std::string& mention) {
    EXPECT_EQ(r.code, code) << r.out;
    EXPECT_NE(r.out.find(mention), std::string::npos) << r.out;
}

TEST(RenderCli, GifHasTheFramesAndSizeAsked) {
    TempDir dir("render");
    const std::string out = dir.file("anim.gif");
    const Result r = cli("render " + preset("default") + " --frames 5 --fps 10 --size 160x120 --out " + out);
    SKIP_UNLESS_RENDERED(r);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("frames/s"), std::string::npos) << r.out; // the progress line
    const std::vector<std::uint8_t> head = readBytes(out);
    ASSERT_GE(head.size(), 10u);
    EXPECT_EQ(std::string(head.begin(), head.begin() + 6), "GIF89a");
    EXPECT_EQ(head[6] | head[7] << 8, 160);
    EXPECT_EQ(head[8] | head[9] << 8, 120);
    const GifFile gif = decodeGif(out);
    EXPECT_EQ(gif.frames.size(), 5u);
    for (const GifFrame& f : gif.frames) EXPECT_EQ(f.delayCs, 10); // 10 fps
    // The tokens move: the first and last pictures differ. Nothing else is left in the directory.
    EXPECT_NE(gif.frames.front().canvas, gif.frames.back().canvas);
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"anim.gif"});
}

TEST(RenderCli, PngSequenceOfTheDiscWithCaptionAndHud) {
    TempDir dir("render");
    const std::string out = dir.file("frames") + "/";
    Result r = cli("render " + preset("cone-fig3d-mixed") +
                   " --view disc --no-particles --frames 5 --size 200x160 --caption auto --out " + out);
    SKIP_UNLESS_RENDERED(r);
    ASSERT_EQ(r.code, 0) << r.out;
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir.file("frames")))
        names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    ASSERT_EQ(names, (std::vector<std::string>{"frame_00000.png", "frame_00001.png", "frame_00002.png",
                                               "frame_00003.png", "frame_00004.png"}));
    const Png first = readPng(dir.file("frames/frame_00000.png"));
    const Png last = readPng(dir.file("frames/frame_00004.png"));
    EXPECT_EQ(first.width, 200);
    EXPECT_EQ(first.height, 160);
    // Opaque frames (the caption strip on top has the views' background), and the dots move.
    EXPECT_EQ(first.rgba[3], 255);
    EXPECT_EQ(int(first.rgba[0]), 0x16);
    EXPECT_NE(first.rgba, last.rgba);

    // The particle view with its heads-up display: a PNG the size asked, differing from the one without.
    r = cli("render " + preset("default") + " --frames 1 --size 320x240 --hud --out " + dir.file("hud") +
            "/");
    ASSERT_EQ(r.code, 0) << r.out;
    r = cli("render " + preset("default") + " --frames 1 --size 320x240 --out " + dir.file("plain") + "/");
    ASSERT_EQ(r.code, 0) << r.out;
    const Png hud = readPng(dir.file("hud/frame_00000.png")),
              plain = readPng(dir.file("plain/frame_00000.png"));
    EXPECT_EQ(hud.width, 320);
    EXPECT_EQ(hud.height, 240);
    // The HUD sits in the top-right corner; the bottom-left quarter is the same picture.
    auto px = [](const Png& p, int x, int y) { return &p.rgba[(std::size_t(y) * p.width + x) * 4]; };
    int differTopRight = 0;
    for (int y = 10; y < 60; ++y)
        for (int x = 200; x < 310; ++x) differTopRight += std::memcmp(px(hud, x, y), px(plain, x, y), 3) != 0;
    EXPECT_GT(differTopRight, 500);
    for (int y = 130; y < 240; y += 7)
        for (int x = 0; x < 100; x += 7) EXPECT_EQ(std::memcmp(px(hud, x, y), px(plain, x, y), 3), 0);
}

TEST(RenderCli, BadOptionsExitTwoNamingTheOption) {
    TempDir dir("render");
    const std::string scene = preset("default");
    struct Case {
        std::string args, mention;
    };
    for (const Case& c :
         {Case{"--size 12x10", "--size"}, Case{"--size 640", "--size"}, Case{"--size 100000x100", "--size"},
          Case{"--view pie", "--view"}, Case{"--frames 0", "--frames"}, Case{"--fps -3", "--fps"},
          Case{"--dt-per-frame 0", "--dt-per-frame"}, Case{"--view cone --hud", "--hud"},
          Case{"--no-particles", "--no-particles"}}) {
        SCOPED_TRACE(c.args);
        const Result r = cli("render " + scene + " " + c.args + " --out " + dir.file("x.gif"));
        SKIP_UNLESS_BUILT(r);
        expectRefused(r, 2, c.mention);
    }
    // An output the sinks cannot write: an input error too, found before any work.
    const Result ext = cli("render " + scene + " --out " + dir.file("x.webm"));
    expectRefused(ext, 2, "--out");
    // A view the scene has no picture for (relu.json starts from a non-Gaussian cloud: no moment equations).
    const Result r = cli("render " + preset("relu") + " --view cone --out " + dir.file("x.gif"));
    SKIP_UNLESS_BUILT(r);
    expectRefused(r, 2, "--view cone");
    EXPECT_TRUE(dir.entries().empty());
}

TEST(RenderCli, WithoutEglItSaysSoAndWritesNothing) {
    TempDir dir("render");
    // glvnd finds no EGL vendor library: no display can be opened.
    const Result r = cli("render " + preset("default") + " --frames 2 --out " + dir.file("x.gif"),
                         "__EGL_VENDOR_LIBRARY_FILENAMES=/nonexistent/egl_vendor.json");
    SKIP_UNLESS_BUILT(r);
    expectRefused(r, 1, "no OpenGL for headless drawing");
    EXPECT_TRUE(dir.entries().empty());
}

TEST(RenderCli, InterruptedExportLeavesNothingUnderTheName) {
    TempDir dir("render");
    const std::string out = dir.file("long.gif");
    // Probe first (skips where this build or machine cannot render).
    const Result probe =
        cli("render " + preset("default") + " --frames 1 --size 64x64 --out " + dir.file("p.gif"));
    SKIP_UNLESS_RENDERED(probe);
    ASSERT_EQ(probe.code, 0) << probe.out;
    fs::remove(dir.file("p.gif"));

    std::vector<std::string> words = {FLOWSCOPE_CLI, "render", preset("default"), "--frames", "100000",
                                      "--size",      "64x64",  "--out",           out};
    expectInterruptLeavesNothing(words, out, dir);
}

} // namespace
} // namespace flowscope::test
