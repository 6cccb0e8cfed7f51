#include "engine/flows/FlowIo.h"

#include "engine/flows/Trainer.h"
#include "engine/io/AtomicFile.h"
#include "engine/io/JsonField.h"
#include "engine/io/OutputSet.h"
#include "engine/io/Safetensors.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace flowscope::flows {

namespace {

constexpr const char* kFormat = "flowscope-flow";
constexpr int kVersion = 1;
constexpr const char* kMetadataKey = "flowscope_flow";
constexpr const char* kReferenceTensor =
    "reference"; // d x R·n: the RWPO model's keys, R draws of n (FlowModel::reference)
constexpr const char* kReferenceDrawsKey = "flowscope_reference_draws"; // R; absent in older files: 1

const char* kernelName(RwpoKernel k) {
    switch (k) {
    case RwpoKernel::Corrected:
        return "corrected";
    case RwpoKernel::AsPrinted:
        return "as-printed";
    case RwpoKernel::Separable:
        return "separable";
    }
    return "?";
}

// The named tensors of a model's parameters, in a fixed order.
template <class F> void forEachTensor(FlowParams<float>& p, F&& f) {
    p.phi.forEach([&](ad::Matrix<float>& m, const std::string& name) { f(m, "phi." + name); });
    f(p.lambdaRaw, std::string("lambda_raw"));
    f(p.betaRaw, std::string("beta_raw"));
}

nlohmann::json number(double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

} // namespace

std::string configPathFor(const std::string& modelPath) {
    const std::string ext = ".safetensors";
    if (modelPath.size() > ext.size() &&
        modelPath.compare(modelPath.size() - ext.size(), ext.size(), ext) == 0)
        return modelPath.substr(0, modelPath.size() - ext.size()) + ".json";
    return modelPath + ".json";
}

nlohmann::json toJson(const FlowConfig& c) {
    return {{"d", c.d},
            {"width", c.width},
            {"depth", c.depth},
            {"layers", c.layers},
            {"T", c.T},
            {"rwpo", c.rwpo},
            {"kernel", kernelName(c.rwpoOptions.kernel)},
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
    if (!j.is_object()) throw std::runtime_error("architecture: expected an object");
    FlowConfig c;
    auto field = [&](const char* name, auto& out, auto lo, auto hi) {
        readJsonField(j, "architecture", name, out, double(lo), double(hi));
    };
    field("d", c.d, 1, 64);
    field("width", c.width, 1, 1024);
    field("depth", c.depth, 2, 16);
    field("layers", c.layers, 1, 256);
    field("T", c.T, 1e-9, 1e9);
    field("rwpo", c.rwpo, 0, 1);
    field("leave_one_out", c.rwpoOptions.leaveOneOut, 0, 1);
    field("exact_log_det", c.rwpoOptions.exactLogDet, 0, 1);
    c.exactDriftLogDet = false; // absent in the files of earlier versions: they were trained to first order
    if (j.contains("exact_drift_log_det")) field("exact_drift_log_det", c.exactDriftLogDet, 0, 1);
    field("lambda0", c.lambda0, 1e-300, 1e300);
    field("beta0", c.beta0, 1e-300, 1e300);
    field("train_lambda", c.trainLambda, 0, 1);
    field("train_beta", c.trainBeta, 0, 1);
    field("transport_weight", c.transportWeight, 0.0, 1e300);
    field("hjb_weight", c.hjbWeight, 0.0, 1e300);
    if (j.contains("seed")) {
        if (!j["seed"].is_number_unsigned())
            throw std::runtime_error("architecture/seed: expected an unsigned integer");
        c.seed = j["seed"].get<std::uint64_t>();
    }
    const std::string kernel = j.value("kernel", std::string("corrected"));
    if (kernel == "corrected")
        c.rwpoOptions.kernel = RwpoKernel::Corrected;
    else if (kernel == "as-printed")
        c.rwpoOptions.kernel = RwpoKernel::AsPrinted;
    else if (kernel == "separable")
        c.rwpoOptions.kernel = RwpoKernel::Separable;
    else
        throw std::runtime_error("architecture/kernel: '" + kernel +
                                 "' is not corrected, as-printed or separable");
    if (c.rwpoOptions.exactLogDet && c.rwpoOptions.kernel != RwpoKernel::Separable && c.d != 2)
        throw std::runtime_error("architecture/exact_log_det: needs d = 2 for a vector kernel");
    if (c.exactDriftLogDet && c.d > 2)
        throw std::runtime_error("architecture/exact_drift_log_det: needs d <= 2");
    return c;
}

void saveFlow(const std::string& path, const FlowModel<float>& model, nlohmann::json record) {
    const FlowConfig& c = model.config();
    const nlohmann::json architecture = toJson(c);
    SafeTensors file;
    file.metadata[kMetadataKey] = architecture.dump();
    file.metadata["format"] = "pt"; // what the Python safetensors tools expect of a plain tensor file
    FlowParams<float> p = model.params();
    forEachTensor(p, [&](const ad::Matrix<float>& m, const std::string& name) {
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
    writeOutputSet({path, configPathFor(path)}, [&] { // the record last: it names what the model file is
        writeSafetensors(path, file);
        writeFileAtomically(configPathFor(path), [&](std::ostream& out) { out << record.dump(2) << "\n"; });
    });
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
    record["metrics"] = evaluationsJson.empty() ? nlohmann::json(nullptr) : evaluationsJson.back();
    record["evaluations"] = evaluationsJson;
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
    nlohmann::json eventsJson = nlohmann::json::array();
    for (const TrainEvent& e : events)
        eventsJson.push_back({{"iteration", e.iteration}, {"message", e.message}});
    record["events"] = eventsJson;
    return record;
}

FlowModel<float> loadFlow(const std::string& path) {
    recoverOutputs(directoryOf(path)); // a set whose commit a killed process left half done
    const SafeTensors file = readSafetensors(path);
    const auto meta = file.metadata.find(kMetadataKey);
    if (meta == file.metadata.end())
        throw std::runtime_error(path + ": not a Flowscope flow (no '" + kMetadataKey + "' metadata)");
    FlowConfig config;
    try {
        config = flowConfigFromJson(nlohmann::json::parse(meta->second));
    } catch (const std::exception& e) {
        throw std::runtime_error(path + ": " + e.what());
    }
    FlowModel<float> model(config);
    try {
        forEachTensor(model.params(), [&](ad::Matrix<float>& m, const std::string& name) {
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
