#include "ui/export/AnimationExportDialog.h"

#include "engine/media/Mp4Writer.h"
#include "render/ConeData.h"
#include "ui/widgets/Dialogs.h"
#include "ui/widgets/FormWidgets.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace flowscope {

namespace {

constexpr int kDtDecimals = 6;

struct SizePreset {
    const char* name;
    int width, height;
};
const SizePreset kSizePresets[] = {{"1280 × 720 (720p)", 1280, 720}, {"1920 × 1080 (1080p)", 1920, 1080}};

using form::addRow; // a form row whose label shares the field's tooltip

} // namespace

AnimationExportDialog::AnimationExportDialog(const Scene& scene, QSize viewPixels, const QString& path,
                                             QWidget* parent)
    : QDialog(parent), scene_(scene), defaultDt_(defaultDtPerFrame(scene)) {
    auto* layout = dialogColumn(
        this, tr("Export animation"),
        tr("Renders the scene <b>as it runs now</b> (your live edits included) <b>from t = 0</b>, offscreen: "
           "the size, frame rate and simulation time per frame below decide the video, not this window or "
           "how fast the run goes here. Frame k shows t = k × time per frame (Flows training: iteration k × "
           "iterations per frame). The same frames as <tt>flowscope-cli render</tt>."));

    auto* form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::ExpandingFieldsGrow);
    layout->addLayout(form);

    view_ = new QComboBox(this);
    view_->setObjectName(QStringLiteral("view"));
    view_->addItem(tr("Particles"), int(AnimationView::Particles));
    view_->addItem(tr("Covariance cone"), int(AnimationView::Cone));
    view_->addItem(tr("Trace-1 disc"), int(AnimationView::Disc));
    view_->addItem(tr("Flows training"), int(AnimationView::Training));
    view_->setToolTip(
        tr("Which view to animate: the tokens, or their 2×2 covariance Σ(t) as a point of the PSD "
           "cone (or of its trace-1 disc) following the moment ODEs; or the Flows tab's training, "
           "trained afresh from iteration 0 with its settings (data, layers, λ, β, a loaded model), "
           "the run in the Flows tab left as it is."));
    if (const auto why = coneUnsupported(scene)) {
        auto* model = qobject_cast<QStandardItemModel*>(view_->model());
        for (int row : {1, 2}) {
            QStandardItem* item = model->item(row);
            item->setEnabled(false);
            item->setToolTip(tr("Not for this scene: %1").arg(QString::fromStdString(*why)));
        }
    }
    addRow(form, tr("View"), view_);

    frames_ = new QSpinBox(this);
    frames_->setObjectName(QStringLiteral("frames"));
    frames_->setRange(1, int(std::min<long>(kAnimationMaxFrames, 1000000)));
    frames_->setValue(120);
    frames_->setAccelerated(true);
    frames_->setToolTip(tr("How many frames to render (frame k shows t = k × time per frame)."));
    addRow(form, tr("Frames"), frames_);

    fps_ = new QDoubleSpinBox(this);
    fps_->setObjectName(QStringLiteral("fps"));
    fps_->setRange(1.0, kAnimationMaxFps);
    fps_->setDecimals(2);
    fps_->setValue(30.0);
    fps_->setSuffix(tr(" frames/s"));
    fps_->setToolTip(tr("Playback rate of the video (MP4, GIF); it does not change which times are shown."));
    addRow(form, tr("Frame rate"), fps_);

    const auto [sizeRow, sizeLayout] = form::row(this);
    sizePreset_ = new QComboBox(sizeRow);
    sizePreset_->setObjectName(QStringLiteral("sizePreset"));
    const QSize view = viewPixels.expandedTo(QSize(kAnimationMinSide, kAnimationMinSide))
                           .boundedTo(QSize(kAnimationMaxSide, kAnimationMaxSide));
    sizePreset_->addItem(tr("Current view (%1 × %2)").arg(view.width()).arg(view.height()), view);
    for (const SizePreset& p : kSizePresets) sizePreset_->addItem(tr(p.name), QSize(p.width, p.height));
    sizePreset_->addItem(tr("Custom"), QSize());
    width_ = new QSpinBox(sizeRow);
    width_->setObjectName(QStringLiteral("width"));
    height_ = new QSpinBox(sizeRow);
    height_->setObjectName(QStringLiteral("height"));
    for (QSpinBox* box : {width_, height_}) {
        box->setRange(kAnimationMinSide, kAnimationMaxSide);
        box->setSuffix(tr(" px"));
    }
    width_->setValue(view.width());
    height_->setValue(view.height());
    const QString sizeTip =
        tr("Frame size in pixels, caption strip included (%1 to %2 per side). The current "
           "view's size is in device pixels.")
            .arg(kAnimationMinSide)
            .arg(kAnimationMaxSide);
    for (QWidget* w : {static_cast<QWidget*>(sizePreset_), static_cast<QWidget*>(width_),
                       static_cast<QWidget*>(height_), sizeRow})
        w->setToolTip(sizeTip);
    sizeLayout->addWidget(sizePreset_, 1);
    sizeLayout->addWidget(width_);
    sizeLayout->addWidget(new QLabel(QStringLiteral("×"), sizeRow));
    sizeLayout->addWidget(height_);
    addRow(form, tr("Size"), sizeRow);
    connect(sizePreset_, &QComboBox::activated, this, [this](int index) {
        const QSize s = sizePreset_->itemData(index).toSize();
        if (s.isEmpty()) return;
        const QSignalBlocker bw(width_), bh(height_);
        width_->setValue(s.width());
        height_->setValue(s.height());
    });
    const auto matchPreset = [this] {
        const int found = sizePreset_->findData(QSize(width_->value(), height_->value()));
        sizePreset_->setCurrentIndex(found >= 0 ? found : sizePreset_->count() - 1);
    };
    connect(width_, &QSpinBox::valueChanged, this, matchPreset);
    connect(height_, &QSpinBox::valueChanged, this, matchPreset);

    const double h = scene.integrator.T / scene.integrator.steps;
    dt_ = new QDoubleSpinBox(this);
    dt_->setObjectName(QStringLiteral("dtPerFrame"));
    dt_->setDecimals(kDtDecimals);
    dt_->setRange(std::pow(10.0, -kDtDecimals), 1e6);
    dt_->setSingleStep(h);
    dt_->setValue(defaultDt_);
    dt_->setToolTip(tr("Simulation time between two frames. Default: the integrator step h = T / steps = %1 "
                       "times the scene's output.every = %2, as flowscope-cli render. The particles show "
                       "the step nearest each frame's time.")
                        .arg(h)
                        .arg(std::max(scene.output.every, 1)));
    addRow(form, tr("Time per frame"), dt_);

    itersPerFrame_ = new QSpinBox(this);
    itersPerFrame_->setObjectName(QStringLiteral("itersPerFrame"));
    itersPerFrame_->setRange(1, int(std::min<long>(kAnimationMaxItersPerFrame, 1000000)));
    itersPerFrame_->setValue(int(AnimationOptions().itersPerFrame));
    itersPerFrame_->setToolTip(tr("Flows training: training iterations between two frames; frame k shows "
                                  "the model after k × this many. The learning rate decays over the whole "
                                  "animation, as flowscope-cli train decays it over its --iters."));
    addRow(form, tr("Iterations per frame"), itersPerFrame_);

    hud_ = new QCheckBox(tr("Include the heads-up display"), this);
    hud_->setObjectName(QStringLiteral("hud"));
    hud_->setToolTip(tr("The particle view's statistics box (t, step, N × d, steps/s of video). Particles "
                        "view only: the cone and disc show the time in their legend."));
    addRow(form, tr("HUD"), hud_);

    particles_ = new QCheckBox(tr("Run the particles (their covariance dot)"), this);
    particles_->setObjectName(QStringLiteral("particles"));
    particles_->setChecked(true);
    particles_->setToolTip(tr("Cone and disc views: also run the particle simulation and draw its empirical "
                              "covariance as a white dot beside the moment ODE's trajectories."));
    addRow(form, tr("Particles"), particles_);

    const auto [captionRow, captionLayout] = form::row(this);
    caption_ = new QComboBox(captionRow);
    caption_->setObjectName(QStringLiteral("caption"));
    caption_->addItem(tr("None"));
    caption_->addItem(tr("Automatic"));
    caption_->addItem(tr("Custom text"));
    caption_->setToolTip(tr("A strip above the view. Automatic: the scene's name and figure, its attention "
                            "parameters and the time t (training: the data, the iteration, λ, β and the "
                            "loss). Custom: your text, {t} replaced by the time ({iteration} by the "
                            "iteration)."));
    captionText_ = new QLineEdit(captionRow);
    captionText_->setObjectName(QStringLiteral("captionText"));
    captionText_->setPlaceholderText(tr("e.g. β = 4, t = {t}"));
    captionText_->setToolTip(caption_->toolTip());
    captionLayout->addWidget(caption_);
    captionLayout->addWidget(captionText_, 1);
    captionRow->setToolTip(caption_->toolTip());
    addRow(form, tr("Caption"), captionRow);

    const auto [pathRow, pathLayout] = form::row(this);
    path_ = new QLineEdit(path, pathRow);
    path_->setObjectName(QStringLiteral("path"));
    path_->setMinimumWidth(path_->fontMetrics().horizontalAdvance(QLatin1Char('x')) * 44);
    path_->setToolTip(tr("Where to write: name.mp4 (H.264), name.gif, or a directory name/ for numbered PNG "
                         "frames (frame_00000.png, ...). Written aside and renamed at the end: a cancelled "
                         "or failed export leaves nothing under this name."));
    auto* browse = new QPushButton(tr("Browse..."), pathRow);
    browse->setToolTip(tr("Choose the output file or PNG directory"));
    connect(browse, &QPushButton::clicked, this, &AnimationExportDialog::browse);
    pathLayout->addWidget(path_, 1);
    pathLayout->addWidget(browse);
    pathRow->setToolTip(path_->toolTip());
    addRow(form, tr("Output"), pathRow);

    summary_ = new QLabel(this);
    summary_->setObjectName(QStringLiteral("summary"));
    summary_->setWordWrap(true);
    layout->addWidget(summary_);
    error_ = new QLabel(this);
    error_->setObjectName(QStringLiteral("error"));
    error_->setWordWrap(true);
    error_->setStyleSheet(QStringLiteral("color: #e06c5f;"));
    error_->setVisible(false);
    layout->addWidget(error_);

    layout->addWidget(okCancel(this, tr("Export")));

    connect(view_, &QComboBox::currentIndexChanged, this, &AnimationExportDialog::updateEnabled);
    connect(caption_, &QComboBox::currentIndexChanged, this, &AnimationExportDialog::updateEnabled);
    connect(frames_, &QSpinBox::valueChanged, this, &AnimationExportDialog::updateSummary);
    connect(fps_, &QDoubleSpinBox::valueChanged, this, &AnimationExportDialog::updateSummary);
    connect(dt_, &QDoubleSpinBox::valueChanged, this, &AnimationExportDialog::updateSummary);
    connect(itersPerFrame_, &QSpinBox::valueChanged, this, &AnimationExportDialog::updateSummary);
    connect(width_, &QSpinBox::valueChanged, this, &AnimationExportDialog::updateSummary);
    connect(height_, &QSpinBox::valueChanged, this, &AnimationExportDialog::updateSummary);
    connect(path_, &QLineEdit::textChanged, this, &AnimationExportDialog::updateSummary);
    updateEnabled();
}

