// The dense float64 reference of the kernel-average attention fields, written from the definitions of
// docs/math/attention.md and docs/math/theory.md term by term (an N x N score matrix, no streaming, no
// shared code with the engine's kernels): the oracle of every kernel variant, the causal mask, the positional
// decay and the normalization schemes, on the CPU (tests/engine) and on the GPU backends (tests/gpu).
#pragma once

#include "engine/scene/Scene.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace flowscope::test {
// Internal to each test file that includes it: a file compiled at -O1 (tests/CMakeLists.txt) keeps its own
// optimized copy, where a shared inline one could be the -O0 copy of another test file.
namespace {

// Gamma(x_i) = sum_h V_h sum_j w_ij x_j / norm_i from the definitions (constant heads), with the score
//     s_ij = g <Q_h x_i, K_h x_j> - (lambda / N) |i - j|   (g = beta, or beta / sqrt(k); j <= i masked)
// and w = e^s (softmax, normalized by the row's sum; exp, by N), e^{-g |Q x_i - K x_j|^2 - decay} (l2,
// by the sum), max(0, s) (relu), 1 / (1 + e^{-s}) (sigmoid), s (linear; the three by N).
inline Tokens denseField(const AttentionSpec& spec, const Tokens& X) {
    const int n = int(X.rows()), d = int(X.cols());
    Tokens out = Tokens::Zero(n, d);
    for (const HeadParams& h : spec.heads) {
        const double g = spec.scaleByRootK ? spec.beta / std::sqrt(double(h.Q.rows())) : spec.beta;
        for (int i = 0; i < n; ++i) {
            const int end = spec.masked ? i + 1 : n;
            Vec w(end);
            for (int j = 0; j < end; ++j) {
                const Vec qx = h.Q * X.row(i).transpose(), ky = h.K * X.row(j).transpose();
                const double dot = qx.dot(ky),
                             decay = spec.positionalDecay / double(n) * double(std::abs(i - j));
                switch (spec.type) {
                case AttentionType::Softmax:
                case AttentionType::Exp:
                    w(j) = std::exp(g * dot - decay);
                    break;
                case AttentionType::L2:
                    w(j) = std::exp(-g * (qx - ky).squaredNorm() - decay);
                    break;
                case AttentionType::Relu:
                    w(j) = std::max(0.0, g * dot);
                    break;
                case AttentionType::Sigmoid:
                    w(j) = 1.0 / (1.0 + std::exp(-g * dot));
                    break;
                case AttentionType::Linear:
                    w(j) = g * dot;
                    break;
                default:
                    ADD_FAILURE() << "not a dense-kernel variant";
                }
            }
            const bool normalized = spec.type == AttentionType::Softmax || spec.type == AttentionType::L2;
            const double norm = normalized ? w.sum() : double(n);
            out.row(i) += (h.V * (X.topRows(end).transpose() * w) / norm).transpose();
        }
    }
    return out;
}

// Directions x_i / |x_i| (0 stays 0).
inline Tokens directionsOf(const Tokens& X) {
    Tokens T = X;
    for (Eigen::Index i = 0; i < T.rows(); ++i)
        if (T.row(i).norm() > 0.0) T.row(i) /= T.row(i).norm();
    return T;
}

// The velocity of a normalization scheme (docs/math/theory.md#normalization): A = denseField at y = X (none)
// or at the directions y (post, pre, peri); then none, pre: A_i; peri: A_i / |A_i| (0 stays 0); post: the
// tangent part A_i - <A_i, y_i> y_i.
inline Tokens denseVelocity(const Tokens& X, const AttentionSpec& a) {
    const Normalization scheme = normalizationOf(a);
    const Tokens Y = scheme == Normalization::None ? X : directionsOf(X);
    Tokens A = denseField(a, Y);
    for (Eigen::Index i = 0; i < A.rows(); ++i) {
        if (scheme == Normalization::Peri && A.row(i).norm() > 0.0) A.row(i) /= A.row(i).norm();
        if (scheme == Normalization::Post) A.row(i) -= A.row(i).dot(Y.row(i)) * Y.row(i);
    }
    return A;
}

} // namespace
} // namespace flowscope::test
