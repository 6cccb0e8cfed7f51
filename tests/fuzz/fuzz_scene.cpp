// sceneFromJson on arbitrary text. A scene it accepts must also survive its own round trip: written back by
// sceneToJson, it reads back to the same JSON (what save/load and the share string rely on). Checked for
// d <= 64 only: writing the d x d matrices of a large d takes seconds, which would end as a fuzzer timeout.
#include "FuzzInput.h"

#include "engine/scene/Scene.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace flowscope;
    const std::string text(reinterpret_cast<const char*>(data), size);
    fuzz::load([&] {
        // Relative "path"s resolve under a directory that does not exist: no input names a real file by
        // chance.
        const Scene s = sceneFromJson(text, "/nonexistent-flowscope-fuzz");
        if (s.d > 64) return;
        const std::string json = sceneToJson(s);
        if (sceneToJson(sceneFromJson(json, "/nonexistent-flowscope-fuzz")) != json) std::abort();
    });
    return 0;
}
