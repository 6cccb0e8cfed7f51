// flowscope-cli: the headless front end. Composition only: the work is in engine/.
#include "Commands.h"
#include "Help.h"

#include "engine/core/Text.h"
#include "engine/io/OutputSet.h"
#include "engine/io/ShareString.h"
#include "engine/models/Model.h"
#include "engine/scene/Scene.h"
#include "engine/sweep/Sweep.h"

#include <algorithm>
#include <cstring>
#include <iostream>
#include <new>

namespace flowscope::cli {

int reportFailure(const std::string& cmd) {
    try {
        throw;
    } catch (const SceneError& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 2;
    } catch (const SweepError& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 2;
    } catch (const ShareStringError& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 2;
    } catch (const OutputError& e) {
        std::cerr << "flowscope-cli " << cmd << ": " << e.what() << "\n";
        return 2;
    } catch (const cli::UsageError& e) {
        std::cerr << "flowscope-cli " << cmd << ": " << e.what() << "\n";
        return 2;
    } catch (const models::ModelError& e) { // a bad checkpoint, config or tokens
        std::cerr << "flowscope-cli " << cmd << ": " << e.what() << "\n";
        return 2;
    } catch (const std::bad_alloc&) { // past the estimates (they leave out the program's fixed footprint)
        std::cerr
            << "flowscope-cli " << cmd
            << ": out of memory (the system refused an allocation); nothing was written. A smaller "
               "scene, fewer recorded frames or a lower --max-memory is checked before the run starts\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    }
}

int renderCommand(const Args& args); // RenderCommon.cpp: the scene views, or --view training
} // namespace flowscope::cli

int main(int argc, char** argv) {
    using namespace flowscope;
    const std::string cmd = argc < 2 ? "" : argv[1];
    const cli::Args args(argv + 2, argv + argc);
    if (cmd.empty() || cmd == "--help" || cmd == "-h") {
        std::cout << cli::usageText();
        return cmd.empty() ? 2 : 0;
    }
    if (cmd == "--version" || cmd == "version") {
        std::cout << cli::versionText();
        return 0;
    }
    if (cmd == "completion") {
        if (args.size() != 1 || args[0] != "bash") {
            std::cerr << "flowscope-cli completion: expected 'bash' (flowscope-cli completion bash > "
                         "~/.local/share/bash-completion/completions/flowscope-cli)\n";
            return 2;
        }
        std::cout << cli::bashCompletion();
        return 0;
    }
    const std::vector<std::string> commands = cli::commandNames();
    auto unknownCommand = [&](const std::string& name) {
        const std::string near = cli::nearestWord(name, commands);
        std::cerr << "flowscope-cli: unknown command " << quoteForMessage(name)
                  << (near.empty() ? "" : " (did you mean " + near + "?)") << "; see flowscope-cli --help\n";
        return 2;
    };
    if (cmd == "help") { // help [COMMAND [SUB-COMMAND]]
        if (args.empty()) {
            std::cout << cli::usageText();
            return 0;
        }
        const std::string help = cli::commandHelp(args);
        if (help.empty()) return unknownCommand(args[0]);
        std::cout << help;
        return 0;
    }
    if (std::find(commands.begin(), commands.end(), cmd) == commands.end()) return unknownCommand(cmd);
    // COMMAND [SUB-COMMAND] --help anywhere: that command's usage (bench's sub-commands print their own).
    if (std::find_if(args.begin(), args.end(),
                     [](const std::string& a) { return a == "--help" || a == "-h"; }) != args.end()) {
        std::vector<std::string> words{cmd};
        if (!args.empty() && args[0].rfind("-", 0) != 0) words.push_back(args[0]);
        std::cout << cli::commandHelp(words);
        return 0;
    }
    try {
        if (cmd == "simulate") return cli::simulate(args);
        if (cmd == "presets") return cli::presets(args);
        if (cmd == "bench") return cli::bench(args);
        if (cmd == "ranks") return cli::ranks(args);
        if (cmd == "moments") return cli::moments(args);
        if (cmd == "train") return cli::train(args);
        if (cmd == "sample") return cli::sample(args);
        if (cmd == "density") return cli::density(args);
        if (cmd == "train-transformer") return cli::trainTransformer(args);
        if (cmd == "eval-transformer") return cli::evalTransformer(args);
        if (cmd == "share") return cli::share(args);
        if (cmd == "sweep") return cli::sweep(args);
        if (cmd == "infer") return cli::infer(args);
        if (cmd == "model") return cli::model(args);
        if (cmd == "theory") return cli::theory(args);
        if (cmd == "render") return cli::renderCommand(args);
        return unknownCommand(cmd);
    } catch (...) {
        return cli::reportFailure(cmd);
    }
}
