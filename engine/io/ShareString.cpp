// Flowscope engine: the scene share string (see ShareString.h for the format).
#include "engine/io/ShareString.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace flowscope {

namespace {

constexpr std::string_view kVersion = "fs1";
constexpr int kMaxJsonDepth = 64; // as sceneFromJson
// sceneFromJson's limit on inline points (more tokens belong in a .npy file, which a string cannot carry).
constexpr Eigen::Index kMaxInlinePoints = 65536;
// Base64url of 4 MiB of deflate output (deflate never expands by more than a few bytes per 16 KiB block),
// with room to spare: a longer text cannot be a string this build wrote.
constexpr std::size_t kMaxTextBytes = std::size_t(6) << 20;

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

[[noreturn]] void fail(const std::string& what) {
    throw ShareStringError("share string: " + what);
}

bool isSpace(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// A character as it can be printed in a message: itself when printable ASCII, \xNN otherwise.
std::string printable(char c) {
    if (c >= 0x20 && c < 0x7f) return std::string(1, c);
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02x", unsigned(static_cast<unsigned char>(c)));
    return hex;
}

std::string preview(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size() && i < 16; ++i) out += printable(text[i]);
    return text.size() > 16 ? out + "..." : out;
}

// The 6-bit value of a base64url character, or -1.
int sextet(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '-') return 62;
    if (c == '_') return 63;
    return -1;
}

std::string base64url(const std::vector<unsigned char>& bytes) {
    std::string out;
    out.reserve((bytes.size() * 4 + 2) / 3);
    std::size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const std::uint32_t v =
            std::uint32_t(bytes[i]) << 16 | std::uint32_t(bytes[i + 1]) << 8 | bytes[i + 2];
        for (int k = 3; k >= 0; --k) out += kAlphabet[(v >> (6 * k)) & 63];
    }
    // 1 or 2 bytes left: 2 or 3 characters, no padding.
    if (const std::size_t rest = bytes.size() - i) {
        std::uint32_t v = std::uint32_t(bytes[i]) << 16;
        if (rest == 2) v |= std::uint32_t(bytes[i + 1]) << 8;
        for (std::size_t k = 0; k <= rest; ++k) out += kAlphabet[(v >> (18 - 6 * k)) & 63];
    }
    return out;
}

// `offset` is the position of text[0] in the caller's input, so that messages count from its start.
std::vector<unsigned char> fromBase64url(std::string_view text, std::size_t offset) {
    for (std::size_t i = 0; i < text.size(); ++i)
        if (sextet(text[i]) < 0)
            fail("invalid character '" + printable(text[i]) + "' at position " +
                 std::to_string(offset + i + 1) + " (expected base64url: A-Z a-z 0-9 - _, no padding)");
    // 4 characters carry 3 bytes; a last group of 1 character carries none: the text was cut.
    if (text.size() % 4 == 1) fail("truncated (incomplete last base64url group)");
    std::vector<unsigned char> out;
    out.reserve(text.size() / 4 * 3 + 2);
    std::uint32_t acc = 0;
    int bits = 0;
    for (const char c : text) {
        acc = (acc << 6) | std::uint32_t(sextet(c));
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<unsigned char>(acc >> bits));
            acc &= (1u << bits) - 1;
        }
    }
    return out;
}

std::vector<unsigned char> deflate9(const std::string& data) {
    uLongf size = compressBound(uLong(data.size()));
    std::vector<unsigned char> out(size);
    if (compress2(out.data(), &size, reinterpret_cast<const Bytef*>(data.data()), uLong(data.size()),
                  Z_BEST_COMPRESSION) != Z_OK)
        fail("compression failed");
    out.resize(size);
    return out;
}

// Inflates chunk by chunk and stops at the cap: a small hostile input that claims (or expands to) gigabytes
// costs at most kShareStringMaxJsonBytes of memory and the time to produce them.
std::string inflateCapped(const std::vector<unsigned char>& data) {
    z_stream z{};
    if (inflateInit(&z) != Z_OK) fail("cannot initialize zlib");
    struct End {
        z_stream* z;
        ~End() { inflateEnd(z); }
    } end{&z};
    z.next_in = const_cast<Bytef*>(data.data());
    z.avail_in = uInt(data.size());
    std::string out;
    std::array<char, 1 << 16> chunk;
    for (;;) {
        z.next_out = reinterpret_cast<Bytef*>(chunk.data());
        z.avail_out = uInt(chunk.size());
        const int rc = inflate(&z, Z_NO_FLUSH);
        const std::size_t got = chunk.size() - z.avail_out;
        if (out.size() + got > kShareStringMaxJsonBytes) fail("decompressed size exceeds 4 MiB");
        out.append(chunk.data(), got);
        if (rc == Z_STREAM_END) break;
        if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT)
            fail(std::string("corrupt compressed data (") + (z.msg ? z.msg : "invalid stream") + ")");
        if (rc == Z_MEM_ERROR) fail("out of memory while decompressing");
        // Fresh output space every round, so no progress means the input ran out before the stream's end.
        if (rc == Z_BUF_ERROR) fail("truncated (the compressed data ends early)");
    }
    if (z.avail_in != 0)
        fail("corrupt compressed data (" + std::to_string(z.avail_in) + " bytes after its end)");
    return out;
}

} // namespace

