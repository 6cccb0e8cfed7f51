#include "engine/flows/Trainer.h"

#include "engine/core/Parallel.h"
#include "engine/flows/Metrics.h"
#include "engine/flows/Sampling.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace flowscope::flows {

namespace {

void require(bool ok, const std::string& field, const std::string& what) {
    if (!ok) throw std::invalid_argument("training: " + field + " " + what);
}

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

constexpr std::uint64_t kHeldOutStream = 0x9e3779b97f4a7c15ull;   // held-out set: dataSeed ^ this
constexpr std::uint64_t kReferenceStream = 0xbf58476d1ce4e5b9ull; // the model's reference batch, likewise
// Iterations between checkpoints: a rollback target some way back (a rejected step leaves the parameters as
// they were, so the parameters of the step before would change nothing).
constexpr long kCheckpointEvery = 25;
// Without the RWPO layer a part of the batch is recorded in chunks of about this many samples
// (lossAndGradient).
constexpr Eigen::Index kPlainChunk = 64;

} // namespace

bool allOnePoint(const Mat& points) {
    return points.rows() >= 2 && (points.rowwise() - points.row(0)).cwiseAbs().maxCoeff() == 0;
}

void validate(const TrainerConfig& c) {
    const FlowConfig& f = c.flow;
    require(f.d >= 1 && f.d <= 64, "flow.d", "must be in [1, 64], got " + std::to_string(f.d));
    require(f.width >= 1 && f.width <= 1024, "flow.width",
            "must be in [1, 1024], got " + std::to_string(f.width));
    require(f.depth >= 2 && f.depth <= 16, "flow.depth",
            "must be in [2, 16], got " + std::to_string(f.depth));
    require(f.layers >= 1 && f.layers <= 256, "flow.layers",
            "must be in [1, 256], got " + std::to_string(f.layers));
    require(f.T > 0 && std::isfinite(f.T), "flow.T", "must be finite and > 0");
    require(f.lambda0 > 0 && std::isfinite(f.lambda0), "flow.lambda0", "must be finite and > 0");
    require(f.beta0 > 0 && std::isfinite(f.beta0), "flow.beta0", "must be finite and > 0");
    require(f.transportWeight >= 0 && std::isfinite(f.transportWeight), "flow.transportWeight",
            "must be finite and >= 0");
    require(std::isfinite(f.hjbWeight), "flow.hjbWeight", "must be finite (< 0: the model's default)");
    require(!f.rwpoOptions.exactLogDet || f.rwpoOptions.kernel == RwpoKernel::Separable || f.d == 2 ||
                f.d == 3,
            "flow.rwpoOptions.exactLogDet", "needs d = 2 or 3 for a vector kernel");
    require(!f.exactDriftLogDet || f.d <= 3, "flow.exactDriftLogDet", "needs d <= 3");
    require(c.batch >= 2 && c.batch <= 65536, "batch",
            "must be in [2, 65536], got " + std::to_string(c.batch));
    require(c.resampleEvery >= 0, "resampleEvery", "must be >= 0");
    require(c.referenceDraws >= 1 && c.referenceDraws <= 256, "referenceDraws",
            "must be in [1, 256], got " + std::to_string(c.referenceDraws));
    require(c.referenceSize == 0 || (c.referenceSize >= 2 && c.referenceSize <= 65536), "referenceSize",
            "must be 0 (the batch size) or in [2, 65536], got " + std::to_string(c.referenceSize));
    require(c.evalSamples >= 2 && c.evalSamples <= 65536, "evalSamples", "must be in [2, 65536]");
    require(c.adam.lr > 0 && std::isfinite(c.adam.lr), "adam.lr", "must be finite and > 0");
    require(c.adam.lrFinal >= 0 && std::isfinite(c.adam.lrFinal), "adam.lrFinal", "must be finite and >= 0");
    require(c.adam.decaySteps >= 0, "adam.decaySteps", "must be >= 0");
    require(c.adam.clipNorm >= 0, "adam.clipNorm", "must be >= 0");
    require(c.adam.clipToMedian >= 0, "adam.clipToMedian", "must be >= 0");
    require(c.pointJitter >= 0 && std::isfinite(c.pointJitter), "pointJitter", "must be finite and >= 0");
    if (c.initialParams) {
        // Every block as FlowParams::init(flow) would shape it.
        const FlowParams<float> expected = FlowParams<float>::init(f);
        const FlowParams<float>& given = *c.initialParams;
        auto same = [&](const ad::Matrix<float>& a, const ad::Matrix<float>& b, const std::string& name) {
            require(a.rows() == b.rows() && a.cols() == b.cols(), "initialParams." + name,
                    "is " + std::to_string(b.rows()) + " x " + std::to_string(b.cols()) +
                        ", the flow needs " + std::to_string(a.rows()) + " x " + std::to_string(a.cols()));
            require(b.allFinite(), "initialParams." + name, "must be finite");
        };
        require(given.phi.blockCount() == expected.phi.blockCount(), "initialParams.phi",
                "has " + std::to_string(given.phi.blockCount()) + " blocks, the flow needs " +
                    std::to_string(expected.phi.blockCount()));
        for (int k = 0; k < expected.phi.blockCount(); ++k)
            same(expected.phi.block(k), given.phi.block(k), "phi." + std::string(expected.phi.blockName(k)));
        same(expected.lambdaRaw, given.lambdaRaw, "lambda");
        same(expected.betaRaw, given.betaRaw, "beta");
    }
    if (c.dataset.empty()) {
        require(c.points.rows() >= 2, "points", "must hold at least 2 points when no dataset is named");
        require(c.points.cols() == f.d, "points",
                "have " + std::to_string(c.points.cols()) + " coordinates but flow.d is " +
                    std::to_string(f.d));
        require(c.points.allFinite(), "points", "must be finite");
        // A density needs points that spread: n copies of one point have no density to learn (and the
        // evaluation's grid around them would have no width).
        require(!allOnePoint(c.points), "points",
                "are all the same point; a density needs points that differ");
    } else {
        require(isDatasetName(c.dataset), "dataset", "'" + c.dataset + "' is not one of the toy datasets");
        require(f.d == 2, "flow.d", "must be 2 for the toy datasets");
    }
}

