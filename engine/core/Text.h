// Flowscope engine: user input inside error messages, and numbers read from text.
//
// A message quotes what it refuses (a key, a string, an option's value, a file name), but that input may be
// megabytes long or hold line breaks: quoteForMessage keeps every message short and on one line.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace flowscope {

// `text` in double quotes for an error message: '"', '\' and control characters escaped as in JSON (\n, \t,
// \u001b), and of a text longer than `max` bytes only its first `max` bytes (not cutting a UTF-8 character)
// followed by "…(N bytes)", N the whole text's length.
inline std::string quoteForMessage(std::string_view text, std::size_t max = 80) {
    std::size_t shown = text.size();
    if (shown > max) {
        shown = max;
        while (shown > 0 && (static_cast<unsigned char>(text[shown]) & 0xC0) == 0x80) --shown;
    }
    std::string out = "\"";
    for (std::size_t i = 0; i < shown; ++i) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += char(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c < 0x20 || c == 0x7f) {
            char code[8];
            std::snprintf(code, sizeof code, "\\u%04x", unsigned(c));
            out += code;
        } else {
            out += char(c);
        }
    }
    if (shown < text.size()) out += "…(" + std::to_string(text.size()) + " bytes)";
    return out + "\"";
}

// `text` with each character that `escapes` lists replaced by its escape (XML's "&" -> "&amp;", a JSON
// pointer's "/" -> "~1"), the others as they are.
inline std::string escapeChars(std::string_view text,
                               std::initializer_list<std::pair<char, std::string_view>> escapes) {
    std::string out;
    for (char c : text) {
        const auto* e =
            std::find_if(escapes.begin(), escapes.end(), [c](const auto& p) { return p.first == c; });
        if (e != escapes.end())
            out += e->second;
        else
            out += c;
    }
    return out;
}

// The bound for a file name: longer than the paths one meets, short enough that a message with one stays
// under a kilobyte (a path of an existing file may have 4096 bytes; one in a scene, any number).
constexpr std::size_t kMaxQuotedPath = 400;

enum class NumberText { Number, NotANumber, OutOfRange };

// Reads all of `text` as a double (strtod's syntax: decimal, hexadecimal, inf, nan). A number too small for
// a normal double reads as its subnormal value or zero (strtod's ERANGE on underflow is not an error); only
// a finite literal beyond the largest double (1e999) is OutOfRange.
inline NumberText parseDouble(const std::string& text, double& out) {
    if (text.empty()) return NumberText::NotANumber;
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || end != text.c_str() + text.size()) return NumberText::NotANumber;
    if (errno == ERANGE && std::isinf(v)) return NumberText::OutOfRange;
    out = v;
    return NumberText::Number;
}

// A size or a duration as typed ("1.5h", "8G", "90"): the leading number (strtod's, so "1e3" and "inf" too)
// and the unit after it. `number` is false when the text does not start with one.
struct NumberAndUnit {
    double value = 0;
    bool number = false;
    std::string unit;
};
inline NumberAndUnit splitNumberAndUnit(const std::string& text) {
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || errno == ERANGE) return {0, false, text};
    return {v, true, std::string(end)};
}

// Levenshtein distance: the fewest single-character insertions, deletions and substitutions from a to b.
std::size_t editDistance(std::string_view a, std::string_view b);

// The name closest to `word` by editDistance when it is at most `maxEdits` away (the first of equals), else
// "": what a "did you mean …?" names for a mistyped key, option or command.
std::string_view closestName(std::string_view word, std::span<const std::string_view> names,
                             std::size_t maxEdits);

// The 64-bit FNV-1a hash of `text` as 16 lower-case hex digits: the identity of a sweep spec, and the
// checksum of a journal line (catches a changed digit or a line that was not written by Flowscope; not a
// signature).
std::string fnv1a64Hex(std::string_view text);

} // namespace flowscope
