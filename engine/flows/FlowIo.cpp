#include "engine/flows/FlowIo.h"

#include "engine/flows/Trainer.h"
#include "engine/io/AtomicFile.h"
#include "engine/io/JsonReader.h"
#include "engine/io/JsonWrite.h"
#include "engine/io/OutputSet.h"
#include "engine/io/Safetensors.h"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace flowscope::flows {

namespace {

// The records' tables of numbers write NaN and inf as null (engine/io/JsonWrite.h).
constexpr auto number = &numberJson;

constexpr const char* kFormat = "flowscope-flow";
constexpr int kVersion = 1;
constexpr const char* kReferenceTensor =
    "reference"; // d x R·n: the RWPO model's keys, R draws of n (FlowModel::reference)
constexpr const char* kReferenceDrawsKey = "flowscope_reference_draws"; // R; absent in older files: 1

// The names of RwpoKernel in a record, in enum order.
constexpr std::array<std::string_view, 3> kKernelNames{"corrected", "as-printed", "separable"};

// The architecture (a record's "/architecture"). Lenient about unknown keys: a file written by a later
// version may carry fields this one does not know.
FlowConfig readFlowConfig(const JsonReader& j) {
    j.expectObject();
    FlowConfig c;
    c.d = int(j.require("d").integer(1, 1024));
    c.width = int(j.require("width").integer(1, 1024));
    c.depth = int(j.require("depth").integer(2, 16));
    c.layers = int(j.require("layers").integer(1, 256));
    c.T = j.require("T").numberIn(1e-9, 1e9);
    c.rwpo = j.require("rwpo").boolean();
    c.rwpoOptions.leaveOneOut = j.require("leave_one_out").boolean();
    c.rwpoOptions.exactLogDet = j.require("exact_log_det").boolean();
    // Absent in the files of earlier versions: they were trained to first order.
    c.exactDriftLogDet = false;
    if (auto v = j.find("exact_drift_log_det")) c.exactDriftLogDet = v->boolean();
    c.lambda0 = j.require("lambda0").numberIn(1e-300, 1e300);
    c.beta0 = j.require("beta0").numberIn(1e-300, 1e300);
    c.trainLambda = j.require("train_lambda").boolean();
    c.trainBeta = j.require("train_beta").boolean();
    c.transportWeight = j.require("transport_weight").numberIn(0.0, 1e300);
    c.hjbWeight = j.require("hjb_weight").numberIn(0.0, 1e300);
    if (auto v = j.find("seed")) c.seed = v->unsignedInteger();
    c.rwpoOptions.kernel = RwpoKernel::Corrected;
    if (auto v = j.find("kernel")) c.rwpoOptions.kernel = RwpoKernel(v->choice("kernel", kKernelNames));
    if (c.rwpoOptions.exactLogDet && c.rwpoOptions.kernel != RwpoKernel::Separable && c.d != 2 && c.d != 3)
        j.failAt("exact_log_det", "needs d = 2 or 3 for a vector kernel");
    if (c.exactDriftLogDet && c.d > 3) j.failAt("exact_drift_log_det", "needs d <= 3");
    return c;
}

} // namespace

std::string configPathFor(const std::string& modelPath) {
    const std::string ext = ".safetensors";
    if (modelPath.size() > ext.size() &&
        modelPath.compare(modelPath.size() - ext.size(), ext.size(), ext) == 0)
        return modelPath.substr(0, modelPath.size() - ext.size()) + ".json";
    return modelPath + ".json";
}

std::vector<std::string> modelFiles(const std::string& modelPath) {
    if (modelPath.empty()) return {};
    return {modelPath, configPathFor(modelPath)};
}

nlohmann::json toJson(const FlowConfig& c) {
    return {{"d", c.d},
            {"width", c.width},
            {"depth", c.depth},
            {"layers", c.layers},
            {"T", c.T},
            {"rwpo", c.rwpo},
            {"kernel", kKernelNames[std::size_t(c.rwpoOptions.kernel)]},
            {"leave_one_out", c.rwpoOptions.leaveOneOut},
            {"exact_log_det", c.rwpoOptions.exactLogDet},
            {"exact_drift_log_det", c.exactDriftLogDet},
            {"lambda0", c.lambda0},
            {"beta0", c.beta0},
            {"train_lambda", c.trainLambda},
            {"train_beta", c.trainBeta},
            {"transport_weight", c.transportWeight},
            {"hjb_weight", c.hjb()},
            {"seed", c.seed}};
}

