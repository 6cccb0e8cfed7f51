#include "engine/io/Npy.h"

#include "engine/core/Text.h"
#include "engine/io/AtomicFile.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace flowscope {

void writeNpy(const std::string& path, const std::vector<std::int64_t>& shape, const double* data,
              bool asFloat32) {
    std::int64_t count = 1;
    for (auto s : shape) count *= s;
    std::string dict =
        std::string("{'descr': '") + (asFloat32 ? "<f4" : "<f8") + "', 'fortran_order': False, 'shape': (";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        dict += std::to_string(shape[i]);
        if (shape.size() == 1 || i + 1 < shape.size()) dict += ",";
        if (i + 1 < shape.size()) dict += " ";
    }
    dict += "), }";
    // Header: magic(6) version(2) len(2) dict, padded with spaces and '\n' to a multiple of 64 bytes.
    std::size_t total = 10 + dict.size() + 1;
    const std::size_t pad = (64 - total % 64) % 64;
    dict.append(pad, ' ');
    dict += '\n';
    writeFileAtomically(path, [&](std::ostream& out) {
        const char magic[] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
        out.write(magic, 8);
        const std::uint16_t len = std::uint16_t(dict.size());
        const char lenBytes[2] = {char(len & 0xff), char(len >> 8)};
        out.write(lenBytes, 2);
        out.write(dict.data(), std::streamsize(dict.size()));
        if (asFloat32) {
            std::vector<float> buf(std::size_t(std::min<std::int64_t>(count, 1 << 16)));
            for (std::int64_t i = 0; i < count; i += std::int64_t(buf.size())) {
                const std::int64_t m = std::min<std::int64_t>(std::int64_t(buf.size()), count - i);
                for (std::int64_t k = 0; k < m; ++k) buf[std::size_t(k)] = float(data[i + k]);
                out.write(reinterpret_cast<const char*>(buf.data()), std::streamsize(m * 4));
            }
        } else {
            out.write(reinterpret_cast<const char*>(data), std::streamsize(count * 8));
        }
    });
}

namespace {

std::string headerValue(const std::string& dict, const std::string& key) {
    const auto k = dict.find("'" + key + "'");
    if (k == std::string::npos) throw std::runtime_error("npy header has no '" + key + "'");
    auto p = dict.find(':', k);
    if (p == std::string::npos) throw std::runtime_error("npy header is malformed");
    ++p;
    while (p < dict.size() && dict[p] == ' ') ++p;
    if (p >= dict.size()) throw std::runtime_error("npy header is malformed");
    if (dict[p] == '\'') {
        const auto e = dict.find('\'', p + 1);
        if (e == std::string::npos) throw std::runtime_error("npy header is malformed");
        return dict.substr(p + 1, e - p - 1);
    }
    if (dict[p] == '(') {
        const auto e = dict.find(')', p);
        if (e == std::string::npos) throw std::runtime_error("npy header is malformed");
        return dict.substr(p + 1, e - p - 1);
    }
    auto e = dict.find_first_of(",}", p);
    return dict.substr(p, e == std::string::npos ? std::string::npos : e - p);
}

} // namespace

namespace {

// Reads the magic, version and header dictionary of an open .npy; `in` is left at the start of the data.
NpyHeader readHeader(std::istream& in, const std::string& path) {
    char magic[8];
    if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
        throw std::runtime_error(path + ": not a .npy file (bad magic)");
    std::uint32_t len = 0;
    if (magic[6] == 1) {
        unsigned char b[2];
        if (!in.read(reinterpret_cast<char*>(b), 2)) throw std::runtime_error(path + ": truncated header");
        len = b[0] | (b[1] << 8);
    } else if (magic[6] == 2 || magic[6] == 3) {
        unsigned char b[4];
        if (!in.read(reinterpret_cast<char*>(b), 4)) throw std::runtime_error(path + ": truncated header");
        len = b[0] | (b[1] << 8) | (b[2] << 16) | (std::uint32_t(b[3]) << 24);
    } else {
        throw std::runtime_error(path + ": unsupported .npy version " + std::to_string(int(magic[6])));
    }
    if (len > (1u << 20)) throw std::runtime_error(path + ": .npy header too large");
    std::string dict(len, '\0');
    if (!in.read(dict.data(), len)) throw std::runtime_error(path + ": truncated header");

    NpyHeader h;
    const std::string descr = headerValue(dict, "descr");
    const std::string order = headerValue(dict, "fortran_order");
    if (order.find("True") != std::string::npos)
        h.fortranOrder = true;
    else if (order.find("False") == std::string::npos)
        throw std::runtime_error(path + ": malformed fortran_order in .npy header");
    if (descr == "<f8" || descr == "|f8")
        h.itemSize = 8;
    else if (descr == "<f4" || descr == "|f4")
        h.itemSize = 4;
    else if (descr == "<i8")
        h.itemSize = 8, h.isFloat = false;
    else if (descr == "<i4")
        h.itemSize = 4, h.isFloat = false;
    else
        throw std::runtime_error(path + ": unsupported dtype '" + descr +
                                 "' (need float32/float64 little-endian)");

    std::stringstream shapeText(headerValue(dict, "shape"));
    std::string item;
    while (std::getline(shapeText, item, ',')) {
        if (item.find_first_not_of(' ') == std::string::npos) continue;
        std::int64_t v = -1;
        try {
            v = std::stoll(item);
        } catch (...) {
            throw std::runtime_error(path + ": malformed shape in .npy header");
        }
        if (v < 0) throw std::runtime_error(path + ": negative dimension in .npy shape");
        h.shape.push_back(v);
        if (v > 0 && h.count > std::numeric_limits<std::int64_t>::max() / v)
            throw std::runtime_error(path + ": .npy shape overflows");
        h.count *= v;
    }
    return h;
}

} // namespace

