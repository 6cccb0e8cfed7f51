// decodeShareString on arbitrary text. A string it accepts must round-trip: its scene encodes to a string
// that decodes to the same scene.
#include "FuzzInput.h"

#include "engine/scene/SceneShareString.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace flowscope;
    fuzz::load([&] {
        const Scene s = decodeShareString(std::string_view(reinterpret_cast<const char*>(data), size));
        if (sceneToJson(decodeShareString(encodeShareString(s))) != sceneToJson(s)) std::abort();
    });
    return 0;
}
