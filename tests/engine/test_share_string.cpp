// Tests of the scene share string (engine/io/ShareString.cpp): exact round trips, the format itself (checked
// against an independent base64url and zlib here), and one clear message for each kind of bad input.
#include "engine/io/Npy.h"
#include "engine/scene/Scene.h"
#include "engine/scene/SceneShareString.h"

#include "../TempDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

namespace flowscope {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The message decodeShareString throws (any other exception type fails the test).
std::string decodeError(std::string_view text) {
    try {
        decodeShareString(text);
    } catch (const ShareStringError& e) {
        return e.what();
    }
    return "(no error)";
}

// A reference base64url written differently from the engine's (bit by bit), to check the format.
std::string referenceBase64url(const std::string& bytes) {
    const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::vector<int> bits;
    for (const unsigned char c : bytes)
        for (int k = 7; k >= 0; --k) bits.push_back((c >> k) & 1);
    while (bits.size() % 6) bits.push_back(0);
    std::string out;
    for (std::size_t i = 0; i < bits.size(); i += 6) {
        int v = 0;
        for (int k = 0; k < 6; ++k) v = v * 2 + bits[i + std::size_t(k)];
        out += alphabet[std::size_t(v)];
    }
    return out;
}

std::string zlibCompress(const std::string& data, int level = 9) {
    uLongf size = compressBound(uLong(data.size()));
    std::string out(size, '\0');
    EXPECT_EQ(compress2(reinterpret_cast<Bytef*>(out.data()), &size,
                        reinterpret_cast<const Bytef*>(data.data()), uLong(data.size()), level),
              Z_OK);
    out.resize(size);
    return out;
}

// A share string around any bytes: "fs1." + base64url(zlib(text)).
std::string wrap(const std::string& text) {
    return "fs1." + referenceBase64url(zlibCompress(text));
}

std::vector<fs::path> presetFiles() {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(FLOWSCOPE_PRESET_DIR))
        if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    return files;
}

Scene smallScene() {
    return sceneFromJson(R"({"name": "small", "d": 2, "n": 5, "attention": {"type": "softmax"}})");
}

// ---------------------------------------------------------------------------------------------------------

TEST(ShareString, EveryPresetRoundTripsToTheSameJsonAndEncodingIsDeterministic) {
    const auto files = presetFiles();
    ASSERT_GT(files.size(), 10u);
    std::size_t shortest = std::string::npos, longest = 0;
    std::string longestName;
    for (const fs::path& f : files) {
        SCOPED_TRACE(f.filename().string());
        const Scene s = loadScene(f.string());
        const std::string text = encodeShareString(s);
        EXPECT_EQ(encodeShareString(s), text);
        const Scene back = decodeShareString(text);
        EXPECT_EQ(sceneToJson(back), sceneToJson(s));
        EXPECT_EQ(encodeShareString(back), text);
        if (f.stem() == "default") std::cout << "[ share    ] default: " << text.size() << " characters\n";
        shortest = std::min(shortest, text.size());
        if (text.size() > longest) longest = text.size(), longestName = f.stem().string();
    }
    std::cout << "[ share    ] " << files.size() << " presets: " << shortest << " to " << longest
              << " characters (longest: " << longestName << ")\n";
}

TEST(ShareString, IsVersionPrefixedBase64urlOfTheDeflatedCompactJson) {
    const Scene s = loadScene(std::string(FLOWSCOPE_PRESET_DIR) + "/default.json");
    const std::string text = encodeShareString(s);
    const std::string compact = nlohmann::ordered_json::parse(sceneToJson(s)).dump();
    EXPECT_EQ(text, wrap(compact));
    ASSERT_THAT(text, StartsWith("fs1."));
    const std::string payload = text.substr(4);
    EXPECT_EQ(payload.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
              std::string::npos);
    EXPECT_NE(payload.size() % 4, 1u); // unpadded base64url never leaves one character over
}

TEST(ShareString, Base64urlOfEveryTailLengthDecodes) {
    // Payloads of 3k, 3k+1 and 3k+2 bytes end in 4, 2 and 3 characters: pad the name to get each.
    for (int pad = 0; pad < 6; ++pad) {
        Scene s = smallScene();
        s.name = std::string(std::size_t(pad), 'x');
        const std::string text = encodeShareString(s);
        EXPECT_EQ(text, wrap(nlohmann::ordered_json::parse(sceneToJson(s)).dump()));
        EXPECT_EQ(decodeShareString(text).name, s.name);
    }
}

