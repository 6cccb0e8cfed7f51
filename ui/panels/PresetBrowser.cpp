#include "ui/panels/PresetBrowser.h"

#include "engine/scene/Scene.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTextBrowser>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <array>
#include <exception>
#include <map>

namespace flowscope {

namespace {

// The Theory page: the newer papers whose models the presets redraw, each with what to look for. A preset
// belongs to a paper when its figure names the paper's arXiv number.
struct Paper {
    const char* arxiv;
    const char* topic; // the group's title, short enough for the dock
    const char* reference;
    const char* lookFor;
};
const std::array<Paper, 4> kPapers{{
    {"2510.22026", QT_TRANSLATE_NOOP("PresetBrowser", "normalization schemes"),
     QT_TRANSLATE_NOOP("PresetBrowser", "Karagodin, Ge, Polyanskiy, Rigollet 2025"),
     QT_TRANSLATE_NOOP("PresetBrowser",
                       "The mean cosine in the Plots panel: 1 - rho(t) falls like e^(-2t) under Post-LN and "
                       "like 1/t^2 under Pre-LN; the chart's title gives the fitted rate.")},
    {"2411.04990", QT_TRANSLATE_NOOP("PresetBrowser", "causal masking"),
     QT_TRANSLATE_NOOP("PresetBrowser", "Karagodin, Polyanskiy, Rigollet 2024"),
     QT_TRANSLATE_NOOP("PresetBrowser",
                       "Token 0 never moves; the clusters form at the Rényi-parking leaders drawn over the "
                       "tokens (Display ▸ Rényi-parking centres).")},
    {"2410.06833", QT_TRANSLATE_NOOP("PresetBrowser", "metastability"),
     QT_TRANSLATE_NOOP("PresetBrowser", "Geshkovski, Koubbi, Polyanskiy, Rigollet 2024"),
     QT_TRANSLATE_NOOP("PresetBrowser",
                       "The energy E_beta in the Plots panel against log t: a staircase, one plateau per "
                       "cluster count.")},
    {"2605.09213", QT_TRANSLATE_NOOP("PresetBrowser", "positional decay"),
     QT_TRANSLATE_NOOP("PresetBrowser", "Duerinckx, Geshkovski, Rossi 2026"),
     QT_TRANSLATE_NOOP("PresetBrowser",
                       "The first tokens pull on everyone (the mask), the last ones on their neighbours (the "
                       "decay); the middle ones leave little trace: the U of the Plots panel's influence "
                       "chart.")},
}};

// Groups in display order: the source paper's particle scenes, the Gaussian-mode scenes, one group per paper
// of the Theory page (kTheory + its index in kPapers), then the rest.
enum Group { CastinParticles = 0, GaussianMode = 1, kTheory = 2, OtherScenes = 100, Unreadable = 101 };

const char* groupTitle(int group) {
    switch (group) {
    case CastinParticles:
        return QT_TRANSLATE_NOOP("PresetBrowser", "Castin et al. 2025 — particles");
    case GaussianMode:
        return QT_TRANSLATE_NOOP("PresetBrowser", "Gaussian mode — moment ODEs");
    case OtherScenes:
        return QT_TRANSLATE_NOOP("PresetBrowser", "Other papers and scenes");
    case Unreadable:
        return QT_TRANSLATE_NOOP("PresetBrowser", "Unreadable");
    default:
        return kPapers[std::size_t(group - kTheory)].topic;
    }
}

// The Theory page's paper of a figure ("... (arXiv 2411.04990) ..."), or -1.
int paperOf(const QString& figure) {
    for (std::size_t k = 0; k < kPapers.size(); ++k)
        if (figure.contains(QLatin1String("arXiv ") + QLatin1String(kPapers[k].arxiv))) return int(k);
    return -1;
}

constexpr int kIndexRole = Qt::UserRole; // index into presets_, -1 for a group header

// "Castin et al. 2025, Fig 2(a)" -> "Fig 2(a)": the part that tells presets of one paper apart.
QString shortFigure(const QString& figure) {
    if (figure.isEmpty() || figure.startsWith(QLatin1String("none"))) return {};
    for (const char* marker : {"Fig ", "Sec. ", "Prop "}) {
        const int i = figure.indexOf(QLatin1String(marker));
        if (i >= 0) return figure.mid(i);
    }
    return figure;
}

// Gaussian-mode presets: the covariance-cone figures ("cone-*") and the other moment-ODE scenes.
bool isGaussianMode(const QString& file, const Scene& s) {
    return file.startsWith(QLatin1String("cone-")) || s.moments.grid.enabled() ||
           s.moments.method == MomentMethod::PaperEuler ||
           QString::fromStdString(s.description).startsWith(QLatin1String("Gaussian mode"));
}

// SceneError's what() is "pointer: message"; a whole-file error has an empty pointer.
QString samePathKey(const QString& path) {
    const QFileInfo info(path);
    const QString canonical = info.canonicalFilePath();
    return canonical.isEmpty() ? info.absoluteFilePath() : canonical;
}

// Natural order: runs of digits compare as numbers ("Fig 2" < "Fig 10"), other characters case-insensitively.
// (QCollator's numeric mode needs ICU, which a Qt build may lack.)
int naturalCompare(const QString& a, const QString& b) {
    qsizetype i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (a[i].isDigit() && b[j].isDigit()) {
            while (i < a.size() - 1 && a[i] == QLatin1Char('0') && a[i + 1].isDigit()) ++i; // leading zeros
            while (j < b.size() - 1 && b[j] == QLatin1Char('0') && b[j + 1].isDigit()) ++j;
            qsizetype ei = i, ej = j;
            while (ei < a.size() && a[ei].isDigit()) ++ei;
            while (ej < b.size() && b[ej].isDigit()) ++ej;
            if (ei - i != ej - j) return ei - i < ej - j ? -1 : 1; // fewer digits: smaller number
            if (const int c = QStringView(a).mid(i, ei - i).compare(QStringView(b).mid(j, ej - j)); c != 0)
                return c;
            i = ei;
            j = ej;
        } else {
            const QChar x = a[i].toCaseFolded(), y = b[j].toCaseFolded();
            if (x != y) return x < y ? -1 : 1;
            ++i;
            ++j;
        }
    }
    return (i < a.size()) - (j < b.size());
}

// The figure column's label: "Fig 1 (upper panel, eps = -0.4)" -> "Fig 1", "Han, Osher, Li (2025), ..." ->
// "Han, Osher, Li", "Geshkovski et al., 'A mathematical ...'" -> "Geshkovski et al." (the whole figure is in
// the tooltip and the details).
QString figureLabel(const QString& figure) {
    QString label = shortFigure(figure);
    if (const int paren = label.indexOf(QLatin1String(" (")); paren > 0) label.truncate(paren);
    if (const int comma = label.indexOf(QLatin1Char(',')); label.size() > 16 && comma > 0)
        label.truncate(comma);
    return label;
}

} // namespace

