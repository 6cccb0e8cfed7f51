// Hostile inputs the loaders once answered by allocating what the input claimed (gigabytes from a few bytes,
// an out-of-memory crash under the fuzz targets of tests/fuzz): now one clear message, before any allocation.
#include "engine/io/Npy.h"
#include "engine/io/Safetensors.h"
#include "engine/ottransformer/TransformerIo.h"
#include "engine/scene/Scene.h"

#include "../TempDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fcntl.h>
#include <fstream>
#include <future>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace flowscope {
namespace {

using ::testing::HasSubstr;

template <class F> std::string errorOf(F f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "(no error)";
}

// A 128-byte .npy whose header claims 400000000 float64 values (3.2 GB) and holds none.
TEST(LoaderRegressions, NpyHeaderClaimingGigabytesIsTruncatedNotAllocated) {
    test::TempDir dir;
    std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (400000000,), }";
    header += std::string(64 - (10 + header.size() + 1) % 64, ' ') + "\n";
    std::ofstream(dir.file("claims.npy"), std::ios::binary)
        << std::string("\x93NUMPY\x01\x00", 8) << char(header.size()) << '\0' << header;
    EXPECT_THAT(errorOf([&] { readNpy(dir.file("claims.npy")); }),
                HasSubstr("claims.npy: truncated data (expected 400000000 values)"));
}

// A Fortran-order .npy (what np.save writes for a transposed or Fortran-ordered array) reads as the same
// array in C order: element (i, j, k) of a 2 x 3 x 4 array holding 100 i + 10 j + k, written first index
// fastest, in float32 and float64; and a header whose fortran_order is neither True nor False is refused.
TEST(LoaderRegressions, FortranOrderNpyReadsAsTheSameArray) {
    test::TempDir dir;
    auto write = [&](const std::string& name, const std::string& descr, const std::string& order, bool f32) {
        std::string header =
            "{'descr': '" + descr + "', 'fortran_order': " + order + ", 'shape': (2, 3, 4), }";
        header += std::string(64 - (10 + header.size() + 1) % 64, ' ') + "\n";
        std::ofstream out(dir.file(name), std::ios::binary);
        out << std::string("\x93NUMPY\x01\x00", 8) << char(header.size()) << '\0' << header;
        for (int k = 0; k < 4; ++k)
            for (int j = 0; j < 3; ++j)
                for (int i = 0; i < 2; ++i) {
                    const double v = 100 * i + 10 * j + k;
                    const float f = float(v);
                    if (f32)
                        out.write(reinterpret_cast<const char*>(&f), 4);
                    else
                        out.write(reinterpret_cast<const char*>(&v), 8);
                }
    };
    write("f8.npy", "<f8", "True", false);
    write("f4.npy", "<f4", "True", true);
    for (const char* name : {"f8.npy", "f4.npy"}) {
        const NpyArray a = readNpy(dir.file(name));
        ASSERT_EQ(a.shape, (std::vector<std::int64_t>{2, 3, 4})) << name;
        for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 3; ++j)
                for (int k = 0; k < 4; ++k)
                    EXPECT_EQ(a.data[std::size_t(12 * i + 4 * j + k)], 100 * i + 10 * j + k) << name;
    }
    write("bad.npy", "<f8", "Maybe", false);
    EXPECT_THAT(errorOf([&] { readNpy(dir.file("bad.npy")); }),
                HasSubstr("bad.npy: malformed fortran_order"));
}

// 300 heads written as {} (each the identity) at d = 1024: 2 KB of JSON for 7.5 GB of matrices.
TEST(LoaderRegressions, SceneHeadsThatExpandToGigabytesAreRefused) {
    std::string heads;
    for (int h = 0; h < 300; ++h) heads += h ? ",{}" : "{}";
    const std::string many =
        R"({"d": 1024, "n": 4, "attention": {"type": "softmax", "heads": [)" + heads + "]}}";
    EXPECT_THAT(errorOf([&] { sceneFromJson(many); }),
                HasSubstr("/attention: expected at most 33554432 values in the V matrices of all heads and "
                          "keyframes, got 300 heads of 1024x1024"));
    // The stacked form and keyframes count too.
    EXPECT_THAT(errorOf([&] {
                    sceneFromJson(R"({"d": 1024, "n": 4, "attention": {"type": "softmax", "keyframes":
                                      [{"t": 0, "stacked": {"H": 1024}}]}})");
                }),
                HasSubstr("got 1024 heads"));
    // A large scene within the bound still loads.
    EXPECT_EQ(
        sceneFromJson(R"({"d": 1024, "n": 4, "attention": {"type": "softmax", "heads": [{}, {"V": 2}]}})")
            .attention.heads.size(),
        2u);
}

