// Flowscope UI: the dialogs around ExportService, shared by every workspace's File ▸ Export entries: asking
// for a path (with the suffix the format needs), running an export under a progress dialog, and reporting
// the result (the status line for a success or a cancel, a warning box for a failure).
#pragma once

#include "engine/scene/Scene.h"
#include "render/animation/AnimationExporter.h"
#include "ui/export/ExportService.h"

#include <QSize>
#include <QString>

#include <functional>
#include <optional>

class QWidget;

namespace flowscope {

// Where the messages of an export go: the workspace's statusMessage signal.
using StatusSink = std::function<void(const QString& text, int milliseconds)>;

// A save dialog starting in `dir` (home when empty); `suffix` (".npy") is appended when the name lacks one of
// the `accepted` suffixes (the first is the default). Empty when the user cancelled.
QString askSavePath(QWidget* parent, const QString& title, const QString& dir, const QString& filter,
                    const QStringList& accepted);

// Save dialogs of a kind of file ("trajectory", "moments", "view", "plots", "scene"): each starts where the
// user last saved that kind (the settings' "saveDirs/<kind>", when that folder still exists), else in their
// home folder; never in the shipped presets. The chosen folder is remembered when the user picks a file.
QString lastSaveDir(const QString& kind);
void rememberSaveDir(const QString& kind, const QString& chosenPath);
QString askSavePathOfKind(QWidget* parent, const QString& title, const QString& kind, const QString& filter,
                          const QStringList& accepted);

// Runs `run` under a modal progress dialog of `total` steps whose label `label(done, total)` gives, then
// reports as said above; the success message is `done(seconds)`. The dialog appears once the export has taken
// showAfterMs. Returns whether it was written.
bool runExport(QWidget* parent, const QString& title, long total,
               const std::function<QString(long done, long total)>& label,
               const std::function<ExportResult(const ExportProgress&)>& run, const StatusSink& status,
               const std::function<QString(double seconds)>& done, int showAfterMs = 300);

// File ▸ Export ▸ Animation: the options dialog (sized like `pixels`, the shown view; `view` preselected),
// the last path remembered in the settings, then runExport() with frame-by-frame progress.
void animationExportDialog(
    QWidget* parent, const Scene& scene, QSize pixels, std::optional<AnimationView> view,
    const std::function<ExportResult(const AnimationOptions&, const QString&, const ExportProgress&)>& run,
    const StatusSink& status);

} // namespace flowscope
