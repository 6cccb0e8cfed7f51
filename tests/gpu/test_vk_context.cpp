// The Vulkan compute host: device, embedded SPIR-V, buffers, pipelines per variant, and its error paths (not
// SPIR-V, wrong bindings, impossible allocations, unsupported variants), each one clear exception.
#include "GpuTestUtil.h"

#if FLOWSCOPE_HAVE_VULKAN

#include "engine/gpu/vulkan/VkCompute.h"
#include "engine/gpu/vulkan/VkKernelField.h"
#include "engine/gpu/vulkan/VkSpirv.h"

#include <algorithm>
#include <numeric>

using namespace flowscope;
using namespace flowscope::test;

TEST(VkContext, DeviceOffersComputeAndNamesItself) {
    FLOWSCOPE_REQUIRE_VULKAN();
    const VkContext& ctx = *vkContext();
    EXPECT_FALSE(ctx.deviceName().empty());
    EXPECT_NE(ctx.describe().find("Vulkan 1."), std::string::npos) << ctx.describe();
    EXPECT_GE(ctx.limits().maxComputeSharedMemorySize, 16384u); // the minimum Vulkan guarantees
    EXPECT_GE(ctx.limits().maxComputeWorkGroupInvocations, 128u);
}

TEST(VkContext, ResultNamesAreSpelledOut) {
    EXPECT_EQ(vkResultName(VK_ERROR_DEVICE_LOST), "VK_ERROR_DEVICE_LOST");
    EXPECT_EQ(vkResultName(VkResult(-123456)), "VkResult -123456");
    EXPECT_NO_THROW(vkCheck(VK_SUCCESS, "nothing"));
    try {
        vkCheck(VK_ERROR_OUT_OF_DEVICE_MEMORY, "vkAllocateMemory");
        FAIL() << "vkCheck accepted an error";
    } catch (const VkError& e) {
        EXPECT_STREQ(e.what(), "vkAllocateMemory failed: VK_ERROR_OUT_OF_DEVICE_MEMORY");
    }
}

TEST(VkShaders, StreamKernelIsEmbeddedAsSpirv) {
    const std::span<const std::uint32_t> words = embeddedSpirv("stream_kernel.comp");
    ASSERT_GT(words.size(), 5u);
    EXPECT_EQ(words[0], 0x07230203u); // the SPIR-V magic number, in host byte order
    EXPECT_TRUE(embeddedSpirv("no_such_shader.comp").empty());
}

TEST(VkBuffer, UploadDownloadRoundTripAndGrowth) {
    FLOWSCOPE_REQUIRE_VULKAN();
    VkStorageBuffer b(*vkContext());
    expectUploadDownloadRoundTripAndGrowth(b);
    std::vector<float> out(1000);
    EXPECT_THROW(b.download(out.data(), b.capacity() + 4), std::out_of_range);
}

TEST(VkBuffer, ImpossibleAllocationThrowsNamingTheResult) {
    FLOWSCOPE_REQUIRE_VULKAN();
    VkStorageBuffer b(*vkContext());
    try {
        b.reserve(std::size_t(1) << 50); // 1 PiB
        FAIL() << "a 1 PiB buffer was allocated";
    } catch (const VkError& e) {
        EXPECT_NE(std::string(e.what()).find("VK_ERROR_"), std::string::npos) << e.what();
    }
    EXPECT_EQ(b.capacity(), 0u);
    EXPECT_NO_THROW(b.reserve(64)); // the buffer stays usable
}

// A device-local buffer is reached through copies from and to a host buffer, recorded in a command batch.
TEST(VkBuffer, DeviceBuffersRoundTripThroughStagingCopies) {
    FLOWSCOPE_REQUIRE_VULKAN();
    const VkContext& ctx = *vkContext();
    VkStorageBuffer device(ctx, VkPlacement::Device), staging(ctx);
    std::vector<float> in(1000), out(1000, 0.0f);
    std::iota(in.begin(), in.end(), 0.25f);
    EXPECT_THROW(device.upload(in.data(), 16), std::logic_error);
    EXPECT_THROW(device.download(out.data(), 16), std::logic_error);
    const std::size_t bytes = in.size() * sizeof(float);
    staging.upload(in.data(), bytes);
    device.reserve(bytes);
    VkCommandBatch batch(ctx);
    batch.begin(0, 0, 0);
    batch.copy(staging, device, bytes);
    batch.submit();
    batch.begin(0, 0, 0); // waits for the first submission; its opening barrier orders the copies
    std::fill(in.begin(), in.end(), -1.0f);
    staging.upload(in.data(), bytes); // the host's again
    batch.copy(device, staging, bytes);
    batch.barrier(VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                  VK_ACCESS_HOST_READ_BIT);
    batch.submit();
    EXPECT_TRUE(batch.pending());
    batch.wait();
    EXPECT_FALSE(batch.pending());
    staging.download(out.data(), bytes);
    EXPECT_EQ(out[0], 0.25f);
    EXPECT_EQ(out[999], 999.25f);
    EXPECT_THROW(batch.copy(staging, device, bytes + 4), std::out_of_range);
}

