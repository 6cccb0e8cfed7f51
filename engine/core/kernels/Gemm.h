// Flowscope engine: the float32 matrix product C = A B compiled for AVX2+FMA (GemmAvx2.cpp), for callers that
// check cpuHasAvx2Fma() (engine/core/Cpu.h) first and take Eigen's product elsewhere: the models' forward
// pass (engine/models/Model.cpp) and the matrix tape's products (engine/autodiff/Tape.cpp). All three
// matrices row-major, with row strides lda, ldb, ldc. C is overwritten, or with `accumulate` added to: C += A
// B.
#pragma once

namespace flowscope::avx2 {

void gemm(int M, int N, int K, const float* A, long lda, const float* B, long ldb, float* C, long ldc,
          bool accumulate = false);

} // namespace flowscope::avx2
