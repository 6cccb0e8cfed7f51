// readNpy on arbitrary bytes.
#include "FuzzInput.h"

#include "engine/io/Npy.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string path = flowscope::fuzz::inputFile(data, size, ".npy");
    flowscope::fuzz::load([&] { flowscope::readNpy(path); });
    return 0;
}
