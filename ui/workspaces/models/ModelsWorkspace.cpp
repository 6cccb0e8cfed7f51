#include "ui/workspaces/models/ModelsWorkspace.h"

#include "ui/views/ModelPlots.h"
#include "ui/views/ParticleView.h"
#include "ui/widgets/ElidedLabel.h"
#include "ui/widgets/FormWidgets.h"
#include "ui/workspaces/particles/ParticlesWorkspace.h"

#include <QCheckBox>
#include <QCursor>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMainWindow>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace flowscope {

// --- Helpers ---

namespace {

QString fromStd(const std::string& s) {
    return QString::fromStdString(s);
}

// A snapshot of fixed tokens (a layer's cloud) for a ParticleView.
std::shared_ptr<const Snapshot> cloudShot(const models::RowMat<double>& x, std::uint64_t generation,
                                          int layer, int layers) {
    auto s = std::make_shared<Snapshot>();
    s->generation = generation;
    s->t = layer;
    s->step = layer;
    s->totalSteps = layers;
    s->horizon = layers;
    s->tokens = Tokens(x);
    s->finished = true;
    return s;
}

} // namespace

ModelsWorkspace::ModelsWorkspace(QMainWindow* host, ParticlesWorkspace* particles)
    : Workspace(host), particles_(particles) {
    page_ = buildPage();
    dock_ = new QDockWidget(tr("Model"), host);
    dock_->setObjectName(QStringLiteral("modelsDock"));
    dock_->setWidget(buildPanel());
    dock_->setAllowedAreas(Qt::AllDockWidgetAreas);

    poll_.setInterval(30);
    connect(&poll_, &QTimer::timeout, this, &ModelsWorkspace::poll);
    play_.setInterval(600);
    connect(&play_, &QTimer::timeout, this, [this] {
        const int next = depth() + 1;
        setDepth(next > depthSlider_->maximum() ? 0 : next);
    });
    connect(this, &Workspace::errorReported, this, [this](const QString& message) {
        if (!message.isEmpty()) setMessage(message, true);
    });
    updateControls();
}

ModelsWorkspace::~ModelsWorkspace() {
    poll_.stop();
    runJob_.cancel();
    dynamicsJob_.cancel();
}

// --- The page and the panel ---

