#include "engine/ottransformer/Trainer.h"

#include "engine/core/Parallel.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

namespace flowscope::ot {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

constexpr std::uint64_t kHeldOutStream = 0x9e3779b97f4a7c15ull; // held-out sets: dataSeed ^ this
constexpr std::uint64_t kPerturbStream = 0x2545f4914f6cdd1dull; // the Lipschitz pairs' perturbations
constexpr int kCheckpointEvery = 25;
constexpr double kPerturbation = 0.1; // X_2(0) = X_1(0) + 0.1 N(0, I): the Lipschitz pairs

} // namespace

OtTrainerConfig defaultTrainerConfig(Task t) {
    OtTrainerConfig c;
    c.task = t;
    c.model = taskModel(t);
    if (t == Task::A) {
        c.batch = 64;
        c.adam.lr = 1e-2;
        c.model.steps = 10;
    } else {
        c.batch = 32;
        c.adam.lr = 1e-3;
        c.model.steps = 8;
    }
    return c;
}

void validate(const OtTrainerConfig& c) {
    validate(c.model);
    auto require = [](bool ok, const char* field, const std::string& what) {
        if (!ok) throw std::invalid_argument(std::string("training: ") + field + " " + what);
    };
    require(c.batch >= 1 && c.batch <= 100000, "batch", "must be in [1, 100000]");
    require(c.evalSets >= 1 && c.evalSets <= 1000000, "evalSets", "must be in [1, 1000000]");
    require(std::isfinite(c.adam.lr) && c.adam.lr > 0, "adam.lr", "must be finite and > 0");
    require(c.averageIterations >= 0 && c.averageIterations <= 100000000, "averageIterations",
            "must be in [0, 100000000]");
    if (c.task == Task::A) {
        require(c.model.inputDim == 2 && c.model.head == Head::Mean && c.model.outputDim() == 2, "model",
                "for task A must map tokens in R² to the mean head in R² (inputDim 2, head mean, width 2 or "
                "padEmbed)");
    } else {
        require(c.model.inputDim == 2 && c.model.head == Head::PooledLinear &&
                    c.model.classes == kTaskBClasses,
                "model",
                "for task B must take points in R² to 4 logits (inputDim 2, head pooled-linear, 4 classes)");
    }
    if (c.initialParams) {
        // Every block as TransformerParams::init(model) would shape it.
        TransformerParams expected = TransformerParams::init(c.model), given = *c.initialParams;
        require(given.blocks.size() == expected.blocks.size(), "initialParams",
                "have " + std::to_string(given.blocks.size()) + " blocks, the model needs " +
                    std::to_string(expected.blocks.size()));
        expected.forEach(given, [&](const Matrix& a, const Matrix& b, const std::string& name) {
            if (a.rows() != b.rows() || a.cols() != b.cols())
                throw std::invalid_argument("training: initialParams." + name + " is " +
                                            std::to_string(b.rows()) + " x " + std::to_string(b.cols()) +
                                            ", the model needs " + std::to_string(a.rows()) + " x " +
                                            std::to_string(a.cols()));
            require(b.allFinite(), "initialParams", "must be finite (" + name + ")");
        });
    }
}

OtTrainer::OtTrainer(const OtTrainerConfig& config)
    : config_(config), model_((validate(config), config.model)), averaged_(model_), adam_(config.adam),
      rng_(config.dataSeed) {
    if (config_.initialParams) model_.params() = *config_.initialParams;
    grads_ = model_.params().zerosLike();
    model_.params().forEach(grads_, [&](Matrix& v, Matrix& g, const std::string&) { adam_.add(v, g); });
    checkpoint_ = model_.params();
}

Batch OtTrainer::sample(int sets, flows::Rng& rng, double dropRate) const {
    return config_.task == Task::A ? sampleTaskA(sets, rng) : sampleTaskB(sets, rng, dropRate);
}

Batch OtTrainer::heldOut(double dropRate) const {
    flows::Rng rng(config_.dataSeed ^ kHeldOutStream);
    return sample(config_.evalSets, rng, dropRate);
}

bool OtTrainer::step() {
    if (stopped_) return false;
    const auto start = Clock::now();
    if (iteration_ > 0 && iteration_ % kCheckpointEvery == 0 && guard_.rejectedInARow() == 0)
        checkpoint_ = model_.params();
    ++iteration_;
    batch_ = sample(config_.batch, rng_);
    OtRecord r;
    r.iteration = iteration_;
    r.learningRate = adam_.learningRate();
    r.terms = lossAndGradient();
    std::string why;
    if (!std::isfinite(r.terms.loss)) {
        why = "non-finite loss (" + std::to_string(r.terms.loss) + ")";
    } else if (!adam_.step()) {
        why = "non-finite gradient";
    }
    if (why.empty()) {
        guard_.accept(adam_);
        r.gradientNorm = adam_.lastGradientNorm();
        if (config_.averageIterations > 0) {
            const double w = flows::iterateAverageWeight(++averagedSteps_, config_.averageIterations);
            averaged_.params().forEach(model_.params(), [w](Matrix& a, Matrix& b, const std::string&) {
                a = (1.0 - w) * a + w * b;
            });
        }
    } else {
        r.rejected = true;
        ++rejected_;
        const flows::StepGuard::Rejection j = guard_.reject(why, adam_);
        if (j.restore) model_.params() = checkpoint_;
        stopped_ = j.stop;
        events_.push_back({iteration_, j.message});
    }
    r.seconds = secondsSince(start);
    history_.push_back(r);
    return !stopped_;
}