std::string encodeShareString(const Scene& scene) {
    Scene s = scene;
    if (s.initial.kind == InitKind::File) {
        // Inline the tokens: kind "points" with N = m points and no jitter gives token i = row i exactly.
        if (s.n > kMaxInlinePoints)
            fail("/initial/path: " + std::to_string(s.n) + " tokens from a file are more than the " +
                 std::to_string(kMaxInlinePoints) + " a scene can hold inline; share the scene file and \"" +
                 s.initial.path + "\" instead");
        Tokens tokens;
        try {
            tokens = initialTokens(s);
        } catch (const std::exception& e) {
            fail(std::string("cannot inline the tokens: ") + e.what());
        }
        s.initial.kind = InitKind::Points;
        s.initial.points = std::move(tokens);
        s.initial.noise = 0.0;
    }
    s.initial.path.clear(); // unused by every other kind
    std::string json;
    try {
        json = nlohmann::ordered_json::parse(sceneToJson(s)).dump();
    } catch (const std::exception& e) {
        fail(e.what());
    }
    if (json.size() > kShareStringMaxJsonBytes)
        fail("the scene's JSON is " + std::to_string(json.size()) + " bytes, more than the 4 MiB a share " +
             "string holds");
    return std::string(kVersion) + "." + base64url(deflate9(json));
}

Scene decodeShareString(std::string_view text) {
    std::size_t begin = 0, end = text.size();
    while (begin < end && isSpace(text[begin])) ++begin;
    while (end > begin && isSpace(text[end - 1])) --end;
    if (begin == end) fail("empty input");
    if (end - begin > kMaxTextBytes)
        fail("longer than " + std::to_string(kMaxTextBytes) + " characters, not a share string");
    const std::string_view t = text.substr(begin, end - begin);
    if (!looksLikeShareString(t))
        fail("expected text starting with \"" + std::string(kVersion) + ".\", got \"" + preview(t) + "\"");
    const std::size_t dot = t.find('.');
    if (t.substr(0, dot) != kVersion)
        fail("unknown version '" + std::string(t.substr(0, dot)) + "' (this build reads " +
             std::string(kVersion) + ")");
    const std::string_view payload = t.substr(dot + 1);
    if (payload.empty()) fail("truncated (nothing after \"" + std::string(kVersion) + ".\")");
    const std::string json = inflateCapped(fromBase64url(payload, begin + dot + 1));

    // A string never refers to local files: refuse kind "file" before sceneFromJson goes looking for one.
    // Parsed with sceneFromJson's depth limit: a few KB of "[[[[..." would otherwise cost hundreds of MB.
    const auto root = nlohmann::json::parse(
        json,
        [](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
            using E = nlohmann::json::parse_event_t;
            if ((event == E::object_start || event == E::array_start) && depth >= kMaxJsonDepth)
                fail("expected at most 64 levels of JSON nesting");
            return true;
        },
        false);
    if (root.is_object() && root.contains("initial") && root["initial"].is_object() &&
        root["initial"].value("kind", nlohmann::json()) == "file")
        fail("/initial/kind: \"file\" is not allowed in a share string (it would read a local file); the "
             "tokens belong inline, as kind \"points\"");
    try {
        return sceneFromJson(json, ".");
    } catch (const SceneError& e) {
        // Whole-document errors (syntax) have no pointer: drop the empty one and its ": ".
        fail(e.pointer.empty() ? std::string(e.what()).substr(2) : e.what());
    } catch (const std::exception& e) {
        fail(e.what());
    }
}

bool looksLikeShareString(std::string_view text) {
    if (text.size() < 4 || text.substr(0, 2) != "fs") return false;
    std::size_t i = 2;
    while (i < text.size() && i < 12 && text[i] >= '0' && text[i] <= '9') ++i;
    if (i == 2 || i >= text.size() || text[i] != '.') return false;
    // "fs1.json" is a file name: a share string's payload ("json" here) is never a valid zlib stream.
    const std::string_view rest = text.substr(i + 1);
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
    return !(rest.size() == 4 && lower(rest[0]) == 'j' && lower(rest[1]) == 's' && lower(rest[2]) == 'o' &&
             lower(rest[3]) == 'n');
}

} // namespace flowscope