QWidget* ModelsWorkspace::buildPage() {
    page_ = new QWidget(host());
    auto* layout = new QVBoxLayout(page_);
    layout->setContentsMargins(4, 4, 4, 4);
    tabs_ = new QTabWidget(page_);
    tabs_->setObjectName(QStringLiteral("modelsTabs"));
    layout->addWidget(tabs_, 1);

    // A tab of two widgets one over the other, heights in the ratio top : bottom.
    auto addSplitTab = [this](QSplitter* split, QWidget* upper, QWidget* lower, int top, int bottom,
                              const QString& title, const QString& tip) {
        split->addWidget(upper);
        split->addWidget(lower);
        split->setStretchFactor(0, top);
        split->setStretchFactor(1, bottom);
        tabs_->setTabToolTip(tabs_->addTab(split, title), tip);
    };
    auto* cosines = new QSplitter(Qt::Vertical, tabs_);
    // The histograms under a line holding their density scale: linear, or log (Log density).
    auto* histogramBox = new QWidget(cosines);
    auto* hb = new QVBoxLayout(histogramBox);
    hb->setContentsMargins(0, 0, 0, 0);
    hb->setSpacing(0);
    logDensity_ = form::named(new QCheckBox(tr("Log density"), histogramBox), "model.log_density");
    connect(logDensity_, &QCheckBox::toggled, this, [this](bool on) { histograms_->setLogScale(on); });
    auto* scaleRow = new QHBoxLayout;
    scaleRow->addStretch(1);
    scaleRow->addWidget(logDensity_);
    hb->addLayout(scaleRow);
    histograms_ = new GramHistogramView(histogramBox);
    hb->addWidget(histograms_, 1);
    auto curveView = [](QWidget* parent, const char* name, const QString& tip) {
        auto* v = new LayerCurveView(parent);
        v->setObjectName(QString::fromLatin1(name));
        v->setToolTip(tip);
        return v;
    };
    curves_ = curveView(cosines, "depthCurves",
                        tr("The mean of <x_i, x_j> over the pairs i != j, and the number of clusters of the "
                           "normalised tokens (greedy leader count), at every layer"));
    addSplitTab(cosines, histogramBox, curves_, 3, 2, tr("Cosines"),
                tr("The histograms of the tokens' cosines at the chosen layers (Geshkovski et al.'s figure), "
                   "and the mean cosine and cluster count against depth"));

    auto tokenView = [this](QWidget* parent) {
        auto* v = new ParticleView(parent);
        v->setHudVisible(false);
        v->setStatusVisible(false); // the depth bar and the captions say which layer is shown
        v->setMinimumSize(160, 140);
        connect(v, &ParticleView::pickedChanged, this, &ModelsWorkspace::showHover);
        return v;
    };
    depthView_ = tokenView(tabs_);
    depthView_->setObjectName(QStringLiteral("depthView"));
    depthView_->setSource([this] { return depthShot_; });
    tabs_->addTab(depthView_, tr("Through depth"));
    tabs_->setTabToolTip(1, tr("The tokens layer by layer (depth bar: slider and Play)"));

    auto* dynamics = new QSplitter(Qt::Vertical, tabs_);
    auto* pair = new QWidget(dynamics);
    auto* pairLayout = new QHBoxLayout(pair);
    pairLayout->setContentsMargins(0, 0, 0, 0);
    auto column = [&](QLabel*& caption, ParticleView*& view, std::shared_ptr<const Snapshot>* shot,
                      const char* name) {
        auto* box = new QWidget(pair);
        auto* v = new QVBoxLayout(box);
        v->setContentsMargins(0, 0, 0, 0);
        caption = new QLabel(box);
        caption->setMinimumWidth(40); // long captions are cut at the view's width, never widen the page
        caption->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
        view = tokenView(box);
        view->setObjectName(QString::fromLatin1(name));
        view->setSource([shot] { return *shot; });
        v->addWidget(caption);
        v->addWidget(view, 1);
        pairLayout->addWidget(box, 1);
    };
    column(odeCaption_, odeView_, &odeShot_, "odeView");
    column(realCaption_, realView_, &realShot_, "realView");
    odeCaption_->setText(tr("The head's ODE: choose its layer and head, then Build ODE"));
    realCaption_->setText(tr("The real layer, in the ODE's coordinates"));
    distance_ = curveView(dynamics, "distanceCurve",
                          tr("The root-mean-square distance between the ODE's tokens at t = k and layer k's "
                             "tokens, matched token by token"));
    addSplitTab(dynamics, pair, distance_, 3, 1, tr("Own dynamics"),
                tr("The ODE of one head of one layer run from the embeddings, beside the real layers, and "
                   "the distance between the two clouds per layer"));

    auto* bar = new QHBoxLayout;
    playButton_ = new QPushButton(tr("Play"), page_);
    playButton_->setObjectName(QStringLiteral("modelPlay"));
    playButton_->setToolTip(tr("Step through the layers, one every 0.6 s, from the first again at the end"));
    connect(playButton_, &QPushButton::clicked, this, [this] { setPlaying(!playing()); });
    depthSlider_ = new QSlider(Qt::Horizontal, page_);
    depthSlider_->setObjectName(QStringLiteral("modelDepth"));
    depthSlider_->setToolTip(tr("The layer shown (0: the embeddings)"));
    depthSlider_->setRange(0, 0);
    depthSlider_->setPageStep(1);
    connect(depthSlider_, &QSlider::valueChanged, this, [this] { showDepth(); });
    depthLabel_ = new QLabel(page_);
    depthLabel_->setMinimumWidth(depthLabel_->fontMetrics().horizontalAdvance(tr("layer 000 of 000")) + 4);
    hover_ = new QLabel(tr("Hover a token to name it."), page_);
    hover_->setObjectName(QStringLiteral("modelHover"));
    hover_->setMinimumWidth(120);
    hover_->setTextFormat(Qt::PlainText);
    bar->addWidget(playButton_);
    bar->addWidget(depthSlider_, 2);
    bar->addWidget(depthLabel_);
    bar->addWidget(hover_, 1);
    layout->addLayout(bar);
    return page_;
}

