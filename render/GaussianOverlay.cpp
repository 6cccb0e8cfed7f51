#include "render/GaussianOverlay.h"

#include "engine/gaussian/MatrixRoots.h"
#include "engine/gaussian/MomentSolver.h"

#include <algorithm>
#include <cmath>
#include <exception>

namespace flowscope {

namespace {
// The moment field seen from time t0 (the solver starts at 0; keyframed parameters must not restart).
class ShiftedField : public MomentField {
  public:
    ShiftedField(std::unique_ptr<MomentField> inner, double t0) : inner_(std::move(inner)), t0_(t0) {}
    AffineField affine(double t, const Vec& mean, const Mat& cov) const override {
        return inner_->affine(t + t0_, mean, cov);
    }
    std::string name() const override { return inner_->name(); }

  private:
    std::unique_ptr<MomentField> inner_;
    double t0_;
};
} // namespace

void GaussianOverlay::setScene(const Scene& scene) {
    scene_ = scene;
    times_.clear();
    states_.clear();
    reason_.clear();
    if (scene.initial.kind != InitKind::Gaussian) {
        reason_ = "the initial tokens are not Gaussian";
        return;
    }
    solveFrom(0.0, GaussianState{scene.initial.mean, scene.initial.cov});
}

void GaussianOverlay::setAttention(const AttentionSpec& spec, double t0,
                                   const std::optional<GaussianState>& now) {
    scene_.attention = spec;
    if (now && !times_.empty()) return solveFrom(t0, *now);
    const auto start = at(t0);
    if (!start) return setScene(scene_);
    solveFrom(t0, *start);
}

void GaussianOverlay::setIntegrator(const IntegratorSpec& spec, double t0) {
    scene_.integrator = spec;
    if (const auto start = at(t0)) solveFrom(t0, *start);
}

void GaussianOverlay::solveFrom(double t0, const GaussianState& start) {
    // Keep [0, t0), then append the new piece.
    const auto keep = std::lower_bound(times_.begin(), times_.end(), t0);
    states_.resize(std::size_t(keep - times_.begin()));
    times_.erase(keep, times_.end());
    const double remaining = scene_.integrator.T - t0;
    if (remaining <= 0.0) {
        times_.push_back(t0);
        states_.push_back(start);
        return;
    }
    try {
        const ShiftedField field(makeMomentField(scene_), t0);
        Scene s = scene_;
        s.moments.method = MomentMethod::Adaptive;
        s.moments.tolLow = 0.0; // follow the particles to the horizon, converged or not
        MomentSolveOptions options;
        options.T = remaining;
        options.recordEvery = remaining / std::max(200, scene_.integrator.steps);
        const MomentTrajectory traj = solveMoments(field, start, s, options);
        for (std::size_t k = 0; k < traj.times.size(); ++k) {
            times_.push_back(t0 + traj.times[k]);
            states_.push_back(traj.states[k]);
        }
        reason_.clear();
    } catch (const std::exception& e) {
        times_.clear();
        states_.clear();
        reason_ = e.what();
    }
}

std::optional<GaussianState> GaussianOverlay::at(double t) const {
    if (times_.empty()) return std::nullopt;
    if (t <= times_.front()) return states_.front();
    if (t >= times_.back()) return states_.back();
    const std::size_t k = std::size_t(std::upper_bound(times_.begin(), times_.end(), t) - times_.begin());
    const double w = (t - times_[k - 1]) / (times_[k] - times_[k - 1]);
    return GaussianState{(1 - w) * states_[k - 1].mean + w * states_[k].mean,
                         (1 - w) * states_[k - 1].cov + w * states_[k].cov};
}

std::vector<Eigen::Vector2d> covarianceEllipse(const Eigen::Vector2d& mean, const Mat& cov2, double k,
                                               int segments) {
    const Mat root = psdSqrt(symmetricPart(cov2));
    std::vector<Eigen::Vector2d> points;
    points.reserve(std::size_t(segments) + 1);
    for (int s = 0; s <= segments; ++s) {
        const double a = 2.0 * M_PI * s / segments;
        points.push_back(mean + k * root * Eigen::Vector2d(std::cos(a), std::sin(a)));
    }
    return points;
}

} // namespace flowscope
