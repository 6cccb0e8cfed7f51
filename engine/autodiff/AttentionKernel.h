// Flowscope engine: the float32 SIMD kernel of the tape's attention(q, k, v) (engine/autodiff/Tape.h).
//
// out_j = Σ_k w_jk v_k,  w_jk = exp(l_jk - m_j) / den_j,  l_jk = q_j · k_k (+ a_j + b_k),  m_j = max_k l_jk,
// with key self + j left out of query j's softmax when self >= 0. With keyBias, key k's logits carry a bias
// b_k and query j's a bias a_j (when queryBias is given), and the gradients have one more row each: Σ_k c_jk
// for query j (a_j's gradient) and Σ_j c_jk for key k (b_k's). As features, [q; a; 1] and [k; 1; b], the
// biases would cost two multiply-adds a pair more in each sweep and two gradient rows for constants
// (docs/math/flows.md#biased-logits).
// Forward sweeps the keys twice per query (max, then weights and sums) and keeps m_j and 1/den_j; backward
// recomputes each weight from them in one sweep, or reads the N x N weights forward wrote when the caller
// keeps them (else they are not stored). With ā_j = g_j · out_j and c_jk = w_jk (g_j · v_k - ā_j):
//     dq_j = Σ_k c_jk k_k,   dk_k += Σ_j c_jk q_j,   dv_k += Σ_j w_jk g_j.
// Keys and values are passed as structure-of-arrays (coordinate c of every key contiguous), padded with
// zeros to a multiple of 8 keys; queries, outputs and gradients as Eigen stores them (column j: f or r
// floats). 8 keys share one vector; AVX2+FMA is used when the processor has it, compiled with AVX-512VL's 32
// registers when it has that too.
#pragma once

namespace flowscope::ad::kernel {

constexpr int kKeyBlock = 8; // keys per vector: the padding unit of nkPadded

struct Attention {
    int f = 0, r = 0;          // feature (query, key) and value rows
    int nk = 0, nkPadded = 0;  // keys; nkPadded: a multiple of kKeyBlock, >= nk (the keys the sweeps visit)
    const float* kt = nullptr; // f x nkPadded: coordinate c of key k at kt[c * stride() + k], zero past nk
    const float* vt = nullptr; // r x nkPadded, the same layout
    const float* q = nullptr;  // f x nq, column-major
    int self = -1;             // query j does not see key self + j (its own); -1: it sees every key
    // Floats from one row of kt, vt, dkt, dvt (a column of weights) to the next: 0 (nkPadded), or a multiple
    // of kKeyBlock >= nkPadded.
    int rowStride = 0;
    // kt has f + 1 rows, the last the keys' biases b_k; dq and dkt in backward f + 1 rows too (above).
    bool keyBias = false;
    const float* queryBias = nullptr; // with keyBias: a_j of query j, or null (0)
    int stride() const { return rowStride > 0 ? rowStride : nkPadded; } // 0: nkPadded
};

// nk keys rounded up to whole key blocks: the nkPadded of nk keys.
constexpr int paddedKeys(int nk) {
    return (nk + kKeyBlock - 1) / kKeyBlock * kKeyBlock;
}

// The row stride for nkPadded keys: nkPadded, or 16 more when rows nkPadded floats apart would be a multiple
// of 1 KB apart. Addresses a multiple of 4 KB apart look alike to the processor's check of a load against
// the stores in flight (their low 12 bits are equal), and it then makes the load wait for a store to another
// row ("4K aliasing"). At 1024 keys every row of kt, vt, dkt, dvt and of the kept weights was 4 KB from the
// next: backward, which reads eight weight rows and writes nine gradient rows per key block, took 1.5x as
// long (docs/math/flows.md#training-speed).
constexpr int paddedStride(int nkPadded) {
    return nkPadded % 256 == 0 ? nkPadded + 2 * kKeyBlock : nkPadded;
}

// Whether the kernel handles these row counts, f features (without the bias row) and r values, with or
// without the keys' biases (else the caller takes its Eigen path).
bool supports(int f, int r, bool keyBias = false);

// Queries [j0, j1): out (r x nq, column-major) and stats (2 x nq: m_j, 1 / den_j). When `weights` is not
// null, also each query's unnormalised weights e^{l_jk - m_j} (0 for a key it does not see) into its column
// of weights (nkPadded x nq, columns stride() floats apart), for backward to read instead of recomputing
// them.
void forward(const Attention& a, int j0, int j1, float* out, float* stats, float* weights = nullptr);

// Queries [j0, j1), from the forward's out and stats and the output's gradient g (r x nq): adds dq's columns
// j0..j1 (f x nq, or f + 1 with keyBias, when dq is not null) and their key and value gradients into dkt
// (f or f + 1 x nkPadded) and dvt (r x nkPadded), rows stride() floats apart, each when not null. `weights`:
// the forward's, or null to recompute them (the same floats either way).
void backward(const Attention& a, int j0, int j1, const float* out, const float* stats, const float* g,
              float* dq, float* dkt, float* dvt, const float* weights = nullptr);

// Which implementation runs on this machine ("avx512vl", "avx2-fma" or "generic").
const char* isa();
// For tests: runs `name` ("avx512vl", "avx2-fma" or "generic") from now on. False, and nothing changes, when
// this machine or build lacks it. Not for use while attention runs on another thread.
bool selectIsa(const char* name);

} // namespace flowscope::ad::kernel