QWidget* ModelsWorkspace::buildPanel() {
    using form::addRow;
    using form::named;
    auto* panel = new QWidget(host());
    auto* content = new QWidget(panel);
    auto* v = new QVBoxLayout(content);

    // Every control is named after its key in ui/widgets/Tooltips.cpp and carries that tooltip
    // (ui/widgets/FormWidgets.h); a row's label shares it.
    auto* model = new QGroupBox(tr("Checkpoint"), content);
    auto* mv = new QVBoxLayout(model);
    auto* open = named(new QPushButton(tr("Open folder..."), model), "model.open");
    connect(open, &QPushButton::clicked, this, [this] { openModelDialog(); });
    folder_ = new ElidedLabel(model);
    folder_->setText(tr("No folder open"));
    summary_ = new QLabel(model);
    summary_->setWordWrap(true);
    mv->addWidget(open);
    mv->addWidget(folder_);
    mv->addWidget(summary_);
    v->addWidget(model);

    auto [input, form] = form::group(tr("Input"), content);
    text_ = addRow(form, tr("Text"), named(new QLineEdit(input), "model.text"));
    text_->setPlaceholderText(tr("a paragraph of text"));
    ids_ = addRow(form, tr("Ids"), named(new QLineEdit(input), "model.ids"));
    ids_->setPlaceholderText(tr("or token ids: 3,1,4"));
    compare_ = addRow(form, tr("Compare"), named(new QPlainTextEdit(input), "model.compare"));
    compare_->setPlaceholderText(tr("other inputs, one per line\n(ids 3,1,4 for ids)"));
    compare_->setToolTip(
        tr("Further inputs, one per line: text, or \"ids 3,1,4\". Each runs alone through the "
           "same layers; the Cosines tab draws their histograms over the first input's and "
           "their mean cosines beside its curve"));
    compare_->setTabChangesFocus(true);
    compare_->setLineWrapMode(QPlainTextEdit::NoWrap); // a line is an input; the view follows the cursor
    compare_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    compare_->setFixedHeight(4 * compare_->fontMetrics().lineSpacing() + 12);
    layers_ = addRow(form, tr("Layers"), form::startIntBox(input, "model.layers", 1, 1));
    histogramLayers_ = addRow(form, tr("Histograms"), named(new QLineEdit(input), "model.histograms"));
    histogramLayers_->setPlaceholderText(tr("0, L/3, 2L/3, L"));
    threeD_ = addRow(form, tr("Projection"), named(new QCheckBox(tr("3-D"), input), "model.three_d"));
    threeD_->setChecked(true);
    runButton_ = named(new QPushButton(tr("Run"), input), "model.run");
    connect(runButton_, &QPushButton::clicked, this, [this] { run(); });
    connect(text_, &QLineEdit::returnPressed, this, [this] { run(); });
    connect(ids_, &QLineEdit::returnPressed, this, [this] { run(); });
    form->addRow(runButton_);
    v->addWidget(input);

    auto [ode, of] = form::group(tr("Own dynamics"), content);
    odeLayer_ = addRow(of, tr("Layer"), form::startIntBox(ode, "model.ode_layer", 0, 0));
    odeHead_ = addRow(of, tr("Head"), form::startIntBox(ode, "model.ode_head", 0, 0));
    odeSteps_ = addRow(of, tr("Steps per layer"), form::startIntBox(ode, "model.ode_steps", 1, 200));
    odeSteps_->setValue(20);
    odeButton_ = named(new QPushButton(tr("Build ODE"), ode), "model.build_ode");
    connect(odeButton_, &QPushButton::clicked, this,
            [this] { buildDynamics(odeLayer_->value(), odeHead_->value()); });
    particlesButton_ = named(new QPushButton(tr("Open in Particles"), ode), "model.open_in_particles");
    connect(particlesButton_, &QPushButton::clicked, this, [this] { openInParticles(); });
    of->addRow(odeButton_);
    of->addRow(particlesButton_);
    v->addWidget(ode);

    progress_ = named(new QProgressBar(content), "model.progress");
    progress_->setRange(0, 1000);
    progress_->setValue(0);
    progress_->setTextVisible(false);
    cancelButton_ = named(new QPushButton(tr("Cancel"), content), "model.cancel");
    connect(cancelButton_, &QPushButton::clicked, this, [this] { cancel(); });
    message_ = new QLabel(content);
    message_->setObjectName(QStringLiteral("modelMessage"));
    message_->setWordWrap(true);
    message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* progressRow = new QHBoxLayout;
    progressRow->addWidget(progress_, 1);
    progressRow->addWidget(cancelButton_);
    v->addLayout(progressRow);
    v->addWidget(message_);
    v->addStretch(1);
    form::scrollInto(panel, content, form::Sideways::Never); // a short window scrolls the panel
    return panel;
}

