// Flowscope: one Runge-Kutta combination on the GPU (engine/gpu/gl/GlStepper.h).
// Per token i and coordinate c:
//     target = x + a * (w0 k0 + w1 k1 + w2 k2 + w3 k3)   (the first `count` stage velocities)
// summed in that order, as engine/dynamics/Integrator.cpp writes each stage (e.g. RK4's final update is
// a = h / 6, w = 1, 2, 2, 1). The target is the stage buffer y (next stage input) or x itself (the step's
// update, in place: each invocation reads and writes only its own token). Optionally the target is then
// scaled to unit norm (sphere dynamics: Simulation re-normalizes after every step; zero tokens stay zero).
// count = 0 with normalize projects x onto the sphere without moving it otherwise.
//
// No #version line and no knobs (all in Params), so one text serves OpenGL and Vulkan (glslc -std=450).
//
// Buffers (std430; points structure-of-arrays, coordinate c of point i at [c * n + i]):
//     0  Params  n, d, count (0..4), flags (1: write x, else y; 2: normalize the target), a, w0..w3
//     1  x       n x d tokens at the start of the step (read; written when flags & 1)
//     2  y       n x d stage input (written when !(flags & 1))
//     3..6       k0..k3, n x d stage velocities (read only below `count`)

layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Params {
    uint n;
    uint d;
    uint count;
    uint flags;
    float a;
    float w[4];
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

void main() {
    const uint n = params.n, d = params.d, count = params.count, i = gl_GlobalInvocationID.x;
    if (i >= n) return;
    const bool toX = (params.flags & 1u) != 0u, normalize = (params.flags & 2u) != 0u;

    float n2 = 0.0;
    for (uint c = 0u; c < d; ++c) {
        const uint j = c * n + i;
        float v = x[j];
        if (count > 0u) {
            float s = params.w[0] * k0[j];
            if (count > 1u) s += params.w[1] * k1[j];
            if (count > 2u) s += params.w[2] * k2[j];
            if (count > 3u) s += params.w[3] * k3[j];
            v += params.a * s;
        }
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
