#include "engine/inverse/PosteriorFlow.h"

#include "engine/core/Parallel.h"

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

namespace flowscope::inverse {

namespace {

using Var = ad::Var<double>;
using Mat = ad::Matrix<double>;
constexpr long kCheckpointEvery = 25;

void require(bool ok, const std::string& field, const std::string& what) {
    if (!ok) throw std::invalid_argument("posterior flow: " + field + " " + what);
}

// The flow's forward pass from base draws Z (d x N), recorded on `tape`.
struct ForwardPass {
    Var X;      // d x N, the samples in x
    Var logRho; // 1 x N, log ρ_T(x_j)
    Var transport, hjb;
};

// The drift sub-step of one layer on the tape: u + h ∇φ(u, t_k) with its log-det (subtracted from logRho
// when given), and the transport and HJB terms at (u, t_k) added when given.
Var driftStep(ad::Tape<double>& tape, const flows::FlowConfig& c, const flows::Bound<double>& p, Var U, int k,
              Var* logRho, Var* transport, Var* hjb, double n) {
    const int d = c.d;
    const double h = c.h();
    const flows::PotentialOutputs<double> phi =
        flows::recordPotential(tape, p.phi, flows::withTime(tape, U, k * h), c.exactDriftLogDet && logRho);
    const Var grad = ad::rows(phi.grad, 0, d), dphidt = ad::rows(phi.grad, d, 1);
    if (transport) { // at (u^k, t_k), as the generative flow's loss (16)
        const Var lambdaH = ad::scale(p.lambda, h);
        const Var invBeta = ad::div(tape.constant(Mat::Ones(1, 1)), p.beta);
        flows::addRegularizers(tape, c, lambdaH, invBeta, U, grad, dphidt, phi.lap, n, *transport, *hjb);
    }
    if (logRho)
        *logRho =
            ad::sub(*logRho, c.exactDriftLogDet ? flows::driftLogDet(phi, d, -h) : ad::scale(phi.lap, h));
    return ad::add(U, ad::scale(grad, h));
}

// The flow's forward pass from base draws Z (d x N), recorded on `tape`. With the RWPO layer the queries'
// sub-steps attend to keys: the key draws K (d x N_k) pushed forward beside them, each key attending to the
// keys (PosteriorFlow.h). Given the keys, every query's map is its own, so log ρ is its exact density.
ForwardPass recordForward(ad::Tape<double>& tape, const flows::FlowConfig& c, const Frame& frame,
                          const flows::FlowParams<double>& params, flows::FlowParams<double>* grads,
                          const Mat& Z, const Mat& K) {
    const int d = c.d;
    const double n = double(Z.cols());
    const flows::Bound<double> p = flows::bindFlow(tape, c, params, grads);
    Var U = tape.constant(Z), keys = c.rwpo ? tape.constant(K) : Var{};
    Var logRho =
        tape.constant(((-0.5 * Z.colwise().squaredNorm()).array() - 0.5 * d * kLog2Pi).matrix().eval());
    Var transport = tape.constant(Mat::Zero(1, 1)), hjb = tape.constant(Mat::Zero(1, 1));
    for (int k = 0; k < c.layers; ++k) {
        U = driftStep(tape, c, p, U, k, &logRho, grads ? &transport : nullptr, grads ? &hjb : nullptr, n);
        if (!c.rwpo) continue;
        keys = driftStep(tape, c, p, keys, k, nullptr, nullptr, nullptr, n);
        const flows::RwpoOutputs<double> r =
            flows::recordRwpo(tape, U, p.lambda, p.beta, flows::layerOptions(c, true), keys);
        keys = flows::recordRwpo(tape, keys, p.lambda, p.beta, flows::layerOptions(c)).y;
        U = r.y;
        logRho = ad::sub(logRho, r.logDetTerm);
    }
    ForwardPass out;
    out.X = ad::addCol(ad::matmul(tape.constant(frame.L), U), tape.constant(frame.center));
    out.logRho = ad::addScalar(logRho, -frame.logDetL);
    out.transport = transport;
    out.hjb = hjb;
    return out;
}

// The mean of `values` (1 x N) where `keep` holds; NaN when it holds nowhere.
double finiteMean(const Mat& values, const Eigen::Array<bool, 1, Eigen::Dynamic>& keep) {
    double sum = 0;
    Eigen::Index n = 0;
    for (Eigen::Index j = 0; j < keep.size(); ++j)
        if (keep(j)) {
            sum += values(0, j);
            ++n;
        }
    return n > 0 ? sum / double(n) : NAN;
}

// The misfit of every column of X (1 x N) and, when `gradients`, its gradient (d x N), on the pool.
Mat misfits(const Posterior& post, const Mat& X, Mat* gradients) {
    Mat values(1, X.cols());
    if (gradients) gradients->resize(X.rows(), X.cols());
    parallelFor(std::size_t(X.cols()), 1, [&](std::size_t begin, std::size_t end) {
        for (std::size_t j = begin; j < end; ++j) {
            const Eigen::Index c = Eigen::Index(j);
            if (!gradients) {
                values(0, c) = post.misfit(X.col(c));
                continue;
            }
            Vector g;
            values(0, c) = post.misfit(X.col(c), &g);
            gradients->col(c) = g;
        }
    });
    return values;
}

// −log p(x) of each column, on the tape.
Var negLogPrior(ad::Tape<double>& tape, const Prior& prior, Var X) {
    const int d = prior.dim();
    const Var centred = ad::addCol(X, tape.constant(-prior.mean));
    if (prior.kind == Prior::Kind::Gaussian) {
        const Var z = ad::mulCol(centred, tape.constant(prior.sd.cwiseInverse().eval()));
        return ad::addScalar(ad::scale(ad::colSumSquares(z), 0.5),
                             prior.sd.array().log().sum() + 0.5 * d * kLog2Pi);
    }
    return ad::addScalar(ad::scale(ad::colSum(ad::abs(centred)), prior.lambda),
                         -d * std::log(prior.lambda / 2));
}

Mat baseDraws(flows::Rng& rng, int d, int n) {
    Mat Z(d, n);
    for (Eigen::Index i = 0; i < Z.size(); ++i) Z(i) = rng.normal();
    return Z;
}

double secondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

PosteriorSummary summarize(const Posterior& post, const Matrix& samples) {
    PosteriorSummary s;
    const double n = double(samples.cols());
    s.mean = samples.rowwise().mean();
    const Matrix centred = samples.colwise() - s.mean;
    s.covariance = centred * centred.transpose() / std::max(1.0, n - 1);
    s.sd = s.covariance.diagonal().cwiseSqrt();
    const Mat m = misfits(post, samples, nullptr);
    const Eigen::Array<bool, 1, Eigen::Dynamic> finite = m.array().isFinite();
    s.outside = long(finite.size() - finite.count());
    s.misfit = finiteMean(m, finite);
    if (post.truth && post.truth->lpNorm<1>() > 0)
        s.relativeL1Error = (s.mean - *post.truth).lpNorm<1>() / post.truth->lpNorm<1>();
    return s;
}

PosteriorFlow::PosteriorFlow(std::shared_ptr<const Posterior> posterior, const PosteriorFlowConfig& config,
                             const Frame* frame)
    : posterior_(std::move(posterior)), config_(config), adam_(config.adam), rng_(config.seed) {
    require(posterior_ != nullptr, "posterior", "is missing");
    posterior_->validate();
    flows::FlowConfig& f = config_.flow;
    f.d = posterior_->dim();
    require(config_.batch >= 2, "batch", "must be >= 2");
    require(config_.keys == 0 || config_.keys >= 2, "keys", "must be >= 2 (or 0: the batch size)");
    require(config_.iterations >= 1, "iterations", "must be >= 1");
    require(f.layers >= 1 && f.width >= 1 && f.depth >= 2, "flow",
            "needs layers >= 1, width >= 1, depth >= 2");
    require(f.T > 0 && std::isfinite(f.T), "flow.T", "must be finite and > 0");
    // The exact log-dets where they exist (PosteriorFlow.h).
    f.exactDriftLogDet = f.exactDriftLogDet && f.d <= 3;
    f.rwpoOptions.exactLogDet =
        f.rwpoOptions.exactLogDet &&
        (f.d == 2 || f.d == 3 || f.rwpoOptions.kernel == flows::RwpoKernel::Separable);
    f.hjbWeight = f.hjb();
    params_ = flows::FlowParams<double>::init(f);
    // Start near the identity map: the frame has already placed the base on the posterior's scale, which
    // OT-Flow's initial drift (w = 1 and a Xavier A, drift up to e^{T |A|²} away) would undo (loss 3.7·10³
    // at the first step of the linear oracle, against 10 with this start).
    params_.phi.w.setZero();
    params_.phi.A *= 0.1;
    grads_ = params_.zerosLike();
    params_.forEach(grads_, f, [&](Mat& value, Mat& grad, const std::string&) { adam_.add(value, grad); });
    averaged_ = checkpoint_ = params_;
    if (f.rwpo) { // the sampler's keys: fixed draws of the training's key count
        flows::Rng keyRng(config_.seed ^ 0x6b657973ULL);
        referenceKeys_ = baseDraws(keyRng, f.d, keyCount());
    }
    if (frame) {
        require(frame->center.size() == f.d && frame->L.rows() == f.d && frame->L.cols() == f.d, "frame",
                "must be of the problem's dimension");
        frame_ = *frame;
    } else {
        frame_ = makeFrame(*posterior_, config_.frame);
    }
}

void PosteriorFlow::setParams(const flows::FlowParams<double>& p) {
    params_ = averaged_ = checkpoint_ = p;
    averagedSteps_ = 0;
}

bool PosteriorFlow::step() {
    if (stopped_) return false;
    const auto start = std::chrono::steady_clock::now();
    if (iteration_ > 0 && iteration_ % kCheckpointEvery == 0 && guard_.rejectedInARow() == 0)
        checkpoint_ = params_;
    ++iteration_;
    PosteriorRecord r;
    r.iteration = iteration_;
    r.lambda = params_.lambda();
    r.beta = params_.beta();
    r.learningRate = adam_.learningRate();

    adam_.zeroGrad();
    tape_.clear();
    const Mat Z = baseDraws(rng_, config_.flow.d, config_.batch);
    const Mat K = config_.flow.rwpo ? baseDraws(rng_, config_.flow.d, keyCount()) : Mat();
    const ForwardPass fw = recordForward(tape_, config_.flow, frame_, params_, &grads_, Z, K);
    Mat g;
    const Mat values = misfits(*posterior_, fw.X.value(), &g);
    const Var misfit = ad::columnFunction(fw.X, values, g);
    const Var prior = negLogPrior(tape_, posterior_->prior, fw.X);
    const double n = double(config_.batch);
    const Var kl = ad::scale(ad::sum(ad::add(ad::add(fw.logRho, misfit), prior)), 1.0 / n);
    const Var loss = ad::add(ad::add(kl, ad::scale(fw.transport, config_.flow.transportWeight)),
                             ad::scale(fw.hjb, config_.flow.hjb()));
    r.terms = {loss.scalar(),         fw.logRho.value().mean(), values.mean(),
               -prior.value().mean(), fw.transport.scalar(),    fw.hjb.scalar()};
    // Samples outside the forward model's domain (EIT: κ <= 0 somewhere) have no misfit, so the step's loss
    // is not finite and the step is rejected; they are counted. (Leaving them out of the step's mean instead
    // rewards leaving the domain: the flow spread out of it, docs/math/flows.md#domain.)
    r.terms.outside = long((!values.array().isFinite()).count());
    auto reject = [&](const std::string& why) {
        const flows::StepGuard::Rejection rj = guard_.reject(why, adam_);
        if (rj.restore) params_ = checkpoint_;
        stopped_ = rj.stop;
        events_.push_back({iteration_, rj.message});
        r.rejected = true;
    };
    if (r.terms.outside > 0) {
        reject(std::to_string(r.terms.outside) + " of the " + std::to_string(config_.batch) +
               " samples outside the forward model's domain");
    } else if (!std::isfinite(r.terms.loss)) {
        reject("non-finite loss (" + std::to_string(r.terms.loss) + ")");
    } else {
        tape_.backward(loss);
        if (!adam_.step()) {
            reject("non-finite gradient");
        } else {
            guard_.accept(adam_);
            if (config_.averageIterations > 0) {
                const double w = flows::iterateAverageWeight(++averagedSteps_, config_.averageIterations);
                averaged_.forEach(params_, config_.flow,
                                  [w](Mat& a, Mat& q, const std::string&) { a += w * (q - a); });
            }
        }
    }
    r.seconds = secondsSince(start);
    history_.push_back(r);
    return !stopped_;
}

Matrix PosteriorFlow::sample(int n, std::uint64_t seed, Eigen::RowVectorXd* logDensity) const {
    if (n < 0) throw std::invalid_argument("posterior flow: the sample count must be >= 0");
    flows::Rng rng(seed);
    const int d = config_.flow.d;
    Matrix X(d, n);
    if (logDensity) logDensity->resize(n);
    ad::Tape<double> tape;
    constexpr int kChunk = 1024; // queries per pass: each one's map depends on the keys only
    for (int begin = 0; begin < n; begin += kChunk) {
        const int count = std::min(kChunk, n - begin);
        const Mat Z = baseDraws(rng, d, count);
        tape.clear();
        const ForwardPass fw =
            recordForward(tape, config_.flow, frame_, averagedParams(), nullptr, Z, referenceKeys_);
        X.middleCols(begin, count) = fw.X.value();
        if (logDensity) logDensity->segment(begin, count) = fw.logRho.value().row(0);
    }
    return X;
}

PosteriorTerms PosteriorFlow::evaluate(int n, std::uint64_t seed) const {
    Eigen::RowVectorXd logRho;
    const Matrix X = sample(n, seed, &logRho);
    PosteriorTerms t;
    const Mat misfit = misfits(*posterior_, X, nullptr);
    Mat logPrior(1, X.cols());
    for (Eigen::Index j = 0; j < X.cols(); ++j) logPrior(0, j) = posterior_->prior.logDensity(X.col(j));
    // One set of samples for every term: those where all three are finite (the others are counted).
    const Eigen::Array<bool, 1, Eigen::Dynamic> finite =
        logRho.array().isFinite() && misfit.array().isFinite() && logPrior.array().isFinite();
    t.outside = long(finite.size() - finite.count());
    t.logRho = finiteMean(logRho, finite);
    t.misfit = finiteMean(misfit, finite);
    t.logPrior = finiteMean(logPrior, finite);
    t.loss = t.logRho + t.misfit - t.logPrior;
    return t;
}

} // namespace flowscope::inverse