LossTerms OtTrainer::lossAndGradient() {
    adam_.zeroGrad();
    // Every term of (8) is a mean over independent sets: the two halves of the batch on two tapes, in
    // parallel, combined with weights B_i / B, give the batch's loss and gradient (to rounding).
    const int B = batch_.sets(), half = B / 2;
    const int parts = half < 2 || threadCount() < 2 ? 1 : 2;
    LossTerms terms[2];
    TransformerParams* grads[2] = {&grads_, &grads2_};
    Tape* tapes[2] = {&tape_, &tape2_};
    parallelFor(std::size_t(parts), 1, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
            const Batch part = parts == 1 ? batch_
                               : i == 0   ? batch_.slice(0, half)
                                          : batch_.slice(half, B - half);
            if (i == 1) grads2_ = model_.params().zerosLike();
            tapes[i]->clear();
            const Var loss = model_.recordLoss(*tapes[i], part, *grads[i], &terms[i]);
            if (std::isfinite(terms[i].loss)) tapes[i]->backward(loss);
        }
    });
    if (parts == 1) return terms[0];
    const double w0 = double(half) / B, w1 = 1.0 - w0;
    grads_.forEach(grads2_, [&](Matrix& a, Matrix& b, const std::string&) { a = w0 * a + w1 * b; });
    return {w0 * terms[0].loss + w1 * terms[1].loss, w0 * terms[0].task + w1 * terms[1].task,
            w0 * terms[0].transport + w1 * terms[1].transport,
            w0 * terms[0].accuracy + w1 * terms[1].accuracy};
}

OtEvaluation OtTrainer::evaluate() {
    const auto start = Clock::now();
    OtEvaluation e;
    e.iteration = iteration_;
    e.nonFiniteSteps = rejected_;
    const Batch b = heldOut();
    const int n = b.setSize;
    const TransformerModel& model = evaluatedModel();
    {
        Tape t;
        TransformerParams grads;
        Forward f;
        model.recordLoss(t, b, grads, &e.terms, &f);
        std::vector<Matrix> states;
        for (const Var& s : f.states) states.push_back(s.value());
        const PathStats p = pathStats(states, n);
        e.straightness = p.straightness;
        e.speedCv = p.speedCv;
        if (config_.task == Task::A) {
            const Matrix& y = f.output.value();
            const double lambda = model.paperLambda(n);
            const Matrix ystar = taskAClosedFormOutput(b, lambda, config_.model.horizon);
            e.closedFormError = (y - ystar).colwise().norm().mean() / ystar.colwise().norm().mean();
            e.optimalLoss = 0.5 * (ystar - b.targets).colwise().squaredNorm().mean();
            if (lambda > 0) {
                // Every token moves at the constant velocity v = -e* / (n λ): Σ_m Δt ‖f_m‖² = T n ‖v‖² per
                // set.
                const double T = config_.model.horizon;
                const double kinetic = T * n * (ystar - b.targets).squaredNorm() / (n * n * lambda * lambda);
                e.optimalLoss += config_.model.lambdaOt * model.transportFromKinetic(kinetic, b.sets(), n);
                // With the padding embedding the optimum leaves the extra coordinates at 0: their motion
                // counts as error.
                Matrix optimal = Matrix::Zero(states.front().rows(), states.front().cols());
                optimal.topRows(2) = taskAClosedFormState(b, lambda, config_.model.horizon) - b.tokens;
                const Matrix moved = states.back() - states.front();
                e.displacementError = (moved - optimal).norm() / optimal.norm();
            }
        }
        // Lipschitz pairs: perturb each set's X(0) (after the embedding) and integrate both. Task A has no
        // embedding; for task B the perturbation is applied to the embedded tokens through the tokens: the
        // embedding is affine, so X_2(0) - X_1(0) = E (Z_2 - Z_1) exactly, and the ratio uses that.
        flows::Rng rng(config_.dataSeed ^ kPerturbStream);
        Matrix Z2 = b.tokens;
        for (Eigen::Index i = 0; i < Z2.size(); ++i) Z2(i) += kPerturbation * rng.normal();
        std::vector<Matrix> states2;
        const Matrix y2 = model.output(Z2, n, &states2);
        const Matrix& y1 = f.output.value();
        for (int s = 0; s < b.sets(); ++s) {
            const double dx = (states2.front().middleCols(Eigen::Index(s) * n, n) -
                               states.front().middleCols(Eigen::Index(s) * n, n))
                                  .norm();
            if (dx > 0) e.lipschitzRatio = std::max(e.lipschitzRatio, (y2.col(s) - y1.col(s)).norm() / dx);
        }
    }
    e.threshold = model.stabilityThreshold(n);
    e.thresholdFrobenius = model.stabilityThreshold(n, true);
    e.lipschitzBound = model.lipschitzBound(n);
    e.lipschitzBoundFrobenius = model.lipschitzBound(n, true);
    e.seconds = secondsSince(start);
    evaluations_.push_back(e);
    return e;
}

std::vector<double> OtTrainer::accuracyAtDropRates(const std::vector<double>& rates) const {
    if (config_.task != Task::B) throw std::invalid_argument("accuracy at drop rates: task B only");
    const TransformerModel& model = evaluatedModel();
    std::vector<double> acc;
    for (double r : rates) {
        const Batch b = heldOut(r);
        Tape t;
        TransformerParams grads;
        LossTerms terms;
        model.recordLoss(t, b, grads, &terms);
        acc.push_back(terms.accuracy);
    }
    return acc;
}

} // namespace flowscope::ot
