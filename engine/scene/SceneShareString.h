// Flowscope engine: a whole scene as a share string (the text format is engine/io/ShareString.h).
//
// The string carries the scene's compact JSON (sceneToJson, re-dumped without whitespace). Decoding a string
// and running the scene reproduces the run of the scene it was made from bit-for-bit on one build.
#pragma once

#include "engine/io/ShareString.h"
#include "engine/scene/Scene.h"

#include <string>
#include <string_view>

namespace flowscope {

// Deterministic: the same scene gives the same string. Tokens read from a file (initial kind "file") are
// inlined as kind "points" (the same tokens, so the same run); a path the scene's kind does not use is
// dropped (a shared string should not carry local paths). Throws ShareStringError when the file cannot be
// read, holds more than the 65536 points a scene may inline, or the JSON exceeds 4 MiB.
std::string encodeShareString(const Scene& s);

// Parses and validates. Throws ShareStringError for everything decodeShareText refuses and for scene errors
// (the message of sceneFromJson, prefixed); a string never refers to local files, so initial kind "file" is
// refused.
Scene decodeShareString(std::string_view text);

// A scene named by a front end's argument: a scene file, or a share string in its place (an existing file
// of that name wins). Throws SceneError or ShareStringError.
Scene loadSceneOrShareString(const std::string& arg);

} // namespace flowscope
