// Flowscope UI: the mean-field picture next to the particles: the Gaussian N(alpha(t), Sigma(t)) that solves
// the moment ODE of the scene (docs/math/gaussian.md) from the scene's initial Gaussian, drawn over the
// tokens as 1-sigma and 2-sigma ellipses (ellipsoids in 3-D).
//
// The trajectory is integrated once per scene with the adaptive square-root solver (engine/gaussian) and
// read by linear interpolation at the run's time. A live parameter edit at time t0 keeps the trajectory up
// to t0 and integrates on with the new parameters from the Gaussian of the tokens as they are at t0 (their
// mean and covariance), so that it describes the cloud the new parameters act on; without the tokens, from
// the trajectory's own state at t0.
// Variants without closed Gaussian dynamics (exp, ReLU, sigmoid, RWPO, masked) and non-Gaussian initial
// clouds have no overlay; reason() says why.
#pragma once

#include "engine/gaussian/MomentField.h"
#include "engine/scene/Scene.h"

#include <optional>
#include <string>
#include <vector>

namespace flowscope {

class GaussianOverlay {
  public:
    void setScene(const Scene& scene);
    // New parameters from time t0 on (the trajectory before t0 is kept), from `now` when given: the tokens'
    // mean and covariance at t0.
    void setAttention(const AttentionSpec& spec, double t0, const std::optional<GaussianState>& now = {});
    void setIntegrator(const IntegratorSpec& spec, double t0);

    bool available() const { return !times_.empty(); }
    const std::string& reason() const { return reason_; }
    // The Gaussian at time t (the last state after the trajectory ends: blow-up or horizon).
    std::optional<GaussianState> at(double t) const;
    double endTime() const { return times_.empty() ? 0.0 : times_.back(); }

  private:
    void solveFrom(double t0, const GaussianState& start);

    Scene scene_;
    std::vector<double> times_;
    std::vector<GaussianState> states_;
    std::string reason_;
};

// Points of the ellipse {mean + k * Sigma^{1/2} u : |u| = 1} of a 2x2 covariance, `segments` + 1 points
// (closed). Degenerate (rank-deficient) covariances give segments or points.
std::vector<Eigen::Vector2d> covarianceEllipse(const Eigen::Vector2d& mean, const Mat& cov2, double k,
                                               int segments = 96);

} // namespace flowscope
