// Flowscope engine: reverse-mode automatic differentiation over whole Eigen matrices (a "matrix tape").
//
// Every op works on a whole matrix (a batch is stored as columns, or as rows of an N x d token matrix), so a
// training step records a few hundred nodes, not millions, and each node's work is one vectorized Eigen
// expression or GEMM. The tape is a flat array of nodes in creation order, which is a topological order:
// backward() walks it once, in reverse. A node is an op code, up to two operand indices, a scalar, its value
// and its gradient; the backward of every op is one case of a switch (Tape.cpp). There is no std::function
// and no heap object per node, and clear() keeps the nodes and their matrices: a training loop that records
// the same graph every step stops allocating after its first step.
//
// Gradients flow only toward inputs and parameters: a node with none of them upstream (a constant, data, a
// mask) is never given a gradient and costs nothing in backward(). Shapes are checked when an op is recorded;
// a mismatch throws std::invalid_argument naming the op and the shapes.
//
//     ad::Tape<float> t;
//     auto x = t.constant(X);                                   // d x N data
//     auto W = t.parameter(params.W, grads.W), b = t.parameter(params.b, grads.b);
//     auto loss = ad::mean(ad::square(ad::addCol(ad::matmul(W, x), b)));
//     t.backward(loss);                                         // grads.W, grads.b += d loss / d (W, b)
//
// Ops are free functions taking Var handles; they are defined in Tape.cpp and instantiated for float and
// double only.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <type_traits>
#include <vector>

