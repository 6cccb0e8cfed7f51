#include "engine/attention/StreamRunner.h"

namespace flowscope {

namespace {

template <class S> using MatS = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
template <class S> using VecS = Eigen::Matrix<S, Eigen::Dynamic, 1>;

// The pass with explicit queries Q (nq x d) in precision S; the sums are widened to double.
template <class S> void runIn(const Tokens& Q, const StreamPass& p, StreamSums& out) {
    const MatS<S> keys = p.keys.cast<S>();
    const MatS<S> queries = Q.cast<S>();
    const VecS<S> bias = p.bias.cast<S>();
    const int nq = int(Q.rows());
    MatS<S> num(p.values ? nq : 0, p.keys.cols());
    VecS<S> den(nq), mx(nq), ent(p.entropy ? nq : 0);
    StreamArgs<S> a;
    a.n = int(p.keys.rows());
    a.d = int(p.keys.cols());
    a.keys = keys.data();
    a.bias = p.bias.size() ? bias.data() : nullptr;
    a.queries = queries.data();
    a.nq = nq;
    a.causal = p.causal;
    a.decay = S(p.positionSlope);
    a.weighting = p.weighting;
    a.values = p.values;
    a.num = p.values ? num.data() : nullptr;
    a.den = den.data();
    a.max = mx.data();
    a.ent = p.entropy ? ent.data() : nullptr;
    streamKernel(a);
    out.num = num.template cast<double>();
    out.den = den.template cast<double>();
    out.max = mx.template cast<double>();
    out.ent = ent.template cast<double>();
}

template <class S> void runAs(const StreamPass& p, StreamSums& out) {
    if (p.B.size())
        runIn<S>(Tokens(p.from * p.B.transpose()), p, out);
    else
        runIn<S>(p.from, p, out);
}

} // namespace

void CpuStreamRunner::run(const StreamPass& p, StreamSums& out) {
    if (precision_ == Precision::Float32)
        runAs<float>(p, out);
    else
        runAs<double>(p, out);
}

} // namespace flowscope