// 64 MiB of "[" (the largest scene file) took about 11 GB to parse.
TEST(LoaderRegressions, DeeplyNestedSceneJsonIsRefused) {
    std::string pointer;
    for (int level = 0; level < 64; ++level) pointer += "/0";
    EXPECT_EQ(errorOf([&] { sceneFromJson(std::string(std::size_t(1) << 20, '[')); }),
              pointer + ": expected at most 64 levels of nesting");
}

// A .safetensors of 536 bytes with no tensors whose metadata describes 64 blocks of 64 heads of 1024 x 1024:
// about 150 GB of parameters.
TEST(LoaderRegressions, TransformerArchitectureLargerThanItsFileIsRefused) {
    test::TempDir dir;
    ot::TransformerConfig c;
    c.width = c.inputDim = 1024;
    c.heads = 64;
    c.headDim = 1024;
    c.blocks = 64;
    c.mlpHidden = 4096;
    SafeTensors file;
    file.metadata["flowscope_transformer"] = ot::toJson(c).dump();
    writeSafetensors(dir.file("big.safetensors"), file);
    EXPECT_THAT(errorOf([&] { ot::loadTransformer(dir.file("big.safetensors")); }),
                HasSubstr("the architecture has at least 17716740096 parameters, the file holds 0 values"));
}

// A first CSV row with a number out of the range of a double was taken as a header and dropped.
TEST(LoaderRegressions, CsvNumberOutOfRangeIsAnErrorNotAHeader) {
    test::TempDir dir;
    std::ofstream(dir.file("big.csv")) << "1e999,2\n3,4\n";
    EXPECT_THAT(errorOf([&] { readCsv(dir.file("big.csv")); }),
                HasSubstr("big.csv:1: \"1e999\" is out of range for a double"));
    std::ofstream(dir.file("later.csv")) << "x,y\n1,2\n3,-1e400\n";
    EXPECT_THAT(errorOf([&] { readCsv(dir.file("later.csv")); }),
                HasSubstr("later.csv:3: \"-1e400\" is out of range for a double"));
    // A row with a word in it is still a header.
    std::ofstream(dir.file("header.csv")) << "x,1e999\n1,2\n";
    EXPECT_EQ(readCsv(dir.file("header.csv")).shape, (std::vector<std::int64_t>{1, 2}));
}

// strtod reports ERANGE for subnormal numbers too: 4e-320 was refused as "not a number".
TEST(LoaderRegressions, SubnormalNumbersAreRead) {
    test::TempDir dir;
    std::ofstream(dir.file("tiny.csv")) << "4e-320,1e-400\n1,2\n";
    const NpyArray a = readCsv(dir.file("tiny.csv"));
    ASSERT_EQ(a.shape, (std::vector<std::int64_t>{2, 2}));
    EXPECT_EQ(a.data[0], 4e-320);
    EXPECT_EQ(a.data[1], 0.0);
    const Scene s = sceneFromJson(R"({"d": 2, "n": 4, "initial": {"kind": "rings", "noise": 4e-320},
                                      "attention": {"type": "softmax"}})");
    EXPECT_EQ(s.initial.noise, 4e-320);
}