namespace flowscope::ad {

template <class S> using Matrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
using Index = Eigen::Index;

template <class S> class Tape;

// A light handle to a node of a tape: copy it freely. It stays valid until the tape is cleared.
template <class S> struct Var {
    Tape<S>* tape = nullptr;
    int index = -1;

    const Matrix<S>& value() const;
    Index rows() const { return value().rows(); }
    Index cols() const { return value().cols(); }
    S scalar() const; // the value of a 1x1 Var (throws std::invalid_argument for any other shape)
};

// clang-format off
enum class Op : std::uint8_t {
    Constant, Input, Parameter,
    MatMul, MatMulTN, MatMulNT, Transpose,
    Add, Sub, Mul, Div,
    AddCol, AddRow, MulCol, MulRow,
    Scale, ScaleVar, AddScalar, AddScalarVar, Neg,
    Tanh, LogCosh, Exp, Log, Square, Sqrt, Abs, Softplus, Sigmoid, Relu,
    SoftThreshold, HuberL1,
    Sum, Mean, ColSum, RowSum, SumSquares, ColSumSquares, ColSumWeightedSquares, ColWeightedGram,
    SoftmaxRows, LogSumExpRows, GroupAttention, GroupMean, Attention,
    Rows, Cols, VStack, HStack,
    ColumnFunction,
};
// clang-format on
const char* opName(Op op);

template <class S> struct Node {
    Op op = Op::Constant;
    int a = -1, b = -1;     // operand node indices (-1: none)
    Index start = 0;        // Rows, Cols: first row / column of the block; Group*: n; Attention: 1 + the
                            // column of query 0's own key (0: every key is seen)
    S s = 0;                // Scale, AddScalar: the constant; HuberL1: h; GroupAttention: scale
    bool needsGrad = false; // an input or a parameter is upstream of this node
    bool reached = false;   // in backward(): grad holds the gradient that reached this node
    Matrix<S> value;        // the op's result (a Parameter reads *param instead)
    Matrix<S> grad;         // d loss / d value, written by backward()
    Matrix<S> aux; // ColumnFunction: the gradient of each column's value; GroupAttention: the attention
                   // matrices P, group after group; Attention (float kernel): each query's m_j and 1 / den_j
                   // (2 x N), then, when it kept them for backward, its weights (Tape.cpp's kernelForward)
    const Matrix<S>* param = nullptr; // Parameter: the bound value...
    Matrix<S>* paramGrad = nullptr;   // ...and the storage backward() adds its gradient into
    std::vector<int> parts; // VStack, HStack: the operands, in order; GroupAttention: v; Attention: v, then
                            // for biasedAttention the query bias (-1: none) and the key bias

    const Matrix<S>& val() const { return param ? *param : value; }
};

template <class S> class Tape {
  public:
    // A leaf that receives no gradient (data, masks, targets).
    Var<S> constant(const Matrix<S>& v);
    // A leaf whose gradient backward() keeps: read it with grad().
    Var<S> input(const Matrix<S>& v);
    // A leaf bound to parameter storage the caller owns (no copy: p must stay alive and unchanged until
    // backward() has run). backward() ADDS d loss / d p into `grad`, so gradients accumulate over several
    // backward calls until the optimizer zeroes them. An empty `grad` is first resized to p's shape, zeroed.
    Var<S> parameter(const Matrix<S>& p, Matrix<S>& grad);
    Var<S> parameter(const Matrix<S>&& p, Matrix<S>& grad) = delete; // would bind to a dying temporary

    // Seeds d loss / d loss = 1 (loss must be 1x1) and runs the nodes recorded up to `loss` in reverse,
    // skipping those no gradient reaches. Afterwards grad(v) is d loss / d v for every v with an input or
    // a parameter upstream (zero where the loss does not depend on v), and every parameter's storage has
    // been incremented.
    void backward(Var<S> loss);
    const Matrix<S>& grad(Var<S> v) const;

    // backward() in segments, for one loss spread over several tapes that exchange values (a batch split
    // across threads, flows/BatchSplit.h): beginBackward(loss); backwardTo(i) for falling i, with addGrad()
    // calls between them; endBackward(). backward(loss) is exactly that with one backwardTo(0).
    void beginBackward(Var<S> loss);
    // Runs the reached nodes from where the last call stopped down to node `index` (inclusive).
    void backwardTo(int index);
    // Adds g into v's gradient; v must need one and not have been run yet (v.index < the last backwardTo).
    void addGrad(Var<S> v, const Eigen::Ref<const Matrix<S>>& g);
    // Whether a gradient reached v (else its gradient is zero once endBackward() has run).
    bool reached(Var<S> v) const { return node(v).reached; }
    // Zeroes the gradients of the nodes that need one and that no gradient reached.
    void endBackward();
    const Matrix<S>& value(Var<S> v) const { return node(v).val(); }

    // Drops every node but keeps the nodes' matrices for the next recording of (usually) the same graph.
    void clear() {
        size_ = 0;
        kept_ = 0;
    }
    int size() const { return size_; }

    // For op implementations: kept attention weights (float attention nodes keep their forward's weights for
    // backward) draw on one budget per recording, kKeptFloats floats (64 MiB): true and counted when
    // `floats` more fit, false (the node recomputes its weights) otherwise. clear() refills it.
    static constexpr Index kKeptFloats = Index(1) << 24;
    bool reserveKept(Index floats) {
        if (kept_ + floats > kKeptFloats) return false;
        kept_ += floats;
        return true;
    }

    // For op implementations: appends a node with operands a and b (either may be a default Var) and
    // returns it; the op then writes its value. node() checks that v belongs to this tape.
    Var<S> push(Op op, Var<S> a = {}, Var<S> b = {});
    Node<S>& node(Var<S> v);
    const Node<S>& node(Var<S> v) const;

  private:
    void backwardNode(Node<S>& n);

    // nodes_[0, size_) are live; the rest keep their allocations for reuse. A deque: growing it moves no
    // node, so an op may read operand values by reference while it appends (e.g. constant(someVar.value())).
    std::deque<Node<S>> nodes_;
    int size_ = 0;
    int next_ = -1;  // backward in segments: the next node to run
    Index kept_ = 0; // kept attention weights recorded since the last clear(), in floats
};

template <class S> const Matrix<S>& Var<S>::value() const {
    return tape->value(*this);
}

template <class S> using Scalar = std::type_identity_t<S>; // a scalar argument that does not deduce S

// Linear algebra.
template <class S> Var<S> matmul(Var<S> a, Var<S> b);   // a b
template <class S> Var<S> matmulTN(Var<S> a, Var<S> b); // a^T b
template <class S> Var<S> matmulNT(Var<S> a, Var<S> b); // a b^T
template <class S> Var<S> transpose(Var<S> a);

// Elementwise, same shapes.
template <class S> Var<S> add(Var<S> a, Var<S> b);
template <class S> Var<S> sub(Var<S> a, Var<S> b);
template <class S> Var<S> mul(Var<S> a, Var<S> b); // Hadamard product
template <class S> Var<S> div(Var<S> a, Var<S> b);

// Broadcasting: c is rows x 1 (one value per row, e.g. a bias), r is 1 x cols (one value per column).
template <class S> Var<S> addCol(Var<S> a, Var<S> c); // a + c 1^T
template <class S> Var<S> addRow(Var<S> a, Var<S> r); // a + 1 r
template <class S> Var<S> mulCol(Var<S> a, Var<S> c); // diag(c) a
template <class S> Var<S> mulRow(Var<S> a, Var<S> r); // a diag(r)

// Scalars; a Var scalar is 1x1 (a trainable beta, an offset).
template <class S> Var<S> scale(Var<S> a, Scalar<S> s);
template <class S> Var<S> scale(Var<S> a, Var<S> s);
template <class S> Var<S> addScalar(Var<S> a, Scalar<S> s);
template <class S> Var<S> addScalar(Var<S> a, Var<S> s);
template <class S> Var<S> neg(Var<S> a);

// Elementwise unary.
template <class S> Var<S> tanh(Var<S> a);
template <class S> Var<S> logCosh(Var<S> a); // log(2 cosh u) = |u| + log1p(exp(-2|u|)); derivative tanh u
// The same, given t = tanh(a) recorded before (as the OT-Flow potential records it anyway): the value is
// |a| + log 2 - log(1 + |t|) (one log, no exp) and backward reads t for the derivative instead of computing
// tanh again. t gets no gradient through this op.
template <class S> Var<S> logCosh(Var<S> a, Var<S> tanhOfA);
template <class S> Var<S> exp(Var<S> a);
template <class S> Var<S> log(Var<S> a);
template <class S> Var<S> square(Var<S> a);
template <class S> Var<S> sqrt(Var<S> a);
template <class S> Var<S> abs(Var<S> a);      // derivative sign(u), 0 at 0
template <class S> Var<S> softplus(Var<S> a); // log(1 + e^u) = max(u, 0) + log1p(exp(-|u|))
template <class S> Var<S> sigmoid(Var<S> a);
template <class S> Var<S> relu(Var<S> a); // derivative 1{u > 0}

// L1 proximal ops with a trainable 1x1 threshold.
// softThreshold(x, t) = sign(x) max(|x| - t, 0): d/dx = 1{|x| > t}, d/dt = -sign(x) 1{|x| > t}.
template <class S> Var<S> softThreshold(Var<S> x, Var<S> t);
// huberL1(x, lambda, h) = x^2 / (2h) where |x| <= lambda h, lambda |x| - lambda^2 h / 2 elsewhere: the
// Moreau envelope of lambda |.| with parameter h. d/dx = clip(x / h, -lambda, lambda),
// d/dlambda = max(|x| - lambda h, 0). Requires h > 0 and lambda >= 0 (e.g. lambda = softplus(raw)).
template <class S> Var<S> huberL1(Var<S> x, Var<S> lambda, Scalar<S> h);

// Reductions.
template <class S> Var<S> sum(Var<S> a);           // 1x1
template <class S> Var<S> mean(Var<S> a);          // 1x1
template <class S> Var<S> colSum(Var<S> a);        // 1 x cols: the sum of each column
template <class S> Var<S> rowSum(Var<S> a);        // rows x 1: the sum of each row
template <class S> Var<S> sumSquares(Var<S> a);    // 1x1
template <class S> Var<S> colSumSquares(Var<S> a); // 1 x cols: the squared norm of each column
// 1 x cols: column j's squares weighted by column j mod n of w (rows x n, cols = t n for some t >= 1), that
// is colSum([w ... w] o a o a) in one pass, without the t copies of w (the OT-Flow Laplacian's per-coordinate
// terms, docs/math/flows.md#potential).
template <class S> Var<S> colSumWeightedSquares(Var<S> a, Var<S> w);
// The weighted Gram matrix of each column's blocks: with a = [a_0 ... a_{t-1}] in t blocks of n columns and w
// rows x n, column j's entries Σ_k w_kj (a_p)_kj (a_q)_kj for p <= q, as rows (0,0), (0,1), .., (0,t-1),
// (1,1), .. of a t(t+1)/2 x n result (the order of flows::hessianIndex): the OT-Flow Hessian's per-layer
// terms in one pass, where colSumWeightedSquares gives the diagonal ones (docs/math/flows.md#potential).
template <class S> Var<S> colWeightedGram(Var<S> a, Var<S> w);

// A function of each column that the tape cannot see (a simulation, a PDE solve): the caller gives its
// values f(a_j) (1 x cols) and their gradients ∇f(a_j) (a's shape), computed outside the tape; backward()
// adds g_j ∇f(a_j) into a's gradient. (The posterior flow's data misfit: inverse/PosteriorFlow.)
template <class S>
Var<S> columnFunction(Var<S> a, const Matrix<Scalar<S>>& values, const Matrix<Scalar<S>>& gradients);

// Attention pieces, row by row (max-subtracted, so any finite logits are safe; a row needs one finite
// entry). Row blocks are processed in parallel (flowscope::parallelFor).
template <class S> Var<S> softmaxRows(Var<S> a);   // same shape
template <class S> Var<S> logSumExpRows(Var<S> a); // rows x 1

// Softmax attention within groups of n consecutive columns (a batch of token sets, one set per group):
// q and k are r x N, v is c x N, N = groups · n. For the columns i, j of one group,
//     P_ij = softmax_j(scale · q_i · k_j),     out_i = Σ_j P_ij v_j            (c x N)
// so sets never attend to each other and no N x N matrix is formed. Groups run in parallel; the node keeps
// the groups' P for backward.
template <class S> Var<S> groupAttention(Var<S> q, Var<S> k, Var<S> v, Index n, Scalar<S> scale);
// Dense softmax attention of every query over every key, for many tokens and few features: q is p x N
// (queries), k is p x Nk (keys), v is c x Nk (values), and
//     out_j = Σ_l softmax_l(q_j · k_l) v_l                                                     (c x N)
// excludeSelf gives query j's own key, l = selfOffset + j, the weight 0 (the queries are keys selfOffset ..
// selfOffset + N - 1: all of them when Nk = N, one part's when a batch is split; Nk >= 2). Equal, to
// rounding, to v softmaxRows(q^T k)^T, but no N x Nk matrix is kept on the tape: queries run in tiles of 16,
// and backward() recomputes each tile's weights (flash-attention style). The memory is O((N + Nk)(p + c)) and
// the work stays in cache: forward and backward of a float layer (p = 4, c = 5, one thread) take 5.5 ms
// against 10.1 ms for the composed ops at N = Nk = 1024, 89 against 327 ms at 4096.
template <class S>
Var<S> attention(Var<S> q, Var<S> k, Var<S> v, bool excludeSelf = false, Index selfOffset = 0);
// attention() with a bias on each query's logits, a (1 x N, or an empty Var: none), and on each key's, b
// (1 x Nk, required):
//     out_j = Σ_l softmax_l(q_j · k_l + a_j + b_l) v_l,
// which is attention([q; a; 1], [k; 1; b], v), or attention([q; 1], [k; b], v) without a (the Eigen path
// computes it so; the float kernel takes 1 or 2 features and 2 to 5 values). a changes no weight, but its
// gradient, Σ_l of the logit gradients, is recorded. The float kernel adds a_j and b_l to q_j · k_l instead
// of multiplying them by features 1, and computes no gradients for those 1s: forward and backward of an RWPO
// sub-step's part, one thread, 0.63 -> 0.55 ms (docs/math/flows.md#biased-logits).
template <class S>
Var<S> biasedAttention(Var<S> q, Var<S> k, Var<S> v, Var<S> queryBias, Var<S> keyBias,
                       bool excludeSelf = false, Index selfOffset = 0);
// The mean of each group of n consecutive columns: rows x (cols / n) (mean pooling of token sets).
template <class S> Var<S> groupMean(Var<S> a, Index n);

// Structure. Blocks scatter their gradient back into the block; stacks split it.
template <class S> Var<S> rows(Var<S> a, Index start, Index count);
template <class S> Var<S> cols(Var<S> a, Index start, Index count);
template <class S> Var<S> vstack(const std::vector<Var<S>>& parts); // same cols
template <class S> Var<S> hstack(const std::vector<Var<S>>& parts); // same rows
template <class S> Var<S> vstack(std::initializer_list<Var<S>> parts) {
    return vstack(std::vector<Var<S>>(parts));
}
template <class S> Var<S> hstack(std::initializer_list<Var<S>> parts) {
    return hstack(std::vector<Var<S>>(parts));
}

// Elementwise product with a constant matrix (a mask).
template <class S> Var<S> maskMul(Var<S> a, const Matrix<S>& mask) {
    return mul(a, a.tape->constant(mask));
}

} // namespace flowscope::ad
