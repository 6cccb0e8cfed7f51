// Flowscope engine: what a Scene computes by itself (its JSON form is SceneRead.cpp and SceneWrite.cpp).
#include "engine/scene/Scene.h"

#include "engine/scene/SceneNames.h"

#include <algorithm>
#include <iterator>

namespace flowscope {

const char* toString(AttentionType t) {
    return scene_names::kAttention[std::size_t(t)].data();
}
const char* toString(Normalization n) {
    return scene_names::kNormalization[std::size_t(n)].data();
}
const char* toString(Method m) {
    return scene_names::kMethod[std::size_t(m)].data();
}
const char* toString(MomentMethod m) {
    return scene_names::kMomentMethod[std::size_t(m)].data();
}

std::vector<HeadParams> AttentionSpec::headsAt(double t) const {
    if (keyframes.empty()) return heads;
    // The last keyframe with time <= t (the first one before the first time).
    auto next = std::upper_bound(keyframes.begin(), keyframes.end(), t,
                                 [](double time, const Keyframe& k) { return time < k.t; });
    if (next == keyframes.begin()) return keyframes.front().heads;
    const Keyframe& before = *std::prev(next);
    if (interpolation == Interpolation::Piecewise || next == keyframes.end()) return before.heads;
    const Keyframe& after = *next;
    // Written as (1 - w) a + w b so that t = before.t reproduces the keyframe exactly.
    const double w = (t - before.t) / (after.t - before.t);
    std::vector<HeadParams> out(before.heads.size());
    for (std::size_t h = 0; h < out.size(); ++h) {
        const HeadParams &a = before.heads[h], &b = after.heads[h];
        out[h].Q = (1.0 - w) * a.Q + w * b.Q;
        out[h].K = (1.0 - w) * a.K + w * b.K;
        out[h].V = (1.0 - w) * a.V + w * b.V;
    }
    return out;
}

} // namespace flowscope
