// The OpenGL compute host: context, embedded shaders, compile errors, buffers, unsupported variants.
#include "GpuTestUtil.h"

#include "engine/gpu/gl/EmbeddedShaders.h"
#include "engine/gpu/gl/GlCompute.h"
#include "engine/gpu/gl/GlKernelField.h"

using namespace flowscope;
using namespace flowscope::test;

TEST(GlContext, HeadlessContextOffersCompute) {
    FLOWSCOPE_REQUIRE_GPU();
    const GlFunctions& gl = gpuContext()->gl();
    gl::Int major = 0, minor = 0, shared = 0;
    gl.GetIntegerv(gl::MAJOR_VERSION, &major);
    gl.GetIntegerv(gl::MINOR_VERSION, &minor);
    gl.GetIntegerv(gl::MAX_COMPUTE_SHARED_MEMORY_SIZE, &shared);
    EXPECT_GE(major * 10 + minor, 43);
    EXPECT_GE(shared, 32768); // the minimum OpenGL 4.3 guarantees
    EXPECT_NE(gpuContext()->describe().find("OpenGL"), std::string::npos);
    EXPECT_TRUE(gpuContext()->makeCurrent());
}

TEST(GlContext, LoadingFromAContextWithoutFunctionsSaysWhich) {
    GlFunctions gl;
    std::string why;
    EXPECT_FALSE(gl.load([](const char*) { return GlProc(nullptr); }, GlFunctions::Use::Compute, &why));
    EXPECT_NE(why.find("glGetString"), std::string::npos) << why;
}

TEST(GlShaders, StreamKernelIsEmbeddedWithoutVersionLine) {
    const char* s = embeddedShader("stream_kernel.comp");
    ASSERT_NE(s, nullptr);
    // No line starts with #version: the host prepends it (430 for OpenGL, 450 for Vulkan).
    EXPECT_EQ(("\n" + std::string(s)).find("\n#version"), std::string::npos);
    EXPECT_NE(std::string(s).find("binding = 4"), std::string::npos);
    EXPECT_EQ(embeddedShader("no_such_shader.comp"), nullptr);
}

TEST(GlShaders, SourceHeaderHasVersionAndDefines) {
    const std::string s = glslSource(450, {{"DIM", "3"}, {"TILE", "64"}}, "void main() {}\n");
    EXPECT_EQ(s, "#version 450\n#define DIM 3\n#define TILE 64\n#line 1\nvoid main() {}\n");
}

TEST(GlShaders, CompileErrorThrowsWithTheInfoLog) {
    FLOWSCOPE_REQUIRE_GPU();
    const GlFunctions& gl = gpuContext()->gl();
    const std::string body = "layout(local_size_x = 1) in;\n"
                             "void main() {\n"
                             "    float x = undeclaredThing;\n"
                             "}\n";
    try {
        GlComputeProgram p(gl, glslSource(430, {}, body));
        FAIL() << "a broken shader compiled";
    } catch (const GlError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("failed to compile"), std::string::npos) << what;
        EXPECT_NE(what.find("undeclaredThing"), std::string::npos) << what; // the driver's log is included
    }
    EXPECT_EQ(gl.GetError(), gl::NO_ERROR);
}

TEST(GlShaders, StreamKernelCompilesForEveryWeighting) {
    FLOWSCOPE_REQUIRE_GPU();
    const GlFunctions& gl = gpuContext()->gl();
    for (int w = 0; w < 4; ++w)
        for (int flags = 0; flags < 16; ++flags) {
            const GlDefines defines = {{"DIM", "3"},
                                       {"WEIGHTING", std::to_string(w)},
                                       {"CAUSAL", std::to_string(flags & 1)},
                                       {"HAS_BIAS", std::to_string((flags >> 1) & 1)},
                                       {"EXPLICIT_QUERIES", std::to_string((flags >> 2) & 1)},
                                       {"TILE", "64"},
                                       {"STAGE_IN_SHARED", std::to_string((flags >> 3) & 1)}};
            EXPECT_NO_THROW(
                GlComputeProgram(gl, glslSource(430, defines, embeddedShader("stream_kernel.comp"))))
                << "weighting " << w << ", flags " << flags;
        }
}

TEST(GlBuffer, UploadDownloadRoundTripAndGrowth) {
    FLOWSCOPE_REQUIRE_GPU();
    const GlFunctions& gl = gpuContext()->gl();
    GlBuffer b(gl);
    expectUploadDownloadRoundTripAndGrowth(b);
}

TEST(GlKernelField, NoTokensGiveNoVelocity) {
    FLOWSCOPE_REQUIRE_GPU();
    AttentionSpec spec;
    spec.heads = {HeadParams{Mat::Identity(2, 2), Mat::Identity(2, 2), Mat::Identity(2, 2)}};
    auto f = makeGlField(spec, 2, gpuContext()->gl());
    Tokens X(0, 2), dX;
    f->velocity(0.0, X, dX);
    EXPECT_EQ(dX.rows(), 0);
    EXPECT_EQ(dX.cols(), 2);
}
