#include "engine/inverse/PosteriorIo.h"

#include "engine/flows/FlowIo.h"
#include "engine/io/Safetensors.h"

#include <stdexcept>

namespace flowscope::inverse {

namespace {

constexpr const char* kFormat = "flowscope-posterior";

nlohmann::json header(const PosteriorFlow& flow, const Problem& problem) {
    return {{"architecture", flows::toJson(flow.config().flow)},
            {"batch", flow.config().batch},
            {"keys", flow.keyCount()},
            {"base_seed", std::to_string(flow.config().seed)},
            {"problem", nlohmann::json::parse(problem.source)}};
}

} // namespace

void savePosterior(const std::string& path, const PosteriorFlow& flow, const Problem& problem,
                   nlohmann::json record) {
    const nlohmann::json h = header(flow, problem);
    SafeTensors file = flows::modelFile(kPosteriorMetadataKey, h);
    flows::FlowParams<double> p = flow.averagedParams();
    flows::forEachNamedTensor(p, [&](const ad::Matrix<double>& m, const std::string& name) {
        file.tensors.push_back(matrixTensor(name, m, false));
    });
    file.tensors.push_back(matrixTensor("frame.center", flow.frame().center, false));
    file.tensors.push_back(matrixTensor("frame.L", flow.frame().L, false));
    record["format"] = kFormat;
    record["architecture"] = h["architecture"];
    record["batch"] = h["batch"];
    record["keys"] = h["keys"];
    record["problem"] = h["problem"];
    record["lambda"] = p.lambda();
    record["beta"] = p.beta();
    flows::writeModelFiles(path, file, record);
}

bool isPosteriorFile(const std::string& path) {
    try {
        return readSafetensors(path).metadata.count(kPosteriorMetadataKey) > 0;
    } catch (const std::exception&) {
        return false;
    }
}

LoadedPosterior loadPosterior(const std::string& path) {
    const SafeTensors file = readSafetensors(path);
    const std::string& record = file.record(kPosteriorMetadataKey, path, "posterior flow");
    LoadedPosterior out;
    try {
        const nlohmann::json h = nlohmann::json::parse(record);
        out.problem = problemFromJson(h.at("problem").dump());
        PosteriorFlowConfig c = out.problem.flow;
        c.flow = flows::flowConfigFromJson(h.at("architecture"));
        c.batch = h.at("batch").get<int>();
        c.keys = h.at("keys").get<int>();
        c.seed = std::stoull(h.at("base_seed").get<std::string>());
        const int d = out.problem.posterior->dim();
        if (c.flow.d != d)
            throw std::runtime_error("architecture/d: " + std::to_string(c.flow.d) +
                                     " is not the problem's dimension " + std::to_string(d));
        Frame frame;
        frame.center.resize(d);
        frame.L.resize(d, d);
        readMatrix(file, "frame.center", frame.center, false);
        readMatrix(file, "frame.L", frame.L, false);
        frame.logDetL = frame.L.diagonal().cwiseAbs().array().log().sum(); // L is triangular
        flows::FlowParams<double> p = flows::FlowParams<double>::init(c.flow);
        flows::forEachNamedTensor(
            p, [&](ad::Matrix<double>& m, const std::string& name) { readMatrix(file, name, m, false); });
        out.flow = std::make_unique<PosteriorFlow>(out.problem.posterior, c, &frame);
        out.flow->setParams(p);
    } catch (const std::exception& e) {
        throw std::runtime_error(path + ": " + e.what());
    }
    return out;
}

} // namespace flowscope::inverse
