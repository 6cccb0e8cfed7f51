#include "engine/attention/L2Attention.h"

namespace flowscope {

HeadSetup L2Attention::setupHead(const HeadParams& head, const Tokens& X) const {
    const double g = scoreScale(spec_, head);
    HeadSetup h;
    h.B = 2.0 * g * head.K.transpose() * head.Q;
    h.bias = -g * (X * head.K.transpose()).rowwise().squaredNorm();
    h.quadraticBias = *quadraticKeyBias(head);
    h.V = head.V;
    return h;
}

std::optional<Mat> L2Attention::quadraticKeyBias(const HeadParams& head) const {
    return Mat(scoreScale(spec_, head) * head.K.transpose() * head.K);
}

} // namespace flowscope
