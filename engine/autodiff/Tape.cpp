// Flowscope engine: the matrix tape's ops (forward, when recorded) and their backward (one switch).
#include "engine/autodiff/Tape.h"

#include "engine/autodiff/AttentionKernel.h"
#include "engine/autodiff/Exp.h"
#include "engine/autodiff/kernels/Elementwise.h"

#include "engine/core/Cpu.h"
#include "engine/core/Parallel.h"
#include "engine/core/kernels/Gemm.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace flowscope::ad {

const char* opName(Op op) {
    // clang-format off
    static const char* const names[] = {
        "constant", "input", "parameter", "matmul", "matmulTN", "matmulNT", "transpose", "add", "sub", "mul",
        "div", "addCol", "addRow", "mulCol", "mulRow", "scale", "scale", "addScalar", "addScalar", "neg",
        "tanh", "logCosh", "exp", "log", "square", "sqrt", "abs", "softplus", "sigmoid", "relu",
        "softThreshold", "huberL1", "sum", "mean", "colSum", "rowSum", "sumSquares", "colSumSquares",
        "colSumWeightedSquares", "colWeightedGram",
        "softmaxRows", "logSumExpRows", "groupAttention", "groupMean", "attention", "rows", "cols", "vstack",
        "hstack", "columnFunction"};
    // clang-format on
    static_assert(sizeof(names) / sizeof(names[0]) == std::size_t(Op::ColumnFunction) + 1);
    return names[std::size_t(op)];
}

