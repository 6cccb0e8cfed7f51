// Flowscope UI: what the app's dialogs share (their opening note, their OK and Cancel).
#pragma once

#include <QDialog>
#include <QDialogButtonBox>
#include <QLabel>
#include <QPushButton>
#include <QString>
#include <QVBoxLayout>

namespace flowscope {

// A dialog titled `title` whose column starts with `note`, word-wrapped (rich text allowed).
inline QVBoxLayout* dialogColumn(QDialog* dialog, const QString& title, const QString& note) {
    dialog->setWindowTitle(title);
    auto* layout = new QVBoxLayout(dialog);
    auto* label = new QLabel(note, dialog);
    label->setWordWrap(true);
    layout->addWidget(label);
    return layout;
}

// OK and Cancel, which accept and reject `dialog`; `ok` names OK by what it does ("Export"), when given.
inline QDialogButtonBox* okCancel(QDialog* dialog, const QString& ok = {}) {
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, dialog);
    if (!ok.isEmpty()) buttons->button(QDialogButtonBox::Ok)->setText(ok);
    QObject::connect(buttons, &QDialogButtonBox::accepted, dialog, &QDialog::accept);
    QObject::connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::reject);
    return buttons;
}

} // namespace flowscope
