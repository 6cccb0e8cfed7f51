// Flowscope UI: the Transformers workspace: a continuous-time Transformer trained live on task A (six tokens,
// the closed-form optimum beside) or task B (set classification), alone or beside λ_OT = 0. One page (the
// Transformer view), one dock (the Transformer panel); export: the trained model.
#pragma once

#include "engine/runner/TransformerRunner.h"
#include "ui/panels/TransformerPanel.h"
#include "ui/views/TransformerView.h"
#include "ui/workspaces/TrainingWorkspace.h"

namespace flowscope {

class TransformersWorkspace
    : public TrainingWorkspace<TransformerTraining, TransformerPanel, TransformerView> {
  public:
    explicit TransformersWorkspace(QMainWindow* host);

  protected:
    // A .safetensors written by flowscope-cli train-transformer or Export ▸ Trained model (metadata key
    // ot::kTransformerMetadataKey), with its record's optimizer settings.
    ot::OtTrainerConfig configOfModel(const QString& path, QString& note) override;
};

} // namespace flowscope
