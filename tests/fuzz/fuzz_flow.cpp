// loadFlow on arbitrary bytes: the .safetensors alone rebuilds the model (its architecture is in the
// metadata); the JSON record beside it is not read.
#include "FuzzInput.h"

#include "engine/flows/FlowIo.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string path = flowscope::fuzz::inputFile(data, size, ".safetensors");
    flowscope::fuzz::load([&] { flowscope::flows::loadFlow(path); });
    return 0;
}
