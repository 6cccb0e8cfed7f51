// The private halves of flowscope.velocity_vjp and flowscope.torch.velocity (python/flowscope/_vjp.py): one
// attention head's velocity and its hand-written VJP (engine/attention/AttentionVjp.h) on (N, d) tokens.
#include "Common.h"

#include "engine/attention/AttentionVjp.h"

namespace flowscope::py {

namespace {

AttentionType kindOf(const std::string& kind) {
    for (AttentionType t : {AttentionType::Softmax, AttentionType::L2, AttentionType::Exp,
                            AttentionType::Relu, AttentionType::Sigmoid})
        if (kind == toString(t)) return t;
    throw InputError("kind",
                     "expected \"softmax\", \"l2\", \"exp\", \"relu\" or \"sigmoid\", got \"" + kind + "\"");
}

AttentionHead headOf(const pb::handle& X, const pb::handle& Q, const pb::handle& K, const pb::handle& V,
                     double beta, const std::string& kind, bool sphere, Tokens& tokens) {
    tokens = toPoints(X, "X", 0, 0, 48.0, "the velocities, the saved averages and the gradients");
    AttentionHead head;
    head.type = kindOf(kind);
    head.Q = toPoints(Q, "Q");
    head.K = toPoints(K, "K");
    head.V = toPoints(V, "V");
    head.beta = beta;
    head.sphere = sphere;
    checkAttentionHead(head, tokens); // std::invalid_argument "field: detail": a ValueError
    return head;
}

Precision precisionOf(bool float32) {
    return float32 ? Precision::Float32 : Precision::Float64;
}

pb::tuple forward(const pb::handle& X, const pb::handle& Q, const pb::handle& K, const pb::handle& V,
                  double beta, const std::string& kind, bool sphere, bool float32) {
    Tokens tokens;
    const AttentionHead head = headOf(X, Q, K, V, beta, kind, sphere, tokens);
    AttentionSaved saved;
    Tokens v;
    {
        pb::gil_scoped_release release;
        v = attentionForward(head, tokens, precisionOf(float32), &saved);
    }
    return pb::make_tuple(fromPoints(std::move(v), float32), fromPoints(std::move(saved.avg), false),
                          pb::array_t<double>(saved.shift.size(), saved.shift.data()));
}

pb::tuple backward(const pb::handle& X, const pb::handle& Q, const pb::handle& K, const pb::handle& V,
                   double beta, const std::string& kind, bool sphere, const Mat& avg, const Vec& shift,
                   const pb::handle& G, bool float32) {
    Tokens tokens;
    const AttentionHead head = headOf(X, Q, K, V, beta, kind, sphere, tokens);
    const Tokens g = toPoints(G, "grad_output", int(tokens.cols()));
    if (g.rows() != tokens.rows())
        throw InputError("grad_output", "expected X's shape (" + std::to_string(tokens.rows()) + ", " +
                                            std::to_string(tokens.cols()) + "), got " +
                                            std::to_string(g.rows()) + " rows");
    AttentionGrads grads;
    {
        pb::gil_scoped_release release;
        grads = attentionBackward(head, tokens, {avg, shift}, g, precisionOf(float32));
    }
    return pb::make_tuple(fromPoints(std::move(grads.dX), float32), fromPoints(std::move(grads.dQ), float32),
                          fromPoints(std::move(grads.dK), float32), fromPoints(std::move(grads.dV), float32),
                          grads.dBeta);
}

} // namespace

void bindVjp(pb::module_& m) {
    m.def("_attention_forward", &forward, pb::arg("X"), pb::arg("Q"), pb::arg("K"), pb::arg("V"),
          pb::arg("beta"), pb::arg("kind"), pb::arg("sphere"), pb::arg("float32"),
          "(v, avg, shift): one head's velocity and what its VJP needs (python/flowscope/_vjp.py).");
    m.def("_attention_backward", &backward, pb::arg("X"), pb::arg("Q"), pb::arg("K"), pb::arg("V"),
          pb::arg("beta"), pb::arg("kind"), pb::arg("sphere"), pb::arg("avg"), pb::arg("shift"),
          pb::arg("grad_output"), pb::arg("float32"),
          "(dX, dQ, dK, dV, dbeta): the VJP from _attention_forward's avg and shift.");
}

} // namespace flowscope::py