TEST(ShareString, SurroundingWhitespaceIsIgnored) {
    const Scene s = smallScene();
    EXPECT_EQ(sceneToJson(decodeShareString("  " + encodeShareString(s) + "\r\n")), sceneToJson(s));
}

TEST(ShareString, LooksLikeShareStringTellsStringsFromFileNames) {
    EXPECT_TRUE(looksLikeShareString("fs1.eNo"));
    EXPECT_TRUE(looksLikeShareString("fs9.abc"));  // unknown versions too: decoding names the version
    EXPECT_TRUE(looksLikeShareString("fs1.ab$c")); // and bad characters: decoding names the position
    EXPECT_FALSE(looksLikeShareString(""));
    EXPECT_FALSE(looksLikeShareString("scene.json"));
    EXPECT_FALSE(looksLikeShareString("assets/presets/default.json"));
    EXPECT_FALSE(looksLikeShareString("fs1.json"));
    EXPECT_FALSE(looksLikeShareString("fs.abc"));
    EXPECT_FALSE(looksLikeShareString("fsx1.abc"));
}

// ---------------------------------------------------------------------------------------------------------
// Rejections: one ShareStringError each, naming the problem.

TEST(ShareString, RejectsEmptyInput) {
    EXPECT_EQ(decodeError(""), "share string: empty input");
    EXPECT_EQ(decodeError(" \n\t"), "share string: empty input");
    EXPECT_THAT(decodeError("fs1."), HasSubstr("share string: truncated"));
}

TEST(ShareString, RejectsAnUnknownVersionOrSomethingElseEntirely) {
    EXPECT_EQ(decodeError("fs9.eNoDAAAAAAE"), "share string: unknown version 'fs9' (this build reads fs1)");
    EXPECT_EQ(decodeError("fs12.abc"), "share string: unknown version 'fs12' (this build reads fs1)");
    EXPECT_THAT(decodeError("hello world"), HasSubstr("share string: expected text starting with \"fs1.\""));
    EXPECT_THAT(decodeError("{\"d\": 2}"), HasSubstr("expected text starting with \"fs1.\""));
}

TEST(ShareString, RejectsBadCharactersNamingTheirPosition) {
    const std::string good = encodeShareString(smallScene());
    std::string bad = good;
    bad[16] = '$';
    EXPECT_THAT(decodeError(bad), StartsWith("share string: invalid character '$' at position 17"));
    bad = good;
    bad[20] = '+'; // standard base64, not base64url
    EXPECT_THAT(decodeError(bad), StartsWith("share string: invalid character '+' at position 21"));
    EXPECT_THAT(decodeError(good + "=="),
                HasSubstr("invalid character '=' at position " + std::to_string(good.size() + 1)));
    bad = good;
    bad[10] = '\x01';
    EXPECT_THAT(decodeError(bad), HasSubstr("invalid character '\\x01' at position 11"));
    EXPECT_THAT(decodeError(" " + good.substr(0, 8) + " " + good.substr(8)),
                HasSubstr("invalid character ' ' at position 10")); // counted in the text as given
}

TEST(ShareString, RejectsEveryTruncation) {
    const std::string good =
        encodeShareString(loadScene(std::string(FLOWSCOPE_PRESET_DIR) + "/default.json"));
    for (std::size_t cut = 4; cut < good.size(); ++cut) {
        const std::string message = decodeError(good.substr(0, cut));
        EXPECT_THAT(message, StartsWith("share string: truncated")) << "cut at " << cut;
    }
}

