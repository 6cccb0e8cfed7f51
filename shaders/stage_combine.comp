// Flowscope: one Runge-Kutta combination on the GPU (engine/gpu/gl/GlStepper.h).
// Per token i and coordinate c:
//     target = x + a * (w0 k0 + w1 k1 + ... + w5 k5)   (the first `count` stage velocities)
// summed in that order, as engine/dynamics/Integrator.cpp writes each stage (e.g. RK4's final update is
// a = h / 6, w = 1, 2, 2, 1; Dormand-Prince's x_new is a = h, w = b1, b3, b4, b5, b6). The target is the stage buffer y (next stage input) or x itself (the step's
// update, in place: each invocation reads and writes only its own token). Optionally the target is then
// scaled to unit norm (sphere dynamics: Simulation re-normalizes after every step; zero tokens stay zero).
// count = 0 with normalize projects x onto the sphere without moving it otherwise.
//
// The error pass (flags & 4; Dormand-Prince, engine/dynamics/DormandPrince.h) writes nothing of x or y:
// with err = a * sum w k (the embedded error estimate, a = h, w = e) and y holding x_new, it sums
// (err / (atol + rtol max(|x|, |y|)))^2 over the workgroup's tokens and every coordinate into
// partial[workgroup], a tree over its 64 tokens in shared memory (float32, relative rounding about
// log2(64) eps: enough for a norm compared with 1). The host adds the partials in double.
//
// No #version line and no knobs (all in Params), so one text serves OpenGL and Vulkan (glslc -std=450).
//
// Buffers (std430; points structure-of-arrays, coordinate c of point i at [c * n + i]):
//     0  Params  n, d, count (0..6), flags (1: write x, else y; 2: normalize the target; 4: error pass), a,
//                w0..w5, atol, rtol (the error pass's tolerances)
//     1  x       n x d tokens at the start of the step (read; written when flags & 1)
//     2  y       n x d stage input (written when !(flags & 5); read by the error pass)
//     3..8       k0..k5, n x d stage velocities (read only below `count`)
//     9  partial one float per workgroup (written by the error pass only)

layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Params {
    uint n;
    uint d;
    uint count;
    uint flags;
    float a;
    float w[6];
    float atol;
    float rtol;
} params;
layout(std430, binding = 1) buffer X {
    float x[];
};
layout(std430, binding = 2) buffer Y {
    float y[];
};
layout(std430, binding = 3) readonly buffer K0 {
    float k0[];
};
layout(std430, binding = 4) readonly buffer K1 {
    float k1[];
};
layout(std430, binding = 5) readonly buffer K2 {
    float k2[];
};
layout(std430, binding = 6) readonly buffer K3 {
    float k3[];
};
layout(std430, binding = 7) readonly buffer K4 {
    float k4[];
};
layout(std430, binding = 8) readonly buffer K5 {
    float k5[];
};
layout(std430, binding = 9) writeonly buffer Partial {
    float partial[];
};

shared float sums[64];

// a * (w0 k0 + ... ) at float index j, the first `count` terms.
float combination(uint j, uint count) {
    float s = params.w[0] * k0[j];
    if (count > 1u) s += params.w[1] * k1[j];
    if (count > 2u) s += params.w[2] * k2[j];
    if (count > 3u) s += params.w[3] * k3[j];
    if (count > 4u) s += params.w[4] * k4[j];
    if (count > 5u) s += params.w[5] * k5[j];
    return params.a * s;
}

void main() {
    const uint n = params.n, d = params.d, count = params.count, i = gl_GlobalInvocationID.x;

    if ((params.flags & 4u) != 0u) { // the error pass: uniform for the dispatch, so barrier() is allowed
        float s2 = 0.0;
        if (i < n)
            for (uint c = 0u; c < d; ++c) {
                const uint j = c * n + i;
                const float scale = params.atol + params.rtol * max(abs(x[j]), abs(y[j]));
                const float r = combination(j, count) / scale;
                s2 += r * r;
            }
        const uint l = gl_LocalInvocationID.x;
        sums[l] = s2;
        barrier();
        for (uint stride = 32u; stride > 0u; stride >>= 1u) {
            if (l < stride) sums[l] += sums[l + stride];
            barrier();
        }
        if (l == 0u) partial[gl_WorkGroupID.x] = sums[0];
        return;
    }

    if (i >= n) return;
    const bool toX = (params.flags & 1u) != 0u, normalize = (params.flags & 2u) != 0u;

    float n2 = 0.0;
    for (uint c = 0u; c < d; ++c) {
        const uint j = c * n + i;
        float v = x[j];
        if (count > 0u) v += combination(j, count);
        if (toX)
            x[j] = v;
        else
            y[j] = v;
        n2 += v * v;
    }

    if (normalize && n2 > 0.0) {
        const float norm = sqrt(n2);
        for (uint c = 0u; c < d; ++c) {
            const uint j = c * n + i;
            if (toX)
                x[j] /= norm;
            else
                y[j] /= norm;
        }
    }
}
