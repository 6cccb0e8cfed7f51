// readSafetensors on arbitrary bytes.
#include "FuzzInput.h"

#include "engine/io/Safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string path = flowscope::fuzz::inputFile(data, size, ".safetensors");
    flowscope::fuzz::load([&] { flowscope::readSafetensors(path); });
    return 0;
}