namespace {

std::string shapeOf(Index r, Index c) {
    return std::to_string(r) + "x" + std::to_string(c);
}

[[noreturn]] void fail(Op op, const std::string& what) {
    throw std::invalid_argument(std::string("ad::") + opName(op) + ": " + what);
}

// Checks that a (and b, when given) are live nodes of one tape; returns that tape.
template <class S> Tape<S>& tapeOf(Op op, Var<S> a, Var<S> b = {}) {
    if (!a.tape || (b.index >= 0 && b.tape != a.tape)) fail(op, "operands are not Vars of one tape");
    a.tape->node(a);
    if (b.index >= 0) a.tape->node(b);
    return *a.tape;
}

template <class S> void requireShape(bool ok, Op op, Var<S> a, Var<S> b, const char* need) {
    if (!ok)
        fail(op, "shapes " + shapeOf(a.rows(), a.cols()) + " and " + shapeOf(b.rows(), b.cols()) +
                     " do not match (need " + need + ")");
}

template <class S> void requireScalar(Var<S> s, Op op) {
    if (s.rows() != 1 || s.cols() != 1)
        fail(op, "the scalar operand is " + shapeOf(s.rows(), s.cols()) + ", not 1x1");
}

// Adds e into n's gradient; the first contribution assigns (no zero fill). noalias() lets a product write
// straight into the gradient: e never reads n.grad.
template <class S, class E> void acc(Node<S>& n, const E& e) {
    if (n.reached) {
        n.grad.noalias() += e;
    } else {
        n.grad.noalias() = e;
        n.reached = true;
    }
}

#if FLOWSCOPE_HAVE_AVX2_KERNEL
// Whether this processor runs the float AVX2+FMA kernels (the product of engine/core/kernels/Gemm.h, the
// elementwise passes of engine/autodiff/kernels/Elementwise.h); Eigen's expressions otherwise. Asked once.
bool avx2Kernels() {
    static const bool yes = cpuHasAvx2Fma();
    return yes;
}
#endif

// C = op(A) op(B), or C += op(A) op(B) with `add`; op(X) is X or, with the flag, X^T. In float, where the
// processor has AVX2+FMA, the engine's kernel (engine/core/kernels/Gemm.h) instead of Eigen's product, which
// this baseline-ISA build gives four lanes and no FMA. The kernel writes a row-major C: column-major C is
// row-major C^T = op(B)^T op(A)^T, the kernel's rows C's columns (16 a panel: at least 8 of them, else
// Eigen's product). It reads each operand where it lies, given its strides: a transposed operand is not
// copied.
template <class S>
void product(Matrix<S>& C, const Matrix<S>& A, bool transA, const Matrix<S>& B, bool transB, bool add) {
    const Index M = transA ? A.cols() : A.rows(), K = transA ? A.rows() : A.cols(),
                N = transB ? B.rows() : B.cols();
#if FLOWSCOPE_HAVE_AVX2_KERNEL
    if constexpr (std::is_same_v<S, float>) {
        if (avx2Kernels() && M >= 8 && M * N * K >= 4096) { // else the kernel's 16-column panels do not pay
            // op(A)(i, k) = A.data()[i ai + k ak], op(B)(k, j) = B.data()[k bk + j bj].
            const long ai = transA ? long(A.rows()) : 1, ak = transA ? 1 : long(A.rows());
            const long bk = transB ? long(B.rows()) : 1, bj = transB ? 1 : long(B.rows());
            if (!add) C.resize(M, N);
            avx2::gemmStrided(int(N), int(M), int(K), B.data(), bj, bk, A.data(), ak, ai, C.data(), long(M),
                              add);
            return;
        }
    }
#endif
    auto assign = [&](const auto& e) {
        if (add) {
            C.noalias() += e;
        } else {
            C.noalias() = e;
        }
    };
    if (!transA && !transB) assign(A * B);
    if (transA && !transB) assign(A.transpose() * B);
    if (!transA && transB) assign(A * B.transpose());
    if (transA && transB) assign(A.transpose() * B.transpose());
}

// acc() of a product: n's gradient += op(A) op(B) (assigned on the first contribution).
template <class S>
void accProduct(Node<S>& n, const Matrix<S>& A, bool transA, const Matrix<S>& B, bool transB) {
    product(n.grad, A, transA, B, transB, n.reached);
    n.reached = true;
}

// n's gradient, zero-filled on the first contribution (for ops that write only a block of it).
template <class S> Matrix<S>& gradZeroed(Node<S>& n) {
    if (!n.reached) {
        n.grad.setZero(n.val().rows(), n.val().cols());
        n.reached = true;
    }
    return n.grad;
}

// ---- Matrices of few rows ----
//
// The RWPO layer and the drift's log-det record ops on d x N matrices: d = 1 to 5 rows, N = 1024 tokens.
// Eigen runs a block of rows, a column's sum or a broadcast down a column one column at a time, an inner
// loop of one to three floats with its set-up at every column. The loops below keep the row count a
// compile-time constant up to kFewRows. On 1024 columns: rows 2..3 of a 5-row matrix copy in 0.19 µs
// instead of 2.8, a 4-row vstack of three parts in 1.1 instead of 8.0, a 2-row colSum in 0.13 instead of
// 5.3 (docs/math/flows.md#few-rows). Copies and broadcasts are exact. A column's sum is Eigen's floats only
// where Eigen adds the column's rows in order, row 0 first: below its packet's size (four floats, two
// doubles in this baseline-ISA build; a longer column starts with the packets its alignment allows), so
// columnSums() loops only there.
constexpr Index kFewRows = 4;

// fn(R) with R the row count: a std::integral_constant up to kFewRows, else the Index itself.
template <class Fn> void withRowCount(Index rows, Fn&& fn) {
    static_assert(kFewRows == 4, "the cases below");
    switch (rows) {
    case 1:
        return fn(std::integral_constant<Index, 1>{});
    case 2:
        return fn(std::integral_constant<Index, 2>{});
    case 3:
        return fn(std::integral_constant<Index, 3>{});
    case 4:
        return fn(std::integral_constant<Index, 4>{});
    default:
        return fn(rows);
    }
}

// Rows [dstRow, dstRow + count) of dst = (Add: +=) rows [srcRow, srcRow + count) of src, every column.
template <bool Add, class S>
void copyRows(Matrix<S>& dst, Index dstRow, const Matrix<S>& src, Index srcRow, Index count) {
    S* const d = dst.data() + dstRow;
    const S* const s = src.data() + srcRow;
    const Index ld = dst.rows(), ls = src.rows(), cols = src.cols();
    withRowCount(count, [&](auto rows) {
        for (Index j = 0; j < cols; ++j)
            for (Index i = 0; i < Index(rows); ++i) {
                if constexpr (Add) {
                    d[j * ld + i] += s[j * ls + i];
                } else {
                    d[j * ld + i] = s[j * ls + i];
                }
            }
    });
}

// acc() of rows [row, row + count) of G.
template <class S> void accRows(Node<S>& n, const Matrix<S>& G, Index row, Index count) {
    if (n.reached) {
        copyRows<true>(n.grad, 0, G, row, count);
    } else {
        n.grad.resize(count, G.cols());
        copyRows<false>(n.grad, 0, G, row, count);
        n.reached = true;
    }
}

// f(k, v(i)) (PerRow: v is rows x 1) or f(k, v(j)) (v is 1 x cols) for every element (i, j) of a rows x
// cols matrix, k = i + j * rows the element's column-major offset.
template <bool PerRow, class S, class F> void eachWithBroadcast(Index rows, Index cols, const S* v, F f) {
    withRowCount(rows, [&](auto r) {
        for (Index j = 0, k = 0; j < cols; ++j)
            for (Index i = 0; i < Index(r); ++i, ++k) f(k, PerRow ? v[i] : v[j]);
    });
}

// acc() of g broadcast to n's shape, times `scale` element by element when given: n's gradient (i, j) +=
// g(i) scale(i, j) (PerRow: g is rows x 1) or g(j) scale(i, j) (g is 1 x cols). The backward of colSum and
// rowSum, and of a broadcast product's matrix operand.
template <bool PerRow, class S>
void accBroadcast(Node<S>& n, const Matrix<S>& g, const Matrix<S>* scale = nullptr) {
    const Index rows = n.val().rows(), cols = n.val().cols();
    const bool add = n.reached;
    if (!add) n.grad.resize(rows, cols);
    S* d = n.grad.data();
    const S* m = scale ? scale->data() : nullptr;
    eachWithBroadcast<PerRow>(rows, cols, g.data(), [&](Index k, S x) {
        if (m) x *= m[k];
        d[k] = add ? d[k] + x : x;
    });
    n.reached = true;
}

// The sum of each column of e (1 x cols), Eigen's floats: fewer rows than Eigen's packet (the section above)
// row 0 first, else Eigen's own sum.
template <class E> Matrix<typename E::Scalar> columnSums(const Eigen::MatrixBase<E>& e) {
    using S = typename E::Scalar;
    const Index rows = e.rows(), cols = e.cols();
    if (rows >= Index(Eigen::internal::packet_traits<S>::size) || rows == 0) return e.colwise().sum();
    Matrix<S> sums(1, cols);
    withRowCount(rows, [&](auto r) {
        for (Index j = 0; j < cols; ++j) {
            S sum = e(0, j);
            for (Index i = 1; i < Index(r); ++i) sum += e(i, j);
            sums(0, j) = sum;
        }
    });
    return sums;
}

// A unary elementwise op: y = f(a) on arrays.
template <class S, class F> Var<S> unary(Op op, Var<S> a, F f) {
    Tape<S>& t = tapeOf(op, a);
    Var<S> y = t.push(op, a);
    t.node(y).value = f(a.value().array()).matrix();
    return y;
}

template <class S, class F> Var<S> binary(Op op, Var<S> a, Var<S> b, F f) {
    Tape<S>& t = tapeOf(op, a, b);
    requireShape(a.rows() == b.rows() && a.cols() == b.cols(), op, a, b, "equal shapes");
    Var<S> y = t.push(op, a, b);
    t.node(y).value = f(a.value().array(), b.value().array()).matrix();
    return y;
}

// y = op(a) op(b), op transposing where asked; `need` names the inner dimensions that must agree.
template <class S> Var<S> matmulOp(Op op, Var<S> a, bool transA, Var<S> b, bool transB, const char* need) {
    Tape<S>& t = tapeOf(op, a, b);
    requireShape((transA ? a.rows() : a.cols()) == (transB ? b.cols() : b.rows()), op, a, b, need);
    Var<S> y = t.push(op, a, b);
    product(t.node(y).value, a.value(), transA, b.value(), transB, false);
    return y;
}

// An op of a and a vector v broadcast along a: a column (a.rows x 1) applied to every column, or a row
// (1 x a.cols) to every row; y = f(a's array, v's array).
template <class S, class F> Var<S> broadcast(Op op, Var<S> a, Var<S> v, bool column, F f) {
    Tape<S>& t = tapeOf(op, a, v);
    if (column)
        requireShape(v.rows() == a.rows() && v.cols() == 1, op, a, v, "c is a.rows x 1");
    else
        requireShape(v.rows() == 1 && v.cols() == a.cols(), op, a, v, "r is 1 x a.cols");
    Var<S> y = t.push(op, a, v);
    Matrix<S>& value = t.node(y).value;
    if (a.rows() <= kFewRows) { // a + v or a * v, element by element (the section above)
        value.resize(a.rows(), a.cols());
        S* out = value.data();
        const S* x = a.value().data();
        const bool product = op == Op::MulCol || op == Op::MulRow; // else AddCol or AddRow
        const auto each = [&](Index k, S c) { out[k] = product ? x[k] * c : x[k] + c; };
        if (column) {
            eachWithBroadcast<true>(a.rows(), a.cols(), v.value().data(), each);
        } else {
            eachWithBroadcast<false>(a.rows(), a.cols(), v.value().data(), each);
        }
    } else {
        value = f(a.value().array(), v.value().array()).matrix();
    }
    return y;
}

// An elementwise op of a and a constant s, kept in the node for the backward pass: y = f(a's array).
template <class S, class F> Var<S> withConstant(Op op, Var<S> a, S s, F f) {
    Var<S> y = unary(op, a, f);
    a.tape->node(y).s = s;
    return y;
}

// An elementwise op of a and a 1x1 Var s: y = f(a's array, s's value).
template <class S, class F> Var<S> withScalar(Op op, Var<S> a, Var<S> s, F f) {
    Tape<S>& t = tapeOf(op, a, s);
    requireScalar(s, op);
    Var<S> y = t.push(op, a, s);
    t.node(y).value = f(a.value().array(), s.scalar()).matrix();
    return y;
}

// A reduction (or any op of one operand whose value is a function of the operand's): y = f(a's value),
// f giving a matrix expression.
template <class S, class F> Var<S> reduce(Op op, Var<S> a, F f) {
    Tape<S>& t = tapeOf(op, a);
    Var<S> y = t.push(op, a);
    t.node(y).value = f(a.value());
    return y;
}

// A 1x1 value: the scalar v as a matrix expression.
template <class S> auto scalarValue(S v) {
    return Matrix<S>::Constant(1, 1, v);
}

// Row-wise softmax and log-sum-exp. Storage is column-major, so a row is strided: the loops run down the
// columns of a block of kRowBlock rows, and every inner operation is a contiguous, vectorized segment. A
// block (128 KB of a 1024-column float matrix) stays in cache across the passes; blocks run in parallel.
// Full blocks get the compile-time size Eigen::fix<kRowBlock>: fixed-size segments compile to straight
// packet code, without the alignment prologue and epilogue of a dynamic one (a third faster at N = 1024).
constexpr Index kRowBlock = 32;
template <class S, class N>
using BlockArray =
    Eigen::Array<S, std::is_same_v<N, Index> ? Eigen::Dynamic : int(kRowBlock), 1, 0, kRowBlock, 1>;

// Calls f(r, n) for the row blocks [r, r + n) of [0, rows); n is Eigen::fix<kRowBlock> or, for a last
// partial block, an Index.
template <class F> void forRowBlocks(Index rows, F f) {
    parallelFor(std::size_t(rows), std::size_t(4 * kRowBlock), [&](std::size_t begin, std::size_t end) {
        for (Index r = Index(begin); r < Index(end); r += kRowBlock) {
            if (Index(end) - r >= kRowBlock) {
                f(r, Eigen::fix<kRowBlock>);
            } else {
                f(r, Index(end) - r);
            }
        }
    });
}

template <class S, class N> BlockArray<S, N> rowMax(const Matrix<S>& X, Index r, N n) {
    BlockArray<S, N> m = X.col(0).segment(r, n).array();
    for (Index j = 1; j < X.cols(); ++j) m = m.max(X.col(j).segment(r, n).array());
    return m;
}

template <class S> void softmaxForward(const Matrix<S>& X, Matrix<S>& P) {
    P.resize(X.rows(), X.cols());
    forRowBlocks(X.rows(), [&](Index r, auto n) {
        const BlockArray<S, decltype(n)> m = rowMax(X, r, n);
        BlockArray<S, decltype(n)> s = BlockArray<S, decltype(n)>::Zero(n);
        for (Index j = 0; j < X.cols(); ++j) {
            auto p = P.col(j).segment(r, n).array();
            p = (X.col(j).segment(r, n).array() - m).exp();
            s += p;
        }
        s = s.inverse();
        for (Index j = 0; j < X.cols(); ++j) P.col(j).segment(r, n).array() *= s;
    });
}

// dX = P o (G - rowsum(G o P) 1^T), added into (or, when !add, assigned to) dX.
template <class S> void softmaxBackward(const Matrix<S>& P, const Matrix<S>& G, Matrix<S>& dX, bool add) {
    if (!add) dX.resize(P.rows(), P.cols());
    forRowBlocks(P.rows(), [&](Index r, auto n) {
        BlockArray<S, decltype(n)> d = BlockArray<S, decltype(n)>::Zero(n);
        for (Index j = 0; j < P.cols(); ++j)
            d += G.col(j).segment(r, n).array() * P.col(j).segment(r, n).array();
        for (Index j = 0; j < P.cols(); ++j) {
            const auto gp = P.col(j).segment(r, n).array() * (G.col(j).segment(r, n).array() - d);
            if (add) {
                dX.col(j).segment(r, n).array() += gp;
            } else {
                dX.col(j).segment(r, n).array() = gp;
            }
        }
    });
}

template <class S> void logSumExpForward(const Matrix<S>& X, Matrix<S>& L) {
    L.resize(X.rows(), 1);
    forRowBlocks(X.rows(), [&](Index r, auto n) {
        const BlockArray<S, decltype(n)> m = rowMax(X, r, n);
        BlockArray<S, decltype(n)> s = BlockArray<S, decltype(n)>::Zero(n);
        for (Index j = 0; j < X.cols(); ++j) s += (X.col(j).segment(r, n).array() - m).exp();
        L.col(0).segment(r, n).array() = m + s.log();
    });
}

// dX = (g 1^T) o exp(X - l 1^T): the softmax weighted by each row's incoming gradient.
template <class S>
void logSumExpBackward(const Matrix<S>& X, const Matrix<S>& L, const Matrix<S>& G, Matrix<S>& dX, bool add) {
    if (!add) dX.resize(X.rows(), X.cols());
    forRowBlocks(X.rows(), [&](Index r, auto n) {
        const BlockArray<S, decltype(n)> l = L.col(0).segment(r, n).array(),
                                         g = G.col(0).segment(r, n).array();
        for (Index j = 0; j < X.cols(); ++j) {
            const auto gp = g * (X.col(j).segment(r, n).array() - l).exp();
            if (add) {
                dX.col(j).segment(r, n).array() += gp;
            } else {
                dX.col(j).segment(r, n).array() = gp;
            }
        }
    });
}

// Per group (columns [g n, g n + n)), with P = softmax_rows(scale Q^T K) and out = V P^T:
//     dV = G P,   dP = G^T V,   dS = P o (dP - rowsum(P o dP) 1^T),   dQ = scale K dS^T,   dK = scale Q dS.
// Each group writes only its own columns of the operands' gradients, so groups run in parallel.
template <class S> void groupAttentionBackward(Node<S>& n, Node<S>& q, Node<S>& k, Node<S>& v) {
    const Index m = n.start, groups = n.value.cols() / std::max<Index>(m, 1);
    const S scale = n.s;
    const Matrix<S>& G = n.grad;
    Matrix<S>* dq = q.needsGrad ? &gradZeroed(q) : nullptr;
    Matrix<S>* dk = k.needsGrad ? &gradZeroed(k) : nullptr;
    Matrix<S>* dv = v.needsGrad ? &gradZeroed(v) : nullptr;
    parallelFor(std::size_t(groups), 1, [&](std::size_t begin, std::size_t end) {
        Matrix<S> dP, dS;
        for (Index g = Index(begin); g < Index(end); ++g) {
            const Index c0 = g * m;
            const auto P = n.aux.middleCols(c0, m);
            const auto Gg = G.middleCols(c0, m);
            if (dv) dv->middleCols(c0, m).noalias() += Gg * P;
            if (!dq && !dk) continue;
            dP.noalias() = Gg.transpose() * v.val().middleCols(c0, m);
            const auto rowDot = (P.array() * dP.array()).rowwise().sum().eval();
            dS = (P.array() * (dP.array().colwise() - rowDot)).matrix();
            if (dq) dq->middleCols(c0, m).noalias() += scale * (k.val().middleCols(c0, m) * dS.transpose());
            if (dk) dk->middleCols(c0, m).noalias() += scale * (q.val().middleCols(c0, m) * dS);
        }
    });
}

// ---- attention(q, k, v): tiles of queries, weights recomputed in backward ----
//
// A tile is kTile consecutive queries [j0, j0 + n). `self` is the column of query 0's own key (the node's
// start - 1), or -1 when every key is seen. Its weights W (Nk x n, column jj: query j0 + jj) come
// from one small GEMM of the transposed keys and a column-wise softmax (expShifted on each contiguous
// column). Forward and backward call the same tileWeights, so backward sees the forward's weights bit for
// bit. With A = V^T G_tile and ā_j = g_j · out_j (the forward output), the tile's gradients are
//     C = W o (A - 1 ā^T),   dQ_tile = K C,   dK += Q_tile C^T,   dV += G_tile W^T.
// dK and dV sum over every tile: tiles are dealt to a fixed number of slots, each slot walks its tiles in
// order and keeps its own sums, and the slots are added in order, so the result does not depend on the
// thread count or timing.
constexpr Index kTile = 16, kSlots = 16;
// kernelBackward keeps its slots' buffers for the next call up to this many floats (16 MB).
constexpr Index kKeptSlotFloats = Index(1) << 22;

template <class S>
void tileWeights(const Matrix<S>& Kt, const Matrix<S>& Q, Index j0, Index n, Index self, Matrix<S>& W) {
    W.noalias() = Kt * Q.middleCols(j0, n);
    for (Index jj = 0; jj < n; ++jj) {
        auto w = W.col(jj).array();
        if (self >= 0) w(self + j0 + jj) = -std::numeric_limits<S>::infinity();
        expShifted(w.data(), w.size(), w.maxCoeff());
        w *= S(1) / w.sum();
    }
}

template <class S>
void attentionForward(const Matrix<S>& Q, const Matrix<S>& K, const Matrix<S>& V, Index self,
                      Matrix<S>& out) {
    const Index N = Q.cols();
    const Matrix<S> Kt = K.transpose();
    out.resize(V.rows(), N);
    parallelFor(std::size_t((N + kTile - 1) / kTile), 1, [&](std::size_t begin, std::size_t end) {
        Matrix<S> W;
        for (Index t = Index(begin); t < Index(end); ++t) {
            const Index j0 = t * kTile, n = std::min(kTile, N - j0);
            tileWeights(Kt, Q, j0, n, self, W);
            out.middleCols(j0, n).noalias() = V * W;
        }
    });
}

template <class S> void attentionBackward(Node<S>& n, Node<S>& q, Node<S>& k, Node<S>& v) {
    const Matrix<S>&Q = q.val(), &K = k.val(), &V = v.val(), &G = n.grad;
    const Index N = Q.cols(), Nk = K.cols(), tiles = (N + kTile - 1) / kTile;
    const Index self = n.start - 1;
    const Matrix<S> Kt = K.transpose(), Vt = V.transpose();
    Matrix<S>* dq = q.needsGrad ? &gradZeroed(q) : nullptr;
    const bool wantK = k.needsGrad, wantV = v.needsGrad;
    const Index slots = std::min(kSlots, tiles);
    std::vector<Matrix<S>> dKt(wantK ? slots : 0), dVt(wantV ? slots : 0);
    parallelFor(std::size_t(slots), 1, [&](std::size_t begin, std::size_t end) {
        Matrix<S> W, C;
        for (Index s = Index(begin); s < Index(end); ++s) {
            if (wantK) dKt[s].setZero(Nk, Q.rows());
            if (wantV) dVt[s].setZero(Nk, V.rows());
            for (Index t = s; t < tiles; t += slots) {
                const Index j0 = t * kTile, m = std::min(kTile, N - j0);
                tileWeights(Kt, Q, j0, m, self, W);
                const auto Gt = G.middleCols(j0, m);
                if (wantV) dVt[s].noalias() += W * Gt.transpose();
                if (!dq && !wantK) continue;
                const auto abar = (Gt.array() * n.value.middleCols(j0, m).array()).colwise().sum().eval();
                C.noalias() = Vt * Gt;
                C = (W.array() * (C.array().rowwise() - abar)).matrix();
                if (dq) dq->middleCols(j0, m).noalias() += K * C;
                if (wantK) dKt[s].noalias() += C * Q.middleCols(j0, m).transpose();
            }
        }
    });
    for (Index s = 0; s < slots; ++s) {
        if (wantK) acc(k, dKt[s].transpose());
        if (wantV) acc(v, dVt[s].transpose());
    }
}

// biasedAttention's operands as attention's: the biases as features, [q; a; 1] and [k; 1; b], or [q; 1] and
// [k; b] without a query bias.
template <class S> struct BiasFeatures {
    Node<S> q, k;     // value, needsGrad and, after attentionBackward, grad
    Index keyBiasRow; // b's row of k
    BiasFeatures(const Node<S>& q0, const Node<S>* a, const Node<S>& k0, const Node<S>& b) {
        const Index f = q0.val().rows(), extra = a ? 2 : 1;
        keyBiasRow = f + extra - 1;
        q.value.resize(f + extra, q0.val().cols());
        q.value.topRows(f) = q0.val();
        if (a) q.value.row(f) = a->val();
        q.value.bottomRows(1).setOnes();
        k.value.resize(f + extra, k0.val().cols());
        k.value.topRows(f) = k0.val();
        if (a) k.value.row(f).setOnes();
        k.value.bottomRows(1) = b.val();
        q.needsGrad = q0.needsGrad || (a && a->needsGrad);
        k.needsGrad = k0.needsGrad || b.needsGrad;
    }
};

// biasedAttention's backward where the float kernel does not run: attention's, on BiasFeatures.
template <class S>
void biasedAttentionBackward(Node<S>& n, Node<S>& q, Node<S>& k, Node<S>& v, Node<S>* a, Node<S>& b) {
    BiasFeatures<S> x(q, a, k, b);
    attentionBackward(n, x.q, x.k, v);
    const Index f = q.val().rows();
    if (x.q.reached && q.needsGrad) accRows(q, x.q.grad, 0, f);
    if (x.q.reached && a && a->needsGrad) accRows(*a, x.q.grad, f, 1);
    if (x.k.reached && k.needsGrad) accRows(k, x.k.grad, 0, f);
    if (x.k.reached && b.needsGrad) accRows(b, x.k.grad, x.keyBiasRow, 1);
}

// The float path of the shapes kernel::supports(): the SIMD kernel of AttentionKernel.h, which keeps m_j and
// 1/den_j of each query in the node's aux (2 x N) so backward recomputes a weight with one exp, or, up to
// kKeptWeights, the weights themselves as well. Keys and values are copied once per call into zero-padded
// structure-of-arrays rows, kernel::paddedStride() floats apart (the weights' columns and the gradients'
// rows too).
struct KernelOperands {
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> kt, vt;
    kernel::Attention args;
    // keyBias: the keys' biases (1 x Nk), kt's last row, or null; queryBias: the queries' (1 x N) or null.
    KernelOperands(const Matrix<float>& Q, const Matrix<float>& K, const Matrix<float>& V, Index self,
                   const Matrix<float>* queryBias, const Matrix<float>* keyBias) {
        const int nk = int(K.cols()), nkPadded = kernel::paddedKeys(nk),
                  stride = kernel::paddedStride(nkPadded);
        kt.setZero(K.rows() + (keyBias ? 1 : 0), stride);
        kt.topLeftCorner(K.rows(), nk) = K;
        if (keyBias) kt.row(K.rows()).head(nk) = *keyBias;
        vt.setZero(V.rows(), stride);
        vt.leftCols(nk) = V;
        args = {int(K.rows()),
                int(V.rows()),
                nk,
                nkPadded,
                kt.data(),
                vt.data(),
                Q.data(),
                int(self),
                stride,
                keyBias != nullptr,
                queryBias ? queryBias->data() : nullptr};
    }
};

template <class S> bool useKernel(const Matrix<S>& K, const Matrix<S>& V, bool keyBias) {
    return std::is_same_v<S, float> && kernel::supports(int(K.rows()), int(V.rows()), keyBias);
}

// A node that will be differentiated keeps its weights (stride x N floats) for backward when there are at
// most this many: backward then reads one float per query and key instead of a logit and an exp (1.4 -> 0.9
// ms at 1024 x 1024, f = 4, r = 5, the same floats), at 4 bytes a pair. aux is then 2 x (N + stride N / 2):
// the stats (2 x N) and after them the weights.
constexpr Index kKeptWeights = Index(1) << 21;

// `keep(floats)`: whether the tape's budget takes this node's weights (Tape::reserveKept).
void kernelForward(const Matrix<float>& Q, const Matrix<float>& K, const Matrix<float>& V,
                   const Matrix<float>* queryBias, const Matrix<float>* keyBias, Index self,
                   bool differentiated, const std::function<bool(Index)>& keepWeights, Matrix<float>& out,
                   Matrix<float>& aux) {
    const KernelOperands ops(Q, K, V, self, queryBias, keyBias);
    const Index N = Q.cols(), stride = ops.args.stride();
    const bool keep = differentiated && stride * N <= kKeptWeights && keepWeights(stride * N);
    out.resize(V.rows(), N);
    aux.resize(2, keep ? N + stride / 2 * N : N); // the stride is even (a multiple of kKeyBlock)
    float* weights = keep ? aux.data() + 2 * N : nullptr;
    parallelFor(std::size_t((N + kTile - 1) / kTile), 1, [&](std::size_t begin, std::size_t end) {
        kernel::forward(ops.args, int(begin * kTile), int(std::min<Index>(Index(end) * kTile, N)), out.data(),
                        aux.data(), weights);
    });
}

// qb, kb: the queries' and keys' biases (biasedAttention), or null (kb null: no biases).
void kernelBackward(Node<float>& n, Node<float>& q, Node<float>& k, Node<float>& v, Node<float>* qb,
                    Node<float>* kb) {
    const KernelOperands ops(q.val(), k.val(), v.val(), n.start - 1, qb ? &qb->val() : nullptr,
                             kb ? &kb->val() : nullptr);
    const Index f = q.val().rows(), N = q.val().cols(), Nk = k.val().cols(), tiles = (N + kTile - 1) / kTile;
    if (N == 0) return; // no query: no gradient reaches any operand
    // With biases the kernel writes f + 1 rows a query (the last the query bias's gradient): into a block of
    // its own, split below.
    const bool wantQb = qb && qb->needsGrad, wantKb = kb && kb->needsGrad;
    Matrix<float> dqBiased;
    float* dq = nullptr;
    if (kb && (q.needsGrad || wantQb)) {
        dq = dqBiased.setZero(f + 1, N).data();
    } else if (!kb && q.needsGrad) {
        dq = gradZeroed(q).data();
    }
    const bool wantK = k.needsGrad || wantKb, wantV = v.needsGrad;
    // Inside a parallelFor (a part of a batch split over tapes, flows/BatchSplit.h) the slots would run one
    // after another on this thread: one slot then sums every tile in order, without the other fifteen's zero
    // fills, additions and their 16x larger working set.
    const Index slots = insideParallelFor() ? 1 : std::min(kSlots, tiles);
    const float* weights = n.aux.cols() > N ? n.aux.data() + 2 * N : nullptr; // kept by kernelForward
    using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    // The slots' sums are buffers of the calling thread, kept from call to call while they are small: made
    // afresh, their 16 x (f + r) x stride floats (f + 1 + r with biases; 599 KB in an RWPO sub-step at batch
    // 1024 before biasedAttention) went back to
    // the system at every call and came back as page faults and zero fills
    // (docs/math/flows.md#training-speed). The lambda below runs on other threads too: it reaches the
    // buffers through these references (by name it would find its own thread's).
    thread_local std::vector<RowMajor> keptK, keptV;
    std::vector<RowMajor>& dKt = keptK;
    std::vector<RowMajor>& dVt = keptV;
    if (wantK && Index(dKt.size()) < slots) dKt.resize(std::size_t(slots));
    if (wantV && Index(dVt.size()) < slots) dVt.resize(std::size_t(slots));
    parallelFor(std::size_t(slots), 1, [&](std::size_t begin, std::size_t end) {
        for (Index s = Index(begin); s < Index(end); ++s) {
            if (wantK) dKt[s].setZero(ops.kt.rows(), ops.kt.cols());
            if (wantV) dVt[s].setZero(ops.vt.rows(), ops.vt.cols());
            for (Index t = s; t < tiles; t += slots)
                kernel::backward(ops.args, int(t * kTile), int(std::min(N, (t + 1) * kTile)), n.value.data(),
                                 n.aux.data(), n.grad.data(), dq, wantK ? dKt[s].data() : nullptr,
                                 wantV ? dVt[s].data() : nullptr, weights);
        }
    });
    // The slots' sums in order, row-major (contiguous, vectorized), then one transposed write each.
    for (Index s = 1; s < slots; ++s) {
        if (wantK) dKt[0] += dKt[s];
        if (wantV) dVt[0] += dVt[s];
    }
    if (k.needsGrad) acc(k, dKt[0].topLeftCorner(f, Nk));
    if (wantKb) acc(*kb, dKt[0].block(f, 0, 1, Nk));
    if (wantV) acc(v, dVt[0].leftCols(Nk));
    if (kb && q.needsGrad) accRows(q, dqBiased, 0, f);
    if (wantQb) accRows(*qb, dqBiased, f, 1);
    if (slots * (ops.kt.rows() + ops.vt.rows()) * ops.kt.cols() > kKeptSlotFloats) {
        dKt.clear();
        dVt.clear();
    }
}

} // namespace