// --- Workspace ---

QList<WorkspacePage> ModelsWorkspace::pages() const {
    return {{page_, tr("Models"),
             tr("A pretrained Transformer's tokens as particles: the cosines' histograms through depth, the "
                "cloud layer by layer, and one head's own ODE beside the layers (Model panel)"),
             QKeySequence(Qt::Key_7),
             tr("LMs")}}; // language models, where the full titles do not fit side by side (1024 px)
}

QList<WorkspaceDock> ModelsWorkspace::docks() const {
    return {{dock_, Qt::LeftDockWidgetArea}};
}

QWidget* ModelsWorkspace::plotsOf(QWidget*) const {
    return tabs_->currentWidget();
}

void ModelsWorkspace::setActive(bool active) {
    Workspace::setActive(active);
    if (active) dock_->raise();
    if (!active) setPlaying(false);
}

QString ModelsWorkspace::documentName() const {
    return dir_.isEmpty() ? QString() : QFileInfo(dir_).fileName();
}

void ModelsWorkspace::saveSettings(QSettings& s) const {
    s.setValue(QStringLiteral("models/folder"), dir_);
    s.setValue(QStringLiteral("models/lastDir"), lastDir_);
    s.setValue(QStringLiteral("models/text"), text_->text());
    s.setValue(QStringLiteral("models/ids"), ids_->text());
    s.setValue(QStringLiteral("models/compare"), compare_->toPlainText());
    s.setValue(QStringLiteral("models/logDensity"), logDensity_->isChecked());
}

void ModelsWorkspace::restoreSettings(QSettings& s) {
    lastDir_ = s.value(QStringLiteral("models/lastDir")).toString();
    text_->setText(s.value(QStringLiteral("models/text")).toString());
    ids_->setText(s.value(QStringLiteral("models/ids")).toString());
    compare_->setPlainText(s.value(QStringLiteral("models/compare")).toString());
    logDensity_->setChecked(s.value(QStringLiteral("models/logDensity"), false).toBool());
    const QString folder = s.value(QStringLiteral("models/folder")).toString();
    if (!folder.isEmpty() && QFileInfo(folder).isDir()) openModel(folder);
}

// --- Opening a checkpoint ---

void ModelsWorkspace::openModelDialog() {
    const QString dir = QFileDialog::getExistingDirectory(
        host(), tr("Open a checkpoint folder (config.json + model.safetensors)"),
        lastDir_.isEmpty() ? QDir::homePath() : lastDir_);
    if (dir.isEmpty()) return;
    lastDir_ = QFileInfo(dir).absolutePath();
    if (openModel(dir)) emit showPageRequested(page_);
}

bool ModelsWorkspace::openModel(const QString& dir) {
    std::shared_ptr<const models::Checkpoint> checkpoint;
    try {
        checkpoint = std::make_shared<const models::Checkpoint>(QFile::encodeName(dir).toStdString());
    } catch (const std::exception& e) {
        return fail(
            tr("Cannot open the checkpoint %1:\n%2").arg(QFileInfo(dir).fileName(), fromStd(e.what())));
    }
    runJob_.cancel();
    dynamicsJob_.cancel();
    checkpoint_ = checkpoint;
    dir_ = dir;
    result_.reset();
    dynamics_.reset();
    depthShot_.reset();
    odeShot_.reset();
    realShot_.reset();
    histograms_->clear();
    curves_->setCurves({});
    distance_->setCurves({});
    const models::ModelConfig& c = checkpoint_->config();
    folder_->setText(QDir::toNativeSeparators(dir));
    summary_->setText(tr("%1: D = %2, %3 heads, %4 layers, %5 positions")
                          .arg(QString::fromLatin1(models::toString(c.family)))
                          .arg(c.hidden)
                          .arg(c.heads)
                          .arg(c.layers)
                          .arg(c.positions));
    layers_->setRange(1, c.sharedLayer() ? 4096 : c.layers);
    layers_->setValue(c.layers);
    odeHead_->setRange(0, c.heads - 1);
    odeSteps_->setValue(models::defaultStepsPerLayer(c));
    setMessage(tr("Opened %1. Type a text or ids and Run.").arg(QFileInfo(dir).fileName()), false);
    emit documentNameChanged();
    updateControls();
    return succeed();
}

