#include "engine/attention/L2Attention.h"

namespace flowscope {

HeadSetup L2Attention::setupHead(const HeadParams& head, const Tokens& X) const {
    const double g = scoreScale(spec_, head);
    HeadSetup h;
    h.B = 2.0 * g * head.K.transpose() * head.Q;
    h.bias = -g * (X * head.K.transpose()).rowwise().squaredNorm();
    h.V = head.V;
    return h;
}

} // namespace flowscope
