#include "engine/gaussian/MomentField.h"

#include "engine/attention/KernelAttention.h"
#include "engine/dynamics/Observables.h"
#include "engine/gaussian/MatrixRoots.h"

#include <algorithm>

namespace flowscope {

std::optional<GaussianState> tokenGaussian(const Tokens& X) {
    if (X.rows() < 2 || !X.allFinite()) return std::nullopt;
    return GaussianState{tokenMean(X), tokenCovariance(X)};
}

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

// G_h = gamma_h K_h^T K_h (l2).
Mat gramMatrix(const AttentionSpec& spec, const HeadParams& h) {
    return scoreScale(spec, h) * h.K.transpose() * h.K;
}

// The formulas, once for every matrix type: M = Mat (the dynamic path) or MatN<D> (the fixed-size one, which
// touches no heap). Each head adds its (b, L); Vh is the head's value matrix.

// Softmax (Lemma 4.1, Prop 1, Prop 5): Gamma(x) = V (alpha + Sigma A x).
template <class V, class M>
void addSoftmaxHead(const M& Vh, const M& A, const V& mean, const M& cov, V& b, M& L) {
    b += Vh * mean;
    L += Vh * cov * A;
}

// Linear (docs/math/gaussian.md#linear): pure Gamma(x) = V (Sigma + alpha alpha^T) A x;
// lin,eps Gamma(x) = V alpha / eps + V Sigma A x.
template <class V, class M>
void addLinearHead(const M& Vh, const M& A, const std::optional<double>& eps, const V& mean, const M& cov,
                   V& b, M& L) {
    if (eps) {
        b += Vh * mean / *eps;
        L += Vh * cov * A;
    } else {
        L += Vh * (cov + mean * mean.transpose()) * A;
    }
}

// l2 (Lemma 4.7, Prop 6, corrected eq (19)): with G = gamma K^T K and W = (I + 2 Sigma G)^{-1},
// Gamma(x) = V W (alpha + 2 Sigma A x).
template <class V, class M>
void addL2Head(const M& Vh, const M& A, const M& G, const V& mean, const M& cov, V& b, M& L) {
    // I + 2 Sigma G is invertible: Sigma G is similar to a PSD matrix (spectrum >= 0).
    const Eigen::PartialPivLU<M> W(M::Identity(cov.rows(), cov.cols()) + 2.0 * cov * G);
    b += Vh * W.solve(mean);
    L += 2.0 * Vh * W.solve(cov * A);
}

// Sinkhorn (Lemma 4.11, Prop 8; the inverse-free form of docs/math/gaussian.md#sinkhorn):
// M = (Sigma A Sigma A^T + eps^2/4 I)^{1/2} + eps/2 I,
// Gamma(x) = (V / eps) (alpha + M^{-1} Sigma A (x - alpha)).
template <class V, class M>
void addSinkhornHead(const M& Vh, const M& A, double eps, const V& mean, const M& cov, V& b, M& L) {
    const M I = M::Identity(cov.rows(), cov.cols());
    const M P = psdSqrtOf(cov);
    const M PAP = P * A * P;
    const M N = psdSqrtOf(M(PAP * PAP.transpose() + 0.25 * eps * eps * I)) + 0.5 * eps * I;
    const M W = P * N.llt().solve(P * A); // M^{-1} Sigma A = S_yx Sigma^{-1}
    b += Vh * (mean - W * mean) / eps;
    L += Vh * W / eps;
}

// One head of a head-summed type adds its (b, L); G is read by l2 only.
template <class V, class M>
void addHead(AttentionType type, const std::optional<double>& linearEps, double sinkhornEps, const M& Vh,
             const M& A, const M& G, const V& mean, const M& cov, V& b, M& L) {
    switch (type) {
    case AttentionType::Softmax:
        return addSoftmaxHead(Vh, A, mean, cov, b, L);
    case AttentionType::Linear:
        return addLinearHead(Vh, A, linearEps, mean, cov, b, L);
    case AttentionType::L2:
        return addL2Head(Vh, A, G, mean, cov, b, L);
    case AttentionType::Sinkhorn:
        return addSinkhornHead(Vh, A, sinkhornEps, mean, cov, b, L);
    default: // makeMomentField refused the others
        return;
    }
}

// Gaussian-kernel drifting (App. B, Prop 11): Gamma = Gamma^G_nu - Gamma^G_mu,
// Gamma^G_{N(m, S)}(x) = x - (S + I)^{-1} (x - m), so L = (Sigma + I)^{-1} - (Sigma_nu + I)^{-1} and
// alpha' = (Sigma_nu + I)^{-1} (m_nu - alpha). (The inverse by partial-pivoting LU, which is what
// Mat::inverse() does, for every M.)
template <class V, class M>
void drifting(const V& targetMean, const M& targetInverse, const V& mean, const M& cov, V& b, M& L) {
    L = Eigen::PartialPivLU<M>(cov + M::Identity(cov.rows(), cov.cols())).inverse() - targetInverse;
    const V dmean = targetInverse * (targetMean - mean);
    b = dmean - L * mean;
}

// (Sigma_nu + I)^{-1} of a drifting spec (Sigma_nu = I when unset).
Mat driftingTargetInverse(const AttentionSpec& spec, int d) {
    const Mat shifted =
        (spec.targetCov.size() ? spec.targetCov : Mat(Mat::Identity(d, d))) + Mat::Identity(d, d);
    return shifted.inverse();
}

Vec driftingTargetMean(const AttentionSpec& spec, int d) {
    return spec.targetMean.size() ? spec.targetMean : Vec(Vec::Zero(d));
}

// The fixed-size form of the field of `spec` in dimension d, when there is one.
// Whether every head's V is d x d and its Q, K have d columns: what the fixed-size types hold. A spec that
// does not (a scene edited by hand to another d, as some tests make) keeps the dynamic path, which it always
// had; copying it into fixed-size matrices would read past them.
bool headsFit(const AttentionSpec& spec, int d) {
    const auto fits = [d](const std::vector<HeadParams>& heads) {
        return std::all_of(heads.begin(), heads.end(), [d](const HeadParams& h) {
            return h.V.rows() == d && h.V.cols() == d && h.Q.cols() == d && h.K.cols() == d &&
                   h.Q.rows() == h.K.rows();
        });
    };
    return fits(spec.heads) && std::all_of(spec.keyframes.begin(), spec.keyframes.end(),
                                           [&](const Keyframe& k) { return fits(k.heads); });
}

FixedMomentFields fixedMomentFields(const AttentionSpec& spec, int d) {
    if (!spec.keyframes.empty() && spec.interpolation == Interpolation::Linear && spec.keyframes.size() > 1)
        return {};
    if (!headsFit(spec, d)) return {};
    if (d == 2) return FixedMomentField<2>(spec, d);
    if (d >= 1 && d <= 4) return SmallMomentField(spec, d);
    return {};
}

// The head-summed variants (softmax, linear, l2, sinkhorn): each head adds its (b, L).
class HeadSumMoments final : public MomentField {
  public:
    HeadSumMoments(const AttentionSpec& spec, int d) : spec_(spec), d_(d) {
        fixed_ = fixedMomentFields(spec, d);
    }
    std::string name() const override {
        return spec_.type == AttentionType::Linear && spec_.linearEps ? "linear (eps)" : toString(spec_.type);
    }
    AffineField affine(double t, const Vec& mean, const Mat& cov) const override {
        AffineField f{Vec::Zero(d_), Mat::Zero(d_, d_)};
        for (const HeadParams& h : spec_.headsAt(t)) {
            const Mat G = spec_.type == AttentionType::L2 ? gramMatrix(spec_, h) : Mat();
            addHead(spec_.type, spec_.linearEps, spec_.sinkhornEps, h.V, scoreMatrix(spec_, h), G, mean, cov,
                    f.b, f.L);
        }
        return f;
    }