PresetBrowser::PresetBrowser(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("presetBrowser"));
    filter_ = new QLineEdit(this);
    filter_->setObjectName(QStringLiteral("filter"));
    filter_->setPlaceholderText(tr("Filter (name, figure, description)"));
    filter_->setClearButtonEnabled(true);
    filter_->setToolTip(tr("Keep the presets whose name, file, figure or description contain every word"));

    tree_ = new QTreeWidget(this);
    tree_->setObjectName(QStringLiteral("presets"));
    tree_->setColumnCount(2);
    tree_->setHeaderLabels({tr("Preset"), tr("Figure")});
    tree_->setUniformRowHeights(true);
    tree_->setSelectionMode(QAbstractItemView::SingleSelection);
    tree_->setTextElideMode(Qt::ElideRight);
    tree_->setIndentation(12);
    tree_->header()->setStretchLastSection(false);
    tree_->header()->setSectionResizeMode(0, QHeaderView::Stretch);
    tree_->header()->setSectionResizeMode(1, QHeaderView::Interactive);
    tree_->setColumnWidth(1, tree_->fontMetrics().horizontalAdvance(QStringLiteral("Fig 10(a)")) + 24);

    details_ = new QTextBrowser(this);
    details_->setObjectName(QStringLiteral("details"));
    details_->setReadOnly(true);
    details_->setOpenLinks(false);
    details_->setMinimumHeight(80);

    auto* splitter = new QSplitter(Qt::Vertical, this);
    splitter->addWidget(tree_);
    splitter->addWidget(details_);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 1);
    splitter->setChildrenCollapsible(false);

    open_ = new QPushButton(tr("Open"), this);
    open_->setObjectName(QStringLiteral("open"));
    open_->setToolTip(tr("Run the selected preset (or double-click it)"));
    open_->setEnabled(false);

    auto* buttons = new QHBoxLayout;
    buttons->addStretch();
    buttons->addWidget(open_);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(filter_);
    layout->addWidget(splitter, 1);
    layout->addLayout(buttons);

    connect(filter_, &QLineEdit::textChanged, this, &PresetBrowser::applyFilter);
    connect(tree_, &QTreeWidget::currentItemChanged, this, &PresetBrowser::showDetails);
    connect(tree_, &QTreeWidget::itemActivated, this, &PresetBrowser::activate);
    connect(open_, &QPushButton::clicked, this, [this] { activate(tree_->currentItem()); });
}

