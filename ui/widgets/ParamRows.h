// Flowscope UI: the controls of the scene's scalar parameters, made from the parameter schema
// (engine/scene/SceneSchema.h), so that a row's label, range, resolution and tooltip are the ones the scene
// reader checks and docs/scene.md describes.
//
// A Number is a QDoubleSpinBox, an Integer a QSpinBox, a Boolean a QCheckBox (its label as its text) and a
// Choice a QComboBox of the choices' names. Each control is named after the parameter's key
// ("attention.sinkhorn.eps"), as every panel control is (FormWidgets.h). Edits go through the schema too:
// bindParam makes an edit a setting at the parameter's pointer, showParam shows a scene's value.
#pragma once

#include "engine/scene/SceneSchema.h"
#include "engine/scene/SceneSetting.h"
#include "ui/widgets/FormWidgets.h"

#include <functional>
#include <string_view>

namespace flowscope::form {

// A number box needs finite ends and sizes itself to their text: a range without an upper end stops here
// (the panel's cap; a scene file takes more).
inline constexpr double kSpinLimit = 1e6;

// The parameter's label, for a row made by hand (a control with a switch beside it).
QString paramLabel(std::string_view pointer);

// The parameter a control made by paramControl stands for (by its objectName), or nullptr.
const SceneParam* paramOf(const QWidget* control);

// The control of the parameter at `pointer`, of the class its kind needs (a mismatch is a programming error:
// std::logic_error).
QWidget* paramWidget(QWidget* parent, std::string_view pointer, Tracking tracking = Tracking::Commit);
template <class W>
W* paramControl(QWidget* parent, std::string_view pointer, Tracking tracking = Tracking::Commit) {
    QWidget* w = paramWidget(parent, pointer, tracking);
    if (auto* typed = qobject_cast<W*>(w)) return typed;
    delete w;
    throw std::logic_error("the control of " + std::string(pointer) + " is not of the class asked for");
}

// The control in a row of `form`, labelled with the parameter's label (a check box is a row of its own, its
// label its text).
template <class W>
W* paramRow(QFormLayout* form, QWidget* parent, std::string_view pointer,
            Tracking tracking = Tracking::Commit) {
    W* control = paramControl<W>(parent, pointer, tracking);
    if constexpr (std::is_base_of_v<QCheckBox, W>)
        form->addRow(control);
    else
        addRow(form, paramLabel(pointer), control);
    return control;
}

// Shows the parameter's value in `scene` without emitting the control's edited signal. A nullable number
// that is unset leaves the box as it is.
void showParam(QWidget* control, const Scene& scene);

// An edit of `control` calls `commit` with the parameter's new value as a setting: its pointer and the value
// as a scene file writes it (a choice by name), for the scene's owner to check and apply.
void bindParam(QObject* context, QWidget* control, std::function<void(const SceneSetting&)> commit);

} // namespace flowscope::form