ad::Matrix<float> toColumns(const Mat& rows) {
    return rows.transpose().cast<float>();
}

Mat toRows(const ad::Matrix<float>& columns) {
    return columns.transpose().cast<double>();
}

double FlowTrainer::knownEntropy(const std::string& dataset) {
    if (dataset == "checkerboard") return checkerboardEntropy();
    if (dataset == "8gaussians") {
        static const double h = eightGaussiansEntropy(200000, 1); // standard error ≈ 3e-4
        return h;
    }
    return std::numeric_limits<double>::quiet_NaN();
}

FlowTrainer::FlowTrainer(const TrainerConfig& config)
    : config_((validate(config), config)), model_(config.flow), averaged_(config.flow), adam_(config.adam),
      dataRng_(config.dataSeed) {
    if (config_.resampleEvery == 0) config_.resampleEvery = config_.flow.rwpo ? 1 : 25;
    config_.flow.hjbWeight = config_.flow.hjb();
    if (config_.initialParams) model_.params() = *config_.initialParams;
    if (config_.dataset.empty())
        sampler_ = std::make_unique<PointSampler>(config_.points, config_.dataSeed, config_.pointJitter);
    grads_ = model_.params().zerosLike();
    model_.params().forEach(grads_, config_.flow,
                            [&](ad::Matrix<float>& value, ad::Matrix<float>& grad, const std::string&) {
                                adam_.add(value, grad);
                            });
    checkpoint_ = model_.params();
    heldOut_ = toColumns(sampleData(config_.evalSamples, config_.dataSeed ^ kHeldOutStream));
    // The keys of the model's samples and densities: draws of the training law, by default of the batch's
    // size (the kernel then sees as many keys as in training). Each draw is a call of its own: a dataset's
    // points may come in order (2spirals: one spiral, then the other), so a block of one long call is not a
    // sample of the law.
    if (config_.referenceSize == 0) config_.referenceSize = config_.batch;
    if (config_.flow.rwpo) {
        const int R = config_.referenceDraws, n = config_.referenceSize;
        Matrix reference(config_.flow.d, Eigen::Index(R) * n);
        for (int r = 0; r < R; ++r)
            reference.middleCols(Eigen::Index(r) * n, n) =
                toColumns(sampleData(n, (config_.dataSeed ^ kReferenceStream) + std::uint64_t(r)));
        model_.setReference(std::move(reference), R);
    }
    averaged_ = model_;
    resample();
}

