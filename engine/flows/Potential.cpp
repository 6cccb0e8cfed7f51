// Flowscope engine: the OT-Flow potential and its exact gradient and Laplacian, recorded on a tape.
#include "engine/flows/Potential.h"

#include "engine/flows/Datasets.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace flowscope::flows {

namespace {

template <class S> ad::Matrix<S> uniform(Eigen::Index rows, Eigen::Index cols, double bound, Rng& rng) {
    ad::Matrix<S> m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = S(bound * (2.0 * rng.uniform() - 1.0));
    return m;
}

} // namespace

template <class S> PotentialParams<S> PotentialParams<S>::init(int d, int m, int nTh, std::uint64_t seed) {
    if (d < 1 || m < 1 || nTh < 2)
        throw std::invalid_argument(
            "PotentialParams::init: need d >= 1, m >= 1 and nTh >= 2 (got d = " + std::to_string(d) +
            ", m = " + std::to_string(m) + ", nTh = " + std::to_string(nTh) + ")");
    Rng rng(seed);
    const int r = std::min(10, d + 1);
    PotentialParams p;
    const double open = 1.0 / std::sqrt(double(d + 1)), hidden = 1.0 / std::sqrt(double(m));
    p.K0 = uniform<S>(m, d + 1, open, rng);
    p.b0 = uniform<S>(m, 1, open, rng);
    for (int i = 1; i < nTh; ++i) {
        p.K.push_back(uniform<S>(m, m, hidden, rng));
        p.bias.push_back(uniform<S>(m, 1, hidden, rng));
    }
    p.w = Matrix::Ones(m, 1);
    p.A = uniform<S>(r, d + 1, std::sqrt(6.0 / double(r + d + 1)), rng);
    p.c = Matrix::Zero(d + 1, 1);
    p.b = Matrix::Zero(1, 1);
    return p;
}

template <class S> BoundPotential<S> BoundPotential<S>::fromList(const std::vector<Var>& blocks) {
    const int n = int(blocks.size());
    if (n < 8 || n % 2 != 0)
        throw std::invalid_argument("BoundPotential::fromList: " + std::to_string(n) +
                                    " blocks; need 6 + 2 (nTh - 1) with nTh >= 2");
    BoundPotential p;
    p.K0 = blocks[0];
    p.b0 = blocks[1];
    for (int k = 2; k < n - 4; k += 2) {
        p.K.push_back(blocks[k]);
        p.bias.push_back(blocks[k + 1]);
    }
    p.w = blocks[n - 4];
    p.A = blocks[n - 3];
    p.c = blocks[n - 2];
    p.b = blocks[n - 1];
    return p;
}

template <class S>
BoundPotential<S> bind(ad::Tape<S>& tape, const PotentialParams<S>& p, PotentialParams<S>& grads) {
    if (!p.sameShape(grads)) grads = p.zerosLike();
    std::vector<ad::Var<S>> blocks;
    for (int k = 0; k < p.blockCount(); ++k) blocks.push_back(tape.parameter(p.block(k), grads.block(k)));
    return BoundPotential<S>::fromList(blocks);
}

template <class S> BoundPotential<S> bindConstant(ad::Tape<S>& tape, const PotentialParams<S>& p) {
    std::vector<ad::Var<S>> blocks;
    for (int k = 0; k < p.blockCount(); ++k) blocks.push_back(tape.constant(p.block(k)));
    return BoundPotential<S>::fromList(blocks);
}