TEST(ShareString, RejectsCorruptCompressedData) {
    const std::string good = encodeShareString(smallScene());
    // A zlib header with a reserved block type (BTYPE = 11).
    EXPECT_THAT(decodeError("fs1." + referenceBase64url(std::string("\x78\xda\x07\x00", 4))),
                StartsWith("share string: corrupt compressed data (invalid block type)"));
    // Not a zlib header at all.
    EXPECT_THAT(decodeError("fs1.AAAAAAAA"), StartsWith("share string: corrupt compressed data"));
    // One changed character inside the stream: a bad code or, at the latest, the Adler-32 check. The one
    // exception is a change confined to the bits after the final block's end code, which deflate never
    // reads: the string then decodes to the very same scene.
    const std::string scene = sceneToJson(decodeShareString(good));
    for (std::size_t i = 6; i + 4 < good.size(); ++i) {
        std::string bad = good;
        bad[i] = bad[i] == 'A' ? 'B' : 'A';
        const std::string message = decodeError(bad);
        if (message == "(no error)") {
            EXPECT_EQ(sceneToJson(decodeShareString(bad)), scene) << "changed character " << i;
            continue;
        }
        EXPECT_TRUE(message.rfind("share string: corrupt compressed data", 0) == 0 ||
                    message.rfind("share string: truncated", 0) == 0 ||
                    message.rfind("share string: decompressed size", 0) == 0)
            << "changed character " << i << ": " << message;
    }
    // Bytes after the end of the stream.
    const std::string zlib = zlibCompress(nlohmann::ordered_json::parse(sceneToJson(smallScene())).dump());
    EXPECT_EQ(decodeError("fs1." + referenceBase64url(zlib + "xyz")),
              "share string: corrupt compressed data (3 bytes after its end)");
}

TEST(ShareString, RefusesADecompressionBombWithoutInflatingIt) {
    // 100 MB of zeros deflated (under 1 MB), streamed so that the test never holds the 100 MB itself.
    z_stream z{};
    ASSERT_EQ(deflateInit(&z, 1), Z_OK); // fast to make
    const std::string zeros(1 << 20, '\0');
    std::string compressed;
    std::vector<char> buffer(1 << 16);
    for (int block = 0; block < 100; ++block) {
        z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(zeros.data()));
        z.avail_in = uInt(zeros.size());
        const int flush = block == 99 ? Z_FINISH : Z_NO_FLUSH;
        int rc;
        do {
            z.next_out = reinterpret_cast<Bytef*>(buffer.data());
            z.avail_out = uInt(buffer.size());
            rc = deflate(&z, flush);
            compressed.append(buffer.data(), buffer.size() - z.avail_out);
        } while (z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
    }
    deflateEnd(&z);
    ASSERT_LT(compressed.size(), std::size_t(1) << 20);
    EXPECT_EQ(decodeError("fs1." + referenceBase64url(compressed)),
              "share string: decompressed size exceeds 4 MiB");
}

TEST(ShareString, HoldsUpToFourMebibytesOfJsonAndNotOneByteMore) {
    std::string json = nlohmann::ordered_json::parse(sceneToJson(smallScene())).dump();
    json.insert(1, kShareStringMaxJsonBytes - json.size(), ' '); // whitespace is valid JSON
    EXPECT_EQ(decodeShareString(wrap(json)).name, "small");
    json.insert(1, " ");
    EXPECT_EQ(decodeError(wrap(json)), "share string: decompressed size exceeds 4 MiB");
}

// The scene-level bomb: 150 characters whose 6 KB of JSON asks for 300 identity heads at d = 1024 (7.5 GB).
TEST(ShareString, RefusesASceneThatExpandsToGigabytes) {
    std::string heads;
    for (int h = 0; h < 300; ++h) heads += h ? ",{}" : "{}";
    const std::string text =
        wrap(R"({"d":1024,"n":4,"attention":{"type":"softmax","heads":[)" + heads + "]}}");
    EXPECT_LT(text.size(), 200u);
    EXPECT_THAT(decodeError(text), StartsWith("share string: /attention: expected at most 33554432 values"));
}

// 4 MiB of "[" deflate to 4 KB; parsed, they took 700 MB (and over 10 s under the sanitizers).
TEST(ShareString, RefusesDeeplyNestedJson) {
    EXPECT_EQ(decodeError(wrap(std::string(kShareStringMaxJsonBytes, '['))),
              "share string: expected at most 64 levels of JSON nesting");
    // 64 levels are fine as far as nesting goes (the view is free-form JSON).
    std::string view = "{}";
    for (int level = 0; level < 61; ++level) view = "[" + view + "]"; // 64 with the root and the view
    EXPECT_EQ(decodeShareString(
                  wrap(R"({"d": 2, "n": 5, "attention": {"type": "softmax"}, "view": {"a": )" + view + "}}"))
                  .d,
              2);
    EXPECT_EQ(decodeError(wrap(R"({"d": 2, "n": 5, "attention": {"type": "softmax"}, "view": {"a": [)" +
                               view + "]}}")),
              "share string: expected at most 64 levels of JSON nesting");
}

