// The float32 matrix product C = A B of the models' forward pass, compiled for AVX2+FMA (GemmAvx2.cpp); the
// forward pass calls it where the processor has them (cpuHasAvx2Fma) and Eigen's product elsewhere. All three
// matrices row-major, with row strides lda, ldb, ldc; C is overwritten.
#pragma once

namespace flowscope::models::avx2 {

void gemm(int M, int N, int K, const float* A, long lda, const float* B, long ldb, float* C, long ldc);

} // namespace flowscope::models::avx2