FlowConfig flowConfigFromJson(const nlohmann::json& j) {
    const JsonReader::Json architecture(j);
    return readFlowConfig(JsonReader(architecture, "/architecture"));
}

void saveFlow(const std::string& path, const FlowModel<float>& model, nlohmann::json record) {
    const FlowConfig& c = model.config();
    const nlohmann::json architecture = toJson(c);
    SafeTensors file = modelFile(kFlowMetadataKey, architecture);
    FlowParams<float> p = model.params();
    forEachNamedTensor(p, [&](const ad::Matrix<float>& m, const std::string& name) {
        file.tensors.push_back(matrixTensor(name, m, true));
    });
    if (c.rwpo && model.reference().size() > 0) {
        file.tensors.push_back(matrixTensor(kReferenceTensor, model.reference(), true));
        file.metadata[kReferenceDrawsKey] = std::to_string(model.referenceDraws());
    }
    record["format"] = kFormat;
    record["version"] = kVersion;
    record["architecture"] = architecture;
    record["lambda"] = p.lambda();
    record["beta"] = p.beta();
    record["h"] = c.h();
    writeModelFiles(path, file, record);
}

void saveFlow(const std::string& path, const FlowTrainer& trainer, double trainSeconds) {
    saveFlow(path, trainer.evaluatedModel(),
             trainingRecord(trainer.config(), trainer.iteration(), trainer.stopped(), trainer.history(),
                            trainer.evaluations(), trainer.events(), trainSeconds));
}

nlohmann::json trainingRecord(const TrainerConfig& c, long iterations, bool stopped,
                              const std::vector<TrainRecord>& history,
                              const std::vector<Evaluation>& evaluations,
                              const std::vector<TrainEvent>& events, double trainSeconds) {
    nlohmann::json record;
    record["training"] = {
        {"dataset", c.dataset.empty() ? nlohmann::json("points") : nlohmann::json(c.dataset)},
        {"points", c.dataset.empty() ? c.points.rows() : 0},
        {"point_jitter", c.pointJitter},
        {"batch", c.batch},
        {"resample_every", c.resampleEvery},
        {"reference_draws", c.flow.rwpo ? c.referenceDraws : 0},
        {"reference_size", c.flow.rwpo ? c.referenceSize : 0},
        {"data_seed", c.dataSeed},
        {"lr", c.adam.lr},
        {"lr_final", c.adam.lrFinal},
        {"clip_to_median", c.adam.clipToMedian},
        {"average_iterations", c.averageIterations},
        {"decay_steps", c.adam.decaySteps},
        {"iterations", iterations},
        {"seconds", trainSeconds},
        {"ms_per_iteration", 1e3 * trainSeconds / double(std::max(1L, iterations))},
        {"stopped", stopped}};
    nlohmann::json evaluationsJson = nlohmann::json::array();
    for (const Evaluation& e : evaluations)
        evaluationsJson.push_back({{"iteration", e.iteration},
                                   {"nll", number(e.nll)},
                                   {"kl", number(e.kl)},
                                   {"mmd2", number(e.mmd2)},
                                   {"round_trip", number(e.roundTrip)},
                                   {"min_det", number(e.minDet)},
                                   {"folded_fraction", number(e.foldedFraction)},
                                   {"grid_mass", number(e.gridMass)}});
    nlohmann::json curve = {{"loss", nlohmann::json::array()},      {"nll", nlohmann::json::array()},
                            {"transport", nlohmann::json::array()}, {"hjb", nlohmann::json::array()},
                            {"lambda", nlohmann::json::array()},    {"beta", nlohmann::json::array()},
                            {"rejected", nlohmann::json::array()},  {"clipped", nlohmann::json::array()}};
    for (const TrainRecord& r : history) {
        curve["loss"].push_back(number(r.terms.loss));
        curve["nll"].push_back(number(r.terms.nll));
        curve["transport"].push_back(number(r.terms.transport));
        curve["hjb"].push_back(number(r.terms.hjb));
        curve["lambda"].push_back(r.lambda);
        curve["beta"].push_back(r.beta);
        if (r.rejected) curve["rejected"].push_back(r.iteration);
        if (r.clipped) curve["clipped"].push_back(r.iteration);
    }
    record["curve"] = curve;
    addEvaluations(record, evaluationsJson, events);
    return record;
}

