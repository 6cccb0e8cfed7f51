// Flowscope engine: the parameter schema, every scalar field of a Scene declared once.
//
// A scene's scalar parameters (numbers, integers, switches and named choices: β, T, steps, the integrator's
// method, N, ...) are one table, kSceneParams in SceneSchema.cpp. Each entry says where the field lives (its
// JSON pointer), what it is called and means (label, unit, a one-line summary, the tooltip with its formula,
// the docs anchor), what it accepts (kind and range, or the names of its choices) and whether a running
// simulation can take a new value (live) or needs a new run (restart). Its default is the Scene struct's own
// initializer, read through the entry's accessor, so it too is written once.
//
// From this table come: the reader's checks and messages (SceneRead.cpp: "/attention/beta: expected number >
// 0, got -1"), the writer (SceneWrite.cpp), the Scene panel's rows (label, range, tooltip:
// ui/widgets/ParamRows.h), `flowscope-cli help set` and the Python module's `flowscope.parameters()`. What
// the table does not hold is structure: matrices and vectors (heads, keyframes, the initial mean and
// covariance), the file path, the grid; and the rules between fields (masking, the agreement of sphere and
// normalization), which stay in the reader.
#pragma once

#include "engine/scene/Scene.h"

#include <nlohmann/json.hpp>

#include <limits>
#include <span>
#include <string>
#include <string_view>

namespace flowscope {

enum class ParamKind {
    Number,  // a finite double in `range`; `nullable`: or null (unset)
    Integer, // an integer in `range` (both ends closed)
    Seed,    // an unsigned 64-bit integer
    Boolean,
    Choice, // one of `choices`, by name
};

// What a new value does to a run: Live, the run goes on from its state with it (engine/dynamics/LiveEdit.h);
// Restart, a new run of the edited scene is needed.
enum class ParamEdit { Live, Restart };

// An interval of numbers; an end may be open, or infinite (no bound).
struct ParamRange {
    static constexpr double kInf = std::numeric_limits<double>::infinity();
    double low = -kInf, high = kInf;
    bool lowOpen = false, highOpen = false;
    bool contains(double v) const {
        return (lowOpen ? v > low : v >= low) && (highOpen ? v < high : v <= high);
    }
};

struct SceneParam {
    using Json = nlohmann::ordered_json;

    std::string_view pointer; // JSON pointer of the field: "/attention/beta"
    std::string_view keyword; // a short name, unique in the table: the Python keyword ("beta")
    std::string_view label;   // the Scene panel's row label ("β")
    std::string_view unit;    // "" when none
    ParamKind kind = ParamKind::Number;
    ParamRange range;                          // Number, Integer
    std::span<const std::string_view> choices; // Choice
    std::string_view choiceNoun;               // Choice: what one is called in a message ("attention type")
    bool nullable = false;                     // Number: null is a value (unset)
    bool required = false;                     // the reader needs it (there is no default)
    bool written = true;                       // false: read for older scenes, never written (sphere)
    ParamEdit edit = ParamEdit::Restart;
    int digits = 4;           // Number: the decimals a spin box shows
    double step = 0.1;        // Number: a spin box's arrow step
    std::string_view summary; // one line, plain text: --set's help, the Python docs
    std::string_view tooltip; // rich text (a small HTML subset: b, sub, sup, br) with the formula
    std::string_view anchor;  // where docs/ explains it: "docs/math/attention.md#softmax"
    // The field of a scene: its value (a choice by index, unset as null) and how to set a checked one.
    Json (*get)(const Scene&) = nullptr;
    void (*set)(Scene&, const Json&) = nullptr;

    // The panels' key of the field: the pointer without its first '/', the other '/' as '.'
    // ("attention.sinkhorn.eps"); the controls' objectName and the tooltip key.
    std::string key() const;
    // The last part of the pointer ("eps" of "/attention/sinkhorn/eps").
    std::string_view name() const;
    // The pointer of the object that holds the field ("/attention/sinkhorn"; "" for the root).
    std::string_view parent() const;
};

// Every parameter, in the order the writer writes them.
std::span<const SceneParam> sceneParams();
// The parameter at `pointer`, or nullptr.
const SceneParam* findSceneParam(std::string_view pointer);
// The parameter at `pointer`, which must be in the table (a programming error otherwise: std::logic_error).
const SceneParam& sceneParam(std::string_view pointer);

// What the parameter accepts, as the reader's messages say it: "number > 0", "integer in [1, 1000000]",
// "number in (0, 1)", "one of euler, heun, rk4, dopri5", "boolean".
std::string acceptedText(const SceneParam& p);

// `j` checked against the parameter (kind, range, choices), in the reader's words; throws JsonError at
// j's pointer. A choice comes back as its index.
SceneParam::Json readParam(const SceneParam& p, const JsonReader& j);
// The value of the parameter in `s` as a scene file writes it (a choice by name).
SceneParam::Json paramJson(const SceneParam& p, const Scene& s);
// A value in the accessors' form (a choice by index) as a scene file writes it (a choice by name).
SceneParam::Json paramWritten(const SceneParam& p, SceneParam::Json value);
// Its default: its value in a default-constructed Scene.
SceneParam::Json paramDefault(const SceneParam& p);

// Reads the parameters held by the object `section` (at pointer P): each member that is a parameter at
// P/key is checked and set in `s`; each member that is an object of parameters (P/key/...) is read the same
// way, unless its key is in `structured`. The object may have no other members than those and `structured`
// (the reader's "unknown field" message). A required parameter that is missing is an error.
void readSceneParams(const JsonReader& section, std::span<const std::string_view> structured, Scene& s);
// Writes the parameters under the object at `section` (e.g. "/attention") into `out` (that object), in table
// order; objects of parameters ("sinkhorn") are created as needed.
void writeSceneParams(std::string_view section, const Scene& s, SceneParam::Json& out);

} // namespace flowscope