std::string notARegularFile(const std::string& path) {
    std::error_code ec;
    const std::filesystem::file_status status = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(status)) return "file not found";
    if (std::filesystem::is_directory(status)) return "is a directory";
    if (!std::filesystem::is_regular_file(status)) return "is not a regular file (a FIFO, socket or device)";
    return "";
}

void requireRegularFile(const std::string& path) {
    if (const std::string why = notARegularFile(path); !why.empty())
        throw std::runtime_error(path + ": " + why);
}

NpyHeader readNpyHeader(const std::string& path) {
    requireRegularFile(path);
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    return readHeader(in, path);
}

NpyArray readNpy(const std::string& path, std::int64_t maxBytes) {
    requireRegularFile(path);
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    const NpyHeader h = readHeader(in, path);
    const std::int64_t count = h.count;
    const int itemSize = h.itemSize;
    const bool isFloat = h.isFloat;
    NpyArray a;
    a.shape = h.shape;
    if (count > maxBytes / itemSize) throw std::runtime_error(path + ": .npy payload exceeds the size limit");
    // The data must be in the file before it is allocated: a header of a few bytes may claim gigabytes.
    if (const std::streamoff start = in.tellg(); start >= 0 && in.seekg(0, std::ios::end)) {
        const std::streamoff available = in.tellg() - start;
        in.seekg(start);
        if (available < count * itemSize)
            throw std::runtime_error(path + ": truncated data (expected " + std::to_string(count) +
                                     " values)");
    }
    std::vector<char> raw(std::size_t(count) * std::size_t(itemSize));
    if (!in.read(raw.data(), std::streamsize(raw.size())))
        throw std::runtime_error(path + ": truncated data (expected " + std::to_string(count) + " values)");
    a.data.resize(std::size_t(count));
    for (std::int64_t i = 0; i < count; ++i) {
        const char* p = raw.data() + i * itemSize;
        if (isFloat && itemSize == 8) {
            double v;
            std::memcpy(&v, p, 8);
            a.data[std::size_t(i)] = v;
        } else if (isFloat) {
            float v;
            std::memcpy(&v, p, 4);
            a.data[std::size_t(i)] = v;
        } else if (itemSize == 8) {
            std::int64_t v;
            std::memcpy(&v, p, 8);
            a.data[std::size_t(i)] = double(v);
        } else {
            std::int32_t v;
            std::memcpy(&v, p, 4);
            a.data[std::size_t(i)] = double(v);
        }
    }
    if (h.fortranOrder && a.shape.size() > 1) {
        // Column-major (first index fastest) to C order (last index fastest): element (i0, ..., ik) sits at
        // sum_j i_j * prod_{l<j} shape_l in the file.
        std::vector<double> c(a.data.size());
        std::vector<std::int64_t> index(a.shape.size(), 0);
        for (std::size_t out = 0; out < c.size(); ++out) {
            std::int64_t at = 0, stride = 1;
            for (std::size_t j = 0; j < a.shape.size(); ++j) at += index[j] * stride, stride *= a.shape[j];
            c[out] = a.data[std::size_t(at)];
            for (std::size_t j = a.shape.size(); j-- > 0;) // next C-order index: the last one fastest
                if (++index[j] < a.shape[j])
                    break;
                else
                    index[j] = 0;
        }
        a.data = std::move(c);
    }
    return a;
}

NpyArray readCsv(const std::string& path) {
    requireRegularFile(path);
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path);
    NpyArray a;
    std::string line;
    std::int64_t rows = 0, cols = -1, lineNo = 0;
    while (std::getline(in, line)) {
        ++lineNo;
        for (char& c : line)
            if (c == ',' || c == ';' || c == '\t' || c == '\r') c = ' ';
        if (line.find_first_not_of(' ') == std::string::npos) continue;
        std::istringstream ls(line);
        std::vector<double> row;
        std::string tok, outOfRange;
        bool ok = true;
        while (ls >> tok) {
            double v = 0;
            const NumberText kind = parseDouble(tok, v);
            if (kind == NumberText::NotANumber) ok = false;
            if (kind == NumberText::OutOfRange && outOfRange.empty()) outOfRange = tok;
            row.push_back(v);
        }
        // Only a row with a word in it may be the header: 1e999 is a number, too large for a double.
        if (!ok) {
            if (rows == 0 && cols < 0) continue; // header
            throw std::runtime_error(path + ":" + std::to_string(lineNo) + ": not a number");
        }
        if (!outOfRange.empty())
            throw std::runtime_error(path + ":" + std::to_string(lineNo) + ": " +
                                     quoteForMessage(outOfRange) + " is out of range for a double");
        if (cols < 0) cols = std::int64_t(row.size());
        if (std::int64_t(row.size()) != cols)
            throw std::runtime_error(path + ":" + std::to_string(lineNo) + ": expected " +
                                     std::to_string(cols) + " columns, got " + std::to_string(row.size()));
        a.data.insert(a.data.end(), row.begin(), row.end());
        ++rows;
    }
    if (rows == 0) throw std::runtime_error(path + ": no numeric rows");
    a.shape = {rows, cols};
    return a;
}

} // namespace flowscope
