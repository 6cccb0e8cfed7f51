#include "ui/shell/GuidedStarts.h"

#include "ui/shell/MainWindow.h"
#include "ui/shell/Workspace.h"

#include <QAction>
#include <QEvent>
#include <QGridLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QMainWindow>
#include <QMessageBox>
#include <QPushButton>
#include <QStatusBar>
#include <QVBoxLayout>

#include <algorithm>

namespace flowscope {

QList<QAction*> makeGuidedStarts(MainWindow& window) {
    QList<QAction*> actions;
    for (Workspace* w : window.workspaces())
        for (const WorkspaceStart& start : w->guidedStarts()) {
            auto* a = new QAction(start.title, &window);
            a->setObjectName(start.id);
            a->setToolTip(start.look);
            a->setStatusTip(start.look);
            QObject::connect(a, &QAction::triggered, &window, [&window, start] {
                if (start.run())
                    window.statusBar()->showMessage(start.look, 30000);
                else
                    QMessageBox::warning(&window, start.title, window.lastError());
            });
            actions << a;
        }
    return actions;
}

WelcomePane::WelcomePane(QWidget* window, const QList<QAction*>& starts) : QFrame(window) {
    setObjectName(QStringLiteral("welcome"));
    setAutoFillBackground(true);
    // A panel apart from what it covers: a border in the palette's mid tone.
    setStyleSheet(
        QStringLiteral("QFrame#welcome { background: palette(window); border: 1px solid palette(mid); "
                       "border-radius: 6px; }"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(24, 20, 24, 20);
    layout->setSpacing(12);
    auto* title = new QLabel(tr("<h2>Welcome to Flowscope</h2>"), this);
    layout->addWidget(title);
    auto* intro =
        new QLabel(tr("Tokens of a Transformer move as interacting particles. Pick a first look, or "
                      "close this and explore; Help ▸ Welcome brings it back."),
                   this);
    intro->setWordWrap(true);
    layout->addWidget(intro);

    auto* grid = new QGridLayout;
    grid->setHorizontalSpacing(16);
    grid->setVerticalSpacing(10);
    grid->setColumnStretch(1, 1);
    for (QAction* a : starts) {
        auto* button = new QPushButton(a->text(), this);
        button->setObjectName(a->objectName());
        button->setToolTip(a->toolTip());
        auto* look = new QLabel(a->toolTip(), this);
        look->setWordWrap(true);
        const int row = grid->rowCount();
        grid->addWidget(button, row, 0, Qt::AlignTop);
        grid->addWidget(look, row, 1);
        connect(button, &QPushButton::clicked, this, [this, a] {
            dismiss();
            a->trigger();
        });
    }
    layout->addLayout(grid);

    auto* close = new QPushButton(tr("Close"), this);
    close->setObjectName(QStringLiteral("welcome.close"));
    close->setToolTip(tr("Explore on your own (Esc)"));
    connect(close, &QPushButton::clicked, this, &WelcomePane::dismiss);
    auto* row = new QHBoxLayout;
    row->addStretch(1);
    row->addWidget(close);
    layout->addLayout(row);

    // Kept centred over the window's central area: its resizes and the window's (the layout's first run
    // sets the central area when the window is shown).
    window->installEventFilter(this);
    if (auto* main = qobject_cast<QMainWindow*>(window); main && main->centralWidget())
        main->centralWidget()->installEventFilter(this);
    hide();
}

void WelcomePane::present() {
    place();
    show();
    raise();
    if (auto* first = findChild<QPushButton*>()) first->setFocus();
}

// Centred over the window's central area, at most 560 px wide, and no wider than that area (where it is at
// least 360 px wide: at 1024 x 640 the pane spilled 17 px over each side panel), nor than the window.
void WelcomePane::place() {
    QWidget* window = parentWidget();
    auto* main = qobject_cast<QMainWindow*>(window);
    const QRect area = main && main->centralWidget() ? main->centralWidget()->geometry() : window->rect();
    const int width = std::min({560, std::max(area.width() - 16, 360), window->width() - 16});
    const int height = std::min(heightForWidth(width) > 0 ? heightForWidth(width) : sizeHint().height(),
                                window->height() - 16);
    QRect r(0, 0, width, height);
    r.moveCenter(area.center());
    r.moveLeft(std::clamp(r.left(), 8, std::max(window->width() - width - 8, 8)));
    r.moveTop(std::clamp(r.top(), 8, std::max(window->height() - height - 8, 8)));
    setGeometry(r);
}

bool WelcomePane::eventFilter(QObject* watched, QEvent* event) {
    if (!isHidden() && (event->type() == QEvent::Resize || event->type() == QEvent::Show)) place();
    return QFrame::eventFilter(watched, event);
}

void WelcomePane::keyPressEvent(QKeyEvent* e) {
    if (e->key() == Qt::Key_Escape) return dismiss();
    QFrame::keyPressEvent(e);
}

void WelcomePane::dismiss() {
    hide();
    emit dismissed();
}

} // namespace flowscope
