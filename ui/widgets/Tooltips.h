// Flowscope UI: the tooltips of the scene parameters, one table for every panel.
//
// Each entry says what a parameter means and gives its formula, in the notation of docs/scene.md (tokens
// x_1..x_N in R^d, A = KᵀQ, score s(x, y) = c (Qx)·(Ky) with c = β, divided by √k when scale_by_sqrt_k).
// Keys are the scene's JSON fields, dotted ("attention.beta", "integrator.T", "initial.cov"), plus a few
// read-outs ("analysis.B"). The panels use the key as the control's objectName too. The scalar scene
// parameters' tooltips are the parameter schema's (engine/scene/SceneSchema.h); this table has the rest.
#pragma once

#include <QString>

#include <string>
#include <string_view>
#include <vector>

namespace flowscope {

// The rich-text tooltip of `key`; empty for an unknown key.
QString parameterTooltip(std::string_view key);

// Every key: the scene parameters' (engine/scene/SceneSchema.h), then the table's, in table order.
std::vector<std::string> parameterTooltipKeys();

} // namespace flowscope