// ---- Tape ----

template <class S> S Var<S>::scalar() const {
    const Matrix<S>& v = value();
    if (v.rows() != 1 || v.cols() != 1)
        throw std::invalid_argument("ad: scalar() of a " + shapeOf(v.rows(), v.cols()) + " Var");
    return v(0, 0);
}

template <class S> Var<S> Tape<S>::push(Op op, Var<S> a, Var<S> b) {
    if (size_ == int(nodes_.size())) nodes_.emplace_back();
    Node<S>& n = nodes_[size_];
    n.op = op;
    n.a = a.index;
    n.b = b.index;
    n.start = 0;
    n.s = 0;
    n.needsGrad = (a.index >= 0 && nodes_[a.index].needsGrad) || (b.index >= 0 && nodes_[b.index].needsGrad);
    n.reached = false;
    n.param = nullptr;
    n.paramGrad = nullptr;
    n.parts.clear();
    return {this, size_++};
}

template <class S> Node<S>& Tape<S>::node(Var<S> v) {
    return const_cast<Node<S>&>(static_cast<const Tape&>(*this).node(v));
}

template <class S> const Node<S>& Tape<S>::node(Var<S> v) const {
    if (v.tape != this || v.index < 0 || v.index >= size_)
        throw std::invalid_argument("ad: a Var that is not a node of this tape (recorded before clear()?)");
    return nodes_[v.index];
}

