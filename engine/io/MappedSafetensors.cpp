#include "engine/io/MappedSafetensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace flowscope {

namespace {

constexpr SafetensorsDtype kMappedDtypes[] = {{"F32", 4}, {"F16", 2}, {"BF16", 2}, {"F64", 8}};

template <class Bits> Bits loadBits(const unsigned char* p) {
    Bits b;
    std::memcpy(&b, p, sizeof b); // little-endian host (x86-64, arm64), as the format
    return b;
}

} // namespace

float halfToFloat(std::uint16_t h) {
    const std::uint32_t sign = std::uint32_t(h & 0x8000) << 16;
    const int exponent = (h >> 10) & 0x1f;
    const std::uint32_t mantissa = h & 0x3ff;
    float value;
    if (exponent == 0) { // zero or subnormal: mantissa x 2^-24
        value = std::ldexp(float(mantissa), -24);
    } else if (exponent == 31) {
        value = mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
    } else {
        const std::uint32_t bits = (std::uint32_t(exponent - 15 + 127) << 23) | (mantissa << 13);
        std::memcpy(&value, &bits, 4);
    }
    return sign ? -value : value;
}

float bfloat16ToFloat(std::uint16_t b) {
    const std::uint32_t bits = std::uint32_t(b) << 16;
    float value;
    std::memcpy(&value, &bits, 4);
    return value;
}

MappedSafetensors::MappedSafetensors(const std::string& path)
    : path_(path),
      header_(readSafetensorsHeader(path, kMappedDtypes, std::numeric_limits<std::int64_t>::max())) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error(path + ": cannot open the file");
    struct stat st {};
    if (::fstat(fd, &st) != 0 ||
        std::uint64_t(st.st_size) !=
            header_.payloadStart + header_.payloadBytes) { // changed since the header
        ::close(fd);
        throw std::runtime_error(path + ": the file changed while it was read");
    }
    mapBytes_ = std::size_t(st.st_size);
    void* map = ::mmap(nullptr, mapBytes_, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) throw std::runtime_error(path + ": cannot map the file into memory");
    map_ = static_cast<const unsigned char*>(map);
}

MappedSafetensors::~MappedSafetensors() {
    if (map_) ::munmap(const_cast<unsigned char*>(map_), mapBytes_);
}

MappedSafetensors::MappedSafetensors(MappedSafetensors&& other) noexcept
    : path_(std::move(other.path_)), header_(std::move(other.header_)), map_(other.map_),
      mapBytes_(other.mapBytes_) {
    other.map_ = nullptr;
    other.mapBytes_ = 0;
}

MappedSafetensors& MappedSafetensors::operator=(MappedSafetensors&& other) noexcept {
    if (this != &other) {
        if (map_) ::munmap(const_cast<unsigned char*>(map_), mapBytes_);
        path_ = std::move(other.path_);
        header_ = std::move(other.header_);
        map_ = other.map_;
        mapBytes_ = other.mapBytes_;
        other.map_ = nullptr;
        other.mapBytes_ = 0;
    }
    return *this;
}

const SafetensorsEntry* MappedSafetensors::find(std::string_view name) const {
    for (const SafetensorsEntry& e : header_.entries)
        if (e.name == name) return &e;
    return nullptr;
}

template <class T> void MappedSafetensors::read(const SafetensorsEntry& e, T* out) const {
    const unsigned char* p = map_ + header_.payloadStart + e.begin;
    const std::size_t count = std::size_t((e.end - e.begin) / std::uint64_t(e.width));
    if (e.dtype == "F32")
        for (std::size_t i = 0; i < count; ++i) out[i] = T(loadBits<float>(p + 4 * i));
    else if (e.dtype == "F64")
        for (std::size_t i = 0; i < count; ++i) out[i] = T(loadBits<double>(p + 8 * i));
    else if (e.dtype == "F16")
        for (std::size_t i = 0; i < count; ++i) out[i] = T(halfToFloat(loadBits<std::uint16_t>(p + 2 * i)));
    else
        for (std::size_t i = 0; i < count; ++i)
            out[i] = T(bfloat16ToFloat(loadBits<std::uint16_t>(p + 2 * i)));
    if (!std::all_of(out, out + count, [](T v) { return std::isfinite(v); }))
        throw std::runtime_error(path_ + ": tensor '" + e.name + "' holds a NaN or infinity");
}

template void MappedSafetensors::read<float>(const SafetensorsEntry&, float*) const;
template void MappedSafetensors::read<double>(const SafetensorsEntry&, double*) const;

} // namespace flowscope
