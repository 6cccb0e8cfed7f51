// Flowscope engine: the OT-Flow potential Φ(x, t) (Onken et al. 2021, src/Phi.py) with its exact space-time
// gradient and its exact spatial Laplacian, all recorded on a matrix tape (docs/math/flows.md#potential).
//
//     Φ(s) = wᵀ u_M + ½ sᵀ AᵀA s + cᵀ s + b,                        s = [x; t] ∈ ℝ^{d+1}
//     u_0  = σ(K_0 s + b_0),   u_i = u_{i-1} + h σ(K_i u_{i-1} + b_i)  (i = 1..M),   M = nTh - 1,  h = 1/M
//     σ(u) = log(2 cosh u),    σ' = tanh,    σ'' = 1 - tanh²
//
// ∇_sΦ and Δ_xΦ are not taken by differentiating the tape: they are the closed recursions of
// docs/math/flows.md#potential, recorded op by op like Φ itself. A loss built from them (the flow's velocity
// -∇Φ, its divergence ΔΦ, the HJB residual with ∂tΦ) is therefore differentiable by backward() with respect
// to every parameter and to s, which the flow needs: the positions it evaluates Φ at depend on the parameters
// through earlier layers.
//
// Layout: a batch of B samples is a (d+1) x B matrix, one sample per column, the time in the last row.
//
//     auto params = PotentialParams<float>::init(2, 32, 2, seed), grads = params.zerosLike();
//     params.forEach(grads, [&](auto& value, auto& grad, const std::string&) { adam.add(value, grad); });
//     ad::Tape<float> tape;
//     auto out = recordPotential(tape, bind(tape, params, grads), tape.constant(S));
//     tape.backward(ad::mean(ad::add(out.phi, out.lap))); // grads += d loss / d params
#pragma once

#include "engine/autodiff/Tape.h"

#include <cstdint>
#include <string>
#include <vector>