Mat FlowTrainer::sampleData(int n, std::uint64_t seed) const {
    if (!sampler_) return sampleDataset(config_.dataset, n, seed);
    PointSampler s(config_.points, seed, config_.pointJitter);
    return s.sample(n);
}

void FlowTrainer::resample() {
    batch_ = toColumns(sampler_ ? sampler_->sample(config_.batch)
                                : sampleDataset(config_.dataset, config_.batch, dataRng_));
}

void FlowTrainer::reject(const std::string& why, long iteration) {
    const StepGuard::Rejection r = guard_.reject(why, adam_);
    if (r.restore) model_.params() = checkpoint_;
    stopped_ = r.stop;
    events_.push_back({iteration, r.message});
}

bool FlowTrainer::step() {
    if (stopped_) return false;
    const auto start = Clock::now();
    if (iteration_ > 0 && iteration_ % kCheckpointEvery == 0 && guard_.rejectedInARow() == 0)
        checkpoint_ = model_.params();
    if (iteration_ > 0 && iteration_ % config_.resampleEvery == 0) resample();
    ++iteration_;
    TrainRecord r;
    r.iteration = iteration_;
    r.lambda = model_.params().lambda();
    r.beta = model_.params().beta();
    r.learningRate = adam_.learningRate();

    r.terms = lossAndGradient();
    const bool finiteLoss = std::isfinite(r.terms.loss);
    if (!finiteLoss) {
        reject("non-finite loss (" + std::to_string(r.terms.loss) + ")", iteration_);
        r.rejected = true;
    } else if (!adam_.step()) {
        reject("non-finite gradient", iteration_);
        r.rejected = true;
    } else {
        guard_.accept(adam_);
        r.gradientNorm = adam_.lastGradientNorm();
        r.clipped = adam_.lastClipped();
        if (config_.averageIterations > 0) {
            const float w = float(iterateAverageWeight(++averagedSteps_, config_.averageIterations));
            averaged_.params().forEach(model_.params(), config_.flow,
                                       [w](Matrix& a, Matrix& p, const std::string&) { a += w * (p - a); });
        }
    }
    r.seconds = secondsSince(start);
    history_.push_back(r);
    return !stopped_;
}

