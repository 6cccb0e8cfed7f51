// The float32 matrix product for AVX2+FMA (this file is compiled with -mavx2 -mfma; the models' forward pass
// and the tape's products call it when cpuHasAvx2Fma()). It uses no Eigen: Eigen's templates compiled here
// with other instructions would be merged by the linker with the baseline build's.
//
// C = A B, all row-major with leading dimensions (row strides) lda, ldb, ldc. B is packed, KC rows at a time,
// into panels of 16 columns (the last zero-padded); each panel is swept by every block of 6 rows of A, 12
// accumulators of 8 lanes held in registers over the KC rows (the BLIS micro-kernel shape).
#include "engine/core/kernels/Gemm.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <algorithm>
#include <vector>

namespace flowscope::avx2 {

namespace {

constexpr int kRows = 6, kCols = 16, kDepth = 256;

// Rows i .. i + R - 1 of A (from column k0, kc columns) times one packed panel (kc x 16), written to (first
// block of depth) or added to the R x 16 block at c (row stride ldc).
template <int R>
inline void microKernel(const float* a, long lda, const float* panel, int kc, float* c, long ldc, bool add) {
    __m256 acc[R][2];
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int k = 0; k < kc; ++k) {
        const __m256 b0 = _mm256_loadu_ps(panel + 16 * k), b1 = _mm256_loadu_ps(panel + 16 * k + 8);
        for (int r = 0; r < R; ++r) {
            const __m256 x = _mm256_broadcast_ss(a + r * lda + k);
            acc[r][0] = _mm256_fmadd_ps(x, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(x, b1, acc[r][1]);
        }
    }
    for (int r = 0; r < R; ++r) {
        float* row = c + r * ldc;
        if (add) {
            acc[r][0] = _mm256_add_ps(acc[r][0], _mm256_loadu_ps(row));
            acc[r][1] = _mm256_add_ps(acc[r][1], _mm256_loadu_ps(row + 8));
        }
        _mm256_storeu_ps(row, acc[r][0]);
        _mm256_storeu_ps(row + 8, acc[r][1]);
    }
}

using Kernel = void (*)(const float*, long, const float*, int, float*, long, bool);
constexpr Kernel kKernels[kRows + 1] = {nullptr,        microKernel<1>, microKernel<2>, microKernel<3>,
                                        microKernel<4>, microKernel<5>, microKernel<6>};

} // namespace

void gemm(int M, int N, int K, const float* A, long lda, const float* B, long ldb, float* C, long ldc,
          bool accumulate) {
    thread_local std::vector<float> packed;
    const int panels = (N + kCols - 1) / kCols;
    if (K == 0 && !accumulate)
        for (int i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, 0.0f);
    for (int k0 = 0; k0 < K; k0 += kDepth) {
        const int kc = std::min(kDepth, K - k0);
        packed.resize(std::size_t(panels) * kc * kCols);
        for (int p = 0; p < panels; ++p) {
            const int first = p * kCols, width = std::min(kCols, N - first);
            float* panel = packed.data() + std::size_t(p) * kc * kCols;
            for (int k = 0; k < kc; ++k) {
                std::copy_n(B + (k0 + k) * ldb + first, width, panel + kCols * k);
                std::fill(panel + kCols * k + width, panel + kCols * (k + 1), 0.0f);
            }
        }
        alignas(32) float edge[kRows * kCols];
        for (int p = 0; p < panels; ++p) {
            const int first = p * kCols, width = std::min(kCols, N - first);
            const float* panel = packed.data() + std::size_t(p) * kc * kCols;
            for (int i = 0; i < M; i += kRows) {
                const int rows = std::min(kRows, M - i);
                if (width == kCols) { // straight into C
                    kKernels[rows](A + i * lda + k0, lda, panel, kc, C + i * ldc + first, ldc,
                                   k0 > 0 || accumulate);
                    continue;
                }
                kKernels[rows](A + i * lda + k0, lda, panel, kc, edge, kCols, false);
                for (int r = 0; r < rows; ++r) {
                    float* c = C + (i + r) * ldc + first;
                    for (int j = 0; j < width; ++j)
                        c[j] = (k0 > 0 || accumulate ? c[j] : 0.0f) + edge[r * kCols + j];
                }
            }
        }
    }
}

} // namespace flowscope::avx2

#endif