// The recursions of docs/math/flows.md#potential, with a_i the pre-activations and T_i = tanh(a_i) = σ'(a_i):
//
//   gradient    z_{M+1} = w,   z_i = z_{i+1} + h K_iᵀ (T_i ⊙ z_{i+1})  (i = M..1),   z_0 = K_0ᵀ (T_0 ⊙ z_1)
//               ∇_sΦ = z_0 + AᵀA s + c
//   Laplacian   t_0 = Σ_k [σ''(a_0) ⊙ z_1]_k Σ_{j<d} (K_0)_kj²
//               J_0 = diag(T_0) K_0[:, :d]                                      (∂u_0/∂x, m x d per sample)
//               P_i = K_i J_{i-1},  t_i = Σ_k [σ''(a_i) ⊙ z_{i+1}]_k Σ_j (P_i)_kj²,
//               J_i = J_{i-1} + h diag(T_i) P_i                                  (i = 1..M)
//               Δ_xΦ = t_0 + h Σ_i t_i + Σ_{j<d} (AᵀA)_jj
//
// Per sample J is m x d. For the batch it is one m x (d B) matrix whose column block j (B columns) holds
// ∂u/∂x_j of every sample, so P_i = K_i J_{i-1} is a single GEMM over all samples and coordinates, and the
// per-sample factors diag(T_i) act on each block through a d-fold horizontal copy of T_i.
template <class S>
PotentialOutputs<S> recordPotential(ad::Tape<S>& tape, const BoundPotential<S>& p, ad::Var<S> s, bool hessian,
                                    bool value) {
    using Var = ad::Var<S>;
    const ad::Index d = p.K0.cols() - 1, B = s.cols();
    const int M = int(p.K.size());
    if (s.tape != &tape || s.rows() != d + 1)
        throw std::invalid_argument("recordPotential: s must be a (d+1) x B Var of this tape with d + 1 = " +
                                    std::to_string(d + 1) + " (got " + std::to_string(s.rows()) + " rows)");
    if (M < 1 || int(p.bias.size()) != M)
        throw std::invalid_argument("recordPotential: need nTh >= 2 with one bias per residual layer");
    const S h = S(1) / S(M);
    // x h: with one residual layer (nTh = 2, the default) h = 1, and the product, exact, is not recorded (a
    // pass over an m x B matrix forward and one backward for nothing).
    auto timesH = [h](Var x) { return h == S(1) ? x : ad::scale(x, h); };

    // Forward: a_i, T_i = tanh(a_i), u_i (σ(a_i) reuses T_i for its derivative). u_M enters Φ alone, not its
    // derivatives: without `value` it is not recorded.
    std::vector<Var> T(M + 1);
    Var a = ad::addCol(ad::matmul(p.K0, s), p.b0);
    T[0] = ad::tanh(a);
    Var u = ad::logCosh(a, T[0]);
    for (int i = 1; i <= M; ++i) {
        a = ad::addCol(ad::matmul(p.K[i - 1], u), p.bias[i - 1]);
        T[i] = ad::tanh(a);
        if (i < M || value) u = ad::add(u, timesH(ad::logCosh(a, T[i])));
    }
    const Var As = ad::matmul(p.A, s); // r x B
    Var phi;
    if (value) {
        phi = ad::add(ad::matmulTN(p.w, u), ad::scale(ad::colSumSquares(As), S(0.5)));
        phi = ad::addScalar(ad::add(phi, ad::matmulTN(p.c, s)), p.b);
    }

    // Gradient: z[1..M] (m x B); z_{M+1} = w is one column, broadcast by timesZ. Tz[i] = T_i ⊙ z_{i+1}.
    std::vector<Var> z(M + 1), Tz(M + 1);
    auto timesZ = [&](Var x, int k) { return k == M + 1 ? ad::mulCol(x, p.w) : ad::mul(x, z[k]); }; // x ⊙ z_k
    for (int i = M; i >= 1; --i) {
        Tz[i] = timesZ(T[i], i + 1);
        const Var step = timesH(ad::matmulTN(p.K[i - 1], Tz[i]));
        z[i] = i == M ? ad::addCol(step, p.w) : ad::add(step, z[i + 1]);
    }
    Tz[0] = timesZ(T[0], 1);
    const Var z0 = ad::matmulTN(p.K0, Tz[0]);
    const Var grad = ad::addCol(ad::add(z0, ad::matmulTN(p.A, As)), p.c);

    // Laplacian, and the Hessian when asked: entry (a, b) takes the products of Jacobian columns a and b
    // where the Laplacian takes the squares, so its diagonal is the Laplacian's per-coordinate terms.
    // σ''(a_i) ⊙ z_{i+1} = (1 - T_i²) ⊙ z_{i+1} = z_{i+1} - T_i ⊙ Tz[i], from the gradient's T_i ⊙ z_{i+1}.
    auto sigma2Z = [&](int i) {
        const Var TTz = ad::mul(T[i], Tz[i]);
        return i == M ? ad::addCol(ad::neg(TTz), p.w) : ad::sub(z[i + 1], TTz);
    };
    auto repeat = [d](Var x) { return d == 1 ? x : ad::hstack(std::vector<Var>(std::size_t(d), x)); };
    std::vector<Var> H(hessian ? std::size_t(d * (d + 1) / 2) : 0);
    auto accumulate = [&](ad::Index a, ad::Index b, Var term) {
        Var& entry = H[std::size_t(hessianIndex(int(a), int(b), int(d)))];
        entry = entry.tape ? ad::add(entry, term) : term;
    };
    const Var K0x = ad::cols(p.K0, 0, d);
    const Var w0 = sigma2Z(0);
    Var lap = ad::matmulTN(ad::rowSum(ad::square(K0x)), w0); // t_0
    for (ad::Index a = 0; hessian && a < d; ++a)
        for (ad::Index b = a; b < d; ++b)
            accumulate(a, b, ad::matmulTN(ad::mul(ad::cols(K0x, a, 1), ad::cols(K0x, b, 1)), w0));
    std::vector<Var> J0;
    for (ad::Index j = 0; j < d; ++j) J0.push_back(ad::mulCol(T[0], ad::cols(K0x, j, 1)));
    Var J = d == 1 ? J0[0] : ad::hstack(J0);
    for (int i = 1; i <= M; ++i) {
        const Var P = ad::matmul(p.K[i - 1], J); // m x dB
        const Var wi = sigma2Z(i);
        // The level's terms: the Laplacian's per-coordinate ones, 1 x dB (colSum(repeat(wi) ⊙ P²)), or with
        // the Hessian all its entries at once, d(d+1)/2 x B in hessianIndex order.
        const Var q = hessian ? ad::colWeightedGram(P, wi) : ad::colSumWeightedSquares(P, wi);
        auto entry = [&](ad::Index a, ad::Index b) {
            return hessian ? ad::rows(q, hessianIndex(int(a), int(b), int(d)), 1) : ad::cols(q, a * B, B);
        };
        Var ti = entry(0, 0);
        for (ad::Index j = 1; j < d; ++j) ti = ad::add(ti, entry(j, j));
        lap = ad::add(lap, timesH(ti));
        for (ad::Index a = 0; hessian && a < d; ++a)
            for (ad::Index b = a; b < d; ++b) accumulate(a, b, timesH(entry(a, b)));
        if (i < M) J = ad::add(J, timesH(ad::mul(repeat(T[i]), P)));
    }
    const Var Ax = ad::cols(p.A, 0, d);
    lap = ad::addScalar(lap, ad::sumSquares(Ax)); // tr((AᵀA)[:d, :d]) = ‖A[:, :d]‖²_F
    for (ad::Index a = 0; hessian && a < d; ++a)
        for (ad::Index b = a; b < d; ++b) { // + (AᵀA)_ab
            Var& entry = H[std::size_t(hessianIndex(int(a), int(b), int(d)))];
            entry = ad::addScalar(entry, ad::sum(ad::mul(ad::cols(Ax, a, 1), ad::cols(Ax, b, 1))));
        }
    return {phi, grad, lap, H};
}

#define FLOWSCOPE_POTENTIAL_INSTANTIATE(S)                                                                   \
    template struct PotentialParams<S>;                                                                      \
    template struct BoundPotential<S>;                                                                       \
    template BoundPotential<S> bind(ad::Tape<S>&, const PotentialParams<S>&, PotentialParams<S>&);           \
    template BoundPotential<S> bindConstant(ad::Tape<S>&, const PotentialParams<S>&);                        \
    template PotentialOutputs<S> recordPotential(ad::Tape<S>&, const BoundPotential<S>&, ad::Var<S>, bool,   \
                                                 bool);

FLOWSCOPE_POTENTIAL_INSTANTIATE(float)
FLOWSCOPE_POTENTIAL_INSTANTIATE(double)

} // namespace flowscope::flows
