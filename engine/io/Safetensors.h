// Flowscope engine: the safetensors format (huggingface/safetensors): an 8-byte little-endian header length
// n, n bytes of JSON {"name": {"dtype", "shape", "data_offsets": [begin, end]}, ..., "__metadata__":
// {string: string}}, then the tensors' bytes, little-endian, C order. Flowscope writes and reads F32 and F64;
// any other dtype is rejected with a message naming the tensor and the dtype.
#pragma once

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
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
    // The metadata entry `key` (a Flowscope record: a flow's, a Transformer's, a posterior's); throws
    // std::runtime_error "<path>: not a <what> (no '<key>' metadata)" when the file has none.
    const std::string& record(const std::string& key, const std::string& path, const std::string& what) const;
};

// Writes atomically (temporary file, then rename). Throws std::runtime_error naming the path or the tensor
// (duplicate or reserved name, data size not the shape's product).
void writeSafetensors(const std::string& path, const SafeTensors& file);

// Reads and validates everything before trusting it: header length (at most 16 MiB and within the file),
// JSON syntax, every entry's dtype, shape (non-negative, product within the payload), offsets (in range,
// matching dtype x shape, not overlapping), metadata values being strings, payload at most maxBytes.
// Throws std::runtime_error with one message naming the file and the field.
SafeTensors readSafetensors(const std::string& path, std::int64_t maxBytes = std::int64_t(1) << 31);

// The header of a safetensors file, validated as readSafetensors describes, without its data: the one header
// parser, shared by readSafetensors and the memory-mapped MappedSafetensors (engine/io/MappedSafetensors.h).
struct SafetensorsDtype {
    std::string_view name; // "F32", "F16", ...
    int width;             // bytes per value
};
struct SafetensorsEntry {
    std::string name;
    std::string dtype; // one of the accepted dtypes' names
    int width = 4;
    std::vector<std::int64_t> shape;
    std::uint64_t begin = 0, end = 0; // byte offsets in the payload; end - begin = width x product(shape)
};
struct SafetensorsHeader {
    std::uint64_t payloadStart = 0; // 8 + the header length: where offset 0 of the payload lies in the file
    std::uint64_t payloadBytes = 0;
    std::vector<SafetensorsEntry> entries; // sorted by begin, not overlapping, within the payload
    std::map<std::string, std::string> metadata;
};
// Reads only the 8-byte length and the JSON header of `path` and checks every entry against the file's size:
// a header that lies about its offsets, or a file cut short, is refused here, before any tensor's memory is
// allocated, with "<path>: tensor '<name>': ...". `dtypes` are the accepted dtypes.
SafetensorsHeader readSafetensorsHeader(const std::string& path, std::span<const SafetensorsDtype> dtypes,
                                        std::int64_t maxBytes);

// A matrix as a rows x cols tensor in C order (F32 rounds each value, F64 keeps it).
template <class Derived>
SafeTensor matrixTensor(const std::string& name, const Eigen::MatrixBase<Derived>& m, bool float32) {
    SafeTensor t;
    t.name = name;
    t.float32 = float32;
    t.shape = {std::int64_t(m.rows()), std::int64_t(m.cols())};
    t.data.reserve(std::size_t(m.size()));
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index k = 0; k < m.cols(); ++k)
            t.data.push_back(float32 ? double(float(m(i, k))) : double(m(i, k)));
    return t;
}

// Fills m (already of the expected shape) from the named tensor. Throws std::runtime_error naming the tensor
// when it is missing, has another shape or dtype (F32 when float32, else F64), or holds a NaN or infinity.
template <class M> void readMatrix(const SafeTensors& file, const std::string& name, M& m, bool float32) {
    const SafeTensor& t = file.get(name, {std::int64_t(m.rows()), std::int64_t(m.cols())});
    if (t.float32 != float32)
        throw std::runtime_error("tensor '" + name + "' is not " + (float32 ? "F32" : "F64"));
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index k = 0; k < m.cols(); ++k) {
            const double v = t.data[std::size_t(i * m.cols() + k)];
            if (!std::isfinite(v)) throw std::runtime_error("tensor '" + name + "' holds a NaN or infinity");
            m(i, k) = typename M::Scalar(v);
        }
}

} // namespace flowscope
