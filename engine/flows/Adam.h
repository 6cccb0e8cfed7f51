// Flowscope engine: the Adam optimizer (Kingma & Ba 2015, Algorithm 1) over blocks of parameters.
//
// Each block is a (value, gradient) pair of Eigen matrices the model owns; the optimizer keeps references and
// its own first and second moments. One step, with t the number of steps taken, counting this one:
//     g  = clip(gradient) + weightDecay · θ          (L2 decay added to the gradient, as torch.optim.Adam)
//     m  = β1 m + (1 - β1) g,        v = β2 v + (1 - β2) g²
//     θ -= lr_t · (m / (1 - β1^t)) / (√(v / (1 - β2^t)) + ε)
// clip: when the global norm ‖g‖ over all blocks exceeds the cap, every gradient is scaled by cap / ‖g‖ in
// place (as torch.nn.utils.clip_grad_norm_). The cap is clipNorm (> 0), and/or clipToMedian (> 0) times the
// median of ‖g‖ over the last kClipWindow steps (once kClipWindow / 4 were taken), whichever is lower: a
// rare spike (a batch on which a flow folds: ‖g‖ 10⁴ times the usual) then moves the moments no more
// than a few ordinary steps would, instead of steering the next dozens of steps.
// Schedule: lr_k = scale · lr0 · (lrFinal / lr0)^(min(k, K) / K) for the step after k steps, K = decaySteps
// (constant lr0 when K = 0 or lrFinal = 0), times min(1, (k + 1) / W) during a warm-up of W steps; scale
// starts at 1, halveLearningRate() halves it and
// recoverLearningRate() raises it back towards 1.
//
// NaN recovery: step() refuses non-finite gradients (returns false and changes nothing: parameters,
// moments and the step count stay). A training loop that sees a non-finite loss simply does not call step()
// (skipping costs nothing), restores its last good parameters if it keeps them, and calls
// halveLearningRate().
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace flowscope::flows {

struct AdamOptions {
    double lr = 1e-3;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double weightDecay = 0.0;
    double clipNorm = 0.0;     // global gradient-norm cap; 0 = off
    double clipToMedian = 0.0; // cap at this multiple of the recent median norm; 0 = off
    double lrFinal = 0.0;      // exponential decay from lr to lrFinal ...
    long long decaySteps = 0;  // ... over this many steps; 0 (or lrFinal = 0) = constant lr
    long long warmupSteps = 0; // the first steps' rate rises linearly: times min(1, (k + 1) / warmupSteps)
};

template <typename S> class Adam {
  public:
    using Matrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;

    static constexpr int kClipWindow = 64;

    explicit Adam(const AdamOptions& options = {}) : options_(options) {}

    // Registers a block; value and grad must outlive the optimizer and keep their shape.
    void add(Matrix& value, Matrix& grad) {
        if (value.rows() != grad.rows() || value.cols() != grad.cols())
            throw std::invalid_argument("Adam: value and gradient shapes differ");
        blocks_.push_back({&value, &grad, Matrix::Zero(value.rows(), value.cols()),
                           Matrix::Zero(value.rows(), value.cols())});
    }

    void zeroGrad() {
        for (auto& b : blocks_) b.grad->setZero();
    }

    bool gradientsFinite() const {
        for (const auto& b : blocks_)
            if (!b.grad->allFinite()) return false;
        return true;
    }

    // √(Σ over blocks of ‖gradient‖²), accumulated in double.
    double gradientNorm() const {
        double s = 0.0;
        for (const auto& b : blocks_) s += double(b.grad->squaredNorm());
        return std::sqrt(s);
    }

    // Scales the gradients in place so that their global norm is at most maxNorm; returns the norm before.
    double clipGradients(double maxNorm) {
        const double norm = gradientNorm();
        if (maxNorm > 0.0 && norm > maxNorm) {
            const S f = S(maxNorm / norm);
            for (auto& b : blocks_) *b.grad *= f;
        }
        return norm;
    }

    // One Adam update with the current gradients. Returns false, changing nothing, if any is NaN or infinite.
    bool step() {
        if (!gradientsFinite()) return false;
        const double cap = clipCap();
        lastGradientNorm_ = clipGradients(cap);
        lastClipped_ = cap > 0.0 && lastGradientNorm_ > cap;
        if (recentNorms_.size() < std::size_t(kClipWindow))
            recentNorms_.push_back(lastGradientNorm_);
        else
            recentNorms_[std::size_t(t_ % kClipWindow)] = lastGradientNorm_;
        const double lr = learningRate();
        ++t_;
        const S b1 = S(options_.beta1), b2 = S(options_.beta2), wd = S(options_.weightDecay);
        const S c1 = S(1.0 - std::pow(options_.beta1, double(t_)));
        const S c2 = S(1.0 - std::pow(options_.beta2, double(t_)));
        const S step = S(lr), eps = S(options_.eps);
        for (auto& b : blocks_) {
            auto theta = b.value->array();
            const auto g = (b.grad->array() + wd * theta).eval();
            b.m.array() = b1 * b.m.array() + (S(1) - b1) * g;
            b.v.array() = b2 * b.v.array() + (S(1) - b2) * g.square();
            theta -= step * (b.m.array() / c1) / ((b.v.array() / c2).sqrt() + eps);
        }
        return true;
    }

    // The learning rate the next step() will use.
    double learningRate() const {
        double lr = options_.lr;
        if (options_.decaySteps > 0 && options_.lrFinal > 0.0 && options_.lr > 0.0) {
            const double k = double(std::min(t_, options_.decaySteps));
            lr = options_.lr * std::pow(options_.lrFinal / options_.lr, k / double(options_.decaySteps));
        }
        if (options_.warmupSteps > 0) lr *= std::min(1.0, double(t_ + 1) / double(options_.warmupSteps));
        return scale_ * lr;
    }

    void halveLearningRate() { scale_ *= 0.5; }
    // Multiplies the scale by `factor` (> 1), up to 1: the way back after halvings.
    void recoverLearningRate(double factor) { scale_ = std::min(1.0, scale_ * factor); }
    double learningRateScale() const { return scale_; }

    // Forgets the moments, the step count and the halvings; keeps the blocks and the options.
    void reset() {
        for (auto& b : blocks_) {
            b.m.setZero();
            b.v.setZero();
        }
        t_ = 0;
        scale_ = 1.0;
        lastGradientNorm_ = 0.0;
        lastClipped_ = false;
        recentNorms_.clear();
    }

    long long steps() const { return t_; }
    double lastGradientNorm() const { return lastGradientNorm_; } // before clipping, of the last step()
    bool lastClipped() const { return lastClipped_; }             // whether the last step() clipped
    // The norm cap the next step() applies (0: none).
    double clipCap() const {
        double cap = options_.clipNorm;
        if (options_.clipToMedian > 0.0 && recentNorms_.size() >= std::size_t(kClipWindow / 4)) {
            std::vector<double> n = recentNorms_;
            std::nth_element(n.begin(), n.begin() + std::ptrdiff_t(n.size() / 2), n.end());
            const double relative = options_.clipToMedian * n[n.size() / 2];
            cap = cap > 0.0 ? std::min(cap, relative) : relative;
        }
        return cap;
    }
    const AdamOptions& options() const { return options_; }
    void setOptions(const AdamOptions& options) { options_ = options; }

  private:
    struct Block {
        Matrix* value;
        Matrix* grad;
        Matrix m, v;
    };

    AdamOptions options_;
    std::vector<Block> blocks_;
    long long t_ = 0;
    double scale_ = 1.0;
    double lastGradientNorm_ = 0.0;
    bool lastClipped_ = false;
    std::vector<double> recentNorms_; // the last kClipWindow steps' norms before clipping (a ring)
};

// Iterate averaging, shared by the flow and the OT-Transformer trainers: after the k-th accepted step
// (k >= 1) the average a of the parameters θ moves to a + w (θ - a), w = 1/τ_k, τ_k = min(window,
// (k + 9)/10): about the last tenth of a short run, then an exponential average with time constant window.
inline double iterateAverageWeight(long k, long window) {
    return 1.0 / std::min(double(window), double(k + 9) / 10.0);
}

} // namespace flowscope::flows
