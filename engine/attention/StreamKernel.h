// Flowscope engine: the streaming attention kernel shared by every dot-product-like variant.
//
// For each query i it sweeps the keys j once (twice for the max) and accumulates
//     den_i = sum_j w(s_ij),   num_i = sum_j w(s_ij) x_j,   s_ij = q_i . x_j + b_j,
// without ever storing the N x N score matrix (memory O(N d)). The weight w is one of
//     Softmax: exp(s_ij - m_i) with m_i = max_j s_ij (max-subtracted, so den_i >= 1),
//     Exp:     exp(s_ij - m_i) as well (the caller multiplies by exp(m_i) / N),
//     Relu:    max(s_ij, 0),   Sigmoid: 1 / (1 + exp(-s_ij)).
// Keys, values and queries are stored as structure-of-arrays (coordinate c of all points contiguous).
// Every variant reduces to this: softmax (q = beta A x), l2 (q = 2 beta A x, b = -beta |K y|^2), Sinkhorn
// (potentials as biases), RWPO (q = beta/(2h) x, b = Huber tilt), masked (causal range).
#pragma once

#include <cstddef>

namespace flowscope {

enum class Weighting { Softmax, Exp, Relu, Sigmoid };

template <class S> struct StreamArgs {
    int n = 0;                  // number of keys
    int d = 0;                  // dimension
    const S* keys = nullptr;    // n x d SoA: coordinate c of key j at keys[c * n + j]; values are the keys
    const S* bias = nullptr;    // n additive key biases, or null
    const S* queries = nullptr; // nq x d SoA: coordinate c of query i at queries[c * nq + i]
    int nq = 0;
    bool causal = false; // query i only sees keys j <= i (requires nq == n)
    // Positional decay (ALiBi): s_ij -= decay |i - j|, computed per pair in the sweep (no table); 0: off.
    // Requires nq == n and a weighting of exponentials (Softmax, Exp).
    S decay = 0;
    Weighting weighting = Weighting::Softmax;
    bool values = true; // accumulate num (false: only den and max, e.g. log-sum-exp passes)
    S* num = nullptr;   // nq x d SoA output (when values)
    S* den = nullptr;   // nq output
    S* max = nullptr;   // nq output: m_i (Softmax/Exp), 0 otherwise
    // Optional nq output (Softmax/Exp): e_i = sum_j w_ij (s_ij - m_i), in the same sweep. With it the
    // attention entropy costs one multiply-add per pair: H_i = -sum_j p_ij log p_ij = log den_i - e_i /
    // den_i.
    S* ent = nullptr;
};

// SIMD (AVX2+FMA when the processor has it: 8 float32 or 4 float64 lanes), threads across queries. Both
// precisions run the same code (kernels/StreamKernelSimd.inc) with an exp of their own; float64 is within
// 1e-13 relative of a long-double evaluation (tests/engine/test_stream_kernel.cpp). d > 64 runs blocks of
// queries as matrix products (scores, then numerators).
void streamKernel(const StreamArgs<float>& a);
void streamKernel(const StreamArgs<double>& a);

// Which implementation runs on this machine, in both precisions ("avx2-fma" or "generic").
const char* streamKernelIsa();

// Measured float32 peak of this machine in flop/s over all threads (independent multiply-adds in the kernel's
// ISA, 2 flops per lane), for "fraction of peak" reports. Takes about `seconds`.
double measuredFp32Peak(double seconds = 0.3);

} // namespace flowscope