template <class S> Var<S> Tape<S>::constant(const Matrix<S>& v) {
    Var<S> y = push(Op::Constant);
    node(y).value = v;
    return y;
}

template <class S> Var<S> Tape<S>::input(const Matrix<S>& v) {
    Var<S> y = push(Op::Input);
    Node<S>& n = node(y);
    n.value = v;
    n.needsGrad = true;
    return y;
}

template <class S> Var<S> Tape<S>::parameter(const Matrix<S>& p, Matrix<S>& grad) {
    if (grad.size() == 0) grad.setZero(p.rows(), p.cols());
    if (grad.rows() != p.rows() || grad.cols() != p.cols())
        fail(Op::Parameter, "the value is " + shapeOf(p.rows(), p.cols()) + " but its gradient storage is " +
                                shapeOf(grad.rows(), grad.cols()));
    Var<S> y = push(Op::Parameter);
    Node<S>& n = node(y);
    n.param = &p;
    n.paramGrad = &grad;
    n.needsGrad = true;
    return y;
}

template <class S> const Matrix<S>& Tape<S>::grad(Var<S> v) const {
    const Node<S>& n = node(v);
    if (!n.needsGrad)
        throw std::invalid_argument("ad: grad() of a node no input or parameter is upstream of");
    return n.grad;
}

template <class S> void Tape<S>::backward(Var<S> loss) {
    beginBackward(loss);
    backwardTo(0);
    endBackward();
}

template <class S> void Tape<S>::beginBackward(Var<S> loss) {
    Node<S>& l = node(loss);
    if (l.val().rows() != 1 || l.val().cols() != 1)
        throw std::invalid_argument("ad::backward: the loss is " + shapeOf(l.val().rows(), l.val().cols()) +
                                    ", not 1x1");
    for (int i = 0; i < size_; ++i) nodes_[i].reached = false;
    next_ = loss.index;
    if (l.needsGrad) {
        l.grad.setOnes(1, 1);
        l.reached = true;
    }
}

template <class S> void Tape<S>::backwardTo(int index) {
    for (; next_ >= std::max(index, 0); --next_)
        if (nodes_[next_].reached) backwardNode(nodes_[next_]);
}

template <class S> void Tape<S>::addGrad(Var<S> v, const Eigen::Ref<const Matrix<S>>& g) {
    Node<S>& n = node(v);
    if (!n.needsGrad || v.index > next_ || g.rows() != n.val().rows() || g.cols() != n.val().cols())
        throw std::invalid_argument(
            "ad::addGrad: a " + shapeOf(g.rows(), g.cols()) + " gradient for node " +
            std::to_string(v.index) + " (" + opName(n.op) + ", " + shapeOf(n.val().rows(), n.val().cols()) +
            "), which needs none, or has run already (next " + std::to_string(next_) + ")");
    acc(n, g);
}

