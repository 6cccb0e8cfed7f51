#include "engine/ottransformer/TransformerIo.h"

#include "engine/flows/FlowIo.h"
#include "engine/io/JsonReader.h"
#include "engine/io/JsonWrite.h"
#include "engine/io/Safetensors.h"

#include <set>
#include <stdexcept>
#include <utility>

namespace flowscope::ot {

namespace {

// The records' tables of numbers write NaN and inf as null (engine/io/JsonWrite.h).
constexpr auto number = &numberJson;

constexpr const char* kFormat = "flowscope-transformer";
constexpr int kVersion = 1;

// Member `name` of `j`: one of the names toString gives an E.
template <class E> E readEnum(const JsonReader& j, const char* name, E (*fromString)(const std::string&)) {
    const std::vector<std::string_view> names = namesOf<E>();
    return fromString(std::string(names[std::size_t(j.require(name).choice(name, names))]));
}

// The architecture (a record's "/architecture"). Lenient about unknown keys, like the flows' records.
TransformerConfig readTransformerConfig(const JsonReader& j) {
    j.expectObject();
    TransformerConfig c;
    c.inputDim = int(j.require("input_dim").integer(1, 1024));
    c.embed = j.require("embed").boolean();
    c.width = int(j.require("width").integer(1, 1024));
    c.heads = int(j.require("heads").integer(1, 64));
    c.headDim = int(j.require("head_dim").integer(1, 1024));
    c.mlpHidden = int(j.require("mlp_hidden").integer(0, 4096));
    c.layerNorm = j.require("layer_norm").boolean();
    c.blocks = int(j.require("blocks").integer(1, 64));
    c.incrementVelocity = j.require("increment_velocity").boolean();
    c.steps = int(j.require("steps").integer(1, 1000));
    c.horizon = j.require("horizon").numberIn(1e-300, 1e300);
    c.classes = int(j.require("classes").integer(2, 1000));
    c.lambdaOt = j.require("lambda_ot").numberIn(0, 1e300);
    // Absent in older files: off.
    for (auto [name, flag] : {std::pair{"pad_embed", &c.padEmbed}, std::pair{"pad_copy", &c.padCopy},
                              std::pair{"routing_init", &c.routingInit}})
        if (auto v = j.find(name)) *flag = v->boolean();
    c.activation = readEnum(j, "activation", activationFromString);
    c.architecture = readEnum(j, "architecture", architectureFromString);
    c.integrator = readEnum(j, "integrator", integratorFromString);
    c.head = readEnum(j, "head", headFromString);
    c.convention = readEnum(j, "convention", conventionFromString);
    c.seed = j.require("seed").unsignedInteger();
    try {
        validate(c);
    } catch (const std::invalid_argument& e) {
        j.fail(e.what());
    }
    return c;
}

} // namespace

nlohmann::json toJson(const TransformerConfig& c) {
    return {{"input_dim", c.inputDim},
            {"embed", c.embed},
            {"width", c.width},
            {"heads", c.heads},
            {"head_dim", c.headDim},
            {"mlp_hidden", c.mlpHidden},
            {"activation", toString(c.activation)},
            {"layer_norm", c.layerNorm},
            {"blocks", c.blocks},
            {"architecture", toString(c.architecture)},
            {"increment_velocity", c.incrementVelocity},
            {"steps", c.steps},
            {"horizon", c.horizon},
            {"integrator", toString(c.integrator)},
            {"head", toString(c.head)},
            {"classes", c.classes},
            {"lambda_ot", c.lambdaOt},
            {"convention", toString(c.convention)},
            {"seed", c.seed},
            {"pad_embed", c.padEmbed},
            {"pad_copy", c.padCopy},
            {"routing_init", c.routingInit}};
}

TransformerConfig transformerConfigFromJson(const nlohmann::json& j) {
    const JsonReader::Json architecture(j);
    return readTransformerConfig(JsonReader(architecture, "/architecture"));
}

nlohmann::json toJson(const OtEvaluation& e) {
    return {{"iteration", e.iteration},
            {"loss", number(e.terms.loss)},
            {"task_loss", number(e.terms.task)},
            {"transport", number(e.terms.transport)},
            {"accuracy", number(e.terms.accuracy)},
            {"straightness", number(e.straightness)},
            {"speed_cv", number(e.speedCv)},
            {"closed_form_error", number(e.closedFormError)},
            {"displacement_error", number(e.displacementError)},
            {"optimal_loss", number(e.optimalLoss)},
            {"lipschitz_ratio", number(e.lipschitzRatio)},
            {"lipschitz_bound", number(e.lipschitzBound)},
            {"lipschitz_bound_frobenius", number(e.lipschitzBoundFrobenius)},
            {"threshold", number(e.threshold)},
            {"threshold_frobenius", number(e.thresholdFrobenius)},
            {"non_finite_steps", e.nonFiniteSteps}};
}

void saveTransformer(const std::string& path, const TransformerModel& model, nlohmann::json record) {
    const nlohmann::json architecture = toJson(model.config());
    SafeTensors file = flows::modelFile(kTransformerMetadataKey, architecture);
    model.params().forEach([&](const Matrix& m, const std::string& name) {
        file.tensors.push_back(matrixTensor(name, m, false));
    });
    record["format"] = kFormat;
    record["version"] = kVersion;
    record["architecture"] = architecture;
    record["parameters"] = model.params().count();
    flows::writeModelFiles(path, file, record);
}

void saveTransformer(const std::string& path, const OtTrainer& trainer, double trainSeconds,
                     const nlohmann::json& extra) {
    saveTransformer(path, trainer.evaluatedModel(),
                    trainingRecord(trainer.config(), trainer.iteration(), trainer.stopped(),
                                   trainer.history(), trainer.evaluations(), trainer.events(), trainSeconds,
                                   extra));
}

nlohmann::json trainingRecord(const OtTrainerConfig& c, long iterations, bool stopped,
                              const std::vector<OtRecord>& history,
                              const std::vector<OtEvaluation>& evaluations,
                              const std::vector<flows::TrainEvent>& events, double trainSeconds,
                              const nlohmann::json& extra) {
    nlohmann::json record = extra;
    record["training"] = {{"task", toString(c.task)},
                          {"batch", c.batch},
                          {"data_seed", c.dataSeed},
                          {"eval_sets", c.evalSets},
                          {"lr", c.adam.lr},
                          {"lr_final", c.adam.lrFinal},
                          {"decay_steps", c.adam.decaySteps},
                          {"average_iterations", c.averageIterations},
                          {"iterations", iterations},
                          {"seconds", trainSeconds},
                          {"stopped", stopped}};
    nlohmann::json evaluationsJson = nlohmann::json::array();
    for (const OtEvaluation& e : evaluations) evaluationsJson.push_back(toJson(e));
    nlohmann::json curve = {{"loss", nlohmann::json::array()},
                            {"task_loss", nlohmann::json::array()},
                            {"transport", nlohmann::json::array()},
                            {"accuracy", nlohmann::json::array()},
                            {"rejected", nlohmann::json::array()}};
    for (const OtRecord& r : history) {
        curve["loss"].push_back(number(r.terms.loss));
        curve["task_loss"].push_back(number(r.terms.task));
        curve["transport"].push_back(number(r.terms.transport));
        curve["accuracy"].push_back(number(r.terms.accuracy));
        if (r.rejected) curve["rejected"].push_back(r.iteration);
    }
    record["curve"] = curve;
    flows::addEvaluations(record, evaluationsJson, events);
    return record;
}

TransformerModel loadTransformer(const std::string& path) {
    TransformerConfig config;
    const SafeTensors file =
        flows::readModelFile(path, kTransformerMetadataKey, "Flowscope Transformer",
                             [&](const JsonReader& j) { config = readTransformerConfig(j); });
    // Every block's Q, K, V, W (and MLP) must be in the file before init allocates them: a few bytes of
    // metadata may describe gigabytes of parameters.
    const long long needed = (long long)config.blocks * config.width *
                             (4LL * config.heads * config.headDim + 2LL * config.mlpHidden);
    long long held = 0;
    for (const SafeTensor& t : file.tensors) held += (long long)t.data.size();
    if (held < needed)
        throw std::runtime_error(path + ": the architecture has at least " + std::to_string(needed) +
                                 " parameters, the file holds " + std::to_string(held) + " values");
    TransformerParams params = TransformerParams::init(config);
    try {
        std::set<std::string> expected;
        params.forEach(params, [&](Matrix& m, Matrix&, const std::string& name) {
            readMatrix(file, name, m, false);
            expected.insert(name);
        });
        for (const SafeTensor& t : file.tensors)
            if (!expected.count(t.name)) throw std::runtime_error("unexpected tensor '" + t.name + "'");
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(path + ": " + e.what());
    }
    return TransformerModel(config, std::move(params));
}

} // namespace flowscope::ot
