// Flowscope engine: atomic file writes. Data goes to a staged name beside <path> (stagedPathFor in
// OutputSet.h), is flushed, then renamed over <path>, so a crash or an error never leaves a partial file
// under the final name. Inside an OutputSet::Capture whose set declares `path`, the file is staged in that
// set and renamed with the rest of the set at its commit (engine/io/OutputSet.h).
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace flowscope {

// Calls write(stream) on a temporary file beside `path`, then renames it to `path`. On any failure (stream
// error or exception) the temporary file is removed and std::runtime_error names the path (OutputError, a
// runtime_error, when the directory is missing or read-only or `path` is a directory).
void writeFileAtomically(const std::string& path, const std::function<void(std::ostream&)>& write);

} // namespace flowscope