template <class S> void Tape<S>::endBackward() {
    for (int i = 0; i < size_; ++i) {
        Node<S>& n = nodes_[i];
        if (n.needsGrad && !n.reached) n.grad.setZero(n.val().rows(), n.val().cols());
    }
    next_ = -1;
}

template <class S> void Tape<S>::backwardNode(Node<S>& n) {
    const Matrix<S>& G = n.grad;
    Node<S>* A = n.a >= 0 ? &nodes_[n.a] : nullptr;
    Node<S>* B = n.b >= 0 ? &nodes_[n.b] : nullptr;
    const bool da = A && A->needsGrad, db = B && B->needsGrad;
    const auto ga = G.array();
    const S g = G.size() == 1 ? G(0, 0) : S(0); // the incoming gradient of a 1x1 result
    switch (n.op) {
    case Op::Constant:
    case Op::Input:
        break;
    case Op::Parameter:
        *n.paramGrad += G;
        break;

    case Op::MatMul:
        if (da) accProduct(*A, G, false, B->val(), true);
        if (db) accProduct(*B, A->val(), true, G, false);
        break;
    case Op::MatMulTN: // Y = A^T B
        if (da) accProduct(*A, B->val(), false, G, true);
        if (db) accProduct(*B, A->val(), false, G, false);
        break;
    case Op::MatMulNT: // Y = A B^T
        if (da) accProduct(*A, G, false, B->val(), false);
        if (db) accProduct(*B, G, true, A->val(), false);
        break;
    case Op::Transpose:
        acc(*A, G.transpose());
        break;

    case Op::Add:
        if (da) acc(*A, G);
        if (db) acc(*B, G);
        break;
    case Op::Sub:
        if (da) acc(*A, G);
        if (db) acc(*B, -G);
        break;
    case Op::Mul:
        if (da) acc(*A, G.cwiseProduct(B->val()));
        if (db) acc(*B, G.cwiseProduct(A->val()));
        break;
    case Op::Div: // d(a/b)/db = -(a/b)/b
        if (da) acc(*A, G.cwiseQuotient(B->val()));
        if (db) acc(*B, (-ga * n.value.array() / B->val().array()).matrix());
        break;

    case Op::AddCol:
        if (da) acc(*A, G);
        if (db) acc(*B, G.rowwise().sum());
        break;
    case Op::AddRow:
        if (da) acc(*A, G);
        if (db) acc(*B, columnSums(G));
        break;
    case Op::MulCol:
        if (da && G.rows() <= kFewRows) {
            accBroadcast<true>(*A, B->val(), &G);
        } else if (da) {
            acc(*A, (ga.colwise() * B->val().col(0).array()).matrix());
        }
        if (db) acc(*B, G.cwiseProduct(A->val()).rowwise().sum());
        break;
    case Op::MulRow:
        if (da && G.rows() <= kFewRows) {
            accBroadcast<false>(*A, B->val(), &G);
        } else if (da) {
            acc(*A, (ga.rowwise() * B->val().row(0).array()).matrix());
        }
        if (db) acc(*B, columnSums(G.cwiseProduct(A->val())));
        break;

    case Op::Scale:
        acc(*A, n.s * G);
        break;
    case Op::ScaleVar:
        if (da) acc(*A, B->val()(0, 0) * G);
        if (db) acc(*B, Matrix<S>::Constant(1, 1, G.cwiseProduct(A->val()).sum()));
        break;
    case Op::AddScalar:
        acc(*A, G);
        break;
    case Op::AddScalarVar:
        if (da) acc(*A, G);
        if (db) acc(*B, Matrix<S>::Constant(1, 1, G.sum()));
        break;
    case Op::Neg:
        acc(*A, -G);
        break;

    case Op::Tanh:
#if FLOWSCOPE_HAVE_AVX2_KERNEL
        if constexpr (std::is_same_v<S, float>)
            if (avx2Kernels()) {
                if (!A->reached) A->grad.resize(G.rows(), G.cols());
                kernel::avx2::tanhBackward(G.data(), n.value.data(), A->grad.data(), G.size(), A->reached);
                A->reached = true;
                break;
            }
#endif
        acc(*A, (ga * (S(1) - n.value.array().square())).matrix());
        break;
    case Op::LogCosh: // B, when given, holds tanh(A) (and gets no gradient here)
        if (B) {
            acc(*A, G.cwiseProduct(B->val()));
        } else {
            acc(*A, (ga * A->val().array().tanh()).matrix());
        }
        break;
    case Op::Exp:
        acc(*A, G.cwiseProduct(n.value));
        break;
    case Op::Log:
        acc(*A, G.cwiseQuotient(A->val()));
        break;
    case Op::Square:
        acc(*A, (S(2) * ga * A->val().array()).matrix());
        break;
    case Op::Sqrt:
        acc(*A, (S(0.5) * ga / n.value.array()).matrix());
        break;
    case Op::Abs:
        acc(*A, (ga * A->val().array().sign()).matrix());
        break;
    case Op::Softplus:
        acc(*A, (ga * A->val().array().logistic()).matrix());
        break;
    case Op::Sigmoid:
        acc(*A, (ga * n.value.array() * (S(1) - n.value.array())).matrix());
        break;
    case Op::Relu:
        acc(*A, (A->val().array() > S(0)).select(ga, S(0)).matrix());
        break;

    case Op::SoftThreshold: {
        const auto x = A->val().array();
        const auto pass = x.abs() > B->val()(0, 0); // 1{|x| > t}
        if (da) acc(*A, pass.select(ga, S(0)).matrix());
        if (db) acc(*B, Matrix<S>::Constant(1, 1, -pass.select(ga * x.sign(), S(0)).sum()));
        break;
    }
    case Op::HuberL1: {
        const auto x = A->val().array();
        const S lambda = B->val()(0, 0), h = n.s;
        if (da) acc(*A, (ga * (x / h).max(-lambda).min(lambda)).matrix());
        if (db) acc(*B, Matrix<S>::Constant(1, 1, (ga * (x.abs() - lambda * h).max(S(0))).sum()));
        break;
    }

    case Op::Sum:
        acc(*A, Matrix<S>::Constant(A->val().rows(), A->val().cols(), g));
        break;
    case Op::Mean:
        acc(*A, Matrix<S>::Constant(A->val().rows(), A->val().cols(), g / S(A->val().size())));
        break;
    case Op::ColSum:
        if (A->val().rows() <= kFewRows) {
            accBroadcast<false>(*A, G);
        } else {
            acc(*A, G.replicate(A->val().rows(), 1));
        }
        break;
    case Op::RowSum:
        if (A->val().rows() <= kFewRows) {
            accBroadcast<true>(*A, G);
        } else {
            acc(*A, G.replicate(1, A->val().cols()));
        }
        break;
    case Op::SumSquares:
        acc(*A, (S(2) * g) * A->val());
        break;
    case Op::ColSumWeightedSquares: { // q_j = Σ_k w_{k, j mod n} a_kj²
        const Matrix<S>&a = A->val(), &w = B->val();
        const Index n = w.cols(), tiles = a.cols() / n;
        Matrix<S>* dA = da ? &gradZeroed(*A) : nullptr;
        Matrix<S>* dW = db ? &gradZeroed(*B) : nullptr;
        for (Index t = 0; t < tiles; ++t) {
            const auto at = a.middleCols(t * n, n).array();
            const auto gt = G.middleCols(t * n, n).array();
            if (dA) dA->middleCols(t * n, n).array() += ((at * w.array()).rowwise() * gt.row(0)) * S(2);
            if (dW) dW->array() += at.square().rowwise() * gt.row(0);
        }
        break;
    }
    case Op::ColWeightedGram: { // y_(p,q),j = Σ_k w_kj (a_p)_kj (a_q)_kj, p <= q, blocks of n columns
        const Matrix<S>&a = A->val(), &w = B->val();
        const Index n = w.cols(), t = a.cols() / n;
        Matrix<S>* dA = da ? &gradZeroed(*A) : nullptr;
        Matrix<S>* dW = db ? &gradZeroed(*B) : nullptr;
        Eigen::Array<S, 1, Eigen::Dynamic> g; // row i of G, contiguous (a strided row does not vectorize)
        for (Index p = 0, i = 0; p < t; ++p)
            for (Index q = p; q < t; ++q, ++i) {
                g = G.row(i).array();
                const auto ap = a.middleCols(p * n, n).array(), aq = a.middleCols(q * n, n).array();
                if (dA) { // a diagonal entry is a square: twice the weight
                    dA->middleCols(p * n, n).array() += ((w.array() * aq).rowwise() * g) * S(p == q ? 2 : 1);
                    if (p != q) dA->middleCols(q * n, n).array() += (w.array() * ap).rowwise() * g;
                }
                if (dW) dW->array() += (ap * aq).rowwise() * g;
            }
        break;
    }
    case Op::ColSumSquares:
        acc(*A, ((A->val().array().rowwise() * G.row(0).array()) * S(2)).matrix());
        break;
    case Op::ColumnFunction:
        acc(*A, (n.aux.array().rowwise() * G.row(0).array()).matrix());
        break;

    case Op::SoftmaxRows:
        softmaxBackward(n.value, G, A->grad, A->reached);
        A->reached = true;
        break;
    case Op::LogSumExpRows:
        logSumExpBackward(A->val(), n.value, G, A->grad, A->reached);
        A->reached = true;
        break;

    case Op::GroupAttention:
        groupAttentionBackward(n, *A, *B, nodes_[n.parts[0]]);
        break;

    case Op::Attention: { // parts: v, then with biases a's index (-1: none) and b's
        Node<S>& V = nodes_[n.parts[0]];
        Node<S>* qb = n.parts.size() > 1 && n.parts[1] >= 0 ? &nodes_[n.parts[1]] : nullptr;
        Node<S>* kb = n.parts.size() > 2 ? &nodes_[n.parts[2]] : nullptr;
        if constexpr (std::is_same_v<S, float>)
            if (useKernel(B->val(), V.val(), kb != nullptr)) {
                kernelBackward(n, *A, *B, V, qb, kb);
                break;
            }
        if (kb) {
            biasedAttentionBackward(n, *A, *B, V, qb, *kb);
        } else {
            attentionBackward(n, *A, *B, V);
        }
        break;
    }

    case Op::GroupMean: {
        Matrix<S>& dA = gradZeroed(*A);
        for (Index g = 0; g < G.cols(); ++g)
            dA.middleCols(g * n.start, n.start).colwise() += G.col(g) / S(n.start);
        break;
    }

    case Op::Rows:
        copyRows<true>(gradZeroed(*A), n.start, G, 0, n.value.rows());
        break;
    case Op::Cols:
        gradZeroed(*A).middleCols(n.start, n.value.cols()) += G;
        break;
    case Op::VStack:
    case Op::HStack: {
        Index offset = 0;
        for (int p : n.parts) {
            Node<S>& part = nodes_[p];
            const Index r = part.val().rows(), c = part.val().cols();
            if (part.needsGrad) {
                if (n.op == Op::VStack) {
                    accRows(part, G, offset, r);
                } else {
                    acc(part, G.middleCols(offset, c));
                }
            }
            offset += n.op == Op::VStack ? r : c;
        }
        break;
    }
    }
}

