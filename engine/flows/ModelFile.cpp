// Flowscope engine: the kind of a trained-model file and its record (ModelFile.h).
#include "engine/flows/ModelFile.h"

#include "engine/flows/FlowIo.h"
#include "engine/io/Safetensors.h"

#include <fstream>
#include <stdexcept>

namespace flowscope {

TrainedModelKind trainedModelKind(const std::string& path) {
    const SafeTensors file = readSafetensors(path);
    if (file.metadata.count("flowscope_flow")) return TrainedModelKind::Flow;
    if (file.metadata.count("flowscope_transformer")) return TrainedModelKind::Transformer;
    throw std::runtime_error(
        path + ": not a Flowscope model (no 'flowscope_flow' or 'flowscope_transformer' metadata)");
}

nlohmann::json readModelRecord(const std::string& path, std::string* why) {
    const std::string recordPath = flows::configPathFor(path);
    std::ifstream in(recordPath, std::ios::binary);
    if (!in) {
        if (why) *why = recordPath + ": no record beside the model";
        return nullptr;
    }
    try {
        nlohmann::json j = nlohmann::json::parse(in);
        if (!j.is_object()) throw std::runtime_error("expected an object");
        return j;
    } catch (const std::exception& e) {
        if (why) *why = recordPath + ": " + e.what();
        return nullptr;
    }
}

} // namespace flowscope
