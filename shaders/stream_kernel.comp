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
//     QPT               (9) queries per invocation (1, 2, 4): a workgroup serves QPT * TILE queries, and each
//                       key read from the tile serves QPT of them. Optional: 1.
//     UNROLL           (10) keys swept per step of the inner loop (1, 2, 4, 8). Optional: 4.
//     QUAD_BIAS        (11) 1: key biases b_j = -x_j^T M x_j formed here from the keys, M (DIM x DIM,
//                       row-major) after B in Params (l2 attention on tokens the device holds; not with
//                       HAS_BIAS). Optional: 0.
//     POS_DECAY        (12) 1: positional decay (ALiBi), s_ij -= slope |i - j| with slope = params.slope, the
//                       query's index i and the key's j (then nq == n; softmax and exp only). Computed per
//                       pair from the two indices: no table. Optional: 0.
//     LOG2_SCORES      (13) 1 (softmax, exp): scores are formed in log2 units, the queries (and the bias slot,
//                       and the decay slope) scaled by log2(e) once per query, so a weight is exp2(s - m)
//                       without a multiply per pair. m and e_i are written back in natural units. Optional: 0.
//     TILE_BOUND       (14) 1 (softmax, exp, STAGE_IN_SHARED, no HAS_BIAS or QUAD_BIAS): the staging also finds
//                       the tile's largest key norm R, and a query whose bound |q| R on the tile's scores is
//                       within BOUND_MARGIN of its running max sweeps the tile without tracking the max: the
//                       weights stay below 2^64, and m stays a reference value below the max (every host
//                       uses m only as m + log den or e^m num, which a reference serves). Optional: 0.
//
// Buffers (std430, binding only, so set 0 in Vulkan). Arrays of points are structure-of-arrays like
// StreamArgs and Eigen's column-major tokens: coordinate c of point j at [c * count + j].
//     0  Params   n, nq, slope (float; read only when POS_DECAY), a pad, then B row-major (q_c = sum_k
//                 B[c * DIM + k] x_k; DIM * DIM floats), then M row-major with QUAD_BIAS
//     1  keys     n x DIM (the keys are also the values)
//     2  bias     n                              (read only when HAS_BIAS)
//     3  queries  nq x DIM                       (read only when EXPLICIT_QUERIES)
//     4  out      nq x (DIM + 2), or nq x (DIM + 3) with ENTROPY: columns 0..DIM-1 num (when VALUES), column
//                 DIM den, column DIM+1 max (m_i; 0 for relu and sigmoid), column DIM+2 e_i (ENTROPY), i.e.
//                 out[c * nq + i]
//
// Scheme (n-body / KeOps / FlashAttention; docs/gpu.md#the-streaming-kernel):
// - Workgroup g serves queries (g QPT + r) TILE + lane, r < QPT. Its invocations stage TILE keys at a time in
//   shared memory and all sweep them in the same order (a uniform trip count; causal masking is a zero
//   weight), so every key read is a broadcast.
// - A key is staged as CH = ceil((DIM + 1) / 4) vec4 chunks: its coordinates, then its bias, then zeros. A
//   query is held as chunks of the same shape with a 1 where the bias sits, so the score with the bias is CH
//   dot products: for d = 3 one 16-byte shared load and four multiply-adds per pair, the load shared by QPT
//   queries.
// - w = exp2((s - m) L), L = log2(e): s - m is exact for the scores near the max, which carry the weight, and
//   exp2 is the one special-function instruction GPUs have for it. The forms one instruction cheaper round
//   that difference: exp2(fma(s, L, -m L)) missed the float32 criterion on an H200 (N <= 2, Sinkhorn at
//   d = 8), and folding L into the queries rounds m, which log-sum-exps (Sinkhorn, the energy) need exact:
//   LOG2_SCORES does it only for softmax averages, which do not read m.
// - TILE_BOUND: after the first tile, almost every query's scores are bounded near its max, and such a tile is
//   swept without a max (no compare per pair, no branch per UNROLL keys).
// - The running max is raised lazily: UNROLL keys are scored at once, and when the largest exceeds the
//   running max the sums are rescaled by e^(m_old - max) first. The max of a random order of N keys rises
//   about ln N times, so a pair costs one score and one exp2 (no second sweep of the tile for its max), and
//   the UNROLL scores and weights, being independent, overlap in the pipeline.
// - Blocked, compensated sums: each tile is summed on its own, and the tile sums are added to the running
//   sums with Kahan's compensation (den and e_i always; num when DIM <= 4, where it costs no occupancy). The
//   rounding of a sum of N weights is then about (TILE + 2) eps relative, independent of N
//   (docs/gpu.md#accuracy).
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
layout(constant_id = 9) const int QPT = 1;
layout(constant_id = 10) const int UNROLL = 4;
layout(constant_id = 11) const int QUAD_BIAS = 0;
layout(constant_id = 12) const int POS_DECAY = 0;
layout(constant_id = 13) const int LOG2_SCORES = 0;
layout(constant_id = 14) const int TILE_BOUND = 0;
layout(local_size_x_id = 5) in;
#else
#ifndef VALUES
#define VALUES 1
#endif
#ifndef ENTROPY
#define ENTROPY 0
#endif
#ifndef QPT
#define QPT 1
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
#ifndef QUAD_BIAS
#define QUAD_BIAS 0
#endif
#ifndef POS_DECAY
#define POS_DECAY 0
#endif
#ifndef LOG2_SCORES
#define LOG2_SCORES 0
#endif
#ifndef TILE_BOUND
#define TILE_BOUND 0
#endif
layout(local_size_x = TILE) in;
#endif

