#include "engine/gaussian/MomentField.h"

#include "engine/attention/KernelAttention.h"
#include "engine/gaussian/MatrixRoots.h"

namespace flowscope {

GaussianState MomentField::rates(double t, const GaussianState& s) const {
    const AffineField f = affine(t, s.mean, s.cov);
    const Mat P = f.L * s.cov;
    return {f.b + f.L * s.mean, P + P.transpose()};
}

namespace {

// A_h = gamma_h K_h^T Q_h with the head's score scale (beta, optionally / sqrt(k)).
Mat scoreMatrix(const AttentionSpec& spec, const HeadParams& h) {
    return scoreScale(spec, h) * h.K.transpose() * h.Q;
}

// Common shape of the head-summed variants: each head adds its (b, L).
class HeadSumMoments : public MomentField {
  public:
    HeadSumMoments(const AttentionSpec& spec, int d) : spec_(spec), d_(d) {}
    AffineField affine(double t, const Vec& mean, const Mat& cov) const override {
        AffineField f{Vec::Zero(d_), Mat::Zero(d_, d_)};
        for (const HeadParams& h : spec_.headsAt(t)) addHead(h, mean, cov, f);
        return f;
    }

  protected:
    virtual void addHead(const HeadParams& h, const Vec& mean, const Mat& cov, AffineField& f) const = 0;
    AttentionSpec spec_;
    int d_;
};

// Softmax (Lemma 4.1, Prop 1, Prop 5): Gamma(x) = V (alpha + Sigma A x).
class SoftmaxMoments final : public HeadSumMoments {
  public:
    using HeadSumMoments::HeadSumMoments;
    std::string name() const override { return "softmax"; }

  protected:
    void addHead(const HeadParams& h, const Vec& mean, const Mat& cov, AffineField& f) const override {
        f.b += h.V * mean;
        f.L += h.V * cov * scoreMatrix(spec_, h);
    }
};

// Linear (docs/math/gaussian.md#linear): pure Gamma(x) = V (Sigma + alpha alpha^T) A x;
// lin,eps Gamma(x) = V alpha / eps + V Sigma A x.
class LinearMoments final : public HeadSumMoments {
  public:
    using HeadSumMoments::HeadSumMoments;
    std::string name() const override { return spec_.linearEps ? "linear (eps)" : "linear"; }

  protected:
    void addHead(const HeadParams& h, const Vec& mean, const Mat& cov, AffineField& f) const override {
        const Mat A = scoreMatrix(spec_, h);
        if (spec_.linearEps) {
            f.b += h.V * mean / *spec_.linearEps;
            f.L += h.V * cov * A;
        } else {
            f.L += h.V * (cov + mean * mean.transpose()) * A;
        }
    }
};

// l2 (Lemma 4.7, Prop 6, corrected eq (19)): with G = gamma K^T K and W = (I + 2 Sigma G)^{-1},
// Gamma(x) = V W (alpha + 2 Sigma A x).
class L2Moments final : public HeadSumMoments {
  public:
    using HeadSumMoments::HeadSumMoments;
    std::string name() const override { return "l2"; }

  protected:
    void addHead(const HeadParams& h, const Vec& mean, const Mat& cov, AffineField& f) const override {
        const double g = scoreScale(spec_, h);
        const Mat G = g * h.K.transpose() * h.K;
        // I + 2 Sigma G is invertible: Sigma G is similar to a PSD matrix (spectrum >= 0).
        const Eigen::PartialPivLU<Mat> W(Mat::Identity(d_, d_) + 2.0 * cov * G);
        f.b += h.V * W.solve(mean);
        f.L += 2.0 * h.V * W.solve(cov * scoreMatrix(spec_, h));
    }
};

// Sinkhorn (Lemma 4.11, Prop 8; the inverse-free form of docs/math/gaussian.md#sinkhorn):
// M = (Sigma A Sigma A^T + eps^2/4 I)^{1/2} + eps/2 I,
// Gamma(x) = (V / eps) (alpha + M^{-1} Sigma A (x - alpha)).
class SinkhornMoments final : public HeadSumMoments {
  public:
    using HeadSumMoments::HeadSumMoments;
    std::string name() const override { return "sinkhorn"; }

