// Flowscope: the streaming attention kernel (engine/attention/StreamKernel.h) as a compute shader.
//
// For each query i, in one pass over the keys j (never an N x N matrix):
//     den_i = sum_j w(s_ij),   num_i = sum_j w(s_ij) x_j,   s_ij = q_i . x_j + b_j,
// with w = exp(s - m_i) (softmax, exp; m_i = max_j s_ij), max(s, 0) (relu) or 1 / (1 + exp(-s)) (sigmoid).
//
// No #version line: the host prepends "#version 430" and the knobs below as #defines (OpenGL, one program per
// variant), or glslc compiles it once with -std=450 for Vulkan, which predefines VULKAN and where the knobs are
// specialization constants (constant_id in brackets): one SPIR-V module serves every variant, and the driver
// folds the knobs when it builds each pipeline. So the body tests them with plain `if`s, not #if.
//     DIM               (0) the dimension d
//     WEIGHTING         (1) 0 softmax, 1 exp, 2 relu, 3 sigmoid (the order of flowscope::Weighting)
//     CAUSAL            (2) 1: query i sees keys j <= i only (then nq == n)
//     HAS_BIAS          (3) 1: scores add the key bias b_j
//     EXPLICIT_QUERIES  (4) 1: q_i read from the queries buffer; 0: q_i = B x_i, x_i = key i (then nq == n)
//     TILE              (5) invocations per workgroup = keys swept per step (Vulkan: also local_size_x_id)
//     STAGE_IN_SHARED   (6) 1: each step's keys are first staged in shared memory (GPUs); 0: read from the
//                       buffer (all invocations read the same key at once, a broadcast load). llvmpipe runs
//                       barriers as coroutine switches and is ~2x faster without staging.
//     VALUES            (7) 1: accumulate num; 0: den and max only (Sinkhorn's log-sum-exp passes), the num
//                       columns of out are left unwritten. Optional: 1 when the host does not set it.
//     ENTROPY           (8) 1 (softmax, exp): also e_i = sum_j w_ij (s_ij - m_i), the attention entropy's
//                       second term (H_i = log den_i - e_i / den_i), in column DIM+2 of out. Optional: 0.
//
// Buffers (std430, binding only, so set 0 in Vulkan). Arrays of points are structure-of-arrays like
// StreamArgs and Eigen's column-major tokens: coordinate c of point j at [c * count + j].
//     0  Params   n, nq, two pads, then B row-major (q_c = sum_k B[c * DIM + k] x_k; DIM * DIM floats)
//     1  keys     n x DIM (the keys are also the values)
//     2  bias     n                              (read only when HAS_BIAS)
//     3  queries  nq x DIM                       (read only when EXPLICIT_QUERIES)
//     4  out      nq x (DIM + 2), or nq x (DIM + 3) with ENTROPY: columns 0..DIM-1 num (when VALUES), column
//                 DIM den, column DIM+1 max (m_i; 0 for relu and sigmoid), column DIM+2 e_i (ENTROPY), i.e.
//                 out[c * nq + i]
//
// Scheme (n-body / KeOps / FlashAttention): one invocation per query; each workgroup stages TILE keys at a
// time in shared memory and every invocation sweeps them from there. All invocations of a workgroup loop
// over the same keys (a uniform trip count; causal masking is a zero weight), so the keys are uniform loads. Softmax is streamed: per tile, the
// running max m is raised to the tile's max first and the running sums are rescaled by exp(m_old - m_new)
// once, so each key costs one exp. Each tile is summed on its own before it is added to the running sums
// (blocked summation: rounding grows with TILE + n / TILE rather than n, like the CPU kernel's blocks).
//
// Every buffer and the shared tile are declared whatever the knobs (a specialization constant cannot remove a
// declaration); a Vulkan host binds a small placeholder where a buffer is not read.

#ifdef VULKAN
layout(constant_id = 0) const int DIM = 1;
layout(constant_id = 1) const int WEIGHTING = 0;
layout(constant_id = 2) const int CAUSAL = 0;
layout(constant_id = 3) const int HAS_BIAS = 0;
layout(constant_id = 4) const int EXPLICIT_QUERIES = 0;
layout(constant_id = 5) const int TILE = 64;
layout(constant_id = 6) const int STAGE_IN_SHARED = 0;
layout(constant_id = 7) const int VALUES = 1;
layout(constant_id = 8) const int ENTROPY = 0;
layout(local_size_x_id = 5) in;
#else
#ifndef VALUES
#define VALUES 1
#endif
#ifndef ENTROPY
#define ENTROPY 0
#endif
layout(local_size_x = TILE) in;
#endif

layout(std430, binding = 0) readonly buffer Params {
    uint n;
    uint nq;
    uint pad0;
    uint pad1;
    float B[]; // DIM * DIM
} params;
layout(std430, binding = 1) readonly buffer Keys {
    float keys[];
};
layout(std430, binding = 2) readonly buffer Bias {
    float bias[];
};
layout(std430, binding = 3) readonly buffer Queries {
    float queries[];
};
layout(std430, binding = 4) writeonly buffer Out {
    float outv[];
};

