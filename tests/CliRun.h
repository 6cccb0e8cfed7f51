// Running the flowscope-cli binary from the tests (the CLI and render test executables): its exit code and
// output, and an interrupted export. Each caller passes the binary's path (its FLOWSCOPE_CLI definition).
#pragma once

#include "TempDir.h"

#include "engine/io/OutputSet.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <signal.h>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <vector>

extern char** environ;

namespace flowscope::test {

struct CliResult {
    int code = -1;
    std::string out; // stdout and stderr
};

// Runs `prefix cli args` through the shell (args are shell words; prefix e.g. "env -u DISPLAY").
inline CliResult runCli(const std::string& cli, const std::string& args, const std::string& prefix = "") {
    const std::string cmd = prefix + (prefix.empty() ? "" : " ") + cli + " " + args + " 2>&1";
    CliResult r;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return r;
    char buf[4096];
    while (std::size_t n = fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
    const int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

#ifdef FLOWSCOPE_CLI
// The build's flowscope-cli (the test target's FLOWSCOPE_CLI) with `args`, as runCli.
inline CliResult cli(const std::string& args, const std::string& prefix = "") {
    return runCli(FLOWSCOPE_CLI, args, prefix);
}
#endif

// A JSON file a command wrote (a record, a table's metadata), parsed.
inline nlohmann::json readJson(const std::filesystem::path& p) {
    std::ifstream in(p);
    return nlohmann::json::parse(in);
}

// A refusal: exit code 2, one line (the error) holding `words`, and no output file `out`.
inline void expectRefused(const CliResult& r, const std::string& words, const std::string& out) {
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find(words), std::string::npos) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    EXPECT_FALSE(std::filesystem::exists(out));
}

// The file process `pid` stages `out` under (stagedPathFor's ".flowscope-tmp-<pid>-<random>-<name>" beside
// it), or "" while there is none.
inline std::string stagedFileOf(const std::string& out, long pid) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(out).parent_path().empty() ? fs::path(".") : fs::path(out).parent_path();
    const std::string name = fs::path(out).filename().string();
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        const std::string n = e.path().filename().string();
        if (n.rfind(".flowscope-tmp-", 0) == 0 && stagingPid(n) == pid && n.size() > name.size() &&
            n.compare(n.size() - name.size() - 1, std::string::npos, "-" + name) == 0)
            return e.path().string();
    }
    return "";
}

// Starts `words` (argv, the binary first) writing `out`, waits until the export is under way (its staged file
// exists), interrupts it a few frames in, and expects exit code 130 with nothing left in
// `dir`: neither `out` nor its temporary.
inline void expectInterruptLeavesNothing(std::vector<std::string> words, const std::string& out,
                                         const TempDir& dir) {
    namespace fs = std::filesystem;
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    std::string temporary;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((temporary = stagedFileOf(out, pid)).empty() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_FALSE(temporary.empty());
    std::this_thread::sleep_for(std::chrono::milliseconds(300)); // a few frames in
    kill(pid, SIGINT);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 130);
    EXPECT_FALSE(fs::exists(out));
    EXPECT_FALSE(fs::exists(temporary));
    EXPECT_TRUE(dir.entries().empty());
}

} // namespace flowscope::test
