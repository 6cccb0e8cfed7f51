// engine/io/MappedSafetensors: the dtypes it converts (F16 and BF16 by their definitions) and the headers it
// refuses before anything is allocated, each naming the tensor.
#include "../TempDir.h"
#include "TestUtil.h"

#include "engine/io/MappedSafetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>

using namespace flowscope;
using flowscope::test::TempDir;

namespace {

// A safetensors file from a header text and payload bytes.
void writeRawSafetensors(const std::string& path, const std::string& header, const std::string& payload) {
    std::ofstream out(path, std::ios::binary);
    const std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out.put(char(n >> (8 * i)));
    out << header << payload;
}

std::string littleEndian16(std::initializer_list<std::uint16_t> values) {
    std::string s;
    for (std::uint16_t v : values) {
        s += char(v & 0xff);
        s += char(v >> 8);
    }
    return s;
}

} // namespace

TEST(MappedSafetensors, HalfAndBfloat16FollowTheirDefinitions) {
    // binary16: (-1)^s 2^(e-15) (1 + m/1024), subnormals 2^-14 (m/1024); every finite pattern.
    for (std::uint32_t h = 0; h < 0x10000; ++h) {
        const int e = (h >> 10) & 31, m = h & 1023;
        const double sign = (h & 0x8000) ? -1.0 : 1.0;
        const float got = halfToFloat(std::uint16_t(h));
        if (e == 31) {
            EXPECT_TRUE(m ? std::isnan(got) : std::isinf(got)) << h;
            continue;
        }
        const double want = sign * (e ? std::ldexp(1.0 + m / 1024.0, e - 15) : std::ldexp(m / 1024.0, -14));
        ASSERT_EQ(double(got), want) << h;
    }
    // bfloat16 is the upper half of a float32.
    for (float v : {1.0f, -2.5f, 3.140625f, std::ldexp(1.0f, -100), -std::ldexp(1.5f, 100)}) {
        std::uint32_t bits;
        std::memcpy(&bits, &v, 4);
        EXPECT_EQ(bfloat16ToFloat(std::uint16_t(bits >> 16)), v);
    }
}

TEST(MappedSafetensors, ReadsF16Bf16F32AndF64InPlace) {
    TempDir dir;
    const std::string path = dir.file("m.safetensors");
    // 1, -2.5, 65504, 2^-24 as F16; 1, -2.5 as BF16; 0.1f as F32; 0.1 as F64.
    const std::string f16 = littleEndian16({0x3C00, 0xC100, 0x7BFF, 0x0001}),
                      bf16 = littleEndian16({0x3F80, 0xC020});
    float f32 = 0.1f;
    double f64 = 0.1;
    std::string payload = f16 + bf16;
    payload.append(reinterpret_cast<const char*>(&f32), 4);
    payload.append(reinterpret_cast<const char*>(&f64), 8);
    writeRawSafetensors(
        path,
        R"({"a":{"dtype":"F16","shape":[2,2],"data_offsets":[0,8]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]},)"
        R"("c":{"dtype":"F32","shape":[1],"data_offsets":[12,16]},"d":{"dtype":"F64","shape":[],"data_offsets":[16,24]}})",
        payload);
    const MappedSafetensors file(path);
    ASSERT_EQ(file.entries().size(), 4u);
    double a[4], b[2], c[1], d[1];
    file.read(*file.find("a"), a);
    file.read(*file.find("b"), b);
    file.read(*file.find("c"), c);
    file.read(*file.find("d"), d);
    EXPECT_EQ(a[0], 1.0);
    EXPECT_EQ(a[1], -2.5);
    EXPECT_EQ(a[2], 65504.0);
    EXPECT_EQ(a[3], std::ldexp(1.0, -24));
    EXPECT_EQ(b[0], 1.0);
    EXPECT_EQ(b[1], -2.5);
    EXPECT_EQ(c[0], double(0.1f));
    EXPECT_EQ(d[0], 0.1);
}

TEST(MappedSafetensors, RefusesLyingHeadersAndTruncatedFilesNamingTheTensor) {
    TempDir dir;
    const std::string path = dir.file("m.safetensors");
    auto expectRefused = [&](const std::string& header, const std::string& payload,
                             const std::string& words) {
        writeRawSafetensors(path, header, payload);
        const std::string e = test::errorOf([&] { MappedSafetensors m(path); });
        EXPECT_NE(e.find(words), std::string::npos) << e;
    };
    const std::string eight(8, '\0');
    // Offsets past the end (a header that lies, or a file cut short).
    expectRefused(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", eight,
                  "tensor 'w': data_offsets");
    // A shape that needs more bytes than the offsets span.
    expectRefused(R"({"w":{"dtype":"F16","shape":[8],"data_offsets":[0,8]}})", eight,
                  "tensor 'w': data_offsets span 8");
    // Overlapping tensors.
    expectRefused(
        R"({"u":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
        eight, "'u' and 'w' overlap");
    // An unknown dtype.
    expectRefused(R"({"w":{"dtype":"I8","shape":[8],"data_offsets":[0,8]}})", eight, "tensor 'w': dtype I8");
    // A shape whose product overflows.
    expectRefused(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", eight,
                  "tensor 'w': shape exceeds the payload");
    // A NaN is refused when the tensor is read.
    writeRawSafetensors(path, R"({"w":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}})",
                        littleEndian16({0x7E00}));
    const MappedSafetensors m(path);
    float v;
    EXPECT_NE(test::errorOf([&] { m.read(*m.find("w"), &v); }).find("tensor 'w' holds a NaN"),
              std::string::npos);
}
