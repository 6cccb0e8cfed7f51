#include "ui/export/ExportDialogs.h"

#include "engine/media/Mp4Writer.h"
#include "ui/export/AnimationExportDialog.h"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>
#include <QProgressDialog>
#include <QSettings>

#include <algorithm>

namespace flowscope {

QString askSavePath(QWidget* parent, const QString& title, const QString& dir, const QString& filter,
                    const QStringList& accepted) {
    QString path =
        QFileDialog::getSaveFileName(parent, title, dir.isEmpty() ? QDir::homePath() : dir, filter);
    if (path.isEmpty() || accepted.isEmpty()) return path;
    for (const QString& suffix : accepted)
        if (path.endsWith(suffix, Qt::CaseInsensitive)) return path;
    return path + accepted.front();
}

QString lastSaveDir(const QString& kind) {
    const QString dir = QSettings().value(QStringLiteral("saveDirs/") + kind).toString();
    return !dir.isEmpty() && QFileInfo(dir).isDir() ? dir : QDir::homePath();
}

void rememberSaveDir(const QString& kind, const QString& chosenPath) {
    if (!chosenPath.isEmpty())
        QSettings().setValue(QStringLiteral("saveDirs/") + kind, QFileInfo(chosenPath).absolutePath());
}

QString askSavePathOfKind(QWidget* parent, const QString& title, const QString& kind, const QString& filter,
                          const QStringList& accepted) {
    const QString path = askSavePath(parent, title, lastSaveDir(kind), filter, accepted);
    rememberSaveDir(kind, path);
    return path;
}

bool runExport(QWidget* parent, const QString& title, long total,
               const std::function<QString(long done, long total)>& label,
               const std::function<ExportResult(const ExportProgress&)>& run, const StatusSink& status,
               const std::function<QString(double seconds)>& done, int showAfterMs) {
    QProgressDialog progress(label(0, total), QObject::tr("Cancel"), 0, int(total), parent);
    progress.setWindowTitle(title);
    progress.setWindowModality(Qt::WindowModal);
    progress.setMinimumDuration(showAfterMs);
    progress.setAutoClose(false);
    progress.setAutoReset(false);
    progress.setValue(0);
    QElapsedTimer clock;
    clock.start();
    const ExportResult result = run([&](long at, long of) {
        progress.setLabelText(label(at, of));
        progress.setValue(int(at));
        QCoreApplication::processEvents();
        return !progress.wasCanceled();
    });
    const double seconds = double(clock.nsecsElapsed()) * 1e-9;
    progress.close();
    switch (result.kind) {
    case ExportResult::Kind::Done:
        status(done(seconds), 10000);
        return true;
    case ExportResult::Kind::Cancelled:
        status(result.message, 5000);
        return false;
    case ExportResult::Kind::Failed:
        QMessageBox::warning(parent, title, result.message);
        return false;
    }
    return false;
}

namespace {

// The size on disk of an export: the file, or the PNG directory's frames.
QString sizeOnDisk(const QString& path) {
    qint64 bytes = 0;
    const QFileInfo info(path);
    if (info.isDir()) {
        for (const QFileInfo& f : QDir(path).entryInfoList(QDir::Files)) bytes += f.size();
    } else {
        bytes = info.size();
    }
    return bytes >= (qint64(1) << 20) ? QObject::tr("%1 MiB").arg(double(bytes) / double(1 << 20), 0, 'f', 1)
                                      : QObject::tr("%1 KiB").arg(double(bytes) / 1024.0, 0, 'f', 0);
}

} // namespace

void animationExportDialog(
    QWidget* parent, const Scene& scene, QSize pixels, std::optional<AnimationView> view,
    const std::function<ExportResult(const AnimationOptions&, const QString&, const ExportProgress&)>& run,
    const StatusSink& status) {
    QSettings settings;
    QString path = settings.value(QStringLiteral("export/animationPath")).toString();
    if (path.isEmpty()) {
        const QString name =
            scene.name.empty() ? QStringLiteral("animation") : QString::fromStdString(scene.name);
        path = QDir::home().filePath(
            name + (Mp4Writer::available() ? QStringLiteral(".mp4") : QStringLiteral(".gif")));
    }
    AnimationExportDialog dialog(scene, pixels, QDir::toNativeSeparators(path), parent);
    dialog.restoreChoices(settings);
    if (view) dialog.setView(*view);
    if (dialog.exec() != QDialog::Accepted) return;
    const AnimationOptions options = dialog.options();
    path = dialog.path();
    settings.setValue(QStringLiteral("export/animationPath"), path);
    dialog.saveChoices(settings);

    const bool cone = options.view == AnimationView::Cone || options.view == AnimationView::Disc;
    const auto label = [&](long done, long total) {
        if (done == 0 && cone) return QObject::tr("Solving the moment equations...");
        const long frame = std::min(done + 1, total);
        if (options.view == AnimationView::Training)
            return QObject::tr("Training and rendering frame %1 of %2 (iteration %3)")
                .arg(frame)
                .arg(total)
                .arg((frame - 1) * options.itersPerFrame);
        return QObject::tr("Rendering frame %1 of %2").arg(frame).arg(total);
    };
    runExport(
        parent, QObject::tr("Export animation"), options.frames, label,
        [&](const ExportProgress& progress) { return run(options, path, progress); }, status,
        [&](double seconds) {
            return QObject::tr("Exported %1 (%2 frames, %3) in %4 s, %5 frames/s")
                .arg(QDir::toNativeSeparators(path))
                .arg(options.frames)
                .arg(sizeOnDisk(path))
                .arg(seconds, 0, 'f', 1)
                .arg(double(options.frames) / std::max(seconds, 1e-9), 0, 'f', 1);
        },
        0); // at once: the first frames (or the moment equations) can take a while
}

} // namespace flowscope
