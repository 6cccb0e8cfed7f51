// Flowscope UI: the form controls of the side panels (Scene, Training, Models, ...). Every control is named
// after its parameter key, so tests find it by that name, and carries that key's tooltip (ui/Tooltips.cpp); a
// row's label shares it.
#pragma once

#include "ui/widgets/Tooltips.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QFrame>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QString>
#include <QVBoxLayout>

#include <cmath>

namespace flowscope::form {

// When a spin box emits valueChanged: only on Enter, focus loss and the arrows (a panel that applies every
// change at once must not see half-typed numbers), or on every keystroke.
enum class Tracking { Commit, Keystrokes };

// A value as the panels' status lines show it: four significant digits.
inline QString number(double v) {
    return QString::number(v, 'g', 4);
}

// A side panel's column: names the panel `name` (tests and saved layouts find it by that name) and lays its
// widgets out top to bottom with the panels' 4 px margins, on the panel itself or on `content` (the widget a
// scrolling panel scrolls).
inline QVBoxLayout* panelColumn(QWidget* panel, const char* name, QWidget* content = nullptr) {
    panel->setObjectName(QString::fromLatin1(name));
    auto* layout = new QVBoxLayout(content ? content : panel);
    layout->setContentsMargins(4, 4, 4, 4);
    return layout;
}

template <class W> W* named(W* w, const char* key) {
    w->setObjectName(QString::fromLatin1(key));
    w->setToolTip(parameterTooltip(key));
    return w;
}

inline QSpinBox* intBox(QWidget* parent, const char* key, int min, int max,
                        Tracking tracking = Tracking::Commit) {
    auto* box = named(new QSpinBox(parent), key);
    box->setRange(min, max);
    box->setKeyboardTracking(tracking == Tracking::Keystrokes);
    box->setAccelerated(true);
    return box;
}

inline QDoubleSpinBox* doubleBox(QWidget* parent, const char* key, double min, double max, int decimals,
                                 double step, Tracking tracking = Tracking::Commit) {
    auto* box = named(new QDoubleSpinBox(parent), key);
    box->setRange(min, max);
    box->setDecimals(decimals);
    box->setSingleStep(step);
    box->setKeyboardTracking(tracking == Tracking::Keystrokes);
    box->setAccelerated(true);
    return box;
}

// The settings of a run that apply on Start (Training, Transformer panels): every keystroke counts, since
// it only marks the panel edited.
inline QSpinBox* startIntBox(QWidget* parent, const char* key, int min, int max) {
    return intBox(parent, key, min, max, Tracking::Keystrokes);
}

inline QDoubleSpinBox* startDoubleBox(QWidget* parent, const char* key, double min, double max, int decimals,
                                      double step) {
    return doubleBox(parent, key, min, max, decimals, step, Tracking::Keystrokes);
}

// A time for a panel's text: "4.2 s", "12 s", "3 min 20 s", "1 h 5 min" ("…" when not finite).
inline QString duration(double seconds) {
    if (!std::isfinite(seconds)) return QStringLiteral("…");
    if (seconds < 10) return QObject::tr("%1 s").arg(seconds, 0, 'f', 1);
    const long s = std::lround(seconds);
    if (s < 60) return QObject::tr("%1 s").arg(s);
    if (s < 3600) return QObject::tr("%1 min %2 s").arg(s / 60).arg(s % 60);
    return QObject::tr("%1 h %2 min").arg(s / 3600).arg(s % 3600 / 60);
}

// The form of a side panel's group: fields grow to the panel's width.
inline QFormLayout* panelForm(QWidget* group) {
    auto* form = new QFormLayout(group);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->setContentsMargins(6, 6, 6, 6);
    return form;
}

// A titled group of a side panel and its form: `auto [group, form] = form::group(tr("Sweep"), this);`.
struct Group {
    QGroupBox* box;
    QFormLayout* form;
};
inline Group group(const QString& title, QWidget* parent) {
    auto* box = new QGroupBox(title, parent);
    return {box, panelForm(box)};
}

// A field made of several controls side by side (a line edit and its Browse button): a widget and its row
// layout, without margins, so that it lines up with the form's other fields.
struct Row {
    QWidget* widget;
    QHBoxLayout* layout;
};
inline Row row(QWidget* parent) {
    auto* widget = new QWidget(parent);
    auto* layout = new QHBoxLayout(widget);
    layout->setContentsMargins(0, 0, 0, 0);
    return {widget, layout};
}

// A form row whose label carries the key's tooltip and is the field's buddy (a field that holds several
// controls, e.g. a line edit and its Browse button).
inline void addRow(QFormLayout* form, const QString& label, QWidget* field, const char* key) {
    auto* l = new QLabel(label, field->parentWidget());
    l->setToolTip(parameterTooltip(key));
    l->setBuddy(field);
    form->addRow(l, field);
}

// The row of a control named after its key (named(), intBox(), ...): the label shares its tooltip. Returns
// the control, so that a row is one line: `seed_ = addRow(form, tr("Seed"), intBox(group, "seed", 0, 9));`.
template <class W> W* addRow(QFormLayout* form, const QString& label, W* field) {
    auto* l = new QLabel(label, field->parentWidget());
    l->setToolTip(field->toolTip());
    l->setBuddy(field);
    form->addRow(l, field);
    return field;
}

// The signal a control emits when the user edits it, with the value it now holds (a combo box: the index).
inline auto editedSignal(QDoubleSpinBox*) {
    return &QDoubleSpinBox::valueChanged;
}
inline auto editedSignal(QSpinBox*) {
    return &QSpinBox::valueChanged;
}
inline auto editedSignal(QCheckBox*) {
    return &QCheckBox::toggled;
}
inline auto editedSignal(QComboBox*) {
    return &QComboBox::currentIndexChanged;
}

// Edits of `box` write `field` (converted: an index to its enum, an int to a seed) and then call `then`; an
// edit to the value the field holds (a spin box emits one on Enter) does nothing. `field` must outlive
// `context`, e.g. a member of it.
template <class Box, class T, class Then> void bind(QObject* context, Box* box, T& field, Then then) {
    QObject::connect(box, editedSignal(box), context, [&field, then](auto v) {
        if (field == T(v)) return;
        field = T(v);
        then();
    });
}

// A scroll area that scrolls up and down only: it is never narrower than its content's minimum width (with
// room for the vertical scroll bar), so a dock holding it keeps that width instead of scrolling sideways.
class VerticalScrollArea : public QScrollArea {
  public:
    using QScrollArea::QScrollArea;
    QSize minimumSizeHint() const override {
        QSize size = QScrollArea::minimumSizeHint();
        if (widget())
            size.setWidth(widget()->minimumSizeHint().width() + verticalScrollBar()->sizeHint().width() +
                          2 * frameWidth());
        return size;
    }
};

// Whether a scrolling panel may scroll sideways (a dock narrower than its content), or never (its dock keeps
// the content's minimum width: VerticalScrollArea).
enum class Sideways { Scrolls, Never };

// A panel's content in a frameless, vertically scrolling area that fills `panel` (a dock shorter than the
// form scrolls instead of squeezing it). Returns the panel's layout, for what stays in view under the area.
inline QVBoxLayout* scrollInto(QWidget* panel, QWidget* content, Sideways sideways = Sideways::Scrolls) {
    QScrollArea* scroll =
        sideways == Sideways::Never ? new VerticalScrollArea(panel) : new QScrollArea(panel);
    if (sideways == Sideways::Never) scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll->setWidget(content);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* outer = new QVBoxLayout(panel);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->addWidget(scroll);
    return outer;
}

} // namespace flowscope::form
