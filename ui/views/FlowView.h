// Flowscope UI: the "Flows" view, a live picture of a generative flow being trained (QPainter, no GL).
//
// Pulls FlowSnapshots from a source on a timer (~30 Hz; the worker publishes, the view never waits) and
// draws, per trainer (two side by side when comparing with and without the RWPO layer):
//  * a scatter of data points (grey) and generated samples (orange) over the density heat map, with a few
//    samples' trajectories x^0 .. x^M through the layers as thin polylines;
// and, in a column on the right, small plots against the iteration: loss (16), NLL (batch line, held-out
// dots), λ (when trained; else one line gives its value), β and the held-out MMD² (one curve per trainer).
// Hovering any part shows what it is and its formula.
#pragma once

#include "render/picture/FlowsPicture.h"
#include "ui/views/TrainingRunView.h"

namespace flowscope {

class FlowView : public TrainingRunView<FlowsPicture> {
  public:
    explicit FlowView(QWidget* parent = nullptr) : TrainingRunView(parent, "trainingView") {}
};

} // namespace flowscope
