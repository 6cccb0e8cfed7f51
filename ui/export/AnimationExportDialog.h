// Flowscope UI: File ▸ Export ▸ Animation: the settings of an animation export (view, frames, frame rate,
// size, simulation time per frame, heads-up display, caption, output path), each field with a tooltip. The
// training view (the Flows tab's training, trained afresh) takes iterations per frame instead of time.
//
// The dialog only collects and checks the settings; the workspace's exportAnimation() renders them (the same
// frames as `flowscope-cli render`). OK stays enabled; a field that cannot work is named in a message under
// the form and the dialog stays open.
#pragma once

#include "engine/scene/Scene.h"
#include "render/animation/AnimationExporter.h"

#include <QDialog>
#include <QSize>
#include <QString>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSettings;
class QLineEdit;
class QSpinBox;

namespace flowscope {

class AnimationExportDialog : public QDialog {
    Q_OBJECT
  public:
    // `viewPixels`: the size preset "current view" (device pixels); `path`: the initial output path.
    AnimationExportDialog(const Scene& scene, QSize viewPixels, const QString& path,
                          QWidget* parent = nullptr);

    AnimationOptions options() const;
    QString path() const;
    // Why the settings cannot be exported (naming the field), or empty. accept() refuses while it is not.
    QString problem() const;

    // Preselects a view (a disabled one is ignored).
    void setView(AnimationView view);
    // The choices a user makes once and expects kept (frames, frame rate, HUD, caption): written to and read
    // from the settings' "export/animation*" keys; the scene-dependent ones (size, time per frame) are not.
    void saveChoices(QSettings& settings) const;
    void restoreChoices(const QSettings& settings);
    // For an .mp4 of an odd width or height, the sentence the summary adds on its rounding (else empty).
    QString mp4SizeNote() const;

  public slots:
    void accept() override;

  private:
    void browse();
    void updateEnabled();
    void updateSummary();

    const Scene& scene_; // the caller's (the document's scene): the modal dialog ends before it changes
    double defaultDt_ = 0.0;
    QComboBox* view_ = nullptr;
    QSpinBox* frames_ = nullptr;
    QDoubleSpinBox* fps_ = nullptr;
    QComboBox* sizePreset_ = nullptr;
    QSpinBox* width_ = nullptr;
    QSpinBox* height_ = nullptr;
    QDoubleSpinBox* dt_ = nullptr;
    QSpinBox* itersPerFrame_ = nullptr;
    QCheckBox* hud_ = nullptr;
    QCheckBox* particles_ = nullptr;
    QComboBox* caption_ = nullptr;
    QLineEdit* captionText_ = nullptr;
    QLineEdit* path_ = nullptr;
    QLabel* summary_ = nullptr;
    QLabel* error_ = nullptr;
};

} // namespace flowscope