// ---- Ops ----

template <class S> Var<S> matmul(Var<S> a, Var<S> b) {
    return matmulOp(Op::MatMul, a, false, b, false, "a.cols == b.rows");
}
template <class S> Var<S> matmulTN(Var<S> a, Var<S> b) {
    return matmulOp(Op::MatMulTN, a, true, b, false, "a.rows == b.rows");
}
template <class S> Var<S> matmulNT(Var<S> a, Var<S> b) {
    return matmulOp(Op::MatMulNT, a, false, b, true, "a.cols == b.cols");
}

template <class S> Var<S> transpose(Var<S> a) {
    Tape<S>& t = tapeOf(Op::Transpose, a);
    Var<S> y = t.push(Op::Transpose, a);
    t.node(y).value = a.value().transpose();
    return y;
}

template <class S> Var<S> add(Var<S> a, Var<S> b) {
    return binary(Op::Add, a, b, [](const auto& x, const auto& y) { return x + y; });
}
template <class S> Var<S> sub(Var<S> a, Var<S> b) {
    return binary(Op::Sub, a, b, [](const auto& x, const auto& y) { return x - y; });
}
template <class S> Var<S> mul(Var<S> a, Var<S> b) {
    return binary(Op::Mul, a, b, [](const auto& x, const auto& y) { return x * y; });
}
template <class S> Var<S> div(Var<S> a, Var<S> b) {
    return binary(Op::Div, a, b, [](const auto& x, const auto& y) { return x / y; });
}

template <class S> Var<S> addCol(Var<S> a, Var<S> c) {
    return broadcast(Op::AddCol, a, c, true,
                     [](const auto& x, const auto& v) { return x.colwise() + v.col(0); });
}
template <class S> Var<S> addRow(Var<S> a, Var<S> r) {
    return broadcast(Op::AddRow, a, r, false,
                     [](const auto& x, const auto& v) { return x.rowwise() + v.row(0); });
}
template <class S> Var<S> mulCol(Var<S> a, Var<S> c) {
    return broadcast(Op::MulCol, a, c, true,
                     [](const auto& x, const auto& v) { return x.colwise() * v.col(0); });
}
template <class S> Var<S> mulRow(Var<S> a, Var<S> r) {
    return broadcast(Op::MulRow, a, r, false,
                     [](const auto& x, const auto& v) { return x.rowwise() * v.row(0); });
}

template <class S> Var<S> scale(Var<S> a, Scalar<S> s) {
    return withConstant(Op::Scale, a, s, [s](const auto& x) { return s * x; });
}
template <class S> Var<S> scale(Var<S> a, Var<S> s) {
    return withScalar(Op::ScaleVar, a, s, [](const auto& x, S v) { return v * x; });
}
template <class S> Var<S> addScalar(Var<S> a, Scalar<S> s) {
    return withConstant(Op::AddScalar, a, s, [s](const auto& x) { return x + s; });
}
template <class S> Var<S> addScalar(Var<S> a, Var<S> s) {
    return withScalar(Op::AddScalarVar, a, s, [](const auto& x, S v) { return x + v; });
}

template <class S> Var<S> neg(Var<S> a) {
    return unary(Op::Neg, a, [](const auto& x) { return -x; });
}

// tanh of a double array in packet code: Eigen 3.4 vectorizes tanh for float only, and the scalar libm call
// was a quarter of a Transformer training step. |x| >= 0.1: sign(x) (1 - e) / (1 + e) with e = exp(-2|x|)
// (relative error below eps / (2|x|) <= 6e-16); |x| < 0.1: the Taylor series to x^15 (truncation below
// 1e-20 relative). Exact at 0 and saturating to ±1 without overflow.
Eigen::ArrayXXd tanhPacket(const Eigen::ArrayXXd& x) {
    Eigen::ArrayXXd y(x.rows(), x.cols());
    // Chunks of at most 256 values on the stack: no heap temporaries (a 512 KB one was page-faulted in anew
    // on every call).
    using Chunk = Eigen::Array<double, Eigen::Dynamic, 1, 0, 256, 1>;
    for (Index i = 0; i < x.size(); i += 256) {
        const Index n = std::min<Index>(256, x.size() - i);
        const auto xi = Eigen::Map<const Eigen::ArrayXd>(x.data() + i, n);
        const Chunk a = xi.abs(), e = (-2.0 * a).exp(), z = xi.square();
        // tanh x = x (1 - z/3 + 2z²/15 - 17z³/315 + 62z⁴/2835 - 1382z⁵/155925 + 21844z⁶/6081075
        //             - 929569z⁷/638512875),  z = x²
        const Chunk series =
            xi *
            (1.0 + z * (-1.0 / 3 +
                        z * (2.0 / 15 + z * (-17.0 / 315 +
                                             z * (62.0 / 2835 + z * (-1382.0 / 155925 +
                                                                     z * (21844.0 / 6081075 +
                                                                          z * (-929569.0 / 638512875))))))));
        Eigen::Map<Eigen::ArrayXd>(y.data() + i, n) =
            (a < 0.1).select(series, (1.0 - e) / (1.0 + e) * xi.sign());
    }
    return y;
}

template <class S> Var<S> tanh(Var<S> a) {
    if constexpr (std::is_same_v<S, double>) {
        return unary(Op::Tanh, a, [](const auto& x) { return tanhPacket(x); });
    } else {
#if FLOWSCOPE_HAVE_AVX2_KERNEL
        if (avx2Kernels()) {
            Tape<S>& t = tapeOf(Op::Tanh, a);
            Var<S> y = t.push(Op::Tanh, a);
            Matrix<S>& v = t.node(y).value;
            v.resize(a.rows(), a.cols());
            kernel::avx2::tanh(a.value().data(), v.data(), v.size());
            return y;
        }
#endif
        return unary(Op::Tanh, a, [](const auto& x) { return x.tanh(); });
    }
}
// log(2 cosh u) = |u| + log(1 + e), e = exp(-2|u|) in (0, 1]: log of 1 + e rather than log1p(e), which Eigen
// evaluates one scalar at a time (a tenth of a plain OT-Flow training step); with e <= 1 the rounding of 1 +
// e costs at most an ulp of 1, against a result of at least log 2.
template <class S> Var<S> logCosh(Var<S> a) {
    return unary(Op::LogCosh, a,
                 [](const auto& x) { return x.abs() + ((S(-2) * x.abs()).exp() + S(1)).log(); });
}
template <class S> Var<S> logCosh(Var<S> a, Var<S> tanhOfA) {
    Tape<S>& t = tapeOf(Op::LogCosh, a, tanhOfA);
    requireShape(a.rows() == tanhOfA.rows() && a.cols() == tanhOfA.cols(), Op::LogCosh, a, tanhOfA,
                 "equal shapes");
    // With e = exp(-2|u|), 1 + e = 2 / (1 + |tanh u|): log(2 cosh u) = |u| + log 2 - log(1 + |tanh u|), one
    // log and no exp (1 + |tanh u| lies in [1, 2], so the rounding of tanh moves the result by about an ulp).
    Var<S> y = t.push(Op::LogCosh, a, tanhOfA);
#if FLOWSCOPE_HAVE_AVX2_KERNEL
    if constexpr (std::is_same_v<S, float>)
        if (avx2Kernels()) {
            Matrix<S>& v = t.node(y).value;
            v.resize(a.rows(), a.cols());
            kernel::avx2::logCosh(a.value().data(), tanhOfA.value().data(), v.data(), v.size());
            return y;
        }
#endif
    t.node(y).value =
        (a.value().array().abs() + S(std::numbers::ln2) - (tanhOfA.value().array().abs() + S(1)).log())
            .matrix();
    return y;
}
template <class S> Var<S> exp(Var<S> a) {
    return unary(Op::Exp, a, [](const auto& x) { return x.exp(); });
}
template <class S> Var<S> log(Var<S> a) {
    return unary(Op::Log, a, [](const auto& x) { return x.log(); });
}
template <class S> Var<S> square(Var<S> a) {
    return unary(Op::Square, a, [](const auto& x) { return x.square(); });
}
template <class S> Var<S> sqrt(Var<S> a) {
    return unary(Op::Sqrt, a, [](const auto& x) { return x.sqrt(); });
}
template <class S> Var<S> abs(Var<S> a) {
    return unary(Op::Abs, a, [](const auto& x) { return x.abs(); });
}
template <class S> Var<S> softplus(Var<S> a) {
    return unary(Op::Softplus, a, [](const auto& x) { return x.max(S(0)) + (-x.abs()).exp().log1p(); });
}
template <class S> Var<S> sigmoid(Var<S> a) {
    return unary(Op::Sigmoid, a, [](const auto& x) { return x.logistic(); });
}
template <class S> Var<S> relu(Var<S> a) {
    return unary(Op::Relu, a, [](const auto& x) { return x.max(S(0)); });
}

