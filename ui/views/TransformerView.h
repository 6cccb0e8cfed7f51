// Flowscope UI: the "Transformers" view, a live picture of a continuous-time Transformer being trained
// (QPainter, no GL).
//
// Pulls TransformerSnapshots from a source on a timer (~30 Hz; the worker publishes, the view never waits)
// and draws, per trainer (two side by side in comparison mode: the configured λ_OT and λ_OT = 0):
//  * the tokens of one fixed held-out input set moving through depth: each token's path X_0 .. X_M as a
//    polyline with a dot per step, hollow at the start and filled at the end; for task A with λ_OT > 0 the
//    closed-form end points X*(T) as crosses, with the straight optimal paths dashed. Both pictures share
//    one frame, so their paths compare at a glance;
// and small plots against the iteration: the objective (8), the transport cost, the held-out straightness,
// task A's distance to the closed form or task B's accuracy, and the empirical Lipschitz ratio under
// Theorem 2's bound (dashed). Hovering any part shows what it is and its formula.
#pragma once

#include "render/picture/TransformersPicture.h"
#include "ui/views/TrainingRunView.h"

namespace flowscope {

class TransformerView : public TrainingRunView<TransformersPicture> {
  public:
    explicit TransformerView(QWidget* parent = nullptr) : TrainingRunView(parent, "transformerView") {}
};

} // namespace flowscope