TEST(ShareString, RejectsSceneErrorsWithTheSceneMessage) {
    EXPECT_THAT(decodeError(wrap("not json")), StartsWith("share string: invalid JSON"));
    EXPECT_THAT(decodeError(wrap("[1, 2]")), StartsWith("share string: expected a JSON object (a scene)"));
    EXPECT_THAT(decodeError(wrap(R"({"d": 2, "attention": {"type": "softmax"}})")),
                StartsWith("share string: /n: required field is missing"));
    EXPECT_THAT(decodeError(wrap(R"({"d": 2, "n": 5, "attention": {"type": "softmax", "beta": "x"}})")),
                StartsWith("share string: /attention/beta: expected"));
}

TEST(ShareString, RefusesKindFileWhichWouldReadALocalFile) {
    EXPECT_THAT(decodeError(wrap(R"({"d": 2, "n": 5, "initial": {"kind": "file", "path": "/etc/hosts.csv"},
                                     "attention": {"type": "softmax"}})")),
                StartsWith("share string: /initial/kind: \"file\" is not allowed in a share string"));
}

// ---------------------------------------------------------------------------------------------------------
// Scenes that are not self-contained: tokens from a file are inlined.

TEST(ShareString, InlinesTokensFromAFileSoThatTheRunIsTheSame) {
    test::TempDir dir;
    const int n = 7, d = 3;
    std::vector<double> values(std::size_t(n * d));
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.1 * double(i) - 1.0 / 3.0;
    writeNpy(dir.file("tokens.npy"), {n, d}, values.data(), false);
    const Scene s = sceneFromJson(R"({"d": 3, "n": 7, "initial": {"kind": "file", "path": "tokens.npy",
                                      "noise": 0.5}, "attention": {"type": "softmax"}})",
                                  dir.str());
    const std::string text = encodeShareString(s);
    fs::remove(dir.file("tokens.npy")); // the string alone suffices
    const Scene back = decodeShareString(text);
    EXPECT_EQ(back.initial.kind, InitKind::Points);
    EXPECT_TRUE(back.initial.path.empty());
    const Tokens X = initialTokens(back);
    ASSERT_EQ(X.rows(), n);
    for (int i = 0; i < n; ++i)
        for (int c = 0; c < d; ++c) EXPECT_EQ(X(i, c), values[std::size_t(i * d + c)]); // bit for bit
}

TEST(ShareString, RefusesToInlineMoreTokensThanASceneHoldsOrAnUnreadableFile) {
    test::TempDir dir;
    const int n = 70000;
    const std::vector<double> values(std::size_t(n), 0.5);
    writeNpy(dir.file("big.npy"), {n, 1}, values.data(), true);
    Scene s = sceneFromJson(R"({"d": 1, "n": 70000, "initial": {"kind": "file", "path": "big.npy"},
                                "attention": {"type": "softmax"}})",
                            dir.str());
    try {
        encodeShareString(s);
        ADD_FAILURE() << "no error";
    } catch (const ShareStringError& e) {
        EXPECT_THAT(e.what(),
                    StartsWith("share string: /initial/path: 70000 tokens from a file are more than "
                               "the 65536"));
    }
    fs::remove(dir.file("big.npy"));
    s.n = 10;
    try {
        encodeShareString(s);
        ADD_FAILURE() << "no error";
    } catch (const ShareStringError& e) {
        EXPECT_THAT(e.what(), StartsWith("share string: cannot inline the tokens: /initial/path"));
    }
}

TEST(ShareString, DropsAPathThatTheKindDoesNotUse) {
    Scene s = smallScene();
    s.initial.path = "/home/someone/private/tokens.npy";
    const std::string text = encodeShareString(s);
    EXPECT_EQ(text, encodeShareString(smallScene()));
}

TEST(ShareString, RefusesToEncodeMoreThanFourMebibytesOfJson) {
    Scene s = smallScene();
    s.viewJson = "{\"notes\": \"" + std::string(std::size_t(5) << 20, 'a') + "\"}";
    try {
        encodeShareString(s);
        ADD_FAILURE() << "no error";
    } catch (const ShareStringError& e) {
        EXPECT_THAT(e.what(), HasSubstr("more than the 4 MiB a share string holds"));
    }
}

} // namespace
} // namespace flowscope