  private:
    AttentionSpec spec_;
    int d_;
};

class DriftingMoments final : public MomentField {
  public:
    DriftingMoments(const AttentionSpec& spec, int d)
        : targetMean_(driftingTargetMean(spec, d)), targetInverse_(driftingTargetInverse(spec, d)) {
        fixed_ = fixedMomentFields(spec, d);
    }
    std::string name() const override { return "drifting"; }
    AffineField affine(double, const Vec& mean, const Mat& cov) const override {
        AffineField f;
        drifting(targetMean_, targetInverse_, mean, cov, f.b, f.L);
        return f;
    }

  private:
    Vec targetMean_;
    Mat targetInverse_; // (Sigma_nu + I)^{-1}
};

} // namespace

template <int D, int MaxD>
FixedMomentField<D, MaxD>::FixedMomentField(const AttentionSpec& spec, int d)
    : type_(spec.type), linearEps_(spec.linearEps), sinkhornEps_(spec.sinkhornEps) {
    // The per-head matrices by the dynamic path's own expressions, then copied: the same numbers.
    const auto convert = [&](const std::vector<HeadParams>& heads) {
        std::vector<Head> out;
        for (const HeadParams& h : heads) out.push_back({h.V, scoreMatrix(spec, h), gramMatrix(spec, h)});
        return out;
    };
    if (spec.keyframes.empty()) {
        heads_.push_back(convert(spec.heads));
    } else {
        for (const Keyframe& k : spec.keyframes) {
            times_.push_back(k.t);
            heads_.push_back(convert(k.heads));
        }
    }
    if (type_ == AttentionType::Drifting) {
        targetMean_ = driftingTargetMean(spec, d);
        targetInverse_ = driftingTargetInverse(spec, d);
    }
}