void AnimationExportDialog::setView(AnimationView view) {
    const int index = view_->findData(int(view));
    auto* model = qobject_cast<QStandardItemModel*>(view_->model());
    if (index >= 0 && model->item(index)->isEnabled()) view_->setCurrentIndex(index);
}

AnimationOptions AnimationExportDialog::options() const {
    AnimationOptions o;
    o.view = AnimationView(view_->currentData().toInt());
    o.frames = frames_->value();
    o.fps = fps_->value();
    o.width = width_->value();
    o.height = height_->value();
    // The default as the CLI computes it, not its rounding to the box's decimals.
    const double shown = std::round(defaultDt_ * std::pow(10.0, kDtDecimals)) / std::pow(10.0, kDtDecimals);
    if (dt_->value() != shown) o.dtPerFrame = dt_->value();
    o.itersPerFrame = itersPerFrame_->value();
    o.particles = o.view == AnimationView::Particles || particles_->isChecked();
    o.hud = o.view == AnimationView::Particles && hud_->isChecked();
    if (caption_->currentIndex() == 1) o.caption = "auto";
    if (caption_->currentIndex() == 2) o.caption = captionText_->text().toStdString();
    return o;
}

QString AnimationExportDialog::path() const {
    return path_->text().trimmed();
}

QString AnimationExportDialog::problem() const {
    const QString p = path();
    if (p.isEmpty()) return tr("Output: give a file name (.mp4, .gif) or a directory for PNG frames.");
    const QString lower = p.toLower();
    const bool directory = p.endsWith(QLatin1Char('/')) || QFileInfo(p).isDir();
    if (!directory && !lower.endsWith(QStringLiteral(".mp4")) && !lower.endsWith(QStringLiteral(".gif")))
        return tr("Output: \"%1\" is not .mp4, .gif or a directory (end it with / for PNG frames).")
            .arg(QFileInfo(p).fileName());
    if (!directory && lower.endsWith(QStringLiteral(".mp4")) && !Mp4Writer::available())
        return tr("Output: cannot write MP4 (%1); choose .gif or PNG frames.")
            .arg(QString::fromStdString(Mp4Writer::unavailableReason()));
    QString parent = p;
    while (parent.endsWith(QLatin1Char('/')) && parent.size() > 1) parent.chop(1);
    const QFileInfo dir(QFileInfo(parent).absolutePath());
    if (!dir.isDir()) return tr("Output: the directory %1 does not exist.").arg(dir.filePath());
    if (const auto why = animationOptionsError(scene_, options())) return QString::fromStdString(*why);
    return {};
}

