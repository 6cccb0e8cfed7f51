#include "engine/io/Safetensors.h"

#include "engine/io/AtomicFile.h"
#include "engine/io/Npy.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace flowscope {

namespace {

constexpr std::uint64_t kMaxHeader = std::uint64_t(16) << 20;

std::int64_t product(const std::vector<std::int64_t>& shape) {
    std::int64_t n = 1;
    for (std::int64_t s : shape) n *= s;
    return n;
}

std::string shapeText(const std::vector<std::int64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

} // namespace

const SafeTensor* SafeTensors::find(const std::string& name) const {
    for (const SafeTensor& t : tensors)
        if (t.name == name) return &t;
    return nullptr;
}

const SafeTensor& SafeTensors::get(const std::string& name, const std::vector<std::int64_t>& shape) const {
    const SafeTensor* t = find(name);
    if (!t) throw std::runtime_error("tensor '" + name + "' is missing");
    if (t->shape != shape)
        throw std::runtime_error("tensor '" + name + "' has shape " + shapeText(t->shape) + ", expected " +
                                 shapeText(shape));
    return *t;
}

const std::string& SafeTensors::record(const std::string& key, const std::string& path,
                                       const std::string& what) const {
    const auto it = metadata.find(key);
    if (it == metadata.end())
        throw std::runtime_error(path + ": not a " + what + " (no '" + key + "' metadata)");
    return it->second;
}

void writeSafetensors(const std::string& path, const SafeTensors& file) {
    nlohmann::json header = nlohmann::json::object();
    std::uint64_t offset = 0;
    for (const SafeTensor& t : file.tensors) {
        if (t.name.empty() || t.name == "__metadata__" || header.contains(t.name))
            throw std::runtime_error(path + ": tensor name '" + t.name + "' is empty, reserved or repeated");
        for (std::int64_t s : t.shape)
            if (s < 0) throw std::runtime_error(path + ": tensor '" + t.name + "' has a negative dimension");
        if (std::int64_t(t.data.size()) != product(t.shape))
            throw std::runtime_error(path + ": tensor '" + t.name + "' holds " +
                                     std::to_string(t.data.size()) + " values for shape " +
                                     shapeText(t.shape));
        const std::uint64_t bytes = t.data.size() * (t.float32 ? 4 : 8);
        header[t.name] = {{"dtype", t.float32 ? "F32" : "F64"},
                          {"shape", t.shape},
                          {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' '); // the format pads the header with spaces to 8 bytes
    writeFileAtomically(path, [&](std::ostream& out) {
        const std::uint64_t n = text.size();
        unsigned char len[8];
        for (int i = 0; i < 8; ++i) len[i] = (unsigned char)(n >> (8 * i));
        out.write(reinterpret_cast<const char*>(len), 8);
        out.write(text.data(), std::streamsize(text.size()));
        for (const SafeTensor& t : file.tensors) {
            if (t.float32) {
                std::vector<float> f(t.data.begin(), t.data.end());
                out.write(reinterpret_cast<const char*>(f.data()), std::streamsize(f.size() * 4));
            } else {
                out.write(reinterpret_cast<const char*>(t.data.data()), std::streamsize(t.data.size() * 8));
            }
        }
    });
}

SafetensorsHeader readSafetensorsHeader(const std::string& path, std::span<const SafetensorsDtype> dtypes,
                                        std::int64_t maxBytes) {
    auto fail = [&](const std::string& what) -> std::runtime_error {
        return std::runtime_error(path + ": " + what);
    };
    requireRegularFile(path); // a FIFO would block the read
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) throw fail("cannot open the file");
    const std::uint64_t size = std::uint64_t(in.tellg());
    in.seekg(0);
    unsigned char len[8];
    if (size < 8 || !in.read(reinterpret_cast<char*>(len), 8))
        throw fail("truncated: no 8-byte header length");
    std::uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= std::uint64_t(len[i]) << (8 * i);
    if (n > kMaxHeader) throw fail("header length " + std::to_string(n) + " exceeds 16 MiB");
    if (n > size - 8)
        throw fail("truncated: the header needs " + std::to_string(n) + " bytes, the file has " +
                   std::to_string(size - 8));
    std::string text(n, '\0');
    if (!in.read(text.data(), std::streamsize(n))) throw fail("truncated header");
    const std::uint64_t payload = size - 8 - n;
    if (std::int64_t(payload) > maxBytes)
        throw fail("payload of " + std::to_string(payload) + " bytes exceeds the limit");

    nlohmann::json header;
    try {
        header = nlohmann::json::parse(text);
    } catch (const std::exception& e) {
        throw fail(std::string("header is not valid JSON (") + e.what() + ")");
    }
    if (!header.is_object()) throw fail("header is not a JSON object");

    std::string accepted;
    for (const SafetensorsDtype& d : dtypes) accepted += (accepted.empty() ? "" : ", ") + std::string(d.name);
    SafetensorsHeader result;
    result.payloadStart = 8 + n;
    result.payloadBytes = payload;
    for (auto it = header.begin(); it != header.end(); ++it) {
        const std::string& name = it.key();
        const nlohmann::json& e = it.value();
        if (name == "__metadata__") {
            if (!e.is_object()) throw fail("__metadata__ is not an object");
            for (auto m = e.begin(); m != e.end(); ++m) {
                if (!m.value().is_string()) throw fail("__metadata__/" + m.key() + " is not a string");
                result.metadata[m.key()] = m.value().get<std::string>();
            }
            continue;
        }
        const std::string where = "tensor '" + name + "': ";
        if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
            throw fail(where + "needs dtype, shape and data_offsets");
        if (!e["dtype"].is_string()) throw fail(where + "dtype is not a string");
        SafetensorsEntry t;
        t.name = name;
        t.dtype = e["dtype"].get<std::string>();
        const auto known = std::find_if(dtypes.begin(), dtypes.end(),
                                        [&](const SafetensorsDtype& d) { return d.name == t.dtype; });
        if (known == dtypes.end())
            throw fail(where + "dtype " + t.dtype + " is not supported (" + accepted + ")");
        t.width = known->width;
        if (!e["shape"].is_array() || e["shape"].size() > 8)
            throw fail(where + "shape is not an array of at most 8 sizes");
        std::uint64_t count = 1;
        for (const nlohmann::json& s : e["shape"]) {
            if (!s.is_number_unsigned())
                throw fail(where + "shape holds a value that is not a non-negative integer");
            const std::uint64_t v = s.get<std::uint64_t>();
            if (v > payload || (v > 0 && count > payload / v))
                throw fail(where + "shape exceeds the payload");
            count *= v;
            t.shape.push_back(std::int64_t(v));
        }
        const nlohmann::json& o = e["data_offsets"];
        if (!o.is_array() || o.size() != 2 || !o[0].is_number_unsigned() || !o[1].is_number_unsigned())
            throw fail(where + "data_offsets is not [begin, end]");
        t.begin = o[0].get<std::uint64_t>();
        t.end = o[1].get<std::uint64_t>();
        if (t.begin > t.end || t.end > payload)
            throw fail(where + "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                       "] lie outside the payload of " + std::to_string(payload) +
                       " bytes (truncated file?)");
        if (t.end - t.begin != count * std::uint64_t(t.width))
            throw fail(where + "data_offsets span " + std::to_string(t.end - t.begin) +
                       " bytes, the shape needs " + std::to_string(count * std::uint64_t(t.width)));
        result.entries.push_back(std::move(t));
    }
    std::sort(result.entries.begin(), result.entries.end(),
              [](const SafetensorsEntry& a, const SafetensorsEntry& b) { return a.begin < b.begin; });
    for (std::size_t i = 1; i < result.entries.size(); ++i)
        if (result.entries[i].begin < result.entries[i - 1].end)
            throw fail("tensors '" + result.entries[i - 1].name + "' and '" + result.entries[i].name +
                       "' overlap");
    return result;
}

SafeTensors readSafetensors(const std::string& path, std::int64_t maxBytes) {
    static constexpr SafetensorsDtype kDtypes[] = {{"F32", 4}, {"F64", 8}};
    const SafetensorsHeader header = readSafetensorsHeader(path, kDtypes, maxBytes);
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + ": cannot open the file");
    SafeTensors file;
    file.metadata = header.metadata;
    for (const SafetensorsEntry& e : header.entries) {
        SafeTensor t;
        t.name = e.name;
        t.float32 = e.dtype == "F32";
        t.shape = e.shape;
        const std::uint64_t count = (e.end - e.begin) / std::uint64_t(e.width);
        in.seekg(std::streamoff(header.payloadStart + e.begin));
        if (t.float32) {
            std::vector<float> f(count);
            if (!in.read(reinterpret_cast<char*>(f.data()), std::streamsize(count * 4)))
                throw std::runtime_error(path + ": truncated data");
            t.data.assign(f.begin(), f.end());
        } else {
            t.data.resize(count);
            if (!in.read(reinterpret_cast<char*>(t.data.data()), std::streamsize(count * 8)))
                throw std::runtime_error(path + ": truncated data");
        }
        file.tensors.push_back(std::move(t));
    }
    return file;
}

} // namespace flowscope
