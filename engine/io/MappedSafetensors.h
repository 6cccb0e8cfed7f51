// Flowscope engine: a safetensors file memory-mapped read-only, for checkpoints of hundreds of megabytes
// (engine/models). The header is read and validated by readSafetensorsHeader (engine/io/Safetensors.h), so
// a header that lies or a file cut short is refused before anything is mapped; the tensors' bytes are then
// read in place and converted, on access, from F32, F16, BF16 or F64 to float or double.
#pragma once

#include "engine/io/Safetensors.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace flowscope {

class MappedSafetensors {
  public:
    MappedSafetensors() = default;
    // Throws std::runtime_error "<path>: ..." naming the tensor at fault (readSafetensorsHeader's checks).
    explicit MappedSafetensors(const std::string& path);
    ~MappedSafetensors();
    MappedSafetensors(MappedSafetensors&& other) noexcept;
    MappedSafetensors& operator=(MappedSafetensors&& other) noexcept;
    MappedSafetensors(const MappedSafetensors&) = delete;
    MappedSafetensors& operator=(const MappedSafetensors&) = delete;

    const std::string& path() const { return path_; }
    const std::vector<SafetensorsEntry>& entries() const { return header_.entries; }
    const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
    const SafetensorsEntry* find(std::string_view name) const;

    // The values of `entry` (one of entries()), converted to T (float or double), in C order, into `out`
    // (product(shape) values). Throws std::runtime_error naming the tensor when a value is a NaN or infinity.
    template <class T> void read(const SafetensorsEntry& entry, T* out) const;

  private:
    std::string path_;
    SafetensorsHeader header_;
    const unsigned char* map_ = nullptr;
    std::size_t mapBytes_ = 0;
};

// IEEE binary16 and bfloat16 bit patterns to float (exact: every such value is a float).
float halfToFloat(std::uint16_t h);
float bfloat16ToFloat(std::uint16_t b);

} // namespace flowscope