void AnimationExportDialog::accept() {
    const QString why = problem();
    error_->setText(why);
    error_->setVisible(!why.isEmpty());
    if (why.isEmpty()) QDialog::accept();
}

void AnimationExportDialog::browse() {
    const QString mp4 = tr("MP4 video (*.mp4)"), gif = tr("GIF animation (*.gif)"),
                  png = tr("PNG frames (a directory)");
    const QString current = path();
    QString filter = current.toLower().endsWith(QStringLiteral(".gif"))   ? gif
                     : current.toLower().endsWith(QStringLiteral(".mp4")) ? mp4
                                                                          : png;
    QString chosen = QFileDialog::getSaveFileName(this, tr("Export animation to"), current,
                                                  QStringList{mp4, gif, png}.join(QStringLiteral(";;")),
                                                  &filter, QFileDialog::DontConfirmOverwrite);
    if (chosen.isEmpty()) return;
    const QString lower = chosen.toLower();
    if (filter == mp4 && !lower.endsWith(QStringLiteral(".mp4"))) chosen += QStringLiteral(".mp4");
    if (filter == gif && !lower.endsWith(QStringLiteral(".gif"))) chosen += QStringLiteral(".gif");
    if (filter == png && !chosen.endsWith(QLatin1Char('/'))) chosen += QLatin1Char('/');
    path_->setText(QDir::toNativeSeparators(chosen));
}