// --- The forward pass ---

void ModelsWorkspace::setInput(const QString& text, const QString& ids) {
    text_->setText(text);
    ids_->setText(ids);
}

void ModelsWorkspace::setCompare(const QString& lines) {
    compare_->setPlainText(lines);
}

bool ModelsWorkspace::run() {
    if (!checkpoint_) return fail(tr("No checkpoint: open a folder with config.json and model.safetensors."));
    models::ModelRunRequest request;
    request.dir = QFile::encodeName(dir_).toStdString();
    request.text = text_->text().toStdString();
    try {
        if (!ids_->text().trimmed().isEmpty())
            request.ids = models::parseIds(ids_->text().toStdString(), "ids");
        if (!histogramLayers_->text().trimmed().isEmpty())
            request.histogramLayers = models::parseIds(histogramLayers_->text().toStdString(), "histograms");
        // One further input per non-empty line: "ids 3,1,4" (or "ids: ...") as ids, anything else as text.
        const QStringList lines = compare_->toPlainText().split(QLatin1Char('\n'));
        for (int k = 0; k < lines.size(); ++k) {
            const QString line = lines[k].trimmed();
            if (line.isEmpty()) continue;
            models::ModelInput in;
            in.name = "compare, line " + std::to_string(k + 1);
            if (line.startsWith(QStringLiteral("ids ")) || line.startsWith(QStringLiteral("ids:")))
                in.ids = models::parseIds(line.mid(4).trimmed().toStdString(),
                                          "compare, line " + std::to_string(k + 1));
            else
                in.text = line.toStdString();
            request.compare.push_back(std::move(in));
        }
    } catch (const std::exception& e) {
        return fail(fromStd(e.what()));
    }
    if (request.ids.empty() && text_->text().trimmed().isEmpty())
        return fail(tr("No input: type a text or token ids."));
    request.layers = layers_->value();
    request.dims = threeD_->isChecked() ? 3 : 2;
    // The first input named as the compared ones are (its text, or its ids), as it was when the run began.
    runLabel_ = ids_->text().trimmed().isEmpty() ? text_->text().trimmed()
                                                 : QStringLiteral("ids ") + ids_->text().trimmed();
    dynamicsJob_.cancel();
    runJob_.start([request](const auto& progress) { return models::runModel(request, progress); });
    runPending_ = true;
    poll_.start();
    progress_->setValue(0);
    setMessage(tr("Running %1 layers...").arg(request.layers), false);
    updateControls();
    return succeed();
}

void ModelsWorkspace::cancel() {
    runJob_.cancel();
    dynamicsJob_.cancel();
}

bool ModelsWorkspace::running() const {
    return runPending_ || dynamicsPending_;
}

void ModelsWorkspace::poll() {
    if (runPending_) {
        progress_->setValue(int(1000 * runJob_.progress()));
        if (!runJob_.running()) {
            runPending_ = false;
            if (const auto r = runJob_.result()) {
                result_ = r;
                dynamics_.reset();
                showResult();
                progress_->setValue(1000);
                succeed();
                setMessage(tr("%1 tokens through %2 layers of %3.")
                               .arg(r->ids.size())
                               .arg(r->states.size() - 1)
                               .arg(fromStd(r->name)),
                           false);
                emit runFinished(true);
            } else {
                fail(tr("Cannot run the model:\n%1")
                         .arg(runJob_.error().empty() ? tr("cancelled") : fromStd(runJob_.error())));
                emit runFinished(false);
            }
        }
    }
    if (dynamicsPending_) {
        if (!runPending_) progress_->setValue(int(1000 * dynamicsJob_.progress()));
        if (!dynamicsJob_.running()) {
            dynamicsPending_ = false;
            if (const auto d = dynamicsJob_.result()) {
                dynamics_ = d;
                progress_->setValue(1000);
                showDynamics();
                succeed();
                setMessage(tr("The ODE of head %1 of layer %2 beside the %3 layers.")
                               .arg(d->head)
                               .arg(d->layer)
                               .arg(d->dynamics.real.size() - 1),
                           false);
                emit dynamicsFinished(true);
            } else {
                fail(
                    tr("Cannot build the ODE:\n%1")
                        .arg(dynamicsJob_.error().empty() ? tr("cancelled") : fromStd(dynamicsJob_.error())));
                emit dynamicsFinished(false);
            }
        }
    }
    if (!runPending_ && !dynamicsPending_) poll_.stop();
    updateControls();
}

