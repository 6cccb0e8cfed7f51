// flowscope-cli: the headless front end. Composition only: the work is in engine/.
#include "Commands.h"

#include "engine/scene/Scene.h"

#include <cstring>
#include <iostream>

namespace {

constexpr const char* kUsage = R"(usage: flowscope-cli <command> [options]

commands:
  simulate SCENE.json --out traj.npy [--float32] [--every K]
      integrate the particle system of a scene; writes a (T, N, d) .npy and traj.json beside it
      (times, observables, events)
  presets
      list the shipped presets, one line each
  bench particles [--json] [--d D] [--n 1024,4096,...] [--variants softmax,l2,...] [--precision float32|float64]
      pair-interactions per second of one velocity evaluation, against a dense Eigen baseline

exit codes: 0 success, 1 runtime failure, 2 invalid input (the message names the field)
)";

} // namespace

int main(int argc, char** argv) {
    using namespace flowscope;
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
        std::cout << kUsage;
        return argc < 2 ? 2 : 0;
    }
    const std::string cmd = argv[1];
    const cli::Args args(argv + 2, argv + argc);
    try {
        if (cmd == "simulate") return cli::simulate(args);
        if (cmd == "presets") return cli::presets(args);
        if (cmd == "bench") return cli::bench(args);
        std::cerr << "flowscope-cli: unknown command '" << cmd << "' (see flowscope-cli --help)\n";
        return 2;
    } catch (const SceneError& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 2;
    } catch (const cli::UsageError& e) {
        std::cerr << "flowscope-cli " << cmd << ": " << e.what() << "\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    }
}