// AttentionSpec::headsAt without the copy: piecewise constant, the last keyframe with time <= t (the first
// one before the first time).
template <int D, int MaxD>
const std::vector<typename FixedMomentField<D, MaxD>::Head>&
FixedMomentField<D, MaxD>::headsAt(double t) const {
    if (times_.empty()) return heads_.front();
    const auto next = std::upper_bound(times_.begin(), times_.end(), t);
    return heads_[next == times_.begin() ? 0 : std::size_t(next - times_.begin()) - 1];
}

template <int D, int MaxD>
void FixedMomentField<D, MaxD>::affine(double t, const Vector& mean, const Matrix& cov, Vector& b,
                                       Matrix& L) const {
    if (type_ == AttentionType::Drifting) return drifting(targetMean_, targetInverse_, mean, cov, b, L);
    b.setZero(mean.size());
    L.setZero(mean.size(), mean.size());
    for (const Head& h : headsAt(t)) addHead(type_, linearEps_, sinkhornEps_, h.V, h.A, h.G, mean, cov, b, L);
}

template class FixedMomentField<2>;
template class FixedMomentField<Eigen::Dynamic, 4>;

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
    if (a.normalization != Normalization::None)
        throw SceneError("/attention/normalization",
                         std::string(toString(a.normalization)) +
                             "-LN dynamics do not keep Gaussians Gaussian: use the particle simulation");
    if (a.positionalDecay != 0.0)
        throw SceneError("/attention/positional_decay",
                         "positional decay depends on the token order, which a Gaussian has not: use the "
                         "particle simulation");
    switch (a.type) {
    case AttentionType::Softmax:
    case AttentionType::Linear:
    case AttentionType::L2:
    case AttentionType::Sinkhorn:
        return std::make_unique<HeadSumMoments>(a, d);
    case AttentionType::Drifting:
        return std::make_unique<DriftingMoments>(a, d);
    case AttentionType::Exp:
    case AttentionType::Relu:
    case AttentionType::Sigmoid:
    case AttentionType::Rwpo:
    case AttentionType::Hardmax:
        break;
    }
    throw SceneError("/attention/type", std::string(toString(a.type)) +
                                            " attention does not keep Gaussians Gaussian (no closed moment "
                                            "ODE; Gaussian mode supports softmax, linear, l2, sinkhorn, "
                                            "drifting): use the particle simulation");
}

} // namespace flowscope