void ModelsWorkspace::showResult() {
    const models::ModelRunResult& r = *result_;
    const int L = int(r.states.size()) - 1;
    ++generation_;
    std::vector<GramHistogramView::Compared> compared;
    std::vector<LayerCurveView::Curve> curves = {
        {tr("mean cosine"), r.gram.meanCosine, QColor(60, 110, 190), false},
        {tr("clusters"), std::vector<double>(r.gram.clusters.begin(), r.gram.clusters.end()),
         QColor(215, 110, 40), true}};
    for (std::size_t k = 0; k < r.compared.size(); ++k) {
        compared.push_back({fromStd(r.compared[k].label), r.compared[k].gram});
        curves.push_back({tr("mean cosine %1").arg(k + 2), r.compared[k].gram.meanCosine,
                          GramHistogramView::comparedColour(k), false});
    }
    histograms_->setHistograms(r.gram, std::move(compared), runLabel_);
    curves_->setCurves(std::move(curves));
    distance_->setCurves({});
    odeShot_.reset();
    realShot_.reset();
    odeCaption_->setText(tr("The head's ODE: choose its layer and head, then Build ODE"));
    odeLayer_->setRange(0, std::max(0, L - 1));
    depthSlider_->blockSignals(true);
    depthSlider_->setRange(0, L);
    depthSlider_->setValue(0);
    depthSlider_->blockSignals(false);
    showDepth();
    // After the first cloud is shown: the view takes the dimension from the tokens it shows.
    const int dims = int(r.depth.front().cols());
    depthView_->setProjection({dims >= 3 ? 3 : 2, true, {0, 1, 2}});
    depthView_->frameAll();
}

// --- Depth: slider, play ---

void ModelsWorkspace::setDepth(int layer) {
    depthSlider_->setValue(std::clamp(layer, depthSlider_->minimum(), depthSlider_->maximum()));
    showDepth();
}

int ModelsWorkspace::depth() const {
    return depthSlider_->value();
}

void ModelsWorkspace::setPlaying(bool on) {
    if (on && result_)
        play_.start();
    else
        play_.stop();
    playButton_->setText(play_.isActive() ? tr("Pause") : tr("Play"));
}

void ModelsWorkspace::showDepth() {
    const int k = depth();
    const int L = result_ ? int(result_->states.size()) - 1 : 0;
    depthLabel_->setText(tr("layer %1 of %2").arg(k).arg(L));
    curves_->setCursor(result_ ? k : -1);
    distance_->setCursor(dynamics_ ? k : -1);
    if (!result_) return;
    depthShot_ = cloudShot(result_->depth[std::size_t(k)], generation_, k, L);
    depthView_->refresh();
    if (!dynamics_) return;
    const ModelDynamicsShown& d = *dynamics_;
    const int recorded = int(d.ode.size());
    const int t = std::min(k, recorded - 1);
    odeShot_ = cloudShot(d.ode[std::size_t(t)], generation_, t, L);
    realShot_ = cloudShot(d.real[std::size_t(k)], generation_, k, L);
    odeCaption_->setText(
        t == k ? tr("ODE of head %1 of layer %2 at t = %3").arg(d.head).arg(d.layer).arg(t)
               : tr("ODE of head %1 of layer %2: stopped at t = %3").arg(d.head).arg(d.layer).arg(t));
    const double dist = d.dynamics.distance[std::size_t(k)];
    realCaption_->setText(tr("Layer %1 in the ODE's coordinates: distance %2")
                              .arg(k)
                              .arg(std::isfinite(dist) ? QString::number(dist, 'g', 3) : tr("n/a")));
    odeView_->refresh();
    realView_->refresh();
}

// --- The head's own dynamics ---

