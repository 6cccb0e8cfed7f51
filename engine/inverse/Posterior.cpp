#include "engine/inverse/Posterior.h"

#include "engine/flows/Datasets.h"

#include <Eigen/Cholesky>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

namespace flowscope::inverse {

namespace {

void require(bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("posterior: " + what);
}

} // namespace

double Prior::logDensity(const Vector& x) const {
    if (kind == Kind::Gaussian) {
        const Vector z = (x - mean).cwiseQuotient(sd);
        return -0.5 * z.squaredNorm() - sd.array().log().sum() - 0.5 * double(x.size()) * kLog2Pi;
    }
    return double(x.size()) * std::log(lambda / 2) - lambda * (x - mean).cwiseAbs().sum();
}

Vector Prior::gradLogDensity(const Vector& x) const {
    if (kind == Kind::Gaussian) return -(x - mean).cwiseQuotient(sd.cwiseProduct(sd));
    return -lambda * (x - mean).unaryExpr([](double v) { return double((v > 0) - (v < 0)); });
}

Vector Prior::precision() const {
    if (kind == Kind::Gaussian) return sd.cwiseProduct(sd).cwiseInverse();
    return Vector::Constant(mean.size(), lambda * lambda / 2);
}

Vector Prior::deviation() const {
    if (kind == Kind::Gaussian) return sd;
    return Vector::Constant(mean.size(), std::numbers::sqrt2 / lambda);
}

void Posterior::validate() const {
    require(model != nullptr, "no forward model");
    const int d = model->parameters(), m = model->observations();
    require(y.size() == m,
            "the data has " + std::to_string(y.size()) + " entries, the model predicts " + std::to_string(m));
    require(y.allFinite(), "the data must be finite");
    require(noise > 0 && std::isfinite(noise), "the noise must be finite and > 0");
    require(prior.mean.size() == d, "the prior's mean needs " + std::to_string(d) + " entries");
    require(prior.mean.allFinite(), "the prior's mean must be finite");
    if (prior.kind == Prior::Kind::Gaussian)
        require(prior.sd.size() == d && (prior.sd.array() > 0).all() && prior.sd.allFinite(),
                "the prior's std needs " + std::to_string(d) + " finite entries > 0");
    else
        require(prior.lambda > 0 && std::isfinite(prior.lambda), "the prior's lambda must be finite and > 0");
    require(!truth || truth->size() == d, "the truth needs " + std::to_string(d) + " entries");
    require(mapSearch.starts == 0 || (mapSearch.low.size() == d && mapSearch.high.size() == d &&
                                      (mapSearch.low.array() <= mapSearch.high.array()).all()),
            "the MAP search's box needs low <= high with " + std::to_string(d) + " entries each");
}

double Posterior::misfit(const Vector& x, Vector* grad) const {
    const double s2 = noise * noise;
    if (!grad) return 0.5 * (model->apply(x) - y).squaredNorm() / s2;
    const auto lin = model->linearize(x);
    const Vector r = lin->value() - y;
    *grad = lin->pullback(r / s2);
    return 0.5 * r.squaredNorm() / s2;
}

double Posterior::negLogDensity(const Vector& x, Vector* grad) const {
    const double value = misfit(x, grad) - prior.logDensity(x);
    if (grad) *grad -= prior.gradLogDensity(x);
    return value;
}

Frame priorFrame(const Prior& prior) {
    Frame f;
    f.center = prior.mean;
    const Vector s = prior.deviation();
    f.L = s.asDiagonal();
    f.logDetL = s.array().log().sum();
    return f;
}

namespace {

// The objective of the MAP search: the negative log posterior with the Laplace prior's |t| smoothed to
// √(t² + δ²) − δ (δ a thousandth of the prior's deviation), so that its gradient is continuous.
double mapObjective(const Posterior& p, const Vector& x, Vector* grad) {
    if (p.prior.kind == Prior::Kind::Gaussian) return p.negLogDensity(x, grad);
    const double delta = 1e-3 * std::numbers::sqrt2 / p.prior.lambda;
    const Eigen::ArrayXd t = (x - p.prior.mean).array();
    const Eigen::ArrayXd r = (t.square() + delta * delta).sqrt();
    const double value = p.misfit(x, grad) + p.prior.lambda * (r - delta).sum();
    if (grad) *grad += (p.prior.lambda * t / r).matrix();
    return value;
}

// J (m x d) at x by m pullbacks of one linearization, and F(x).
Matrix jacobian(const ForwardModel& model, const Vector& x, Vector* value) {
    const auto lin = model.linearize(x);
    const int m = model.observations();
    Matrix J(m, x.size());
    for (int i = 0; i < m; ++i) J.row(i) = lin->pullback(Vector::Unit(m, i)).transpose();
    if (value) *value = lin->value();
    return J;
}

// Levenberg–Marquardt on mapObjective from x (in place); returns the objective at the end point.
double descend(const Posterior& p, Vector& x, int iterations) {
    const Vector P = p.prior.precision();
    const double s2 = p.noise * p.noise;
    Vector g;
    double value = mapObjective(p, x, &g);
    if (!std::isfinite(value)) return value;
    double mu = 1e-3;
    for (int it = 0; it < iterations; ++it) {
        Matrix H = jacobian(*p.model, x, nullptr);
        H = (H.transpose() * H / s2).eval();
        H.diagonal() += P;
        bool accepted = false;
        for (int tries = 0; tries < 30 && !accepted; ++tries) {
            Matrix damped = H;
            damped.diagonal() += mu * H.diagonal();
            const Vector next = x + damped.ldlt().solve(-g);
            Vector gNext;
            const double vNext = mapObjective(p, next, &gNext);
            if (std::isfinite(vNext) && vNext <= value) {
                const double decrease = value - vNext;
                x = next;
                g = gNext;
                value = vNext;
                mu = std::max(mu / 3, 1e-12);
                accepted = true;
                if (decrease <= 1e-14 * (1 + std::abs(value))) return value; // converged
            } else {
                mu *= 4;
            }
        }
        if (!accepted) break;
    }
    return value;
}

} // namespace

Frame laplaceFrame(const Posterior& p, int iterations) {
    p.validate();
    const Vector P = p.prior.precision();
    const double s2 = p.noise * p.noise;
    Vector x = p.prior.mean;
    double best = descend(p, x, iterations);
    const MapSearch& search = p.mapSearch;
    flows::Rng rng(search.seed);
    for (int k = 0; k < search.starts; ++k) {
        Vector start(x.size());
        for (Eigen::Index i = 0; i < start.size(); ++i)
            start(i) = search.low(i) + (search.high(i) - search.low(i)) * rng.uniform();
        const double v = descend(p, start, iterations);
        if (std::isfinite(v) && !(v >= best)) {
            best = v;
            x = start;
        }
    }
    if (!std::isfinite(best)) return priorFrame(p.prior);
    Matrix H = jacobian(*p.model, x, nullptr);
    H = (H.transpose() * H / s2).eval();
    H.diagonal() += P;
    const Eigen::LLT<Matrix> llt(H);
    if (llt.info() != Eigen::Success || !x.allFinite()) return priorFrame(p.prior);
    // H = R Rᵀ (R lower) and H⁻¹ = R⁻ᵀ R⁻¹, so L = R⁻ᵀ (upper triangular) has L Lᵀ = H⁻¹.
    const Matrix R = llt.matrixL();
    Frame f;
    f.center = x;
    f.L = R.transpose().triangularView<Eigen::Upper>().solve(Matrix::Identity(x.size(), x.size()));
    f.logDetL = -R.diagonal().array().log().sum();
    return f;
}

Frame makeFrame(const Posterior& posterior, FrameKind kind) {
    return kind == FrameKind::Laplace ? laplaceFrame(posterior) : priorFrame(posterior.prior);
}

Chain metropolis(const Posterior& p, const Frame& frame, long steps, long burnIn, double scale,
                 std::uint64_t seed, long thin, const std::function<bool()>& cancelled) {
    require(steps > burnIn && burnIn >= 0, "metropolis needs steps > burnIn >= 0");
    require(thin >= 1, "metropolis needs thin >= 1");
    flows::Rng rng(seed);
    const Eigen::Index d = frame.center.size();
    Vector x = frame.center, xi(d);
    double energy = p.negLogDensity(x);
    require(std::isfinite(energy), "metropolis: the posterior is not finite at the frame's centre");
    Chain chain;
    chain.samples.resize(d, (steps - burnIn + thin - 1) / thin);
    long accepted = 0;
    for (long s = 0; s < steps; ++s) {
        if (cancelled && s % 1024 == 0 && cancelled()) return {};
        for (Eigen::Index i = 0; i < d; ++i) xi(i) = rng.normal();
        const Vector proposal = x + scale * (frame.L * xi);
        const double e = p.negLogDensity(proposal);
        if (std::isfinite(e) && std::log(rng.uniform()) < energy - e) {
            x = proposal;
            energy = e;
            ++accepted;
        }
        if (s >= burnIn && (s - burnIn) % thin == 0) chain.samples.col((s - burnIn) / thin) = x;
    }
    chain.acceptance = double(accepted) / double(steps);
    return chain;
}

} // namespace flowscope::inverse
