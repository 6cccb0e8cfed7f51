// Writes the seed corpora of the fuzz targets into OUTDIR/<target>/: the presets and their share strings,
// and small valid .npy, .csv, .safetensors and model files written by the engine's own writers, so that
// the fuzzers start from inputs that get past the first checks.
#include "engine/flows/FlowIo.h"
#include "engine/io/Npy.h"
#include "engine/io/Safetensors.h"
#include "engine/ottransformer/TransformerIo.h"
#include "engine/scene/Scene.h"
#include "engine/scene/SceneShareString.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <vector>

namespace fs = std::filesystem;
using namespace flowscope;

namespace {

void writeText(const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
}

// A model file without the JSON record its writer puts beside it (the loaders read the .safetensors only).
template <class Save> void model(const fs::path& p, Save save) {
    save(p.string());
    fs::remove(flows::configPathFor(p.string()));
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: flowscope_fuzz_seeds OUTDIR\n";
        return 2;
    }
    const fs::path out = argv[1];
    for (const char* t : {"scene", "share_string", "npy", "csv", "safetensors", "flow", "transformer"})
        fs::create_directories(out / t);

    int k = 0;
    for (const auto& e : fs::directory_iterator(FLOWSCOPE_PRESET_DIR)) {
        if (e.path().extension() != ".json") continue;
        fs::copy_file(e.path(), out / "scene" / e.path().filename(), fs::copy_options::overwrite_existing);
        writeText(out / "share_string" / (e.path().stem().string() + ".txt"),
                  encodeShareString(loadScene(e.path().string())));
        ++k;
    }
    writeText(out / "scene" / "points.json", R"({"d": 2, "n": 3, "initial": {"kind": "points", "points":
        [[0, 1], [1, 0], [0.5, 0.5]], "noise": 0.1}, "attention": {"type": "softmax"}})");
    writeText(out / "scene" / "file.json", R"({"d": 2, "n": 3, "initial": {"kind": "file", "path":
        "tokens.npy"}, "attention": {"type": "l2"}})");

    const std::vector<double> v{1.5, -2.0, 0.25, 3.0, 1e-3, -7.5, 2.0, 8.0};
    writeNpy((out / "npy" / "f8.npy").string(), {4, 2}, v.data(), false);
    writeNpy((out / "npy" / "f4.npy").string(), {2, 2, 2}, v.data(), true);
    writeNpy((out / "npy" / "vector.npy").string(), {5}, v.data(), false);
    writeNpy((out / "npy" / "scalar.npy").string(), {}, v.data(), false);
    // Integer dtypes and the 2.0 header (4-byte length), which writeNpy does not write.
    auto npy = [](int version, const std::string& dict, const std::string& payload) {
        const std::size_t prefix = version == 1 ? 10 : 12;
        std::string header = dict + std::string((64 - (prefix + dict.size() + 1) % 64) % 64, ' ') + "\n";
        std::string length(prefix - 8, '\0');
        length[0] = char(header.size() & 0xff), length[1] = char(header.size() >> 8);
        return std::string("\x93NUMPY", 6) + char(version) + '\0' + length + header + payload;
    };
    writeText(out / "npy" / "i4.npy", npy(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }",
                                          std::string("\x01\x00\x00\x00\xff\xff\xff\xff", 8)));
    writeText(out / "npy" / "i8-v2.npy",
              npy(2, "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 1), }", std::string(8, '\x07')));

    writeText(out / "csv" / "plain.csv", "1,2\n3,4\n-5.5,6e-3\n");
    writeText(out / "csv" / "header.csv", "x;y;z\r\n0.1;0.2;0.3\r\n1e10;-1e-10;inf\r\n");
    writeText(out / "csv" / "spaces.csv", "  1 2\t3\n\n4 5 6\n");

    SafeTensors st;
    st.tensors.push_back(matrixTensor("a", Mat::Identity(2, 3), true));
    st.tensors.push_back(matrixTensor("b", Mat::Constant(1, 2, 0.5), false));
    st.metadata["format"] = "pt";
    st.metadata["note"] = "seed";
    writeSafetensors((out / "safetensors" / "two.safetensors").string(), st);
    writeSafetensors((out / "safetensors" / "empty.safetensors").string(), SafeTensors{});

    flows::FlowConfig fc;
    fc.width = 4;
    fc.layers = 2;
    model(out / "flow" / "rwpo.safetensors",
          [&](const std::string& p) { flows::saveFlow(p, flows::FlowModel<float>(fc), {}); });
    fc.rwpo = false;
    fc.depth = 3;
    model(out / "flow" / "plain.safetensors",
          [&](const std::string& p) { flows::saveFlow(p, flows::FlowModel<float>(fc), {}); });

    ot::TransformerConfig tc;
    tc.mlpHidden = 3;
    model(out / "transformer" / "mean.safetensors",
          [&](const std::string& p) { ot::saveTransformer(p, ot::TransformerModel(tc), {}); });
    tc.embed = true;
    tc.width = 3;
    tc.headDim = 2;
    tc.layerNorm = true;
    tc.head = ot::Head::PooledLinear;
    tc.classes = 2;
    model(out / "transformer" / "pooled.safetensors",
          [&](const std::string& p) { ot::saveTransformer(p, ot::TransformerModel(tc), {}); });

    std::cout << "fuzz seeds in " << out.string() << " (" << k << " presets)\n";
    return 0;
}
