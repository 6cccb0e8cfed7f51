// Flowscope engine: trained flows on disk. A model is a .safetensors file (float32 tensors "phi.K0",
// "phi.b0",
// ..., "phi.w", "phi.A", "phi.c", "phi.b", "lambda_raw", "beta_raw"; the architecture as JSON in the metadata
// key "flowscope_flow", so the file alone rebuilds the model) and a JSON record beside it (model.json for
// model.safetensors): architecture, λ, β, h, dataset, seeds, optimizer, final metrics and the training curve.
#pragma once

#include "engine/flows/Flow.h"

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace flowscope {
class JsonReader;
struct SafeTensors;
} // namespace flowscope

namespace flowscope::flows {

// The metadata key that marks a .safetensors file as a flow (its value: the architecture as JSON).
inline constexpr char kFlowMetadataKey[] = "flowscope_flow";

class FlowTrainer;
struct TrainerConfig;
struct TrainRecord;
struct Evaluation;
struct TrainEvent;

// "dir/model.safetensors" -> "dir/model.json"; any other name gets ".json" appended.
std::string configPathFor(const std::string& modelPath);
// The files a model argument stands for, as a command's inputs: the model and its record ({} for "").
// An output over either would destroy the model.
std::vector<std::string> modelFiles(const std::string& modelPath);

nlohmann::json toJson(const FlowConfig& c);
// Throws std::runtime_error naming the field ("architecture/layers: ...") for a missing or bad value.
FlowConfig flowConfigFromJson(const nlohmann::json& j);

// Writes the model and its record atomically; `record` gets "format", "architecture", "lambda", "beta" and
// "h" filled in.
void saveFlow(const std::string& path, const FlowModel<float>& model, nlohmann::json record);
// The trainer's model, with its data source, optimizer, final evaluation and curve in the record.
void saveFlow(const std::string& path, const FlowTrainer& trainer, double trainSeconds);
// That record from a trainer's parts (what a runner's snapshot holds of it).
nlohmann::json trainingRecord(const TrainerConfig& c, long iterations, bool stopped,
                              const std::vector<TrainRecord>& history,
                              const std::vector<Evaluation>& evaluations,
                              const std::vector<TrainEvent>& events, double trainSeconds);

// What every trained model's record holds (the flows' and the Transformers'): "evaluations", "metrics" (the
// last evaluation, or null before the first) and "events".
void addEvaluations(nlohmann::json& record, const nlohmann::json& evaluations,
                    const std::vector<TrainEvent>& events);
// Writes a model file and its record beside it (configPathFor) as one output set, the record last: it names
// what the model file is.
void writeModelFiles(const std::string& path, const SafeTensors& file, const nlohmann::json& record);
// A model file to fill with tensors: its metadata holds `header` (the JSON that rebuilds the model) under
// `key`, and the "format" the Python safetensors tools expect of a plain tensor file.
SafeTensors modelFile(const std::string& key, const nlohmann::json& header);
// Reads a model file, after recovering an output set a killed process left half done, and hands its
// architecture (the JSON of the metadata `key`; a file without it is not a `what`) to `readArchitecture` at
// "/architecture". Throws std::runtime_error naming the file.
SafeTensors readModelFile(const std::string& path, const std::string& key, const std::string& what,
                          const std::function<void(const JsonReader&)>& readArchitecture);

// Loads what saveFlow wrote (the .safetensors alone suffices). Throws std::runtime_error naming the file and
// the field for malformed or mismatched files.
FlowModel<float> loadFlow(const std::string& path);

} // namespace flowscope::flows
