// Flowscope engine: the scene share string, a whole scene as one compact URL-safe line.
//
// Format: "fs1." then base64url (RFC 4648 section 5: A-Z a-z 0-9 - _, no padding) of the zlib stream
// (deflate level 9) of the scene's compact JSON (sceneToJson, re-dumped without whitespace). The version
// prefix names the payload format; this build writes and reads fs1. Decoding a string and running the scene
// reproduces the run of the scene it was made from bit-for-bit on one build.
#pragma once

#include "engine/scene/Scene.h"

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

// Deterministic: the same scene gives the same string. Tokens read from a file (initial kind "file") are
// inlined as kind "points" (the same tokens, so the same run); a path the scene's kind does not use is
// dropped (a shared string should not carry local paths). Throws ShareStringError when the file cannot be
// read, holds more than the 65536 points a scene may inline, or the JSON exceeds 4 MiB.
std::string encodeShareString(const Scene& s);

// Parses and validates. Surrounding whitespace (a pasted newline) is ignored. Throws ShareStringError for
// empty, truncated or corrupt input, bad characters (position counted from 1), an unknown version, more
// than 4 MiB of JSON, and for scene errors (the message of sceneFromJson, prefixed); a string never refers
// to local files, so initial kind "file" is refused.
Scene decodeShareString(std::string_view text);

// True when `text` starts like a share string ("fs", a version number, "."), valid or not: callers that take
// a scene file or a share string use it to decide which one they were given.
bool looksLikeShareString(std::string_view text);

} // namespace flowscope
