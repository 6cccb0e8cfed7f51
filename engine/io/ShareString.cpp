// Flowscope engine: the share string's text format (see ShareString.h).
#include "engine/io/ShareString.h"

#include <zlib.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace flowscope {

namespace {

constexpr std::string_view kVersion = "fs1";
// Base64url of 4 MiB of deflate output (deflate never expands by more than a few bytes per 16 KiB block),
// with room to spare: a longer text cannot be a string this build wrote.
constexpr std::size_t kMaxTextBytes = std::size_t(6) << 20;

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void fail(const std::string& what) {
    shareStringFail(what);
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

void shareStringFail(const std::string& what) {
    throw ShareStringError("share string: " + what);
}

std::string encodeShareText(const std::string& json) {
    if (json.size() > kShareStringMaxJsonBytes)
        fail("the JSON is " + std::to_string(json.size()) + " bytes, more than the 4 MiB a share " +
             "string holds");
    return std::string(kVersion) + "." + base64url(deflate9(json));
}

std::string decodeShareText(std::string_view text) {
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
    return inflateCapped(fromBase64url(payload, begin + dot + 1));
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
