// readCsv on arbitrary bytes.
#include "FuzzInput.h"

#include "engine/io/Npy.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string path = flowscope::fuzz::inputFile(data, size, ".csv");
    flowscope::fuzz::load([&] { flowscope::readCsv(path); });
    return 0;
}