void PresetBrowser::setDirectory(const QString& dir) {
    const QString keep = selectedPath();
    directory_ = dir;
    presets_.clear();
    const QFileInfoList files =
        QDir(dir).entryInfoList({QStringLiteral("*.json")}, QDir::Files | QDir::Readable, QDir::Name);
    for (const QFileInfo& f : files) {
        Preset p;
        p.path = f.absoluteFilePath();
        p.file = f.completeBaseName();
        p.name = p.file;
        try {
            const Scene s = loadScene(QFile::encodeName(p.path).toStdString());
            if (!s.name.empty()) p.name = QString::fromStdString(s.name);
            p.description = QString::fromStdString(s.description);
            p.figure = QString::fromStdString(s.figure);
            QString type = QString::fromUtf8(toString(s.attention.type));
            if (s.attention.masked) type = tr("masked %1").arg(type);
            p.summary = tr("%1 · d = %2 · N = %3").arg(type).arg(s.d).arg(s.n);
            const int paper = paperOf(p.figure);
            p.group = isGaussianMode(p.file, s)                    ? GaussianMode
                      : p.figure.contains(QLatin1String("Castin")) ? CastinParticles
                      : paper >= 0                                 ? kTheory + paper
                                                                   : OtherScenes;
        } catch (const std::exception& e) {
            p.error = QString::fromStdString(e.what());
            p.group = Unreadable;
        }
        presets_.push_back(std::move(p));
    }

    // By group, then by figure in natural order (presets without a figure last), then by name.
    std::stable_sort(presets_.begin(), presets_.end(), [](const Preset& a, const Preset& b) {
        if (a.group != b.group) return a.group < b.group;
        const QString fa = shortFigure(a.figure), fb = shortFigure(b.figure);
        if (fa.isEmpty() != fb.isEmpty()) return fb.isEmpty();
        if (const int c = naturalCompare(fa, fb); c != 0) return c < 0;
        return naturalCompare(a.name, b.name) < 0;
    });
    rebuildTree();
    select(keep);
}

void PresetBrowser::rebuildTree() {
    const QSignalBlocker blocker(tree_);
    tree_->clear();
    std::map<int, QTreeWidgetItem*> groups;
    for (std::size_t i = 0; i < presets_.size(); ++i) {
        const Preset& p = presets_[i];
        QTreeWidgetItem*& group = groups[p.group];
        if (!group) {
            const bool theory = p.group >= kTheory && p.group < OtherScenes;
            group =
                new QTreeWidgetItem(tree_, {(theory ? tr("Theory: ") : QString()) + tr(groupTitle(p.group))});
            group->setData(0, kIndexRole, -1);
            group->setFlags(Qt::ItemIsEnabled);
            group->setFirstColumnSpanned(true);
            QFont bold = group->font(0);
            bold.setBold(true);
            group->setFont(0, bold);
            if (theory) {
                const Paper& paper = kPapers[std::size_t(p.group - kTheory)];
                group->setToolTip(
                    0, tr("%1 (arXiv %2)\nLook for: %3")
                           .arg(tr(paper.reference), QLatin1String(paper.arxiv), tr(paper.lookFor)));
            }
        }
        auto* item =
            new QTreeWidgetItem(group, {p.name, p.error.isEmpty() ? figureLabel(p.figure) : tr("error")});
        item->setData(0, kIndexRole, int(i));
        if (p.error.isEmpty()) {
            const QString tip = (p.figure.isEmpty() ? QString() : p.figure + QStringLiteral("\n")) + p.file +
                                QStringLiteral(".json");
            item->setToolTip(0, tip);
            item->setToolTip(1, tip);
        } else {
            item->setFlags(Qt::ItemNeverHasChildren); // disabled: not selectable, not activatable
            item->setToolTip(0, p.error);
            item->setToolTip(1, p.error);
        }
    }
    tree_->expandAll();
    applyFilter();
    showDetails();
}