// A 5 MB key or string gave a 10 MB message: every quoted input is cut short.
TEST(LoaderRegressions, MessagesQuotingHugeInputStayShort) {
    const std::string huge(std::size_t(5) << 20, 'k');
    for (const std::string& text :
         {R"({"d": 2, "n": 4, ")" + huge + R"(": 1, "attention": {"type": "softmax"}})",
          R"({"d": 2, "n": 4, "initial": {"kind": ")" + huge + R"("}, "attention": {"type": "softmax"}})",
          R"({"d": 2, "n": 4, "integrator": {"T": ")" + huge + R"("}, "attention": {"type": "softmax"}})",
          R"({"d": 2, "n": 4, "initial": {"kind": "file", "path": ")" + huge +
              R"(.npy"}, "attention": {"type": "softmax"}})",
          R"({"d": 2, "n": 4, "a": 1, "a": 2, ")" + huge + R"(": 1e999})",
          R"({"d": 2, "n": 4, "name": ")" + huge}) {
        const std::string message = errorOf([&] { sceneFromJson(text); });
        EXPECT_LT(message.size(), 1024u) << message.substr(0, 2000);
        EXPECT_NE(message, "(no error)");
    }
    EXPECT_THAT(errorOf([&] { sceneFromJson(R"({"d": 2, "n": 4, ")" + huge + R"(": 1})"); }),
                HasSubstr("unknown field \"kkkkkkkk"));
    EXPECT_THAT(errorOf([&] { sceneFromJson(R"({"d": 2, "n": 4, ")" + huge + R"(": 1})"); }),
                HasSubstr("…(5242880 bytes)"));
    // Control characters are escaped: the message stays on one line.
    EXPECT_THAT(errorOf([&] { sceneFromJson("{\"d\": 2, \"n\": 4, \"a\\nb\": 1}"); }),
                HasSubstr("unknown field \"a\\nb\""));
}

// A directory or a FIFO named as the token file read "file not found"; reading a FIFO blocked for ever.
TEST(LoaderRegressions, TokenPathThatIsNoRegularFileIsRefusedWithoutBlocking) {
    test::TempDir dir;
    std::filesystem::create_directory(dir.file("dir.npy"));
    ASSERT_EQ(::mkfifo(dir.file("fifo.npy").c_str(), 0600), 0);
    const auto scene = [&](const std::string& name) {
        return R"({"d": 2, "n": 4, "initial": {"kind": "file", "path": ")" + dir.file(name) +
               R"("}, "attention": {"type": "softmax"}})";
    };
    EXPECT_THAT(errorOf([&] { sceneFromJson(scene("dir.npy")); }),
                HasSubstr("/initial/path: is a directory"));
    EXPECT_THAT(errorOf([&] { sceneFromJson(scene("fifo.npy")); }),
                HasSubstr("/initial/path: is not a regular file"));
    EXPECT_THAT(errorOf([&] { sceneFromJson(scene("missing.npy")); }),
                HasSubstr("/initial/path: file not found"));
    // A scene made in code (or a file replaced after the scene was read): the tokens refuse it too.
    Scene s = sceneFromJson(R"({"d": 2, "n": 4, "attention": {"type": "softmax"}})");
    s.initial.kind = InitKind::File;
    s.initial.path = dir.file("fifo.npy");
    auto tokens = std::async(std::launch::async, [&] { return errorOf([&] { initialTokens(s); }); });
    if (tokens.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
        ::close(::open(s.initial.path.c_str(), O_WRONLY | O_NONBLOCK)); // lets the blocked reader go
        ADD_FAILURE() << "initialTokens blocked on a FIFO";
    }
    EXPECT_THAT(tokens.get(), HasSubstr("/initial/path: cannot read tokens from \"" + s.initial.path +
                                        "\": is not a regular file"));
    s.initial.path = dir.file("dir.npy");
    EXPECT_THAT(errorOf([&] { initialTokens(s); }), HasSubstr("is a directory"));
}

// A grid of initial covariances entirely outside the unit disc ran zero trajectories and reported success.
TEST(LoaderRegressions, ConeGridOutsideTheDiscIsRefused) {
    EXPECT_THAT(errorOf([&] {
                    sceneFromJson(R"({"d": 2, "n": 4, "attention": {"type": "softmax"},
                                      "moments": {"grid": {"nu": 5, "nc": 5, "limits": [2, 3, 2, 3]}}})");
                }),
                HasSubstr("/moments/grid: "));
    // The disc's boundary itself is outside (x^2 + y^2 < 1 is kept): a 1 x 1 grid at (1, 0) is empty.
    EXPECT_THAT(errorOf([&] {
                    sceneFromJson(R"({"d": 2, "n": 4, "attention": {"type": "softmax"},
                                      "moments": {"grid": {"nu": 1, "nc": 1, "limits": [1, 1, 0, 0]}}})");
                }),
                HasSubstr("/moments/grid: "));
    EXPECT_EQ(sceneFromJson(R"({"d": 2, "n": 4, "attention": {"type": "softmax"},
                                "moments": {"grid": {"nu": 3, "nc": 3, "limits": [0.5, 3, 0, 3]}}})")
                  .moments.grid.nu,
              3);
}

} // namespace
} // namespace flowscope