LossTerms FlowTrainer::lossAndGradient() {
    adam_.zeroGrad();
    // The batch in as many parts as the pool has threads, each on its own tape at once (BatchSplit.h: their
    // shares of the loss add up to it, and so do their gradients; the RWPO sub-steps attend across every
    // part), or on one tape where threads are not to be had or parts of fewer than 64 samples would not pay
    // for the exchange. Part p holds columns [p N / P, (p + 1) N / P).
    //
    // Without the RWPO layer the samples never meet, and a part goes through its tape in chunks of about
    // kPlainChunk samples, one after another, their gradients adding up (with one thread too, as one part):
    // a chunk's tape, about 3 MB of values and gradients at 64 samples, stays in the caches from its forward
    // pass to its backward pass, where a part's (25 MB at 512 samples, another part's beside it) went out to
    // memory and back. Chunks of one size keep the tape's matrices theirs from chunk to chunk. bench train,
    // plain, batch 1024 on two threads: 11.1 -> 8.3 ms of CPU an iteration
    // (docs/math/flows.md#training-speed-plain).
    const Eigen::Index N = batch_.cols();
    int parts = int(std::min<Eigen::Index>(threadCount(), N / 64));
    if (parts < 2 || !BatchSplit<float>::canRun(parts)) parts = 1;
    if (parts == 1 && config_.flow.rwpo) {
        tapes_.resize(1);
        tapes_[0].clear();
        LossTerms terms;
        const ad::Var<float> loss = model_.recordLoss(tapes_[0], batch_, grads_, &terms);
        if (std::isfinite(terms.loss)) tapes_[0].backward(loss);
        return terms;
    }
    tapes_.resize(std::size_t(parts));
    partGrads_.resize(std::size_t(parts - 1));
    for (FlowParams<float>& g : partGrads_) g = model_.params().zerosLike();
    std::vector<LossTerms> terms(static_cast<std::size_t>(parts));
    BatchSplit<float> split(parts, N);
    split.run([&](int p) {
        const Eigen::Index begin = p * N / parts, end = (p + 1) * N / parts;
        const Eigen::Index chunks =
            config_.flow.rwpo ? 1 : std::max<Eigen::Index>(1, (end - begin) / kPlainChunk);
        ad::Tape<float>& tape = tapes_[std::size_t(p)];
        FlowParams<float>& grads = p == 0 ? grads_ : partGrads_[std::size_t(p - 1)];
        for (Eigen::Index k = 0; k < chunks; ++k) {
            const Eigen::Index first = begin + k * (end - begin) / chunks,
                               last = begin + (k + 1) * (end - begin) / chunks;
            const Matrix part = batch_.middleCols(first, last - first);
            tape.clear();
            LossTerms t;
            split.backward(p, model_.recordLoss(tape, part, grads, &t, &split, p));
            // (every part takes part in backward, finite or not: a non-finite loss rejects the step anyway)
            LossTerms& sum = terms[std::size_t(p)];
            sum = {sum.loss + t.loss, sum.nll + t.nll, sum.transport + t.transport, sum.hjb + t.hjb};
        }
    });
    LossTerms sum;
    for (int p = 0; p < parts; ++p) {
        if (p > 0)
            grads_.forEach(partGrads_[std::size_t(p - 1)], config_.flow,
                           [](Matrix& a, Matrix& b, const std::string&) { a += b; });
        const LossTerms& t = terms[std::size_t(p)];
        sum = {sum.loss + t.loss, sum.nll + t.nll, sum.transport + t.transport, sum.hjb + t.hjb};
    }
    return sum;
}

Evaluation FlowTrainer::evaluate() {
    const auto start = Clock::now();
    const Model& model = evaluatedModel();
    Evaluation e;
    e.iteration = iteration_;
    // The model's keys pushed backward once for every query below (its reference draws, when it has them).
    const Model::FrozenKeys keys = model.frozenKeys();
    Eigen::Matrix<float, 1, Eigen::Dynamic> logDensity;
    model.encode(heldOut_, &logDensity, nullptr, keys);
    e.nll = -logDensity.cast<double>().mean();
    if (!config_.dataset.empty()) e.kl = klFromNll(e.nll, knownEntropy(config_.dataset));

    Rng rng(config_.dataSeed ^ (kHeldOutStream + std::uint64_t(iteration_)));
    Matrix Z(config_.flow.d, config_.evalSamples);
    for (Eigen::Index i = 0; i < Z.size(); ++i) Z(i) = float(rng.normal());
    SamplerDiagnostics sampler;
    const Matrix generated = model.generate(Z, nullptr, &sampler, keys);
    e.samplerResidual = sampler.residual;
    const std::vector<RwpoFolding>& folding = sampler.folding;
    const Eigen::MatrixXf a = generated.transpose(), b = heldOut_.transpose();
    e.mmd2 = generated.allFinite() ? mmd2Unbiased(a, b) : std::numeric_limits<double>::quiet_NaN();
    e.roundTrip = double((model.encode(generated, nullptr, nullptr, keys) - Z).colwise().norm().mean());
    if (config_.flow.d == 2 && generated.allFinite()) { // beside the keys the model samples with
        const double halfWidth = 1.25 * double(heldOut_.cwiseAbs().maxCoeff());
        e.gridMass = (keys.draws.empty() ? densityGrid(model, 64, halfWidth, generated)
                                         : densityGrid(model, 64, halfWidth, keys))
                         .mass;
    }
    if (!folding.empty()) {
        e.minDet = folding[0].minDet;
        for (const RwpoFolding& f : folding) {
            e.minDet = std::min(e.minDet, f.minDet);
            e.foldedFraction = std::max(e.foldedFraction, f.foldedFraction);
        }
    }
    e.seconds = secondsSince(start);
    evaluations_.push_back(e);
    return e;
}

} // namespace flowscope::flows
