// Flowscope engine: the float32 matrix product C = A B compiled for AVX2+FMA (GemmAvx2.cpp), for callers that
// check cpuHasAvx2Fma() (engine/core/Cpu.h) first and take Eigen's product elsewhere: the models' forward
// pass (engine/models/Model.cpp) and the matrix tape's products (engine/autodiff/Tape.cpp). All three
// matrices row-major, with row strides lda, ldb, ldc. C is overwritten, or with `accumulate` added to: C += A
// B.
#pragma once

namespace flowscope::avx2 {

void gemm(int M, int N, int K, const float* A, long lda, const float* B, long ldb, float* C, long ldc,
          bool accumulate = false);

// The same with A and B in any layout: element (i, k) of A at A[i * rowA + k * colA], (k, j) of B at
// B[k * rowB + j * colB], so a column-major or transposed operand is read where it lies, without a copy (the
// tape's products: engine/autodiff/Tape.cpp). C is row-major, as above. gemm() above is rowA = lda, colA = 1,
// rowB = ldb, colB = 1; the sums are the same, in the same order, whatever the strides.
void gemmStrided(int M, int N, int K, const float* A, long rowA, long colA, const float* B, long rowB,
                 long colB, float* C, long ldc, bool accumulate = false);

} // namespace flowscope::avx2
