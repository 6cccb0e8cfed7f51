// Flowscope engine: the share string's text format, one compact URL-safe line that carries a JSON document.
//
// Format: "fs1." then base64url (RFC 4648 section 5: A-Z a-z 0-9 - _, no padding) of the zlib stream
// (deflate level 9) of compact JSON text. The version prefix names the payload format; this build writes and
// reads fs1. This layer knows bytes and text only: what the JSON means (a scene) is engine/scene/
// SceneShareString.h's business, so io/ never depends on scene/.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace flowscope {

// The largest scene JSON a share string may hold (decoding inflates at most this much and stops there).
inline constexpr std::size_t kShareStringMaxJsonBytes = std::size_t(4) << 20;

// Every encode and decode error: one message that starts with "share string: " and names what is wrong.
struct ShareStringError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Deterministic: the same text gives the same string. `json` should be compact (no whitespace) to keep the
// string short; it is not parsed here. Throws ShareStringError when it exceeds 4 MiB.
std::string encodeShareText(const std::string& json);

// The JSON text a share string carries, not yet parsed. Surrounding whitespace (a pasted newline) is
// ignored. Throws ShareStringError for empty, truncated or corrupt input, bad characters (position counted
// from 1), an unknown version and more than 4 MiB of JSON.
std::string decodeShareText(std::string_view text);

// Throws ShareStringError with `what` after the "share string: " prefix; for the layers that parse the
// payload, so that their messages read like this layer's.
[[noreturn]] void shareStringFail(const std::string& what);

// True when `text` starts like a share string ("fs", a version number, "."), valid or not: callers that take
// a scene file or a share string use it to decide which one they were given.
bool looksLikeShareString(std::string_view text);

} // namespace flowscope
