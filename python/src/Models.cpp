// flowscope.load_model(dir): a pretrained checkpoint from a Hugging Face folder (engine/models,
// docs/models.md): its hidden states layer by layer, and the scene of the ODE of one of its heads.
#include "Common.h"

#include "engine/models/Model.h"
#include "engine/models/ModelAnalysis.h"
#include "engine/models/Tokenizer.h"

#include <memory>
#include <optional>

namespace flowscope::py {

namespace {

struct Model {
    std::shared_ptr<const models::Checkpoint> checkpoint;
};

// Token ids from a str (the folder's tokenizer) or a sequence of ints.
std::vector<int> tokenIds(const Model& m, const pb::handle& tokens) {
    if (pb::isinstance<pb::str>(tokens))
        return models::tokenize(m.checkpoint->dir(), m.checkpoint->config(), tokens.cast<std::string>());
    try {
        return tokens.cast<std::vector<int>>();
    } catch (const pb::cast_error&) {
        throw InputError("tokens", "expected a str or a sequence of token ids");
    }
}

// The states as one (L + 1, n, D) array, float32 or float64.
template <class T> pb::array statesArray(const std::vector<models::RowMat<T>>& states) {
    const pb::ssize_t L1 = pb::ssize_t(states.size()), n = states[0].rows(), D = states[0].cols();
    pb::array_t<T> out({L1, n, D});
    T* p = out.mutable_data();
    for (const models::RowMat<T>& s : states) p = std::copy(s.data(), s.data() + s.size(), p);
    return out;
}

template <class T> pb::array hiddenStates(const Model& m, const std::vector<int>& ids, int layers) {
    std::vector<models::RowMat<T>> states;
    {
        pb::gil_scoped_release release;
        states = models::hiddenStates(m.checkpoint->config(), m.checkpoint->weights<T>(), ids, layers);
    }
    return statesArray(states);
}

} // namespace

void bindModels(pb::module_& m) {
    pb::class_<Model>(m, "Model", R"(A pretrained Transformer read from a Hugging Face folder (config.json and
model.safetensors, memory-mapped; GPT-2, ALBERT or BERT; docs/models.md). load_model(path) returns one.)")
        .def(
            "hidden_states",
            [](const Model& self, const pb::handle& tokens, bool float64, std::optional<int> layers) {
                const std::vector<int> ids = tokenIds(self, tokens);
                const int L = layers.value_or(self.checkpoint->config().layers);
                return float64 ? hiddenStates<double>(self, ids, L) : hiddenStates<float>(self, ids, L);
            },
            pb::arg("tokens"), pb::kw_only(), pb::arg("float64") = false, pb::arg("layers") = pb::none(),
            R"(hidden_states(tokens, *, float64=False, layers=None) -> ndarray (L + 1, n, D)

The tokens (a str, through the folder's tokenizer, or token ids) through the model's layers, as Hugging
Face's output_hidden_states: the embeddings first (ALBERT: after embedding_hidden_mapping_in), GPT-2's last
state after ln_f. layers: GPT-2's and BERT's first L layers, ALBERT's shared layer L times (any L).)")
        .def(
            "scene",
            [](const Model& self, const pb::handle& tokens, int layer, int head) {
                const std::vector<int> ids = tokenIds(self, tokens);
                const models::Weights<double> w = self.checkpoint->weights<double>();
                const auto states = models::hiddenStates(self.checkpoint->config(), w, ids, layer + 1);
                return models::modelScene(*self.checkpoint, w, states, layer, head);
            },
            pb::arg("tokens"), pb::kw_only(), pb::arg("layer"), pb::arg("head") = 0,
            R"(scene(tokens, *, layer, head=0) -> Scene

The scene of the papers' attention ODE with head `head` of layer `layer`, from the tokens entering that
layer (docs/math/models.md#ode), as flowscope-cli model scene writes it.)")
        .def(
            "tokenize",
            [](const Model& self, const std::string& text) {
                return models::tokenize(self.checkpoint->dir(), self.checkpoint->config(), text);
            },
            pb::arg("text"), "The token ids of `text` with the folder's tokenizer.")
        .def_property_readonly("config",
                               [](const Model& self) {
                                   const models::ModelConfig& c = self.checkpoint->config();
                                   pb::dict d;
                                   d["family"] = models::toString(c.family);
                                   d["vocab"] = c.vocab;
                                   d["positions"] = c.positions;
                                   d["width"] = c.hidden;
                                   d["heads"] = c.heads;
                                   d["layers"] = c.layers;
                                   return d;
                               })
        .def("__repr__", [](const Model& self) {
            const models::ModelConfig& c = self.checkpoint->config();
            return "<flowscope.Model " + std::string(models::toString(c.family)) +
                   " D=" + std::to_string(c.hidden) + " H=" + std::to_string(c.heads) +
                   " L=" + std::to_string(c.layers) + ">";
        });
    m.def(
        "load_model",
        [](const pb::handle& path) {
            const std::string dir = pathText(path);
            return Model{std::make_shared<const models::Checkpoint>(dir)};
        },
        pb::arg("path"), "A Model from a Hugging Face checkpoint folder (config.json, model.safetensors).");
}

} // namespace flowscope::py