void AnimationExportDialog::updateEnabled() {
    const AnimationView view = AnimationView(view_->currentData().toInt());
    const bool particles = view == AnimationView::Particles, training = view == AnimationView::Training;
    hud_->setEnabled(particles);
    particles_->setEnabled(!particles && !training);
    dt_->setEnabled(!training);
    itersPerFrame_->setEnabled(training);
    captionText_->setPlaceholderText(training ? tr("e.g. moons, iteration {iteration}")
                                              : tr("e.g. β = 4, t = {t}"));
    captionText_->setEnabled(caption_->currentIndex() == 2);
    updateSummary();
}

void AnimationExportDialog::updateSummary() {
    const double dt = dt_->value();
    const long frames = frames_->value();
    if (AnimationView(view_->currentData().toInt()) == AnimationView::Training) {
        summary_->setText(tr("%1 frames: %2 s of video, iterations 0 to %3 of a fresh training.")
                              .arg(frames)
                              .arg(double(frames) / fps_->value(), 0, 'f', 1)
                              .arg(long(itersPerFrame_->value()) * (frames - 1)));
        return;
    }
    summary_->setText(tr("%1 frames: %2 s of video, t from 0 to %3 of the scene's T = %4.")
                          .arg(frames)
                          .arg(double(frames) / fps_->value(), 0, 'f', 1)
                          .arg(dt * double(frames - 1), 0, 'g', 4)
                          .arg(scene_.integrator.T, 0, 'g', 4) +
                      mp4SizeNote());
}

void AnimationExportDialog::saveChoices(QSettings& settings) const {
    settings.setValue(QStringLiteral("export/animationFrames"), frames_->value());
    settings.setValue(QStringLiteral("export/animationFps"), fps_->value());
    settings.setValue(QStringLiteral("export/animationHud"), hud_->isChecked());
    settings.setValue(QStringLiteral("export/animationCaption"), caption_->currentIndex());
    settings.setValue(QStringLiteral("export/animationCaptionText"), captionText_->text());
}

void AnimationExportDialog::restoreChoices(const QSettings& settings) {
    // A value the box cannot take keeps its default (setValue clamps; the checks are the box's own range).
    if (const QVariant v = settings.value(QStringLiteral("export/animationFrames")); v.isValid())
        frames_->setValue(v.toInt());
    if (const QVariant v = settings.value(QStringLiteral("export/animationFps")); v.isValid())
        fps_->setValue(v.toDouble());
    if (const QVariant v = settings.value(QStringLiteral("export/animationHud")); v.isValid())
        hud_->setChecked(v.toBool());
    if (const QVariant v = settings.value(QStringLiteral("export/animationCaption")); v.isValid())
        caption_->setCurrentIndex(std::clamp(v.toInt(), 0, caption_->count() - 1));
    captionText_->setText(settings.value(QStringLiteral("export/animationCaptionText")).toString());
    updateEnabled();
}

QString AnimationExportDialog::mp4SizeNote() const {
    const int w = width_->value(), h = height_->value();
    if (!path().toLower().endsWith(QStringLiteral(".mp4")) || (w % 2 == 0 && h % 2 == 0)) return {};
    // Mp4Writer pads an odd side by repeating the last column or row (H.264's 4:2:0 needs even sizes).
    return tr(" An MP4 needs even sizes: %1x%2 is encoded as %3x%4, its last %5 repeated.")
        .arg(w)
        .arg(h)
        .arg(w + w % 2)
        .arg(h + h % 2)
        .arg(w % 2 && h % 2 ? tr("column and row")
             : w % 2        ? tr("column")
                            : tr("row"));
}

} // namespace flowscope
