#include "ui/shell/CommandPalette.h"

#include "ui/widgets/Dialogs.h"

#include <QAction>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QSet>
#include <QToolBar>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace flowscope {

namespace {

QString plain(QString text) {
    return text.remove(QLatin1Char('&')).remove(QStringLiteral("...")).trimmed();
}

// "Display ▸ Colour" for a menu inside Display; empty for a menu of no menu.
QString menuPath(const QMenu* menu) {
    for (QObject* o : menu->menuAction()->associatedObjects())
        if (const auto* parent = qobject_cast<const QMenu*>(o)) {
            const QString above = menuPath(parent);
            return (above.isEmpty() ? QString() : above + QStringLiteral(" ▸ ")) + plain(parent->title());
        }
    return {};
}

// Where `a` is: the menu (with the menus above it), else the tool bar; empty when neither.
QString placeOf(const QAction* a) {
    for (QObject* o : a->associatedObjects())
        if (const auto* menu = qobject_cast<const QMenu*>(o)) {
            const QString above = menuPath(menu);
            return (above.isEmpty() ? QString() : above + QStringLiteral(" ▸ ")) + plain(menu->title());
        }
    for (QObject* o : a->associatedObjects())
        if (const auto* bar = qobject_cast<const QToolBar*>(o)) return bar->windowTitle();
    return {};
}

QString letters(const QString& text) {
    QString out;
    for (const QChar c : text)
        if (c.isLetterOrNumber()) out += c.toCaseFolded();
    return out;
}

QString shortcutText(const QAction* a) {
    QStringList keys;
    for (const QKeySequence& k : a->shortcuts()) keys << k.toString(QKeySequence::NativeText);
    return keys.join(QStringLiteral(", "));
}

QTreeWidget* twoColumns(QWidget* parent, const QString& first, const QString& second) {
    auto* tree = new QTreeWidget(parent);
    tree->setColumnCount(2);
    tree->setHeaderLabels({first, second});
    tree->setRootIsDecorated(false);
    tree->setUniformRowHeights(true);
    tree->header()->setStretchLastSection(false);
    tree->header()->setSectionResizeMode(0, QHeaderView::Stretch);
    tree->header()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    return tree;
}

} // namespace

QList<ActionEntry> windowActions(const QWidget& window) {
    QList<ActionEntry> entries;
    QSet<const QAction*> seen;
    for (QAction* a : window.findChildren<QAction*>()) {
        if (a->isSeparator() || a->menu() || plain(a->text()).isEmpty() || seen.contains(a)) continue;
        const QString place = placeOf(a);
        if (place.isEmpty() && a->shortcut().isEmpty()) continue; // not reachable by a user
        seen.insert(a);
        entries.push_back(
            {a, place.isEmpty() ? plain(a->text()) : place + QStringLiteral(" ▸ ") + plain(a->text())});
    }
    std::stable_sort(entries.begin(), entries.end(), [](const ActionEntry& x, const ActionEntry& y) {
        return x.path.localeAwareCompare(y.path) < 0;
    });
    return entries;
}

bool commandMatches(const QString& query, const QString& name) {
    return letters(name).contains(letters(query));
}

int commandRank(const QString& query, const QString& name) {
    if (!commandMatches(query, name)) return -1;
    const QString words = query.simplified();
    if (words.isEmpty()) return 0;
    // Whole words: the query between non-letters (or the ends) of the text, case ignored.
    const auto wordAt = [&](const QString& text, bool prefixOnly) {
        for (qsizetype at = text.indexOf(words, 0, Qt::CaseInsensitive); at >= 0;
             at = text.indexOf(words, at + 1, Qt::CaseInsensitive)) {
            const qsizetype end = at + words.size();
            const bool startsWord = at == 0 || !text[at - 1].isLetterOrNumber();
            const bool endsWord = end == text.size() || !text[end].isLetterOrNumber();
            if (startsWord && (prefixOnly || endsWord)) return true;
        }
        return false;
    };
    const QString own = name.section(QStringLiteral("▸"), -1).trimmed();
    if (wordAt(own, false)) return 0;
    if (wordAt(own, true)) return 1;
    if (wordAt(name, false)) return 2;
    return 3;
}

// ---- keyboard shortcuts

ShortcutsDialog::ShortcutsDialog(QWidget* window) : QDialog(window), window_(window) {
    setObjectName(QStringLiteral("shortcuts"));
    auto* layout = dialogColumn(this, tr("Keyboard shortcuts"),
                                tr("Every command with a key. A tab's keys act while that tab is shown; "
                                   "Ctrl+K finds any command by name."));
    table_ = twoColumns(this, tr("Command"), tr("Shortcut"));
    table_->setObjectName(QStringLiteral("shortcuts.table"));
    layout->addWidget(table_);
    resize(520, 560);
    refresh();
}

