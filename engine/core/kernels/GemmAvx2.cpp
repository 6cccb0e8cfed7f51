// The float32 matrix product for AVX2+FMA (this file is compiled with -mavx2 -mfma; the models' forward pass
// and the tape's products call it when cpuHasAvx2Fma()). It uses no Eigen: Eigen's templates compiled here
// with other instructions would be merged by the linker with the baseline build's.
//
// C = A B, C row-major with row stride ldc, A and B with any row and column strides (gemm(): row-major). B is
// packed, KC rows at a time, into panels of 16 columns (the last zero-padded); each panel is swept by every
// block of 6 rows of A, 12 accumulators of 8 lanes held in registers over the KC rows (the BLIS micro-kernel
// shape). A is read where it lies, one broadcast per row and k. A small B with contiguous rows (at most
// kInPlace floats in a block of KC rows, as the tape's products have) is not packed: its full panels are
// read in place, 16 floats a row at B's row stride, which saves a copy as large as B; the sums are the same.
#include "engine/core/kernels/Gemm.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <algorithm>
#include <vector>

namespace flowscope::avx2 {

namespace {

constexpr int kRows = 6, kCols = 16, kDepth = 256;
constexpr long kInPlace = 1 << 16; // 256 KB: larger B are packed, for the caches and the TLB

// Rows i .. i + R - 1 of A (from column k0, kc columns; a points at (i, k0)) times one panel (kc x 16, row
// stride ldp), written to (first block of depth) or added to the R x 16 block at c (row stride ldc).
template <int R>
inline void microKernel(const float* a, long rowA, long colA, const float* panel, long ldp, int kc, float* c,
                        long ldc, bool add) {
    __m256 acc[R][2];
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int k = 0; k < kc; ++k, a += colA, panel += ldp) {
        const __m256 b0 = _mm256_loadu_ps(panel), b1 = _mm256_loadu_ps(panel + 8);
        for (int r = 0; r < R; ++r) {
            const __m256 x = _mm256_broadcast_ss(a + r * rowA);
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

using Kernel = void (*)(const float*, long, long, const float*, long, int, float*, long, bool);
constexpr Kernel kKernels[kRows + 1] = {nullptr,        microKernel<1>, microKernel<2>, microKernel<3>,
                                        microKernel<4>, microKernel<5>, microKernel<6>};

} // namespace

void gemm(int M, int N, int K, const float* A, long lda, const float* B, long ldb, float* C, long ldc,
          bool accumulate) {
    gemmStrided(M, N, K, A, lda, 1, B, ldb, 1, C, ldc, accumulate);
}

void gemmStrided(int M, int N, int K, const float* A, long rowA, long colA, const float* B, long rowB,
                 long colB, float* C, long ldc, bool accumulate) {
    thread_local std::vector<float> packed;
    const int panels = (N + kCols - 1) / kCols;
    if (K == 0 && !accumulate)
        for (int i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, 0.0f);
    for (int k0 = 0; k0 < K; k0 += kDepth) {
        const int kc = std::min(kDepth, K - k0);
        const bool inPlace = colB == 1 && kc * rowB <= kInPlace;
        // Panel p: in place (full panels of a small B with contiguous rows) or packed.
        auto panelOf = [&](int p, long& ldp) -> const float* {
            const int first = p * kCols;
            if (inPlace && N - first >= kCols) {
                ldp = rowB;
                return B + k0 * rowB + first;
            }
            ldp = kCols; // (rowB may equal kCols too: the flag decides, not the stride)
            return packed.data() + std::size_t(p) * kc * kCols;
        };
        packed.resize(std::size_t(panels) * kc * kCols);
        for (int p = 0; p < panels; ++p) {
            const int first = p * kCols, width = std::min(kCols, N - first);
            if (inPlace && width == kCols) continue;
            float* panel = packed.data() + std::size_t(p) * kc * kCols;
            for (int k = 0; k < kc; ++k) {
                const float* row = B + (k0 + k) * rowB + first * colB;
                if (colB == 1) {
                    std::copy_n(row, width, panel + kCols * k);
                } else {
                    for (int j = 0; j < width; ++j) panel[kCols * k + j] = row[j * colB];
                }
                std::fill(panel + kCols * k + width, panel + kCols * (k + 1), 0.0f);
            }
        }
        alignas(32) float edge[kRows * kCols];
        for (int p = 0; p < panels; ++p) {
            const int first = p * kCols, width = std::min(kCols, N - first);
            long ldp = kCols;
            const float* panel = panelOf(p, ldp);
            for (int i = 0; i < M; i += kRows) {
                const int rows = std::min(kRows, M - i);
                if (width == kCols) { // straight into C
                    kKernels[rows](A + i * rowA + k0 * colA, rowA, colA, panel, ldp, kc, C + i * ldc + first,
                                   ldc, k0 > 0 || accumulate);
                    continue;
                }
                kKernels[rows](A + i * rowA + k0 * colA, rowA, colA, panel, ldp, kc, edge, kCols, false);
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