namespace flowscope::flows {

struct PotentialDims {
    int d = 0;   // spatial dimension (s has d + 1 rows)
    int m = 0;   // width of the ResNet
    int nTh = 0; // number of ResNet layers: the opening one and nTh - 1 residual ones
    int r = 0;   // rank of A: min(10, d + 1)
};

// The parameters of Φ; a container of the same shapes holds their gradients. The matrices are visited in
// one fixed order, which is also their block index and their (export) name:
//     K0, b0, K1, b1, ..., K{nTh-1}, b{nTh-1}, w, A, c, b
template <class S> struct PotentialParams {
    using Matrix = ad::Matrix<S>;

    Matrix K0, b0;               // m x (d+1), m x 1: the opening layer
    std::vector<Matrix> K, bias; // nTh - 1 residual layers: K[i-1] = K_i (m x m), bias[i-1] = b_i (m x 1)
    Matrix w;                    // m x 1
    Matrix A;                    // r x (d+1)
    Matrix c;                    // (d+1) x 1: the linear term
    Matrix b;                    // 1 x 1: the offset

    // OT-Flow's initialization, drawn from flows::Rng(seed) in block order, each matrix in storage order:
    //  * K_i and b_i as PyTorch's nn.Linear: U(-1/√fan_in, 1/√fan_in), fan_in = d + 1 for K_0, m after.
    //    Every residual layer is drawn independently (Phi.py deep-copies layer 1, so its layers start
    //    equal; with the default nTh = 2 there is only one).
    //  * A Xavier-uniform: U(-a, a), a = √(6 / (r + d + 1)).
    //  * w = 1, c = 0, b = 0.
    // Throws std::invalid_argument unless d >= 1, m >= 1 and nTh >= 2.
    static PotentialParams init(int d, int m, int nTh, std::uint64_t seed);

    PotentialDims dims() const {
        return {int(K0.cols()) - 1, int(K0.rows()), int(K.size()) + 1, int(A.rows())};
    }

    int blockCount() const { return 6 + 2 * int(K.size()); }
    Matrix& block(int k) { return const_cast<Matrix&>(static_cast<const PotentialParams&>(*this).block(k)); }
    const Matrix& block(int k) const {
        const int n = blockCount();
        if (k == 0) return K0;
        if (k == 1) return b0;
        if (k < n - 4) return (k % 2 == 0 ? K : bias)[(k - 2) / 2];
        const Matrix* tail[4] = {&w, &A, &c, &b};
        return *tail[k - (n - 4)];
    }
    std::string blockName(int k) const {
        const int n = blockCount();
        if (k < n - 4) {
            std::string name(1, k % 2 == 0 ? 'K' : 'b');
            return name.append(std::to_string(k / 2));
        }
        const char* tail[4] = {"w", "A", "c", "b"};
        return tail[k - (n - 4)];
    }
    Eigen::Index parameterCount() const {
        Eigen::Index total = 0;
        for (int k = 0; k < blockCount(); ++k) total += block(k).size();
        return total;
    }

    // Calls f(matrix, name) for every block, in block order.
    template <class F> void forEach(F&& f) {
        for (int k = 0; k < blockCount(); ++k) f(block(k), blockName(k));
    }
    template <class F> void forEach(F&& f) const {
        for (int k = 0; k < blockCount(); ++k) f(block(k), blockName(k));
    }
    // Calls f(value, grad, name) for every block of *this and the same block of grads; grads is first made
    // zerosLike() when its shapes are not those of *this.
    template <class F> void forEach(PotentialParams& grads, F&& f) {
        if (!sameShape(grads)) grads = zerosLike();
        for (int k = 0; k < blockCount(); ++k) f(block(k), grads.block(k), blockName(k));
    }

    bool sameShape(const PotentialParams& o) const {
        if (o.blockCount() != blockCount()) return false;
        for (int k = 0; k < blockCount(); ++k)
            if (o.block(k).rows() != block(k).rows() || o.block(k).cols() != block(k).cols()) return false;
        return true;
    }
    PotentialParams zerosLike() const {
        PotentialParams z = *this;
        for (int k = 0; k < blockCount(); ++k) z.block(k).setZero();
        return z;
    }
    template <class T> PotentialParams<T> cast() const {
        PotentialParams<T> o;
        o.K.resize(K.size());
        o.bias.resize(bias.size());
        for (int k = 0; k < blockCount(); ++k) o.block(k) = block(k).template cast<T>();
        return o;
    }
};

// The parameters as nodes of one tape, in the same order and shapes.
template <class S> struct BoundPotential {
    using Var = ad::Var<S>;

    Var K0, b0;
    std::vector<Var> K, bias;
    Var w, A, c, b;

    // From 6 + 2 (nTh - 1) Vars in block order (e.g. the inputs of a gradient check).
    static BoundPotential fromList(const std::vector<Var>& blocks);
};

// Binds every block of p as a tape parameter whose gradient backward() adds into the same block of grads
// (made p.zerosLike() first when its shapes differ). p and grads must stay alive and unchanged until
// backward() has run.
template <class S>
BoundPotential<S> bind(ad::Tape<S>& tape, const PotentialParams<S>& p, PotentialParams<S>& grads);
// Binds copies of the blocks as constants: evaluation without parameter gradients.
template <class S> BoundPotential<S> bindConstant(ad::Tape<S>& tape, const PotentialParams<S>& p);

template <class S> struct PotentialOutputs {
    ad::Var<S> phi;  // 1 x B: Φ(s); an empty Var (no tape) when not asked for
    ad::Var<S> grad; // (d+1) x B: ∇_sΦ; rows 0..d-1 are ∇_xΦ, row d is ∂tΦ
    ad::Var<S> lap;  // 1 x B: Δ_xΦ, the trace of the spatial Hessian (time row and column excluded)
    // With `hessian` requested: the spatial Hessian ∇²_xΦ, its upper triangle row by row ((0,0), (0,1), ..,
    // (0,d-1), (1,1), ..), each entry 1 x B; empty otherwise.
    std::vector<ad::Var<S>> hessian;
};

// The index of entry (a, b), a <= b, of PotentialOutputs::hessian in dimension d.
inline int hessianIndex(int a, int b, int d) {
    return a * d - a * (a - 1) / 2 + (b - a);
}

// Records Φ, ∇_sΦ and Δ_xΦ at the columns of s ((d+1) x B) with the parameters p bound on the same tape.
// 48 nodes for d = 2, nTh = 2 (besides the parameters and s), 74 for nTh = 3, 97 for nTh = 4; the costliest
// are the GEMMs of the K_i with the spatial Jacobian, O(m² d B).
// `hessian` also records the whole spatial Hessian by the same recursion (docs/math/flows.md#potential,
// with the products of two Jacobian columns in place of the squares; each residual layer's entries in one
// colWeightedGram): 81 nodes for d = 2, nTh = 2.
// `value` false leaves Φ itself out (its last layer's σ and the terms of Φ alone): for losses of its
// derivatives only, as the flow's. Throws std::invalid_argument when s does not have d + 1 rows (and, from
// the ops, on any other mismatch).
template <class S>
PotentialOutputs<S> recordPotential(ad::Tape<S>& tape, const BoundPotential<S>& p, ad::Var<S> s,
                                    bool hessian = false, bool value = true);

} // namespace flowscope::flows
