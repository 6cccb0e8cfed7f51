// flowscope-cli's help: one usage text (Help.cpp) is the command table. `--help` prints all of it; a
// command's --help and `help COMMAND` print that command's entries with an example; the options an entry
// names are what the unknown-option hint and the bash completion script offer.
#pragma once

#include <string>
#include <vector>

namespace flowscope::cli {

// The whole usage, with the backend choices of this build filled in.
std::string usageText();

// The usage of `words` (a command and optionally its sub-command: {"bench", "run"}), its options and an
// example; "" when no command starts with words[0].
std::string commandHelp(const std::vector<std::string>& words);
// `help set`: every scene parameter --set takes, from the parameter schema (engine/scene/SceneSchema.h).
std::string settingsHelp();

// The commands, in the order of the usage ("simulate", "presets", ...).
std::vector<std::string> commandNames();

// Every option an entry of `command` names ("--out", "--every", ...), sorted, without repeats.
std::vector<std::string> commandOptions(const std::string& command);

// The candidate closest to `word` by edit distance, when it is close enough to be a likely typo (at most a
// third of the word's letters differ); "" otherwise.
std::string nearestWord(const std::string& word, const std::vector<std::string>& candidates);

// "flowscope-cli 0.1.0" and the build's backends and optional parts, one line each.
std::string versionText();

// A bash completion script for flowscope-cli: the commands, then each command's options, then file names.
std::string bashCompletion();

} // namespace flowscope::cli