const int CH = (DIM + 4) / 4; // vec4 chunks per key: DIM coordinates and the bias

layout(std430, binding = 0) readonly buffer Params {
    uint n;
    uint nq;
    float slope; // POS_DECAY: lambda / N
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

shared vec4 tileKey[CH * TILE]; // STAGE_IN_SHARED: chunk p of staged key k at [p * TILE + k]
// TILE_BOUND: the largest squared key norm of tile t in slot t % 2, as float bits (non-negative floats order
// as their bits). Slot (t + 1) % 2 is cleared while tile t is staged: its last reader (tile t - 1) is past a
// barrier, and its next writers (tile t + 1's staging) are past the next one.
shared uint tileNorm[2];

const float LOG2E = 1.4426950408889634;
// Weights are exp2(SCALE (s - m)): scores in log2 units need no scaling.
const float SCALE = LOG2_SCORES != 0 ? 1.0 : LOG2E;
// TILE_BOUND: a tile is swept without a running max when its scores are at most m + BOUND_MARGIN, that is
// weights below 2^64 (in natural units 64 ln 2): sums of up to 2^24 such weights stay far from overflow.
const float BOUND_MARGIN = LOG2_SCORES != 0 ? 64.0 : 44.0;

// QUAD_BIAS: key j's bias -x_j^T M x_j.
float quadraticBias(uint j) {
    float x[DIM];
    for (int c = 0; c < DIM; ++c) x[c] = keys[uint(c) * params.n + j];
    float b = 0.0;
    for (int a = 0; a < DIM; ++a) {
        float row = 0.0;
        for (int c = 0; c < DIM; ++c) row += params.B[DIM * DIM + a * DIM + c] * x[c];
        b += x[a] * row;
    }
    return -b;
}

// Chunk p of key j from the buffers: coordinates 4p..4p+3, the bias in component DIM - 4p.
vec4 loadChunk(uint j, int p) {
    vec4 v = vec4(0.0);
    for (int e = 0; e < 4; ++e) {
        const int c = 4 * p + e;
        if (c < DIM)
            v[e] = keys[uint(c) * params.n + j];
        else if (c == DIM && HAS_BIAS != 0)
            v[e] = bias[j];
        else if (c == DIM && QUAD_BIAS != 0)
            v[e] = quadraticBias(j);
    }
    return v;
}

// Chunk p of key base + k, k < TILE: from the staged tile, or straight from the buffers.
vec4 keyChunk(uint base, uint k, int p) {
    if (STAGE_IN_SHARED != 0) return tileKey[uint(p * TILE) + k];
    return loadChunk(base + k, p);
}

// The part of a score that chunk p contributes: only its live components (coordinates, and the bias when
// there is one), so d = 3 without bias costs three multiply-adds, not four.
float chunkDot(vec4 a, vec4 b, int p) {
    const int live = DIM + HAS_BIAS + QUAD_BIAS - 4 * p;
    if (live >= 4) return dot(a, b);
    if (live == 3) return dot(a.xyz, b.xyz);
    if (live == 2) return dot(a.xy, b.xy);
    if (live == 1) return a.x * b.x;
    return 0.0;
}

float weight(float s) { // relu and sigmoid (softmax and exp use exp2 against the running max)
    if (WEIGHTING == 2) return max(s, 0.0);
    return 1.0 / (1.0 + exp(-s));
}

// s += t with Kahan's compensation c (the sum is s - c). `precise` keeps the compiler from simplifying the
// correction (u - s) - y to zero.
void addCompensated(inout float s, inout float c, float t) {
    precise float y = t - c;
    precise float u = s + y;
    precise float lost = (u - s) - y;
    c = lost;
    s = u;
}

// Each invocation's state (module-scope variables are private to the invocation). Per query r: the queries
// as chunks, the keys each sees (0 past the last query: it stages keys and meets barriers only), the running
// max, the running sums and their compensations, and this tile's sums.
uint query[QPT];
uint end[QPT];
float slope; // POS_DECAY: the decay per index, in the scores' units
vec4 q[QPT * CH];
float m[QPT], den[QPT], cden[QPT], tden[QPT], ent[QPT], cent[QPT], tent[QPT];
float qnorm[QPT];   // TILE_BOUND: |q_i| in the scores' units
bool unbounded[QPT]; // TILE_BOUND: this tile needs the running max (its bound exceeds m + BOUND_MARGIN)
float num[QPT * DIM], cnum[QPT * DIM], tnum[QPT * DIM];

// Keys k0 .. k0 + UNROLL - 1 of the tile at `base` (count keys), for every query. `checked` masks keys past
// the tile's end and causally hidden ones; full tiles that no query of the workgroup has masked, almost all
// of them, are swept with checked = false (a constant at each call, so that copy has no masking at all).
void sweepKeys(uint base, uint k0, uint count, bool checked) {
    vec4 key[UNROLL * CH];
    for (int u = 0; u < UNROLL; ++u) {
        const uint k = checked ? min(k0 + uint(u), count - 1u) : k0 + uint(u); // past the end: weighed 0
        for (int p = 0; p < CH; ++p) key[u * CH + p] = keyChunk(base, k, p);
    }
    for (int r = 0; r < QPT; ++r) {
        if (TILE_BOUND != 0 && !checked && !unbounded[r]) {
            // Every score of the tile is at most m + BOUND_MARGIN: no max, and s - m in one fma chain.
            for (int u = 0; u < UNROLL; ++u) {
                float sm = -m[r];
                for (int p = 0; p < CH; ++p) {
                    const vec4 a = q[r * CH + p], b = key[u * CH + p];
                    const int live = DIM - 4 * p;
                    if (live > 0) sm = fma(a.x, b.x, sm);
                    if (live > 1) sm = fma(a.y, b.y, sm);
                    if (live > 2) sm = fma(a.z, b.z, sm);
                    if (live > 3) sm = fma(a.w, b.w, sm);
                }
                if (POS_DECAY != 0) sm -= slope * abs(float(query[r]) - float(base + k0 + uint(u)));
                const float w = exp2(SCALE * sm);
                tden[r] += w;
                if (ENTROPY != 0) tent[r] += w * sm;
                if (VALUES != 0)
                    for (int c = 0; c < DIM; ++c) tnum[r * DIM + c] += w * key[u * CH + c / 4][c % 4];
            }
            continue;
        }
        float s[UNROLL];
        bool valid[UNROLL];
        float top = m[r];
        for (int u = 0; u < UNROLL; ++u) {
            const uint k = k0 + uint(u);
            valid[u] = !checked || (k < count && (CAUSAL == 0 || base + k < end[r]));
            float score = 0.0;
            for (int p = 0; p < CH; ++p) score += chunkDot(q[r * CH + p], key[u * CH + p], p);
            // |i - j| is exact in float32 below 2^24 tokens; one rounding of the product, as on the CPU.
            if (POS_DECAY != 0) score -= slope * abs(float(query[r]) - float(base + k));
            s[u] = score;
            if (valid[u]) top = max(top, score);
        }
        if (WEIGHTING <= 1 && top > m[r]) {
            // w (s - top) = f w_old ((s - m) - (top - m)) with f = e^(m - top): every sum so far is rescaled
            // once (rare: the max of N keys in random order rises ~ln N times).
            if (den[r] + tden[r] > 0.0) {
                const float f = exp2((m[r] - top) * SCALE), dm = top - m[r];
                if (ENTROPY != 0) {
                    ent[r] = f * ((ent[r] - cent[r]) - dm * (den[r] - cden[r]));
                    tent[r] = f * (tent[r] - dm * tden[r]);
                    cent[r] = 0.0;
                }
                den[r] = f * (den[r] - cden[r]);
                tden[r] *= f;
                cden[r] = 0.0;
                if (VALUES != 0)
                    for (int c = 0; c < DIM; ++c) {
                        const int a = r * DIM + c;
                        num[a] = f * (num[a] - cnum[a]);
                        tnum[a] *= f;
                        cnum[a] = 0.0;
                    }
            }
            m[r] = top;
        }
        for (int u = 0; u < UNROLL; ++u) {
            const float e = WEIGHTING <= 1 ? exp2((s[u] - m[r]) * SCALE) : weight(s[u]);
            const float w = valid[u] ? e : 0.0;
            tden[r] += w;
            if (ENTROPY != 0) tent[r] += w * (s[u] - m[r]);
            if (VALUES != 0)
                for (int c = 0; c < DIM; ++c) tnum[r * DIM + c] += w * key[u * CH + c / 4][c % 4];
        }
    }
}

void main() {
    const uint n = params.n, nq = params.nq, lane = gl_LocalInvocationID.x;
    const bool compensateNum = DIM <= 4;
    // LOG2_SCORES: queries, bias slot and slope times log2(e), so that scores come out in log2 units.
    const float unit = LOG2_SCORES != 0 ? LOG2E : 1.0;
    slope = params.slope * unit;

    for (int r = 0; r < QPT; ++r) {
        const uint i = (gl_WorkGroupID.x * uint(QPT) + uint(r)) * uint(TILE) + lane;
        query[r] = i;
        end[r] = i >= nq ? 0u : (CAUSAL != 0 ? i + 1u : n);
        const uint qi = i < nq ? i : 0u;
        float x[DIM];
        for (int c = 0; c < DIM; ++c) {
            if (EXPLICIT_QUERIES != 0) {
                x[c] = queries[uint(c) * nq + qi];
            } else {
                float s = 0.0;
                for (int k = 0; k < DIM; ++k) s += params.B[c * DIM + k] * keys[uint(k) * n + qi];
                x[c] = s;
            }
        }
        float norm2 = 0.0;
        for (int p = 0; p < CH; ++p) {
            vec4 v = vec4(0.0);
            for (int e = 0; e < 4; ++e) {
                const int c = 4 * p + e;
                if (c < DIM) v[e] = unit * x[c];
                if (c < DIM) norm2 += v[e] * v[e];
                if (c == DIM) v[e] = unit; // times the key's bias
            }
            q[r * CH + p] = v;
        }
        qnorm[r] = sqrt(norm2);
        unbounded[r] = true;
        m[r] = -3.402823466e38; // any finite start: nothing is summed before the first key raises it
        den[r] = cden[r] = ent[r] = cent[r] = 0.0;
        for (int c = 0; c < DIM; ++c) num[r * DIM + c] = cnum[r * DIM + c] = 0.0;
    }
    // Keys any query of the workgroup sees, and its first query.
    const uint groupFirst = gl_WorkGroupID.x * uint(QPT * TILE);
    const uint groupEnd = CAUSAL != 0 ? min(n, (gl_WorkGroupID.x + 1u) * uint(QPT * TILE)) : n;

    const bool bounded = TILE_BOUND != 0 && STAGE_IN_SHARED != 0 && WEIGHTING <= 1;
    if (bounded) {
        if (lane == 0u) tileNorm[0] = 0u;
        memoryBarrierShared();
        barrier();
    }
    uint slot = 0u;
    for (uint base = 0u; base < groupEnd; base += uint(TILE)) {
        if (STAGE_IN_SHARED != 0) {
            const uint j = base + lane;
            float norm2 = 0.0;
            if (j < n)
                for (int p = 0; p < CH; ++p) {
                    const vec4 chunk = loadChunk(j, p);
                    tileKey[uint(p * TILE) + lane] = chunk;
                    norm2 += dot(chunk, chunk); // no bias slot under TILE_BOUND: coordinates only
                }
            if (bounded) {
                if (lane == 0u) tileNorm[slot ^ 1u] = 0u;
                atomicMax(tileNorm[slot], floatBitsToUint(norm2));
            }
            memoryBarrierShared();
            barrier();
        }
        if (bounded) {
            // |q . x| <= |q| R; 1e-5 relative covers the rounding of both sides many times over.
            const float radius = sqrt(uintBitsToFloat(tileNorm[slot])) * 1.00001;
            for (int r = 0; r < QPT; ++r) unbounded[r] = qnorm[r] * radius > m[r] + BOUND_MARGIN;
            slot ^= 1u;
        }

        for (int r = 0; r < QPT; ++r) {
            tden[r] = tent[r] = 0.0;
            for (int c = 0; c < DIM; ++c) tnum[r * DIM + c] = 0.0;
        }
        const uint count = min(uint(TILE), groupEnd - base);
        // UNROLL keys at a time: their scores, exp2s and sums are independent, so they overlap in the pipeline.
        // A full tile needs no masking unless it is causal and reaches past the group's first query: causal
        // tiles wholly before it (all but the last QPT of the group's tiles) are swept unmasked too.
        if (count == uint(TILE) && TILE % UNROLL == 0 && (CAUSAL == 0 || base + uint(TILE) <= groupFirst + 1u))
            for (uint k0 = 0u; k0 < uint(TILE); k0 += uint(UNROLL)) sweepKeys(base, k0, count, false);
        else
            for (uint k0 = 0u; k0 < count; k0 += uint(UNROLL)) sweepKeys(base, k0, count, true);

        for (int r = 0; r < QPT; ++r) {
            addCompensated(den[r], cden[r], tden[r]);
            if (ENTROPY != 0) addCompensated(ent[r], cent[r], tent[r]);
            if (VALUES != 0)
                for (int c = 0; c < DIM; ++c) {
                    const int a = r * DIM + c;
                    if (compensateNum)
                        addCompensated(num[a], cnum[a], tnum[a]);
                    else
                        num[a] += tnum[a];
                }
        }

        if (STAGE_IN_SHARED != 0) barrier(); // the tile is overwritten next
    }

    for (int r = 0; r < QPT; ++r) {
        const uint i = query[r];
        if (i >= nq) continue;
        if (VALUES != 0)
            for (int c = 0; c < DIM; ++c) outv[uint(c) * nq + i] = num[r * DIM + c] - cnum[r * DIM + c];
        outv[uint(DIM) * nq + i] = den[r] - cden[r];
        outv[uint(DIM + 1) * nq + i] = WEIGHTING <= 1 ? m[r] / unit : 0.0;
        if (ENTROPY != 0) outv[uint(DIM + 2) * nq + i] = (ent[r] - cent[r]) / unit;
    }
}