template <class S> Var<S> softThreshold(Var<S> x, Var<S> t) {
    Tape<S>& tape = tapeOf(Op::SoftThreshold, x, t);
    requireScalar(t, Op::SoftThreshold);
    Var<S> y = tape.push(Op::SoftThreshold, x, t);
    const auto v = x.value().array();
    tape.node(y).value = (v.sign() * (v.abs() - t.scalar()).max(S(0))).matrix();
    return y;
}

template <class S> Var<S> huberL1(Var<S> x, Var<S> lambda, Scalar<S> h) {
    Tape<S>& t = tapeOf(Op::HuberL1, x, lambda);
    requireScalar(lambda, Op::HuberL1);
    const S l = lambda.scalar();
    if (!(h > 0) || !(l >= 0))
        fail(Op::HuberL1, "needs h > 0 and lambda >= 0 (got h = " + std::to_string(h) +
                              ", lambda = " + std::to_string(l) + ")");
    Var<S> y = t.push(Op::HuberL1, x, lambda);
    Node<S>& n = t.node(y);
    n.s = h;
    const auto v = x.value().array();
    n.value = (v.abs() <= l * h).select(v.square() / (2 * h), l * v.abs() - l * l * h / 2).matrix();
    return y;
}

template <class S> Var<S> sum(Var<S> a) {
    return reduce(Op::Sum, a, [](const Matrix<S>& x) { return scalarValue(x.sum()); });
}

template <class S> Var<S> mean(Var<S> a) {
    tapeOf(Op::Mean, a);
    if (a.value().size() == 0) fail(Op::Mean, "the mean of an empty matrix");
    return reduce(Op::Mean, a, [](const Matrix<S>& x) { return scalarValue(x.mean()); });
}

template <class S> Var<S> colSum(Var<S> a) {
    return reduce(Op::ColSum, a, [](const Matrix<S>& x) { return columnSums(x); });
}

template <class S> Var<S> rowSum(Var<S> a) {
    return reduce(Op::RowSum, a, [](const Matrix<S>& x) { return x.rowwise().sum(); });
}

template <class S> Var<S> sumSquares(Var<S> a) {
    return reduce(Op::SumSquares, a, [](const Matrix<S>& x) { return scalarValue(x.squaredNorm()); });
}

template <class S> Var<S> colSumSquares(Var<S> a) {
    return reduce(Op::ColSumSquares, a, [](const Matrix<S>& x) { return x.colwise().squaredNorm(); });
}

template <class S> Var<S> colSumWeightedSquares(Var<S> a, Var<S> w) {
    Tape<S>& t = tapeOf(Op::ColSumWeightedSquares, a, w);
    requireShape(w.rows() == a.rows() && w.cols() >= 1 && a.cols() % w.cols() == 0, Op::ColSumWeightedSquares,
                 a, w, "w with a's rows and a column count that divides a's");
    Var<S> y = t.push(Op::ColSumWeightedSquares, a, w);
    Matrix<S>& q = t.node(y).value;
    const Matrix<S>&av = a.value(), &wv = w.value();
    const Index n = wv.cols();
    q.resize(1, av.cols());
    for (Index c = 0; c < av.cols(); c += n)
        q.middleCols(c, n) = (av.middleCols(c, n).array().square() * wv.array()).colwise().sum().matrix();
    return y;
}

template <class S> Var<S> colWeightedGram(Var<S> a, Var<S> w) {
    Tape<S>& t = tapeOf(Op::ColWeightedGram, a, w);
    requireShape(w.rows() == a.rows() && w.cols() >= 1 && a.cols() % w.cols() == 0, Op::ColWeightedGram, a, w,
                 "w with a's rows and a column count that divides a's");
    Var<S> y = t.push(Op::ColWeightedGram, a, w);
    const Matrix<S>&av = a.value(), &wv = w.value();
    const Index n = wv.cols(), blocks = av.cols() / n;
    Matrix<S>& gram = t.node(y).value;
    gram.resize(blocks * (blocks + 1) / 2, n);
    for (Index p = 0, i = 0; p < blocks; ++p)
        for (Index q = p; q < blocks; ++q, ++i)
            gram.row(i) = (wv.array() * av.middleCols(p * n, n).array() * av.middleCols(q * n, n).array())
                              .colwise()
                              .sum();
    return y;
}

template <class S>
Var<S> columnFunction(Var<S> a, const Matrix<Scalar<S>>& values, const Matrix<Scalar<S>>& gradients) {
    tapeOf(Op::ColumnFunction, a);
    if (values.rows() != 1 || values.cols() != a.cols() || gradients.rows() != a.rows() ||
        gradients.cols() != a.cols())
        fail(Op::ColumnFunction, "values " + shapeOf(values.rows(), values.cols()) + " and gradients " +
                                     shapeOf(gradients.rows(), gradients.cols()) + " for an operand of " +
                                     shapeOf(a.rows(), a.cols()) +
                                     " (need 1 x cols and the operand's shape)");
    Var<S> y = reduce(Op::ColumnFunction, a, [&](const Matrix<S>&) -> const Matrix<S>& { return values; });
    a.tape->node(y).aux = gradients;
    return y;
}

// A row-wise op that needs at least one column: forward(a's value, y's value).
template <class S, class F> Var<S> rowwise(Op op, Var<S> a, F forward) {
    Tape<S>& t = tapeOf(op, a);
    if (a.cols() == 0) fail(op, "a matrix without columns (" + shapeOf(a.rows(), a.cols()) + ")");
    Var<S> y = t.push(op, a);
    forward(a.value(), t.node(y).value);
    return y;
}

template <class S> Var<S> softmaxRows(Var<S> a) {
    return rowwise(Op::SoftmaxRows, a, softmaxForward<S>);
}

template <class S> Var<S> logSumExpRows(Var<S> a) {
    return rowwise(Op::LogSumExpRows, a, logSumExpForward<S>);
}

template <class S> Var<S> groupAttention(Var<S> q, Var<S> k, Var<S> v, Index n, Scalar<S> scale) {
    Tape<S>& t = tapeOf(Op::GroupAttention, q, k);
    tapeOf(Op::GroupAttention, q, v);
    requireShape(q.rows() == k.rows() && q.cols() == k.cols(), Op::GroupAttention, q, k, "equal shapes");
    requireShape(v.cols() == q.cols(), Op::GroupAttention, q, v, "equal column counts");
    if (n <= 0 || q.cols() % n != 0)
        fail(Op::GroupAttention, "groups of " + std::to_string(n) + " columns do not tile " +
                                     std::to_string(q.cols()) + " columns");
    Var<S> y = t.push(Op::GroupAttention, q, k);
    Node<S>& node = t.node(y);
    node.parts.push_back(v.index);
    node.needsGrad = node.needsGrad || t.node(v).needsGrad;
    node.start = n;
    node.s = scale;
    const Matrix<S>&Q = q.value(), &K = k.value(), &V = v.value();
    node.value.resize(V.rows(), V.cols());
    node.aux.resize(n, Q.cols());
    parallelFor(std::size_t(Q.cols() / n), 1, [&](std::size_t begin, std::size_t end) {
        for (Index g = Index(begin); g < Index(end); ++g) {
            const Index c0 = g * n;
            auto P = node.aux.middleCols(c0, n);
            P.noalias() = scale * (Q.middleCols(c0, n).transpose() * K.middleCols(c0, n));
            // Column by column, so that every exp is packet code on a contiguous segment.
            using Column = Eigen::Array<S, Eigen::Dynamic, 1>;
            const Column rowMax = P.rowwise().maxCoeff();
            Column rowSum = Column::Zero(n);
            for (Index j = 0; j < n; ++j) {
                P.col(j).array() = (P.col(j).array() - rowMax).exp();
                rowSum += P.col(j).array();
            }
            const Column inv = rowSum.inverse();
            for (Index j = 0; j < n; ++j) P.col(j).array() *= inv;
            node.value.middleCols(c0, n).noalias() = V.middleCols(c0, n) * P.transpose();
        }
    });
    return y;
}

