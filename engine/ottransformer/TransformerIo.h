// Flowscope engine: trained continuous-time Transformers on disk, like the flows (engine/flows/FlowIo.h): a
// .safetensors file of F64 tensors ("embed.E", "block0.Q", ..., "head.H"; the names of
// TransformerParams::forEach) with the architecture as JSON in the metadata key "flowscope_transformer", so
// the file alone rebuilds the model bit for bit, and a JSON record beside it (model.json): architecture,
// task, optimizer, seeds, the final evaluation and the training curve.
#pragma once

#include "engine/ottransformer/Trainer.h"

#include <nlohmann/json.hpp>
#include <string>

namespace flowscope::ot {

// The metadata key that marks a .safetensors file as a Transformer (its value: the architecture as JSON).
inline constexpr char kTransformerMetadataKey[] = "flowscope_transformer";

nlohmann::json toJson(const TransformerConfig& c);
// Throws std::runtime_error naming the field ("architecture/steps: ...") for a missing or bad value.
TransformerConfig transformerConfigFromJson(const nlohmann::json& j);
nlohmann::json toJson(const OtEvaluation& e);

// Writes the model and its record atomically; `record` gets "format", "version" and "architecture".
void saveTransformer(const std::string& path, const TransformerModel& model, nlohmann::json record);
// The trainer's evaluated model (the iterate average when averaging is on) with its task, optimizer,
// evaluations and curve in the record, plus `extra` entries.
void saveTransformer(const std::string& path, const OtTrainer& trainer, double trainSeconds,
                     const nlohmann::json& extra = nlohmann::json::object());
// That record (without `extra`) from a trainer's parts (what a runner's snapshot holds of it).
nlohmann::json trainingRecord(const OtTrainerConfig& c, long iterations, bool stopped,
                              const std::vector<OtRecord>& history,
                              const std::vector<OtEvaluation>& evaluations,
                              const std::vector<flows::TrainEvent>& events, double trainSeconds,
                              const nlohmann::json& extra = nlohmann::json::object());

// Loads what saveTransformer wrote. Throws std::runtime_error naming the file and the field or tensor for
// malformed, mismatched or non-finite files.
TransformerModel loadTransformer(const std::string& path);

} // namespace flowscope::ot
