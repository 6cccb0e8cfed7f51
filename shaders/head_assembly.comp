// Flowscope: one head's share of the velocity, from the streaming kernel's outputs, on the GPU
// (engine/gpu/gl/GlStepper.h). Per token i:
//     avg_i = num_i / den_i (softmax), e^{m_i} num_i / n (exp), num_i / n (relu, sigmoid)
//     vel_i (+)= W avg_i,   W = outScale * V  (d x d, formed on the host in double, rounded once)
// which is KernelAttention's normalizeHeadAverage and head sum, in float32. The last head may also project
// the velocity to the tangent space of the sphere at the token it was evaluated at (SphereProjection):
//     vel_i -= (vel_i . x_i / |x_i|^2) x_i   (x_i != 0),
// or scale it to unit norm (peri-LN, DirectionField): vel_i /= |vel_i|   (vel_i != 0).
//
// No #version line and no knobs: the dimension and the mode come from the Params buffer, so one text
// compiles as is for OpenGL (host prepends "#version 430") and for Vulkan (glslc -std=450), like every
// shaders/*.comp.
//
// Buffers (std430; points structure-of-arrays, coordinate c of point i at [c * n + i]):
//     0  Params  n, d, weighting (0 softmax, 1 exp, 2 relu, 3 sigmoid), flags, invN, three pads,
//                then W row-major (vel_r += sum_c W[r * d + c] avg_c; d * d floats)
//                flags: 1 accumulate into vel (else overwrite), 2 project to the sphere at x, 4 clear (vel = 0,
//                the kernel outputs are not read: a spec with no heads), 8 scale vel to unit norm
//     1  kernel  n x (d + 2): num (columns 0..d-1), den (d), max (d + 1)   (stream_kernel.comp's out)
//     2  vel     n x d, read and written
//     3  tokens  n x d, the point the velocity is evaluated at (read only when projecting)

layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Params {
    uint n;
    uint d;
    uint weighting;
    uint flags;
    float invN;
    float pad0;
    float pad1;
    float pad2;
    float W[];
} params;
layout(std430, binding = 1) readonly buffer Kernel {
    float kernelOut[];
};
layout(std430, binding = 2) buffer Velocity {
    float vel[];
};
layout(std430, binding = 3) readonly buffer Tokens {
    float x[];
};

void main() {
    const uint n = params.n, d = params.d, i = gl_GlobalInvocationID.x;
    if (i >= n) return;
    const bool accumulate = (params.flags & 1u) != 0u, project = (params.flags & 2u) != 0u;
    const bool clear = (params.flags & 4u) != 0u, unit = (params.flags & 8u) != 0u;

    // avg_c = (num_c op a) * b: softmax num / den; exp (num * invN e^{m/2}) e^{m/2}, e^m split in two
    // halves so that it overflows only when the average itself would; relu and sigmoid num * invN.
    float a = params.invN, b = 1.0;
    if (!clear && params.weighting == 0u) a = kernelOut[d * n + i];
    if (!clear && params.weighting == 1u) {
        b = exp(0.5 * kernelOut[(d + 1u) * n + i]);
        a *= b;
    }

    for (uint r = 0u; r < d; ++r) {
        float v = 0.0;
        if (!clear)
            for (uint c = 0u; c < d; ++c) {
                const float num = kernelOut[c * n + i];
                const float avg = params.weighting == 0u ? num / a : num * a * b;
                v += params.W[r * d + c] * avg;
            }
        vel[r * n + i] = accumulate ? vel[r * n + i] + v : v;
    }

    if (project) {
        float dot = 0.0, n2 = 0.0;
        for (uint c = 0u; c < d; ++c) {
            dot += vel[c * n + i] * x[c * n + i];
            n2 += x[c * n + i] * x[c * n + i];
        }
        if (n2 > 0.0) {
            const float f = dot / n2;
            for (uint c = 0u; c < d; ++c) vel[c * n + i] -= f * x[c * n + i];
        }
    }

    if (unit) {
        float n2 = 0.0;
        for (uint c = 0u; c < d; ++c) n2 += vel[c * n + i] * vel[c * n + i];
        if (n2 > 0.0) {
            const float norm = sqrt(n2);
            for (uint c = 0u; c < d; ++c) vel[c * n + i] /= norm;
        }
    }
}
