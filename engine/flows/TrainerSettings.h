// Flowscope engine: a generative flow's training settings by name, read in one place for every front end
// that takes them as text: flowscope-cli train's options (--lambda0 0.1, --no-rwpo) and a flow sweep's base
// fields ("lambda0": 0.1, "rwpo": false; docs/sweeps.md#flow-sweeps). The names, defaults (TrainerConfig's)
// and checks are the same for both; only the spelling of a name in a message differs (--lambda0,
// /base/lambda0).
#pragma once

#include "engine/flows/Trainer.h"

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace flowscope::flows {

// A setting's value is bad: `name` is the setting's (TrainerSettings' spelling), `why` the reason, as
// "expected a positive number, got \"-1\"".
struct TrainerSettingError : std::invalid_argument {
    TrainerSettingError(std::string name, std::string why);
    std::string name, why;
};

// The settings' names, in a fixed order: dataset, rwpo, kernel, include_self, rwpo_logdet, drift_logdet,
// layers, width, lambda0, beta0, train_lambda, train_beta, transport_weight, hjb_weight, batch, lr, lr_final,
// warmup, resample_every, reference_draws, reference_size, clip_median, average_iters, seed, iterations.
// Switches (rwpo, include_self, train_lambda, train_beta) read true/false or 1/0; kernel reads corrected,
// as-printed, separable or their index 0, 1, 2 (a sweep axis holds numbers); iterations also sets the
// learning rate's decay (adam.decaySteps).
const std::vector<std::string_view>& trainerSettingNames();

// Reads every setting that `given(name)` returns a value for into `c`, in trainerSettingNames' order, and
// resolves the log-det defaults that depend on d and the kernel (exact where the dimension allows). c.flow.d
// and c.points must already be set for a user's points (c.dataset = ""). Throws TrainerSettingError for the
// first bad value, or for a combination the trainer would refuse (rwpo_logdet exact with a vector kernel
// beyond d = 3).
void readTrainerSettings(TrainerConfig& c,
                         const std::function<std::optional<std::string>(std::string_view)>& given);

// A JSON value as the text a setting reads (a sweep's base field, an axis's number): a string as it is, a
// switch as true or false, an integral number without a fraction (8, not 8.0: layers reads integers), any
// other number in its shortest form. Throws TrainerSettingError for arrays, objects and null.
std::string trainerSettingText(std::string_view name, const nlohmann::json& value);

} // namespace flowscope::flows
