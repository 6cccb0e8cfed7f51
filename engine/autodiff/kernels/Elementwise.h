// Flowscope engine: float32 elementwise passes of the matrix tape (engine/autodiff/Tape.h) compiled for
// AVX2+FMA (ElementwiseAvx2.cpp), for callers that check cpuHasAvx2Fma() (engine/core/Cpu.h) first and take
// Eigen's expressions, four SSE lanes in this baseline-ISA library, elsewhere. Each is one branch-free loop
// of eight lanes over n contiguous floats; tanh and log are computed here (not by Eigen), so a float result
// may differ from Eigen's by a few ulp (docs/math/flows.md#training-speed).
#pragma once

namespace flowscope::ad::kernel::avx2 {

// y = tanh(x), within 3e-7 relative (|x| < 0.5: its Taylor series to x^15; beyond: (1 - e) / (1 + e) with
// e = exp(-2|x|)); ±1 beyond |x| = 9, NaN for NaN.
void tanh(const float* x, float* y, long n);
// y = log(2 cosh a) = |a| + log 2 - log(1 + |t|) from t = tanh(a) (Tape.h's logCosh(a, tanhOfA)).
void logCosh(const float* a, const float* t, float* y, long n);
// y = g (1 - t²), or y += that with `add`: tanh's backward from its value t.
void tanhBackward(const float* g, const float* t, float* y, long n, bool add);

} // namespace flowscope::ad::kernel::avx2
