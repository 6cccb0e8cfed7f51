#include "engine/runner/PosteriorRunner.h"

#include "engine/inverse/Eit.h"
#include "engine/inverse/PosteriorIo.h"
#include "engine/runner/TrainerSteps.h"

#include <cmath>
#include <stdexcept>

namespace flowscope {

PosteriorRunConfig withFrame(PosteriorRunConfig config) {
    if (!config.problem || !config.problem->posterior) throw std::invalid_argument("problem: none chosen");
    if (!config.frame)
        config.frame = std::make_shared<const inverse::Frame>(
            inverse::makeFrame(*config.problem->posterior, config.flow.frame));
    return config;
}

PosteriorRunConfig loadPosteriorRun(const std::string& path) {
    inverse::LoadedPosterior loaded = inverse::loadPosterior(path);
    PosteriorRunConfig c;
    c.problemId = path;
    c.flow = loaded.flow->config();
    c.frame = std::make_shared<const inverse::Frame>(loaded.flow->frame());
    c.initialParams = std::make_shared<const flows::FlowParams<double>>(loaded.flow->averagedParams());
    c.problem = std::make_shared<const inverse::Problem>(std::move(loaded.problem));
    return c;
}

// ---------------------------------------------------------------------------------------------------------
// PosteriorTrainer

PosteriorTrainer::PosteriorTrainer(const Config& config) : config_(withFrame(config)) {
    if (config_.evaluationSamples < 2) throw std::invalid_argument("evaluationSamples: must be >= 2");
    flow_ = std::make_unique<inverse::PosteriorFlow>(config_.problem->posterior, config_.flow,
                                                     config_.frame.get());
    if (config_.initialParams) flow_->setParams(*config_.initialParams);
}

bool PosteriorTrainer::step() {
    if (finished() || stopped()) return false;
    // Where the curves start: the frame's own error and spread (the Laplace approximation), before the
    // first step. Only for a few unknowns, where it costs milliseconds (the elliptic and EIT forward models
    // take a solve per sample).
    if (flow_->iteration() == 0 && evaluations_.empty() && flow_->posterior().dim() <= 3) evaluate();
    return flow_->step() && !finished();
}

void PosteriorTrainer::evaluate() {
    const inverse::PosteriorSummary s =
        inverse::summarize(flow_->posterior(), flow_->sample(config_.evaluationSamples, 0xe7a1));
    evaluations_.push_back({flow_->iteration(), s.relativeL1Error, s.misfit, s.mean, s.covariance});
}

double PosteriorTrainer::learningRate() const {
    return history().empty() ? config_.flow.adam.lr : history().back().learningRate;
}

// ---------------------------------------------------------------------------------------------------------
// PosteriorTraining

std::vector<PosteriorRunConfig> PosteriorTraining::configs(const Config& config, bool comparison) {
    const Config framed = withFrame(config);
    if (!comparison) return {framed};
    Config with = framed, without = framed;
    with.flow.flow.rwpo = true;
    without.flow.flow.rwpo = false;
    return {with, without};
}

std::string PosteriorTraining::label(const Config& config) {
    return config.flow.flow.rwpo ? "with RWPO" : "without RWPO";
}

PosteriorState PosteriorTraining::state(const Trainer& t, std::size_t maxEvents,
                                        std::shared_ptr<const Config> config) {
    PosteriorState s;
    fillTrainerState(s, t, maxEvents);
    s.label = label(t.config());
    s.rwpo = t.config().flow.flow.rwpo;
    s.iterations = t.config().flow.iterations;
    s.params = std::make_shared<const flows::FlowParams<double>>(t.flow().averagedParams());
    s.config = std::move(config);
    return s;
}

void savePosteriorState(const std::string& path, const PosteriorState& s) {
    if (!s.params || !s.config || !s.config->problem)
        throw std::runtime_error("no trained posterior to save yet");
    inverse::PosteriorFlow flow(s.config->problem->posterior, s.config->flow, s.config->frame.get());
    flow.setParams(*s.params);
    nlohmann::json curve = nlohmann::json::array();
    double seconds = 0;
    for (const inverse::PosteriorRecord& r : s.history) {
        curve.push_back({r.iteration, r.terms.loss, r.terms.misfit, r.seconds});
        seconds += r.seconds;
    }
    nlohmann::json record;
    record["training"] = {
        {"iterations", s.iteration},
        {"stopped", s.stopped},
        {"seconds", seconds},
        {"frame", s.config->flow.frame == inverse::FrameKind::Laplace ? "laplace" : "prior"},
        {"curve_columns", {"iteration", "loss", "misfit", "seconds"}},
        {"curve", curve}};
    inverse::savePosterior(path, flow, *s.config->problem, record);
}

// ---------------------------------------------------------------------------------------------------------
// Pictures

namespace {

// The field grid's cell centres over [0, 1]² (2 x n², column i + n j at ((i + ½)/n, (j + ½)/n)).
inverse::Matrix gridPoints(int n) {
    inverse::Matrix points(2, n * n);
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) points.col(i + n * j) << (i + 0.5) / n, (j + 0.5) / n;
    return points;
}

// A field's values (n² entries, column-major over the grid's points) as an n x n matrix, row j = s2.
inverse::Matrix asGrid(const inverse::Vector& values, int n) {
    inverse::Matrix g(n, n);
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) g(j, i) = values(i + n * j);
    return g;
}

} // namespace

PosteriorTraining::Pictures::Pictures(const Options& options, const Trainer& first) : options_(options) {
    const inverse::Problem& problem = *first.config().problem;
    const inverse::Posterior& post = *problem.posterior;
    auto scene = std::make_shared<PosteriorScene>();
    scene->name = problem.name;
    scene->modelType = problem.modelType;
    scene->d = post.dim();
    scene->y = post.y;
    scene->truth = post.truth;
    scene->noise = post.noise;
    scene->gaussianPrior = post.prior.kind == inverse::Prior::Kind::Gaussian;
    scene->laplaceFrame = first.config().flow.frame == inverse::FrameKind::Laplace;
    if (const auto* eit = dynamic_cast<const inverse::Eit*>(post.model.get());
        eit && options_.fieldGrid > 0) {
        fieldBumps_ = eit->bumpsAt(gridPoints(options_.fieldGrid));
        kappa0_ = eit->kappa0();
        if (post.truth)
            scene->truthField = asGrid((fieldBumps_ * *post.truth).array() + kappa0_, options_.fieldGrid);
    }
    scene_ = std::move(scene);
}

std::shared_ptr<const PosteriorPicture> PosteriorTraining::Pictures::make(const Trainer& t) const {
    auto p = std::make_shared<PosteriorPicture>();
    p->iteration = t.iteration();
    const inverse::Posterior& post = t.flow().posterior();
    p->samples = t.flow().sample(options_.samples, options_.pictureSeed);
    p->summary = inverse::summarize(post, p->samples);
    p->prediction = post.model->apply(p->summary.mean);
    if (fieldBumps_.size() > 0) {
        // κ is affine in c: its mean is κ0 + Φ mean, its variance the rows of Φ Σ Φᵀ.
        const int n = options_.fieldGrid;
        p->fieldMean = asGrid((fieldBumps_ * p->summary.mean).array() + kappa0_, n);
        const inverse::Vector variance =
            ((fieldBumps_ * p->summary.covariance).array() * fieldBumps_.array()).rowwise().sum();
        p->fieldSd = asGrid(variance.array().max(0.0).sqrt(), n);
    }
    return p;
}

} // namespace flowscope
