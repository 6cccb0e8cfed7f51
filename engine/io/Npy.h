// Flowscope engine: NumPy .npy (format 1.0/2.0, little-endian float32/float64/int32/int64; written in C
// order, read in C or Fortran order) and plain CSV.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace flowscope {

struct NpyArray {
    std::vector<std::int64_t> shape;
    std::vector<double> data; // C order, converted to double on read
};

// Writes `data` (C order, product(shape) values) atomically as float64 or float32.
void writeNpy(const std::string& path, const std::vector<std::int64_t>& shape, const double* data,
              bool asFloat32);

struct NpyHeader {
    std::vector<std::int64_t> shape;
    std::int64_t count = 1;    // product of the shape
    int itemSize = 8;          // bytes per value
    bool isFloat = true;       // float32/float64, else int32/int64
    bool fortranOrder = false; // the data in column-major order (readNpy returns C order either way)
};

// Reads only the header of a .npy (the checks of readNpy on magic, version, dtype and shape; not the data):
// a caller checks the shape before the data of a wrong-shaped file of gigabytes is read.
NpyHeader readNpyHeader(const std::string& path);

// Why `path` is no regular file to read ("file not found", "is a directory", "is not a regular file (a FIFO,
// socket or device)"), or "" when it is one: stat() only, so a FIFO never blocks the caller.
std::string notARegularFile(const std::string& path);
// Throws std::runtime_error "<path>: <why>" unless `path` is a regular file. Every file reader here calls it
// first.
void requireRegularFile(const std::string& path);

// Reads a float32/float64 (or int32/int64) little-endian C-order .npy. Throws std::runtime_error with a
// clear message for truncated, oversized (> maxBytes of payload) or unsupported files.
NpyArray readNpy(const std::string& path, std::int64_t maxBytes = std::int64_t(1) << 32);

// Reads a CSV of numbers: one row per line, comma (or whitespace) separated, every row the same length;
// a first line with a token that is not a number is taken as a header. A number beyond the range of a double
// (1e999) is an error naming the file and line; one below the smallest normal double reads as its subnormal
// value (or 0). Shape is {rows, cols}.
NpyArray readCsv(const std::string& path);

} // namespace flowscope
