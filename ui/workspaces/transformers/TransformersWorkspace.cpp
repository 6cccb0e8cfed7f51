#include "ui/workspaces/transformers/TransformersWorkspace.h"

#include "engine/flows/ModelFile.h"
#include "engine/ottransformer/TransformerIo.h"

namespace flowscope {

TransformersWorkspace::TransformersWorkspace(QMainWindow* host)
    : TrainingWorkspace(host,
                        {QStringLiteral("transformers"), tr("Transformers"),
                         tr("A continuous-time Transformer trained live (Transformer panel): tokens moving "
                            "through depth, straight when λ_OT is large enough"),
                         QKeySequence(Qt::Key_4), tr("Transformer"), QStringLiteral("transformerDock"),
                         tr("No Transformer to export: open a trained model or start training in the "
                            "Transformers tab."),
                         tr("The Transformers tab's model as .safetensors with its record (.json) beside "
                            "it, as flowscope-cli train-transformer writes them"),
                         ot::kTransformerMetadataKey}) {}

ot::OtTrainerConfig TransformersWorkspace::configOfModel(const QString& path, QString& note) {
    const std::string file = path.toStdString();
    const ot::TransformerModel model = ot::loadTransformer(file);
    const ot::Task task = model.config().head == ot::Head::Mean ? ot::Task::A : ot::Task::B;
    ot::OtTrainerConfig config = TransformerPanel::defaults(task);
    std::string why;
    const nlohmann::json training = trainingOfRecord(readModelRecord(file, &why));
    readOptimizerRecord(training, config);
    config = TransformerTraining::fromModel(model, config);
    if (!why.empty())
        note = tr("%1: %2; task %3 with the panel's optimizer settings.")
                   .arg(QFileInfo(path).fileName(), QString::fromStdString(why),
                        QString::fromUtf8(ot::toString(task)));
    return config;
}

} // namespace flowscope