void ShortcutsDialog::refresh() {
    table_->clear();
    listed_.clear();
    for (const ActionEntry& e : windowActions(*window_)) {
        if (e.action->shortcut().isEmpty()) continue;
        auto* item = new QTreeWidgetItem(table_, {e.path, shortcutText(e.action)});
        item->setToolTip(0, e.action->toolTip());
        listed_ << e.action;
    }
}

// ---- command palette

CommandPalette::CommandPalette(QWidget* window) : QDialog(window) {
    setObjectName(QStringLiteral("commandPalette"));
    setWindowTitle(tr("Command palette"));
    auto* layout = new QVBoxLayout(this);
    filter_ = new QLineEdit(this);
    filter_->setObjectName(QStringLiteral("palette.filter"));
    filter_->setPlaceholderText(tr("Type a command or a preset (\"fig 2\", \"play\", \"export\")"));
    filter_->setClearButtonEnabled(true);
    filter_->installEventFilter(this);
    layout->addWidget(filter_);
    list_ = twoColumns(this, tr("Command"), tr("Key"));
    list_->setObjectName(QStringLiteral("palette.list"));
    list_->setHeaderHidden(true);
    layout->addWidget(list_);
    connect(filter_, &QLineEdit::textChanged, this, &CommandPalette::applyFilter);
    connect(list_, &QTreeWidget::itemActivated, this, &CommandPalette::runCurrent);
    resize(560, 420);
}

void CommandPalette::present(QList<Command> commands) {
    commands_ = std::move(commands);
    list_->clear();
    for (int i = 0; i < commands_.size(); ++i) {
        auto* item = new QTreeWidgetItem(list_, {commands_[i].name, commands_[i].shortcut});
        item->setData(0, Qt::UserRole, i);
    }
    filter_->clear();
    applyFilter();
    show();
    raise();
    activateWindow();
    filter_->setFocus();
}

void CommandPalette::applyFilter() {
    // The items in rank order (commandRank), the commands' own order among equals; the unmatched hidden.
    QList<std::pair<int, QTreeWidgetItem*>> items;
    while (list_->topLevelItemCount() > 0) {
        QTreeWidgetItem* item = list_->takeTopLevelItem(0);
        items.push_back({commandRank(filter_->text(), item->text(0)), item});
    }
    const auto key = [](const std::pair<int, QTreeWidgetItem*>& e) {
        return std::pair(e.first < 0 ? 4 : e.first, e.second->data(0, Qt::UserRole).toInt());
    };
    std::sort(items.begin(), items.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
    QTreeWidgetItem* first = nullptr;
    for (const auto& [rank, item] : items) {
        list_->addTopLevelItem(item);
        item->setHidden(rank < 0);
        if (rank >= 0 && !first) first = item;
    }
    list_->setCurrentItem(first);
}

QStringList CommandPalette::shown() const {
    QStringList names;
    for (int i = 0; i < list_->topLevelItemCount(); ++i)
        if (!list_->topLevelItem(i)->isHidden()) names << list_->topLevelItem(i)->text(0);
    return names;
}

void CommandPalette::runCurrent() {
    const QTreeWidgetItem* item = list_->currentItem();
    if (!item || item->isHidden()) return;
    const std::function<void()> run = commands_.value(item->data(0, Qt::UserRole).toInt()).run;
    hide(); // first: a command may open a dialog of its own
    if (run) run();
}

// The filter line keeps the focus: Up and Down move the choice among the shown commands, Enter runs it.
bool CommandPalette::eventFilter(QObject* watched, QEvent* event) {
    if (watched == filter_ && event->type() == QEvent::KeyPress) {
        const int key = static_cast<QKeyEvent*>(event)->key();
        if (key == Qt::Key_Return || key == Qt::Key_Enter) {
            runCurrent();
            return true;
        }
        if (key == Qt::Key_Up || key == Qt::Key_Down) {
            QTreeWidgetItem* item = list_->currentItem();
            do item = item ? (key == Qt::Key_Up ? list_->itemAbove(item) : list_->itemBelow(item)) : nullptr;
            while (item && item->isHidden());
            if (item) list_->setCurrentItem(item);
            return true;
        }
    }
    return QDialog::eventFilter(watched, event);
}

} // namespace flowscope
