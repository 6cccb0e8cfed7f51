// Flowscope engine: what a trained-model file holds, for a front end that opens any of them: a flow
// (flows::saveFlow, metadata key "flowscope_flow") or a continuous-time Transformer (ot::saveTransformer,
// "flowscope_transformer"), and the JSON record saved beside it (model.json for model.safetensors), which
// says what the model was trained on.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace flowscope {

enum class TrainedModelKind { Flow, Transformer };

// Reads the .safetensors header. Throws std::runtime_error naming the file (and the field) for a malformed
// file or one that is neither kind.
TrainedModelKind trainedModelKind(const std::string& path);

// The record beside `path`, or null when there is none or it does not parse (then `why`, when given, says
// so, naming the file).
nlohmann::json readModelRecord(const std::string& path, std::string* why = nullptr);

} // namespace flowscope