bool ModelsWorkspace::buildDynamics(int layer, int head) {
    if (!result_) return fail(tr("No run to take the head from: Run the model first."));
    const models::ModelConfig& c = result_->checkpoint->config();
    const int L = int(result_->states.size()) - 1;
    if (layer < 0 || layer >= L)
        return fail(tr("layer: expected an integer in [0, %1], got %2").arg(L - 1).arg(layer));
    if (head < 0 || head >= c.heads)
        return fail(tr("head: expected an integer in [0, %1], got %2").arg(c.heads - 1).arg(head));
    odeLayer_->setValue(layer);
    odeHead_->setValue(head);
    const auto r = result_;
    const int dims = int(r->depth.front().cols()), steps = odeSteps_->value();
    dynamicsJob_.start([r, layer, head, dims, steps](const auto& progress) {
        ModelDynamicsShown s;
        s.layer = layer;
        s.head = head;
        const models::Weights<double> w = r->checkpoint->weights<double>();
        s.dynamics = models::modelDynamics(*r->checkpoint, w, r->states, layer, head, steps, progress);
        s.axes = models::principalAxes(s.dynamics.real, dims);
        for (const auto& x : s.dynamics.real) s.real.push_back(s.axes.project(x));
        for (const auto& x : s.dynamics.ode) s.ode.push_back(s.axes.project(x));
        return s;
    });
    dynamicsPending_ = true;
    poll_.start();
    setMessage(tr("Running the ODE of head %1 of layer %2...").arg(head).arg(layer), false);
    updateControls();
    return succeed();
}

void ModelsWorkspace::showDynamics() {
    const ModelDynamicsShown& d = *dynamics_;
    ++generation_;
    distance_->setCurves(
        {{tr("distance between the ODE and the layers"), d.dynamics.distance, QColor(150, 70, 170), false}});
    // Both views start framed on the common start (the ODE's t = 0 is layer 0 in its coordinates) and follow
    // their clouds from there: the ODE's may grow far beyond the layers' (the distance curve gives the
    // scale).
    depthSlider_->blockSignals(true);
    depthSlider_->setValue(0);
    depthSlider_->blockSignals(false);
    showDepth();
    const int dims = int(d.real.front().cols());
    for (ParticleView* v : {odeView_, realView_}) {
        v->setProjection({dims >= 3 ? 3 : 2, true, {0, 1, 2}});
        v->frameAll();
    }
    tabs_->setCurrentIndex(2);
}

bool ModelsWorkspace::openInParticles() {
    if (!dynamics_) return fail(tr("No ODE to open: Build ODE first."));
    if (!particles_->setScene(dynamics_->dynamics.scene)) return fail(particles_->lastError());
    emit showPageRequested(particles_->particleView());
    emit statusMessage(
        tr("Opened %1 in the Particles workspace").arg(fromStd(dynamics_->dynamics.scene.name)), 8000);
    return succeed();
}

// --- Read-outs and controls ---

void ModelsWorkspace::showHover(int token) {
    if (!result_ || token < 0 || std::size_t(token) >= result_->texts.size()) {
        hover_->setText(tr("Hover a token to name it."));
        return;
    }
    hover_->setText(tr("token %1: \u201c%2\u201d (id %3)")
                        .arg(token)
                        .arg(fromStd(result_->texts[std::size_t(token)]))
                        .arg(result_->ids[std::size_t(token)]));
    // Beside the cursor too, when the mouse picked it (not a programmatic pick).
    if (auto* view = qobject_cast<QWidget*>(sender()); view && view->underMouse())
        QToolTip::showText(QCursor::pos(), hover_->text(), view);
}

void ModelsWorkspace::setMessage(const QString& text, bool error) {
    message_->setText(text);
    message_->setStyleSheet(error ? QStringLiteral("color: #c0392b;") : QString());
}

void ModelsWorkspace::updateControls() {
    runButton_->setEnabled(checkpoint_ != nullptr);
    odeButton_->setEnabled(result_ != nullptr && !dynamicsPending_);
    particlesButton_->setEnabled(dynamics_ != nullptr);
    depthSlider_->setEnabled(result_ != nullptr);
    playButton_->setEnabled(result_ != nullptr);
    cancelButton_->setEnabled(runPending_ || dynamicsPending_);
}

} // namespace flowscope
