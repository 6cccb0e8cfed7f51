// Flowscope UI: the "Inverse" view, a live picture of a posterior flow being trained (QPainter, no GL):
// render/picture/InversePicture.h says what it draws. Hovering any part shows what it is and its formula.
#pragma once

#include "render/picture/InversePicture.h"
#include "ui/views/TrainingRunView.h"

namespace flowscope {

class InverseView : public TrainingRunView<InversePicture> {
  public:
    explicit InverseView(QWidget* parent = nullptr) : TrainingRunView(parent, "inverseView") {}
    // The Metropolis reference drawn under the posterior samples (InversePicture::setReference).
    void setReference(std::shared_ptr<const ReferenceSamples> reference) {
        picture_.setReference(std::move(reference));
        update();
    }
};

} // namespace flowscope