  protected:
    void addHead(const HeadParams& h, const Vec& mean, const Mat& cov, AffineField& f) const override {
        const double eps = spec_.sinkhornEps;
        const Mat A = scoreMatrix(spec_, h);
        const Mat I = Mat::Identity(d_, d_);
        const Mat P = psdSqrt(cov);
        const Mat PAP = P * A * P;
        const Mat N = psdSqrt(PAP * PAP.transpose() + 0.25 * eps * eps * I) + 0.5 * eps * I;
        const Mat W = P * N.llt().solve(P * A); // M^{-1} Sigma A = S_yx Sigma^{-1}
        f.b += h.V * (mean - W * mean) / eps;
        f.L += h.V * W / eps;
    }
};

// Gaussian-kernel drifting (App. B, Prop 11): Gamma = Gamma^G_nu - Gamma^G_mu,
// Gamma^G_{N(m, S)}(x) = x - (S + I)^{-1} (x - m), so L = (Sigma + I)^{-1} - (Sigma_nu + I)^{-1} and
// alpha' = (Sigma_nu + I)^{-1} (m_nu - alpha).
class DriftingMoments final : public MomentField {
  public:
    DriftingMoments(const AttentionSpec& spec, int d)
        : targetMean_(spec.targetMean.size() ? spec.targetMean : Vec(Vec::Zero(d))),
          targetInverse_((spec.targetCov.size() ? spec.targetCov : Mat(Mat::Identity(d, d))) +
                         Mat::Identity(d, d)),
          d_(d) {
        targetInverse_ = targetInverse_.inverse().eval();
    }
    std::string name() const override { return "drifting"; }
    AffineField affine(double, const Vec& mean, const Mat& cov) const override {
        const Mat L = (cov + Mat::Identity(d_, d_)).inverse() - targetInverse_;
        const Vec dmean = targetInverse_ * (targetMean_ - mean);
        return {dmean - L * mean, L};
    }

  private:
    Vec targetMean_;
    Mat targetInverse_; // (Sigma_nu + I)^{-1}
    int d_;
};

} // namespace

std::unique_ptr<MomentField> makeMomentField(const Scene& scene) {
    const AttentionSpec& a = scene.attention;
    const int d = scene.d;
    if (a.masked)
        throw SceneError("/attention/masked",
                         "masked attention does not keep Gaussians Gaussian "
                         "(docs/math/gaussian.md#not-gaussian): use the particle simulation");
    if (a.sphere)
        throw SceneError(
            "/attention/sphere",
            "sphere-normalized dynamics do not keep Gaussians Gaussian: use the particle simulation");
    switch (a.type) {
    case AttentionType::Softmax:
        return std::make_unique<SoftmaxMoments>(a, d);
    case AttentionType::Linear:
        return std::make_unique<LinearMoments>(a, d);
    case AttentionType::L2:
        return std::make_unique<L2Moments>(a, d);
    case AttentionType::Sinkhorn:
        return std::make_unique<SinkhornMoments>(a, d);
    case AttentionType::Drifting:
        return std::make_unique<DriftingMoments>(a, d);
    case AttentionType::Exp:
    case AttentionType::Relu:
    case AttentionType::Sigmoid:
    case AttentionType::Rwpo:
        break;
    }
    throw SceneError("/attention/type", std::string(toString(a.type)) +
                                            " attention does not keep Gaussians Gaussian (no closed moment "
                                            "ODE; Gaussian mode supports softmax, linear, l2, sinkhorn, "
                                            "drifting): use the particle simulation");
}

} // namespace flowscope
