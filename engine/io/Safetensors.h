// Flowscope engine: the safetensors format (huggingface/safetensors): an 8-byte little-endian header length
// n, n bytes of JSON {"name": {"dtype", "shape", "data_offsets": [begin, end]}, ..., "__metadata__":
// {string: string}}, then the tensors' bytes, little-endian, C order. Flowscope writes and reads F32 and F64;
// any other dtype is rejected with a message naming the tensor and the dtype.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace flowscope {

struct SafeTensor {
    std::string name;
    bool float32 = true; // F32, else F64
    std::vector<std::int64_t> shape;
    std::vector<double> data; // C order; float32 values are exact in double
};

struct SafeTensors {
    std::vector<SafeTensor> tensors; // in file order (written sorted by data offset)
    std::map<std::string, std::string> metadata;

    const SafeTensor* find(const std::string& name) const;
    // The named tensor; throws std::runtime_error naming it when it is missing or its shape is not `shape`.
    const SafeTensor& get(const std::string& name, const std::vector<std::int64_t>& shape) const;
};

// Writes atomically (temporary file, then rename). Throws std::runtime_error naming the path or the tensor
// (duplicate or reserved name, data size not the shape's product).
void writeSafetensors(const std::string& path, const SafeTensors& file);

// Reads and validates everything before trusting it: header length (at most 16 MiB and within the file),
// JSON syntax, every entry's dtype, shape (non-negative, product within the payload), offsets (in range,
// matching dtype x shape, not overlapping), metadata values being strings, payload at most maxBytes.
// Throws std::runtime_error with one message naming the file and the field.
SafeTensors readSafetensors(const std::string& path, std::int64_t maxBytes = std::int64_t(1) << 31);

} // namespace flowscope