void PresetBrowser::applyFilter() {
    const QStringList words = filter_->text().split(QLatin1Char(' '), Qt::SkipEmptyParts);
    for (int g = 0; g < tree_->topLevelItemCount(); ++g) {
        QTreeWidgetItem* group = tree_->topLevelItem(g);
        bool any = false;
        for (int c = 0; c < group->childCount(); ++c) {
            QTreeWidgetItem* item = group->child(c);
            const Preset* p = presetOf(item);
            const QString haystack = p->name + QLatin1Char(' ') + p->file + QLatin1Char(' ') + p->figure +
                                     QLatin1Char(' ') + p->description;
            const bool match = std::all_of(words.begin(), words.end(), [&](const QString& w) {
                return haystack.contains(w, Qt::CaseInsensitive);
            });
            item->setHidden(!match);
            any = any || match;
        }
        group->setHidden(!any);
    }
}

const PresetBrowser::Preset* PresetBrowser::presetOf(const QTreeWidgetItem* item) const {
    if (!item) return nullptr;
    const int index = item->data(0, kIndexRole).toInt();
    return index >= 0 && index < int(presets_.size()) ? &presets_[std::size_t(index)] : nullptr;
}

void PresetBrowser::showDetails() {
    const Preset* p = presetOf(tree_->currentItem());
    open_->setEnabled(p && p->error.isEmpty());
    if (!p) {
        details_->setHtml(presets_.empty() ? tr("<i>No presets in %1</i>").arg(directory_.toHtmlEscaped())
                                           : tr("<i>Select a preset to read what it shows.</i>"));
        return;
    }
    QString html = QStringLiteral("<b>%1</b>").arg(p->name.toHtmlEscaped());
    if (!p->figure.isEmpty()) html += QStringLiteral("<br><i>%1</i>").arg(p->figure.toHtmlEscaped());
    if (const int paper = paperOf(p->figure); paper >= 0 && p->error.isEmpty())
        html += tr("<p><b>Look for:</b> %1</p>").arg(tr(kPapers[std::size_t(paper)].lookFor).toHtmlEscaped());
    if (!p->description.isEmpty()) html += QStringLiteral("<p>%1</p>").arg(p->description.toHtmlEscaped());
    html += QStringLiteral("<p><small>%1.json%2</small></p>")
                .arg(p->file.toHtmlEscaped(),
                     p->summary.isEmpty() ? QString() : QStringLiteral(" · ") + p->summary);
    details_->setHtml(html);
}

void PresetBrowser::activate(QTreeWidgetItem* item) {
    const Preset* p = presetOf(item);
    if (p && p->error.isEmpty()) emit presetActivated(p->path);
}

void PresetBrowser::select(const QString& path) {
    const QString key = path.isEmpty() ? QString() : samePathKey(path);
    QTreeWidgetItem* found = nullptr;
    for (int g = 0; g < tree_->topLevelItemCount() && !found; ++g) {
        QTreeWidgetItem* group = tree_->topLevelItem(g);
        for (int c = 0; c < group->childCount() && !found; ++c) {
            const Preset* p = presetOf(group->child(c));
            if (!key.isEmpty() && p->error.isEmpty() && samePathKey(p->path) == key) found = group->child(c);
        }
    }
    if (found) {
        if (found->isHidden()) filter_->clear(); // the running scene must be visible
        tree_->setCurrentItem(found);
        tree_->scrollToItem(found);
    } else {
        tree_->setCurrentItem(nullptr);
        tree_->clearSelection();
    }
    showDetails();
}

QString PresetBrowser::selectedPath() const {
    const Preset* p = presetOf(tree_->currentItem());
    return p ? p->path : QString();
}

QStringList PresetBrowser::presetPaths() const {
    QStringList paths;
    for (const Preset& p : presets_) paths << p.path;
    return paths;
}

QString PresetBrowser::presetError(const QString& path) const {
    const QString key = samePathKey(path);
    for (const Preset& p : presets_)
        if (samePathKey(p.path) == key) return p.error;
    return {};
}

QString PresetBrowser::presetFigure(const QString& path) const {
    const QString key = samePathKey(path);
    for (const Preset& p : presets_)
        if (samePathKey(p.path) == key) return p.figure;
    return {};
}

} // namespace flowscope
