#include "engine/gaussian/Regime.h"

#include "engine/attention/KernelAttention.h"
#include "engine/gaussian/ClosedForms.h"

#include <cmath>
#include <sstream>

namespace flowscope {

namespace {

Vec symmetricEigenvalues(const Mat& M) {
    return Eigen::SelfAdjointEigenSolver<Mat>(Mat(0.5 * (M + M.transpose())), Eigen::EigenvaluesOnly)
        .eigenvalues();
}

} // namespace

RegimePrediction predictRegime(const Scene& scene, const Mat& sigma0, double t, double from) {
    const int d = scene.d;
    const AttentionSpec& a = scene.attention;
    const std::vector<HeadParams> heads = a.headsAt(t);
    Mat sumA = Mat::Zero(d, d), B = Mat::Zero(d, d);
    for (const HeadParams& h : heads) {
        const Mat A = scoreScale(a, h) * h.K.transpose() * h.Q;
        sumA += A;
        B += commutingB(h.V, A);
    }
    RegimePrediction p;
    p.eigenvaluesSymA = symmetricEigenvalues(sumA + sumA.transpose());
    p.eigenvaluesB = symmetricEigenvalues(B);
    const double scale = std::max(1.0, p.eigenvaluesB.cwiseAbs().maxCoeff());
    const double tol = 1e-10 * scale;
    p.blowUp = p.eigenvaluesB.size() > 0 && p.eigenvaluesB.maxCoeff() > tol;
    const int zeros = int((p.eigenvaluesB.array().abs() <= tol).count());

    std::ostringstream s;
    s.precision(4);
    switch (a.type) {
    case AttentionType::Softmax:
        if (a.masked || a.sphere || a.normalization != Normalization::None || a.positionalDecay != 0.0) {
            s << "Masked and sphere dynamics have no Gaussian closed form: no prediction.";
            break;
        }
        p.commuting = heads.size() == 1 && commutes(heads[0].V, sumA, sigma0);
        if (p.commuting) {
            if (p.blowUp) {
                const double after = commutingBlowupTime(B, sigma0);
                p.tMax = from + after;
                s << "Finite-time blow-up at t_max = " << *p.tMax;
                if (from > 0) s << " (" << after << " after t = " << from << ")";
                s << " (Prop 2: V commutes with Σ₀, and B = VA + AᵀVᵀ has a positive eigenvalue).";
            } else {
                p.limitRank = zeros;
                s << (zeros == 0 ? "Collapse to a single cluster: Σ → 0"
                                 : "Convergence to a rank-" + std::to_string(zeros) +
                                       " covariance: the mass concentrates on a " + std::to_string(zeros) +
                                       "-dimensional affine subspace")
                  << " (Prop 2: B ≤ 0 with " << zeros << " zero eigenvalue" << (zeros == 1 ? "" : "s")
                  << ").";
            }
        } else if (p.blowUp) {
            s << "B = VA + AᵀVᵀ has a positive eigenvalue: blow-up is likely (Prop 2 needs V to commute with "
                 "Σ₀ and B, which fails here: no guarantee).";
        } else {
            s << "B = VA + AᵀVᵀ ≤ 0: convergence is likely (proved only when V commutes with Σ₀ and B).";
        }
        break;
    case AttentionType::L2:
        s << "l2 attention has no finite-time blow-up (Lemma 4.9): covariances converge or grow "
             "exponentially.";
        break;
    case AttentionType::Sinkhorn:
        s << "Sinkhorn: the mean follows exp(tV/ε) α₀ exactly; the covariance grows at most exponentially "
             "(no "
             "finite-time blow-up, Prop 9 in 1-D).";
        break;
    case AttentionType::Linear:
        s << "Linear attention: even a single token can blow up in finite time (x' = a v x³ in 1-D).";
        break;
    default:
        s << "This variant does not keep Gaussians Gaussian: no closed-form prediction.";
        break;
    }
    p.summary = s.str();
    return p;
}

} // namespace flowscope