void addEvaluations(nlohmann::json& record, const nlohmann::json& evaluations,
                    const std::vector<TrainEvent>& events) {
    record["metrics"] = evaluations.empty() ? nlohmann::json(nullptr) : evaluations.back();
    record["evaluations"] = evaluations;
    nlohmann::json eventsJson = nlohmann::json::array();
    for (const TrainEvent& e : events)
        eventsJson.push_back({{"iteration", e.iteration}, {"message", e.message}});
    record["events"] = eventsJson;
}

void writeModelFiles(const std::string& path, const SafeTensors& file, const nlohmann::json& record) {
    writeOutputSet({path, configPathFor(path)}, [&] {
        writeSafetensors(path, file);
        writeFileAtomically(configPathFor(path), [&](std::ostream& out) { out << record.dump(2) << "\n"; });
    });
}

SafeTensors modelFile(const std::string& key, const nlohmann::json& header) {
    SafeTensors file;
    file.metadata[key] = header.dump();
    file.metadata["format"] = "pt";
    return file;
}

SafeTensors readModelFile(const std::string& path, const std::string& key, const std::string& what,
                          const std::function<void(const JsonReader&)>& readArchitecture) {
    recoverOutputs(directoryOf(path)); // a set whose commit a killed process left half done
    SafeTensors file = readSafetensors(path);
    const std::string& meta = file.record(key, path, what);
    try {
        const JsonReader::Json architecture = parseJson(meta, 64, "/architecture");
        readArchitecture(JsonReader(architecture, "/architecture"));
    } catch (const std::exception& e) {
        throw std::runtime_error(path + ": " + e.what());
    }
    return file;
}

FlowModel<float> loadFlow(const std::string& path) {
    FlowConfig config;
    const SafeTensors file = readModelFile(path, kFlowMetadataKey, "Flowscope flow",
                                           [&](const JsonReader& j) { config = readFlowConfig(j); });
    FlowModel<float> model(config);
    try {
        forEachNamedTensor(model.params(), [&](ad::Matrix<float>& m, const std::string& name) {
            readMatrix(file, name, m, true);
        });
        // Optional (files of earlier versions have none: their samples invert the N-particle map).
        const auto reference = std::find_if(file.tensors.begin(), file.tensors.end(),
                                            [](const SafeTensor& t) { return t.name == kReferenceTensor; });
        if (config.rwpo && reference != file.tensors.end()) {
            if (reference->shape.size() != 2 || reference->shape[0] != config.d || reference->shape[1] < 2)
                throw std::runtime_error(std::string("tensor '") + kReferenceTensor +
                                         "' must be d x N with d = " + std::to_string(config.d) +
                                         " and N >= 2");
            ad::Matrix<float> R(config.d, reference->shape[1]);
            readMatrix(file, kReferenceTensor, R, true);
            int draws = 1;
            if (const auto it = file.metadata.find(kReferenceDrawsKey); it != file.metadata.end()) {
                std::size_t used = 0;
                try {
                    draws = std::stoi(it->second, &used);
                } catch (const std::exception&) {
                    used = 0;
                }
                if (used == 0 || used != it->second.size() || draws < 1 || R.cols() % draws != 0 ||
                    R.cols() / draws < 2)
                    throw std::runtime_error(std::string("metadata '") + kReferenceDrawsKey + "': '" +
                                             it->second + "' does not split the " + std::to_string(R.cols()) +
                                             " reference points into draws of >= 2");
            }
            model.setReference(std::move(R), draws);
        }
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(path + ": " + e.what());
    }
    return model;
}

} // namespace flowscope::flows