shared float tileKey[DIM * TILE]; // STAGE_IN_SHARED: coordinate c of staged key k at [c * TILE + k]
shared float tileBias[TILE];

// Coordinate c and bias of key base + k, k < TILE: from the staged tile, or straight from the buffers.
float key(uint c, uint base, uint k) {
    if (STAGE_IN_SHARED != 0) return tileKey[c * uint(TILE) + k];
    return keys[c * params.n + base + k];
}
float keyBias(uint base, uint k) {
    if (STAGE_IN_SHARED != 0) return tileBias[k];
    return HAS_BIAS != 0 ? bias[base + k] : 0.0;
}

float score(float q[DIM], uint base, uint k) {
    float s = keyBias(base, k);
    for (uint c = 0u; c < uint(DIM); ++c) s += q[c] * key(c, base, k);
    return s;
}

float weight(float s, float m) {
    if (WEIGHTING <= 1) return exp(s - m);
    if (WEIGHTING == 2) return max(s, 0.0);
    return 1.0 / (1.0 + exp(-s));
}

void main() {
    const uint n = params.n, nq = params.nq;
    const uint i = gl_GlobalInvocationID.x, lane = gl_LocalInvocationID.x;
    // Invocations past the last query still stage keys and meet every barrier; they just see no key.
    const bool live = i < nq;
    const uint qi = live ? i : 0u;

    float q[DIM];
    if (EXPLICIT_QUERIES != 0) {
        for (uint c = 0u; c < uint(DIM); ++c) q[c] = queries[c * nq + qi];
    } else {
        float x[DIM];
        for (uint c = 0u; c < uint(DIM); ++c) x[c] = keys[c * n + qi];
        for (uint c = 0u; c < uint(DIM); ++c) {
            float s = 0.0;
            for (uint k = 0u; k < uint(DIM); ++k) s += params.B[c * uint(DIM) + k] * x[k];
            q[c] = s;
        }
    }

    // end: keys this query sees; groupEnd: keys any query of the workgroup sees.
    const uint end = !live ? 0u : (CAUSAL != 0 ? i + 1u : n);
    const uint groupEnd = CAUSAL != 0 ? min(n, (gl_WorkGroupID.x + 1u) * uint(TILE)) : n;

    float m = -3.402823466e38; // running max; any finite start works, den == 0 marks "nothing seen yet"
    float den = 0.0;
    float ent = 0.0; // ENTROPY: sum_j w_ij (s_ij - m), rescaled with den when m rises
    float num[DIM];
    for (uint c = 0u; c < uint(DIM); ++c) num[c] = 0.0;

    for (uint base = 0u; base < groupEnd; base += uint(TILE)) {
        if (STAGE_IN_SHARED != 0) {
            const uint j = base + lane;
            if (j < n) {
                for (uint c = 0u; c < uint(DIM); ++c) tileKey[c * uint(TILE) + lane] = keys[c * n + j];
                tileBias[lane] = HAS_BIAS != 0 ? bias[j] : 0.0;
            }
            memoryBarrierShared();
            barrier();
        }

        // Every invocation loops over the same (uniform) count, so key reads are broadcasts and control
        // flow stays uniform; keys past `end` (causal) weigh nothing.
        const uint count = min(uint(TILE), groupEnd - base);
        if (WEIGHTING <= 1) {
            float tm = m;
            for (uint k = 0u; k < count; ++k) {
                const float s = score(q, base, k);
                if (CAUSAL == 0 || base + k < end) tm = max(tm, s);
            }
            if (tm > m) {
                if (den > 0.0) {
                    const float r = exp(m - tm);
                    // w (s - tm) = r w_old ((s - m) - (tm - m)), summed: r (e - (tm - m) den_old).
                    if (ENTROPY != 0) ent = r * (ent - (tm - m) * den);
                    den *= r;
                    if (VALUES != 0)
                        for (uint c = 0u; c < uint(DIM); ++c) num[c] *= r;
                }
                m = tm;
            }
        }
        float tden = 0.0, tent = 0.0;
        float tnum[DIM];
        for (uint c = 0u; c < uint(DIM); ++c) tnum[c] = 0.0;
        for (uint k = 0u; k < count; ++k) {
            const float s = score(q, base, k);
            const float w = CAUSAL == 0 || base + k < end ? weight(s, m) : 0.0;
            tden += w;
            if (ENTROPY != 0) tent += w * (s - m);
            if (VALUES != 0)
                for (uint c = 0u; c < uint(DIM); ++c) tnum[c] += w * key(c, base, k);
        }
        den += tden;
        ent += tent;
        if (VALUES != 0)
            for (uint c = 0u; c < uint(DIM); ++c) num[c] += tnum[c];

        if (STAGE_IN_SHARED != 0) barrier(); // the tile is overwritten next
    }

    if (!live) return;
    if (VALUES != 0)
        for (uint c = 0u; c < uint(DIM); ++c) outv[c * nq + i] = num[c];
    outv[uint(DIM) * nq + i] = den;
    outv[uint(DIM + 1) * nq + i] = WEIGHTING <= 1 ? m : 0.0;
    if (ENTROPY != 0) outv[uint(DIM + 2) * nq + i] = ent;
}