// A batch holds what begin() made room for: one descriptor set per dispatch, its parameter words.
TEST(VkBatch, RecordsNoMoreDispatchesThanItMadeRoomFor) {
    FLOWSCOPE_REQUIRE_VULKAN();
    const VkContext& ctx = *vkContext();
    VkComputeKernel k(ctx, requiredSpirv("stream_kernel.comp"), 5);
    VkStorageBuffer a(ctx);
    a.reserve(64);
    const std::uint32_t params[4 + 4] = {};
    VkCommandBatch batch(ctx);
    batch.begin(2, 5, std::size(params));
    const VkBufferRange p = batch.parameters(params);
    EXPECT_EQ(p.offset % ctx.limits().minStorageBufferOffsetAlignment, 0u);
    const VkBufferRange buffers[] = {p, wholeOf(a), wholeOf(a), wholeOf(a), wholeOf(a)};
    const std::vector<std::uint32_t> constants = {2, 0, 0, 0, 0, 64, 0};
    k.record(batch, constants, buffers, 0);
    batch.computeBarrier();
    k.record(batch, constants, buffers, 0);
    EXPECT_THROW(k.record(batch, constants, buffers, 0), std::logic_error);
    EXPECT_THROW(k.record(batch, constants, std::span(buffers).first(4), 0), std::invalid_argument);
    batch.submit();
    batch.wait();
    EXPECT_THROW(requiredSpirv("no_such_shader.comp"), VkError);
}

TEST(VkKernel, RejectsWhatIsNotSpirv) {
    FLOWSCOPE_REQUIRE_VULKAN();
    const std::uint32_t garbage[] = {0x6f6c6c65u, 1, 2, 3, 4, 5};
    try {
        VkComputeKernel k(*vkContext(), garbage, 5);
        FAIL() << "garbage was accepted as SPIR-V";
    } catch (const VkError& e) {
        EXPECT_NE(std::string(e.what()).find("not a SPIR-V module"), std::string::npos) << e.what();
    }
    EXPECT_THROW(VkComputeKernel(*vkContext(), std::span<const std::uint32_t>(), 5), VkError);
}

TEST(VkKernel, DispatchChecksItsBuffers) {
    FLOWSCOPE_REQUIRE_VULKAN();
    VkComputeKernel k(*vkContext(), embeddedSpirv("stream_kernel.comp"), 5);
    VkStorageBuffer a(*vkContext());
    a.reserve(64);
    VkStorageBuffer* const four[] = {&a, &a, &a, &a};
    EXPECT_THROW(k.dispatch({2, 0, 0, 0, 0, 64, 0}, four, 1), std::invalid_argument);
    VkStorageBuffer empty(*vkContext());
    VkStorageBuffer* const withEmpty[] = {&a, &a, &empty, &a, &a};
    EXPECT_THROW(k.dispatch({2, 0, 0, 0, 0, 64, 0}, withEmpty, 1), std::invalid_argument);
    EXPECT_EQ(k.pipelineCount(), 0u); // nothing was built for a dispatch that could not run
}

TEST(VkKernel, EveryVariantSpecializesAndRuns) {
    FLOWSCOPE_REQUIRE_VULKAN();
    // n = 0 keys and queries: every invocation is idle, but each pipeline is built and dispatched.
    VkComputeKernel k(*vkContext(), embeddedSpirv("stream_kernel.comp"), 5);
    VkStorageBuffer params(*vkContext()), other(*vkContext());
    const std::uint32_t zeros[4 + 9] = {};
    params.upload(zeros, sizeof zeros);
    other.reserve(64);
    VkStorageBuffer* const buffers[] = {&params, &other, &other, &other, &other};
    for (std::uint32_t w = 0; w < 4; ++w)
        for (std::uint32_t flags = 0; flags < 16; ++flags)
            EXPECT_NO_THROW(k.dispatch(
                {3, w, flags & 1, (flags >> 1) & 1, (flags >> 2) & 1, 64, (flags >> 3) & 1}, buffers, 1))
                << "weighting " << w << ", flags " << flags;
    EXPECT_EQ(k.pipelineCount(), 64u);
}

TEST(VkKernelField, NoTokensGiveNoVelocityAndPipelinesAreReused) {
    FLOWSCOPE_REQUIRE_VULKAN();
    AttentionSpec spec;
    spec.heads = {HeadParams{Mat::Identity(2, 2), Mat::Identity(2, 2), Mat::Identity(2, 2)}};
    VkKernelField f(spec, 2, *vkContext());
    EXPECT_EQ(f.name().find("(Vulkan)") != std::string::npos, true) << f.name();
    Tokens X(0, 2), dX;
    f.velocity(0.0, X, dX);
    EXPECT_EQ(dX.rows(), 0);
    EXPECT_EQ(dX.cols(), 2);
    std::mt19937_64 rng(1);
    X = randomMatrix(10, 2, rng, 1.0);
    for (int k = 0; k < 3; ++k) f.velocity(0.0, X, dX);
    EXPECT_EQ(f.pipelineCount(), 1u);
    EXPECT_TRUE(dX.allFinite());
}

#else

TEST(VkContext, BuiltWithoutVulkan) {
    GTEST_SKIP() << "no Vulkan compute device: " << flowscope::test::vkUnavailable();
}

#endif // FLOWSCOPE_HAVE_VULKAN
