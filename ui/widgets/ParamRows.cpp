#include "ui/widgets/ParamRows.h"

#include <QSignalBlocker>

#include <algorithm>
#include <cmath>

namespace flowscope::form {

namespace {

QString text(std::string_view s) {
    return QString::fromUtf8(s.data(), qsizetype(s.size()));
}

// The ends a number box shows for a range: an open end moves in by the box's resolution, a missing end is
// ±kSpinLimit.
std::pair<double, double> spinEnds(const ParamRange& r, double resolution) {
    double low = std::max(r.low, -kSpinLimit), high = std::min(r.high, kSpinLimit);
    if (r.lowOpen && low == r.low) low += resolution;
    if (r.highOpen && high == r.high) high -= resolution;
    return {low, high};
}

} // namespace

QString paramLabel(std::string_view pointer) {
    return text(sceneParam(pointer).label);
}

const SceneParam* paramOf(const QWidget* control) {
    if (!control) return nullptr;
    const std::string key = control->objectName().toStdString();
    for (const SceneParam& p : sceneParams())
        if (p.key() == key) return &p;
    return nullptr;
}

QWidget* paramWidget(QWidget* parent, std::string_view pointer, Tracking tracking) {
    const SceneParam& p = sceneParam(pointer);
    const std::string key = p.key();
    QWidget* control = nullptr;
    switch (p.kind) {
    case ParamKind::Number: {
        const double resolution = std::pow(10.0, -p.digits);
        const auto [low, high] = spinEnds(p.range, resolution);
        control = doubleBox(parent, key.c_str(), low, high, p.digits, p.step, tracking);
        break;
    }
    case ParamKind::Integer: // the whole range an int holds (steps up to 2^31 - 1, N up to 2^24)
        control = intBox(parent, key.c_str(), int(std::max(p.range.low, double(INT_MIN))),
                         int(std::min(p.range.high, double(INT_MAX))), tracking);
        break;
    case ParamKind::Boolean:
        control = named(new QCheckBox(text(p.label), parent), key.c_str());
        break;
    case ParamKind::Choice: {
        auto* box = named(new QComboBox(parent), key.c_str());
        // The names as words ("as printed"); the index is the value.
        for (std::string_view name : p.choices)
            box->addItem(text(name).replace(QLatin1Char('_'), QLatin1Char(' ')));
        control = box;
        break;
    }
    case ParamKind::Seed:
        throw std::logic_error("a seed is a line edit of its panel's own: " + std::string(pointer));
    }
    return control;
}

void showParam(QWidget* control, const Scene& scene) {
    const SceneParam* p = paramOf(control);
    if (!p) throw std::logic_error("showParam: not a parameter's control");
    const SceneParam::Json v = p->get(scene);
    const QSignalBlocker blocker(control);
    if (auto* box = qobject_cast<QDoubleSpinBox*>(control)) {
        if (!v.is_null()) box->setValue(v.get<double>());
    } else if (auto* box = qobject_cast<QSpinBox*>(control))
        box->setValue(int(std::clamp<long long>(v.get<long long>(), INT_MIN, INT_MAX)));
    else if (auto* box = qobject_cast<QCheckBox*>(control))
        box->setChecked(v.get<bool>());
    else if (auto* box = qobject_cast<QComboBox*>(control))
        box->setCurrentIndex(v.get<int>());
}

namespace {

template <class W>
bool bindAs(QObject* context, QWidget* control, const std::function<void(const SceneSetting&)>& commit) {
    auto* typed = qobject_cast<W*>(control);
    if (!typed) return false;
    const SceneParam* p = paramOf(control);
    QObject::connect(typed, editedSignal(typed), context, [p, commit](auto v) {
        commit({std::string(p->pointer), paramWritten(*p, SceneParam::Json(v))});
    });
    return true;
}

} // namespace

void bindParam(QObject* context, QWidget* control, std::function<void(const SceneSetting&)> commit) {
    if (!paramOf(control)) throw std::logic_error("bindParam: not a parameter's control");
    if (!bindAs<QDoubleSpinBox>(context, control, commit) && !bindAs<QSpinBox>(context, control, commit) &&
        !bindAs<QCheckBox>(context, control, commit) && !bindAs<QComboBox>(context, control, commit))
        throw std::logic_error("bindParam: a control of an unknown class");
}

} // namespace flowscope::form
