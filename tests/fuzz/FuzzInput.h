// Shared by the libFuzzer targets: the input as a file (the loaders read paths), and the rule that a loader
// may reject input only with a std::exception (its one clear message); anything else crashes the target.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <unistd.h>

namespace flowscope::fuzz {

// One file per process, rewritten for every input: in /dev/shm when there is one (no disk traffic).
inline std::string inputFile(const std::uint8_t* data, std::size_t size, const std::string& extension) {
    struct File {
        std::string path;
        ~File() { std::remove(path.c_str()); } // at exit
    };
    static const File file{[&] {
        std::error_code ec;
        const std::filesystem::path dir = std::filesystem::is_directory("/dev/shm", ec)
                                              ? "/dev/shm"
                                              : std::filesystem::temp_directory_path();
        return (dir / ("flowscope-fuzz-" + std::to_string(::getpid()) + extension)).string();
    }()};
    const std::string& path = file.path;
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f || (size && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
        std::perror(path.c_str());
        std::abort(); // the harness, not the loader, failed
    }
    return path;
}

// Runs the loader; a std::exception is the expected clean rejection of bad input.
template <class F> void load(F&& f) {
    try {
        f();
    } catch (const std::exception&) {
    }
}

} // namespace flowscope::fuzz