namespace {

// attention() and biasedAttention(): b null, or the keys' biases and a, when not null, the queries'.
template <class S>
Var<S> recordAttention(Var<S> q, Var<S> k, Var<S> v, const Var<S>* a, const Var<S>* b, bool excludeSelf,
                       Index selfOffset) {
    Tape<S>& t = tapeOf(Op::Attention, q, k);
    tapeOf(Op::Attention, q, v);
    requireShape(q.rows() == k.rows() && k.cols() >= 1, Op::Attention, q, k,
                 "equal row counts and at least one key");
    requireShape(v.cols() == k.cols(), Op::Attention, k, v, "one value per key");
    if (a) {
        tapeOf(Op::Attention, q, *a);
        requireShape(a->rows() == 1 && a->cols() == q.cols(), Op::Attention, q, *a, "a query bias 1 x N");
    }
    if (b) {
        tapeOf(Op::Attention, q, *b);
        requireShape(b->rows() == 1 && b->cols() == k.cols(), Op::Attention, k, *b, "a key bias 1 x Nk");
    }
    if (excludeSelf && (selfOffset < 0 || selfOffset + q.cols() > k.cols() || k.cols() < 2))
        fail(Op::Attention, "excludeSelf needs the queries' own keys, columns " + std::to_string(selfOffset) +
                                ".." + std::to_string(selfOffset + q.cols() - 1) +
                                ", among at least 2 keys, not " + std::to_string(k.cols()) + " keys for " +
                                std::to_string(q.cols()) + " queries");
    Var<S> y = t.push(Op::Attention, q, k);
    Node<S>& node = t.node(y);
    node.parts.push_back(v.index);
    node.needsGrad = node.needsGrad || t.node(v).needsGrad;
    if (b) {
        node.parts.push_back(a ? a->index : -1);
        node.parts.push_back(b->index);
        node.needsGrad = node.needsGrad || (a && t.node(*a).needsGrad) || t.node(*b).needsGrad;
    }
    const Index self = excludeSelf ? selfOffset : -1;
    node.start = self + 1;
    if constexpr (std::is_same_v<S, float>)
        if (useKernel(k.value(), v.value(), b != nullptr)) {
            kernelForward(
                q.value(), k.value(), v.value(), a ? &a->value() : nullptr, b ? &b->value() : nullptr, self,
                node.needsGrad, [&](Index floats) { return t.reserveKept(floats); }, node.value, node.aux);
            return y;
        }
    if (b) {
        const BiasFeatures<S> x(t.node(q), a ? &t.node(*a) : nullptr, t.node(k), t.node(*b));
        attentionForward(x.q.value, x.k.value, v.value(), self, node.value);
    } else {
        attentionForward(q.value(), k.value(), v.value(), self, node.value);
    }
    return y;
}

} // namespace

template <class S> Var<S> attention(Var<S> q, Var<S> k, Var<S> v, bool excludeSelf, Index selfOffset) {
    return recordAttention<S>(q, k, v, nullptr, nullptr, excludeSelf, selfOffset);
}

template <class S>
Var<S> biasedAttention(Var<S> q, Var<S> k, Var<S> v, Var<S> queryBias, Var<S> keyBias, bool excludeSelf,
                       Index selfOffset) {
    if (!keyBias.tape) fail(Op::Attention, "biasedAttention needs the keys' biases, a 1 x Nk Var");
    return recordAttention<S>(q, k, v, queryBias.tape ? &queryBias : nullptr, &keyBias, excludeSelf,
                              selfOffset);
}

template <class S> Var<S> groupMean(Var<S> a, Index n) {
    Tape<S>& t = tapeOf(Op::GroupMean, a);
    if (n <= 0 || a.cols() % n != 0)
        fail(Op::GroupMean, "groups of " + std::to_string(n) + " columns do not tile " +
                                std::to_string(a.cols()) + " columns");
    Var<S> y = t.push(Op::GroupMean, a);
    Node<S>& node = t.node(y);
    node.start = n;
    node.value.resize(a.rows(), a.cols() / n);
    for (Index g = 0; g < node.value.cols(); ++g)
        node.value.col(g) = a.value().middleCols(g * n, n).rowwise().sum() / S(n);
    return y;
}

template <class S> Var<S> rows(Var<S> a, Index start, Index count) {
    Tape<S>& t = tapeOf(Op::Rows, a);
    if (start < 0 || count < 0 || start + count > a.rows())
        fail(Op::Rows, "rows [" + std::to_string(start) + ", " + std::to_string(start + count) + ") of a " +
                           shapeOf(a.rows(), a.cols()) + " matrix");
    Var<S> y = t.push(Op::Rows, a);
    Node<S>& n = t.node(y);
    n.start = start;
    n.value.resize(count, a.cols());
    copyRows<false>(n.value, 0, a.value(), start, count);
    return y;
}

template <class S> Var<S> cols(Var<S> a, Index start, Index count) {
    Tape<S>& t = tapeOf(Op::Cols, a);
    if (start < 0 || count < 0 || start + count > a.cols())
        fail(Op::Cols, "columns [" + std::to_string(start) + ", " + std::to_string(start + count) +
                           ") of a " + shapeOf(a.rows(), a.cols()) + " matrix");
    Var<S> y = t.push(Op::Cols, a);
    t.node(y).start = start;
    t.node(y).value = a.value().middleCols(start, count);
    return y;
}

template <class S> Var<S> stack(Op op, const std::vector<Var<S>>& parts) {
    if (parts.empty()) fail(op, "nothing to stack");
    Tape<S>& t = tapeOf(op, parts[0]);
    const bool vertical = op == Op::VStack;
    Index total = 0;
    for (const Var<S>& p : parts) {
        tapeOf(op, parts[0], p);
        requireShape(vertical ? p.cols() == parts[0].cols() : p.rows() == parts[0].rows(), op, parts[0], p,
                     vertical ? "equal column counts" : "equal row counts");
        total += vertical ? p.rows() : p.cols();
    }
    Var<S> y = t.push(op);
    Node<S>& n = t.node(y);
    for (const Var<S>& p : parts) {
        n.parts.push_back(p.index);
        n.needsGrad = n.needsGrad || t.node(p).needsGrad;
    }
    if (vertical) {
        n.value.resize(total, parts[0].cols());
    } else {
        n.value.resize(parts[0].rows(), total);
    }
    Index offset = 0;
    for (const Var<S>& p : parts) {
        if (vertical) {
            copyRows<false>(n.value, offset, p.value(), 0, p.rows());
        } else {
            n.value.middleCols(offset, p.cols()) = p.value();
        }
        offset += vertical ? p.rows() : p.cols();
    }
    return y;
}

template <class S> Var<S> vstack(const std::vector<Var<S>>& parts) {
    return stack(Op::VStack, parts);
}
template <class S> Var<S> hstack(const std::vector<Var<S>>& parts) {
    return stack(Op::HStack, parts);
}

#define FLOWSCOPE_AD_INSTANTIATE(S)                                                                          \
    template struct Var<S>;                                                                                  \
    template class Tape<S>;                                                                                  \
    template Var<S> matmul(Var<S>, Var<S>);                                                                  \
    template Var<S> matmulTN(Var<S>, Var<S>);                                                                \
    template Var<S> matmulNT(Var<S>, Var<S>);                                                                \
    template Var<S> transpose(Var<S>);                                                                       \
    template Var<S> add(Var<S>, Var<S>);                                                                     \
    template Var<S> sub(Var<S>, Var<S>);                                                                     \
    template Var<S> mul(Var<S>, Var<S>);                                                                     \
    template Var<S> div(Var<S>, Var<S>);                                                                     \
    template Var<S> addCol(Var<S>, Var<S>);                                                                  \
    template Var<S> addRow(Var<S>, Var<S>);                                                                  \
    template Var<S> mulCol(Var<S>, Var<S>);                                                                  \
    template Var<S> mulRow(Var<S>, Var<S>);                                                                  \
    template Var<S> scale(Var<S>, S);                                                                        \
    template Var<S> scale(Var<S>, Var<S>);                                                                   \
    template Var<S> addScalar(Var<S>, S);                                                                    \
    template Var<S> addScalar(Var<S>, Var<S>);                                                               \
    template Var<S> neg(Var<S>);                                                                             \
    template Var<S> tanh(Var<S>);                                                                            \
    template Var<S> logCosh(Var<S>);                                                                         \
    template Var<S> logCosh(Var<S>, Var<S>);                                                                 \
    template Var<S> exp(Var<S>);                                                                             \
    template Var<S> log(Var<S>);                                                                             \
    template Var<S> square(Var<S>);                                                                          \
    template Var<S> sqrt(Var<S>);                                                                            \
    template Var<S> abs(Var<S>);                                                                             \
    template Var<S> softplus(Var<S>);                                                                        \
    template Var<S> sigmoid(Var<S>);                                                                         \
    template Var<S> relu(Var<S>);                                                                            \
    template Var<S> softThreshold(Var<S>, Var<S>);                                                           \
    template Var<S> huberL1(Var<S>, Var<S>, S);                                                              \
    template Var<S> sum(Var<S>);                                                                             \
    template Var<S> mean(Var<S>);                                                                            \
    template Var<S> colSum(Var<S>);                                                                          \
    template Var<S> rowSum(Var<S>);                                                                          \
    template Var<S> sumSquares(Var<S>);                                                                      \
    template Var<S> colSumSquares(Var<S>);                                                                   \
    template Var<S> colSumWeightedSquares(Var<S>, Var<S>);                                                   \
    template Var<S> colWeightedGram(Var<S>, Var<S>);                                                         \
    template Var<S> columnFunction(Var<S>, const Matrix<S>&, const Matrix<S>&);                              \
    template Var<S> softmaxRows(Var<S>);                                                                     \
    template Var<S> logSumExpRows(Var<S>);                                                                   \
    template Var<S> groupAttention(Var<S>, Var<S>, Var<S>, Index, S);                                        \
    template Var<S> attention(Var<S>, Var<S>, Var<S>, bool, Index);                                          \
    template Var<S> biasedAttention(Var<S>, Var<S>, Var<S>, Var<S>, Var<S>, bool, Index);                    \
    template Var<S> groupMean(Var<S>, Index);                                                                \
    template Var<S> rows(Var<S>, Index, Index);                                                              \
    template Var<S> cols(Var<S>, Index, Index);                                                              \
    template Var<S> vstack(const std::vector<Var<S>>&);                                                      \
    template Var<S> hstack(const std::vector<Var<S>>&);

FLOWSCOPE_AD_INSTANTIATE(float)
FLOWSCOPE_AD_INSTANTIATE(double)

} // namespace flowscope::ad
