// Flowscope engine: the posterior of a Bayesian inverse problem (docs/math/inverse.md#posterior),
//     p(x | y) ∝ exp(−‖y − F(x)‖² / (2σ²)) · p(x),
// its prior, and the Gaussian "frame" a posterior flow works in.
//
// Priors (normalized densities):
//   Gaussian  p(x) = Π_i N(x_i; m_i, s_i²)
//   Laplace   p(x) = Π_i (λ/2) exp(−λ |x_i − m_i|)          (the RWPO paper's exp(−λ‖x‖₁) with m = 0)
//
// The frame is an affine change of variables x = c + L u with L triangular, chosen before training so
// that the posterior is of unit scale in u: the flow then learns the shape of the posterior, not its place
// and size (which differ by orders of magnitude between problems: Lorenz-63's r sits 46 prior deviations from
// its prior mean, with a posterior spread of 10⁻³). Two frames:
//   prior    c = m, L = diag(s) (Gaussian) or diag(√2/λ) (Laplace: the prior's own deviation);
//   laplace  the Laplace approximation: c = the MAP point (Levenberg–Marquardt on the negative log posterior,
//            the Laplace prior's |·| smoothed), L Lᵀ = H⁻¹ with H = JᵀJ/σ² + P the Gauss–Newton Hessian, P
//            the prior's precision (1/s² or λ²/2).
// The flow's density in x is then ρ_x(x) = ρ_u(u) / |det L|.
#pragma once

#include "engine/inverse/ForwardModel.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace flowscope::inverse {

struct Prior {
    enum class Kind { Gaussian, Laplace };
    Kind kind = Kind::Gaussian;
    Vector mean;       // m (d entries)
    Vector sd;         // s, Gaussian only (d entries, > 0)
    double lambda = 1; // λ, Laplace only (> 0)
    int dim() const { return int(mean.size()); }
    double logDensity(const Vector& x) const;     // log p(x), normalized
    Vector gradLogDensity(const Vector& x) const; // ∇ log p (the Laplace's: −λ sign(x − m), 0 at the kink)
    Vector precision() const;                     // 1/s², or λ²/2 (the Laplace's inverse variance)
    Vector deviation() const;                     // s, or √2/λ
};

// Where the MAP search of the Laplace frame starts besides the prior's mean: `starts` points drawn uniformly
// in the box [low, high] (seeded). A forward model whose misfit has local minima (Lorenz-63) needs it when
// the prior's mean lies outside the posterior's basin.
struct MapSearch {
    Vector low, high;
    int starts = 0;
    std::uint64_t seed = 0;
};

struct Posterior {
    std::shared_ptr<const ForwardModel> model;
    Vector y;           // the data, m entries
    double noise = 0.1; // σ, the noise's standard deviation
    Prior prior;
    std::optional<Vector> truth; // the unknowns the data was made from, where known
    MapSearch mapSearch;         // the Laplace frame's extra starting points (none by default)

    int dim() const { return model->parameters(); }
    // ½‖y − F(x)‖²/σ², and its gradient into *grad when given (one forward run and one pullback). NaN where
    // the forward run does not stay finite.
    double misfit(const Vector& x, Vector* grad = nullptr) const;
    // −log p(x | y) up to the evidence: misfit(x) − log p(x).
    double negLogDensity(const Vector& x, Vector* grad = nullptr) const;
    // Throws std::invalid_argument naming what is inconsistent (sizes, σ, the prior's parameters).
    void validate() const;
};

struct Frame {
    Vector center;      // c
    Matrix L;           // triangular, x = c + L u
    double logDetL = 0; // log |det L|
};

enum class FrameKind { Prior, Laplace };
Frame priorFrame(const Prior& prior);
// The Laplace approximation at the MAP point: Levenberg–Marquardt (`iterations` at most) from the prior's
// mean and from the posterior's mapSearch starts, the lowest end point kept; each iteration forms J with m
// pullbacks. A MAP search that finds no finite point falls back to the prior frame.
Frame laplaceFrame(const Posterior& posterior, int iterations = 100);
Frame makeFrame(const Posterior& posterior, FrameKind kind);

// Random-walk Metropolis on p(x | y): `steps` proposals x' = x + scale · L ξ (ξ ~ N(0, I), L the frame's),
// started at the frame's centre, the first `burnIn` dropped, every `thin`-th of the rest kept. The reference
// a trained flow is checked against. `cancelled` (optional) is asked every 1024 steps: when it says yes the
// chain stops and comes back empty (no samples).
struct Chain {
    Matrix samples; // d x ⌈(steps − burnIn) / thin⌉
    double acceptance = 0;
};
Chain metropolis(const Posterior& posterior, const Frame& frame, long steps, long burnIn, double scale,
                 std::uint64_t seed, long thin = 1, const std::function<bool()>& cancelled = {});

} // namespace flowscope::inverse
