#include "engine/runner/TransformerRunner.h"

#include "engine/ottransformer/TransformerIo.h"
#include "engine/runner/TrainerSteps.h"

#include <Eigen/Eigenvalues>

#include <cstdio>

namespace flowscope {

std::vector<Mat> projectedStates(const std::vector<ot::Matrix>& states, int set, int setSize) {
    std::vector<Mat> out;
    if (states.empty()) return out;
    const Eigen::Index d = states.front().rows();
    Eigen::MatrixXd axes = Eigen::MatrixXd::Identity(d, std::min<Eigen::Index>(2, d));
    Eigen::VectorXd centre = Eigen::VectorXd::Zero(d);
    if (d > 2) {
        Eigen::MatrixXd all(d, Eigen::Index(states.size()) * setSize);
        for (std::size_t m = 0; m < states.size(); ++m)
            all.middleCols(Eigen::Index(m) * setSize, setSize) =
                states[m].middleCols(Eigen::Index(set) * setSize, setSize);
        centre = all.rowwise().mean();
        const Eigen::MatrixXd c = all.colwise() - centre;
        Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(Eigen::MatrixXd(c * c.transpose()));
        axes.col(0) = eig.eigenvectors().col(d - 1);
        axes.col(1) = eig.eigenvectors().col(d - 2);
    }
    for (const ot::Matrix& X : states) {
        const Eigen::MatrixXd block = X.middleCols(Eigen::Index(set) * setSize, setSize);
        Mat p = Mat::Zero(setSize, 2);
        p.leftCols(axes.cols()) = (axes.transpose() * (block.colwise() - centre)).transpose();
        out.push_back(std::move(p));
    }
    return out;
}

// ---------------------------------------------------------------------------------------------------------
// TransformerTraining

std::vector<ot::OtTrainerConfig> TransformerTraining::configs(const Config& config, bool comparison) {
    if (!comparison) return {config};
    Config zero = config;
    zero.model.lambdaOt = 0.0;
    return {config, zero};
}

std::string TransformerTraining::label(const Config& config) {
    char text[64];
    std::snprintf(text, sizeof text, "λ_OT = %g", config.model.lambdaOt);
    return text;
}

TransformerTrainerState TransformerTraining::state(const Trainer& t, std::size_t maxEvents,
                                                   std::shared_ptr<const Config> config) {
    TransformerTrainerState s;
    s.lambdaOt = t.config().model.lambdaOt;
    s.label = label(t.config());
    fillTrainerState(s, t, maxEvents);
    copyTrainerModel(s, t, std::move(config));
    return s;
}

ot::OtTrainerConfig TransformerTraining::fromModel(const Model& model, Config config) {
    config.model = model.config();
    config.initialParams = std::make_shared<const ot::TransformerParams>(model.params());
    return config;
}

TransformerTraining::Pictures::Pictures(const Options& options, const Trainer& first)
    : task_(first.config().task) {
    flows::Rng rng(options.pictureSeed);
    shown_ = first.config().task == ot::Task::A ? ot::sampleTaskA(1, rng) : ot::sampleTaskB(1, rng);
}

void TransformerTraining::Pictures::describe(Snapshot& s, const Trainer& first) const {
    s.task = first.config().task;
    s.threshold = first.evaluatedModel().stabilityThreshold(shown_.setSize);
}

PictureTask<TransformerPicture> TransformerTraining::Pictures::capture(const Trainer& t) const {
    return [this, model = std::make_shared<const Model>(t.evaluatedModel()),
            iteration = t.iteration()](bool) { return make(iteration, *model); };
}

std::shared_ptr<const TransformerPicture> TransformerTraining::Pictures::make(long iteration,
                                                                              const Model& model) const {
    auto p = std::make_shared<TransformerPicture>();
    p->iteration = iteration;
    std::vector<ot::Matrix> states;
    model.output(shown_.tokens, shown_.setSize, &states);
    // A padded task A model keeps the tokens in its first coordinates (the rest is working space, not
    // drawn): the picture shows them as they are, beside the closed form in the same plane.
    const ot::TransformerConfig& c = model.config();
    if (c.padEmbed && c.head == ot::Head::Mean)
        for (ot::Matrix& x : states) x = x.topRows(c.inputDim).eval();
    p->states = projectedStates(states, 0, shown_.setSize);
    if (task_ == ot::Task::A) {
        const double lambda = model.paperLambda(shown_.setSize);
        if (lambda > 0) p->closedForm = ot::taskAClosedFormState(shown_, lambda, c.horizon).transpose();
    } else {
        p->label = shown_.labels.front();
    }
    return p;
}

void saveTrainedTransformer(const std::string& path, const TransformerTrainerState& state) {
    saveTrainerState(path, state, [](auto&&... a) { ot::saveTransformer(std::forward<decltype(a)>(a)...); });
}

} // namespace flowscope
