// engine/io/OutputSet: a run's files are renamed into place all together or not at all. Each test states the
// directory's exact content afterwards: the old set or the new set, and no stray staged file, backup or
// journal. The crash tests fork a child that SIGKILLs itself at each point of the commit protocol.
#include "../TempDir.h"

#include "engine/gaussian/MomentFiles.h"
#include "engine/io/AtomicFile.h"
#include "engine/io/OutputSet.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace flowscope {
namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void put(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

std::set<std::string> listing(const std::string& dir) {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
    return names;
}

void writeAll(OutputSet& set, const std::string& text) {
    for (const std::string& p : set.paths()) set.write(p, [&](std::ostream& o) { o << text << " " << p; });
}

// The pid of a process that has exited (and been reaped): a staged file named after it is stale.
pid_t deadPid() {
    const pid_t pid = fork();
    if (pid == 0) _exit(0);
    waitpid(pid, nullptr, 0);
    return pid;
}

TEST(OutputSet, RefusesCollisionsAndBadDirectoriesBeforeAnyWork) {
    test::TempDir dir("outset");
    const std::string a = dir.file("a.npy"), b = dir.file("b.json");
    auto message = [](const std::vector<std::string>& outs, const std::vector<std::string>& ins) {
        try {
            OutputSet set(outs, ins, "--out");
        } catch (const OutputError& e) {
            EXPECT_EQ(e.field, "--out");
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_NE(message({a, a}, {}).find("are the same file"), std::string::npos);
    EXPECT_NE(message({a, dir.file("sub/../a.npy")}, {}).find("does not exist"), std::string::npos);
    fs::create_directory(dir.file("sub"));
    EXPECT_NE(message({a, dir.file("sub/../a.npy")}, {}).find("are the same file"), std::string::npos);
    put(b, "{}");
    fs::create_symlink(b, dir.file("link.json"));
    EXPECT_NE(message({a, dir.file("link.json")}, {b}).find("is an input of this run"), std::string::npos);
    EXPECT_NE(message({a, b}, {dir.file("link.json")}).find("is an input of this run"), std::string::npos);
    EXPECT_NE(message({dir.file("nowhere/x.npy")}, {}).find("does not exist"), std::string::npos);
    EXPECT_NE(message({dir.file("sub")}, {}).find("is a directory"), std::string::npos);
    ASSERT_EQ(mkfifo(dir.file("fifo").c_str(), 0600), 0);
    EXPECT_NE(message({dir.file("fifo")}, {}).find("not a regular file"), std::string::npos);
    EXPECT_NE(message({b + "/x.npy"}, {}).find("is not a directory"), std::string::npos);
    EXPECT_NE(message({""}, {}).find("empty"), std::string::npos);
    EXPECT_EQ(message({a, b + "2"}, {b}), "accepted");
    if (geteuid() != 0) { // root writes anywhere
        fs::permissions(dir.file("sub"), fs::perms::owner_read | fs::perms::owner_exec);
        EXPECT_NE(message({dir.file("sub/x.npy")}, {}).find("not writable"), std::string::npos);
        fs::permissions(dir.file("sub"), fs::perms::owner_all);
    }
    EXPECT_EQ(slurp(b), "{}");
    EXPECT_EQ(listing(dir.path()), (std::set<std::string>{"b.json", "fifo", "link.json", "sub"}));
}

TEST(OutputSet, NothingIsVisibleBeforeTheCommitAndNothingStaysWithoutIt) {
    test::TempDir dir("outset");
    const std::vector<std::string> paths = {dir.file("t_times.npy"), dir.file("t_means.npy"),
                                            dir.file("t.npy")};
    {
        OutputSet set(paths);
        writeAll(set, "new");
        for (const std::string& p : paths) EXPECT_FALSE(fs::exists(p));
        EXPECT_EQ(listing(dir.path()).size(), 3u); // the staged files
    }                                              // destroyed uncommitted: an exception or a cancel
    EXPECT_TRUE(listing(dir.path()).empty());

    OutputSet set(paths);
    writeAll(set, "new");
    set.commit();
    for (const std::string& p : paths) EXPECT_EQ(slurp(p), "new " + p);
    EXPECT_EQ(listing(dir.path()), (std::set<std::string>{"t.npy", "t_means.npy", "t_times.npy"}));
}

TEST(OutputSet, AFailedCommitLeavesTheOldSet) {
    // After the checks, something goes wrong at the second name: a directory appears there (its backup
    // link fails before any rename), or its staged file vanishes (the second rename fails after the first).
    for (const bool directory : {true, false})
        for (const bool hadOld : {true, false}) {
            SCOPED_TRACE(std::string(directory ? "a directory" : "a vanished staged file") +
                         (hadOld ? ", over an old set" : ", no old set"));
            test::TempDir dir("outset");
            const std::string a = dir.file("m.safetensors"), b = dir.file("m.json");
            if (hadOld) {
                put(a, "old a");
                put(b, "old b");
            }
            OutputSet set({a, b});
            writeAll(set, "new");
            if (directory) {
                fs::remove(b);
                fs::create_directory(b);
                put(b + "/keep", "x");
            } else {
                fs::remove(set.stagedPath(b));
            }
            try {
                set.commit();
                ADD_FAILURE() << "the commit should fail";
            } catch (const std::runtime_error& e) {
                EXPECT_NE(std::string(e.what()).find("m.json"), std::string::npos) << e.what();
            }
            if (hadOld)
                EXPECT_EQ(slurp(a), "old a");
            else
                EXPECT_FALSE(fs::exists(a));
            if (directory)
                EXPECT_EQ(slurp(b + "/keep"), "x");
            else if (hadOld)
                EXPECT_EQ(slurp(b), "old b");
            const std::set<std::string> expected = hadOld ? std::set<std::string>{"m.safetensors", "m.json"}
                                                   : directory ? std::set<std::string>{"m.json"}
                                                               : std::set<std::string>{};
            EXPECT_EQ(listing(dir.path()), expected);
        }
}

// The crash tests: the child commits a set of three files and SIGKILLs itself at one point of the protocol.
const char* killPoint = "";
int killIndex = 0;
void killHere(const char* point, int index) {
    if (std::strcmp(point, killPoint) == 0 && index == killIndex) raise(SIGKILL);
}

TEST(OutputSet, AProcessKilledAtAnyPointLeavesTheOldSetOrTheNewOne) {
    struct Point {
        const char* name;
        int index;
        bool newSet; // what the directory holds once recovered
    };
    const Point points[] = {{"staged", 0, false}, {"staged", 2, false}, {"linked", 0, false},
                            {"journal", 0, true}, {"renamed", 0, true}, {"renamed", 1, true},
                            {"renamed", 2, true}, {"done", 0, true}};
    for (const bool hadOld : {true, false})
        for (const Point& point : points) {
            SCOPED_TRACE(std::string(point.name) + " " + std::to_string(point.index) +
                         (hadOld ? ", over an old set" : ", no old set"));
            test::TempDir dir("outset");
            const std::vector<std::string> paths = {dir.file("r_times.npy"), dir.file("r_means.npy"),
                                                    dir.file("r.npy")};
            if (hadOld)
                for (const std::string& p : paths) put(p, "old " + p);
            const pid_t child = fork();
            ASSERT_GE(child, 0);
            if (child == 0) {
                killPoint = point.name;
                killIndex = point.index;
                OutputSet::setFaultHook(killHere);
                OutputSet set(paths);
                writeAll(set, "new");
                set.commit();
                _exit(0);
            }
            int status = 0;
            waitpid(child, &status, 0);
            ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;

            // Before recovery: killed before the journal, every final name still holds the old set.
            if (!point.newSet)
                for (const std::string& p : paths) {
                    if (hadOld)
                        EXPECT_EQ(slurp(p), "old " + p);
                    else
                        EXPECT_FALSE(fs::exists(p));
                }
            // The next run in this directory (or a loader) finishes or discards what the dead one left.
            EXPECT_GT(recoverOutputs(dir.path()), 0);
            for (const std::string& p : paths) {
                if (point.newSet)
                    EXPECT_EQ(slurp(p), "new " + p);
                else if (hadOld)
                    EXPECT_EQ(slurp(p), "old " + p);
                else
                    EXPECT_FALSE(fs::exists(p));
            }
            const std::set<std::string> whole = {"r_times.npy", "r_means.npy", "r.npy"};
            EXPECT_EQ(listing(dir.path()), point.newSet || hadOld ? whole : std::set<std::string>{});
            EXPECT_EQ(recoverOutputs(dir.path()), 0); // nothing left to do
        }
}

TEST(OutputSet, ASignalRemovesTheStagedFilesBeforeTheProcessDies) {
    for (const int sig : {SIGINT, SIGTERM}) {
        test::TempDir dir("outset");
        const std::string a = dir.file("traj.npy"), b = dir.file("traj.json");
        put(b, "old record");
        const pid_t child = fork();
        ASSERT_GE(child, 0);
        if (child == 0) {
            OutputSet set({a, b});
            set.write(a, [](std::ostream& o) { o << std::string(1 << 20, 'x'); });
            raise(sig); // while the set is staged: one file written, the other not yet
            _exit(0);
        }
        int status = 0;
        waitpid(child, &status, 0);
        EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << status;
        EXPECT_EQ(listing(dir.path()), std::set<std::string>{"traj.json"});
        EXPECT_EQ(slurp(b), "old record");
    }
}

// A staging name of process `pid` (the form stagedPathFor makes) for `name`.
std::string staged(const std::string& pid, const std::string& name, bool backup = false) {
    return std::string(backup ? ".flowscope-old-" : ".flowscope-tmp-") + pid + "-0123456789abcdef-" + name;
}

TEST(OutputSet, StagingNamesAreFlowscopesOwnAndRecognisedExactly) {
    const std::string a = stagedPathFor("/some/dir/x.npy"), b = stagedPathFor("/some/dir/x.npy");
    EXPECT_NE(a, b); // a random part, drawn afresh
    EXPECT_EQ(fs::path(a).parent_path(), "/some/dir");
    EXPECT_EQ(stagingPid(fs::path(a).filename().string()), getpid());
    EXPECT_EQ(stagingPid(fs::path(stagedPathFor("x.npy", true)).filename().string()), getpid());
    EXPECT_EQ(a.substr(a.size() - 6), "-x.npy");
    // A name at the limit keeps the whole name within 255 bytes, cut at a character boundary.
    std::string longName;
    while (longName.size() < 250) longName += "é";
    const std::string cut = fs::path(stagedPathFor(longName)).filename().string();
    EXPECT_LE(cut.size(), 255u);
    EXPECT_EQ(cut.substr(cut.size() - 2), "é"); // whole characters only
    EXPECT_EQ(std::count(cut.begin(), cut.end(), '\xC3'), std::count(cut.begin(), cut.end(), '\xA9'));
    // Names a user could have chosen are not staging names.
    for (const std::string name :
         {"thesis.old-2019", "report.pdf.old-31337", "experiment.tmp-2019", "x.npy.tmp-123",
          ".flowscope-tmp-123", ".flowscope-tmp-123-0123456789abcdef", ".flowscope-tmp-123-0123456789abcdef-",
          ".flowscope-tmp-123-0123456789ABCDEF-x", ".flowscope-tmp-12a-0123456789abcdef-x",
          ".flowscope-tmp--0123456789abcdef-x", "flowscope-tmp-123-0123456789abcdef-x",
          ".flowscope-new-123-0123456789abcdef-x", ".flowscope-tmp-1234567890-0123456789abcdef-x"})
        EXPECT_EQ(stagingPid(name), -1) << name;
    EXPECT_EQ(stagingPid(staged("123", "x")), 123);
    EXPECT_EQ(stagingPid(staged("123", "x", true)), 123);
}

TEST(OutputSet, StaleFilesOfDeadProcessesAreRemovedByTheNextRunThere) {
    test::TempDir dir("outset");
    const std::string dead = std::to_string(deadPid()), alive = std::to_string(getpid());
    put(dir.file(staged(dead, "x.npy")), std::string(4096, 'x')); // a killed run's full-size staged file
    put(dir.file(staged(dead, "x.npy", true)), "backup");
    put(dir.file(".flowscope-commit-" + dead + ".tmp"), "half a journal");
    put(dir.file(staged(alive, "y.npy")), "a live process's"); // kept: its writer may still commit it
    writeFileAtomically(dir.file("z.json"), [](std::ostream& o) { o << "{}"; });
    EXPECT_EQ(listing(dir.path()), (std::set<std::string>{staged(alive, "y.npy"), "z.json"}));
}

// The user's own files whose names look like staging or journal names survive every writer: only plain files
// named exactly as Flowscope names them go (issue: recovery deleted "thesis.old-2019" and whole folders).
TEST(OutputSet, RecoveryNeverTouchesWhatItDidNotWrite) {
    test::TempDir dir("outset");
    const std::string dead = std::to_string(deadPid());
    const std::map<std::string, std::string> mine = {
        {"thesis.old-2019", "precious"},
        {"report.pdf.old-31337", "x"},
        {"x.npy.tmp-" + dead, "looks like an old staging name"},
        {"notes.tmp-12ab", "not ours"},
        {".flowscope-commit-" + dead, "my own notes, not a journal"},
        {"experiment.tmp-2019/results.csv", "data"},
        {staged(dead, "frames") + "/frame_00000.png", "a folder is never removed"},
        {".flowscope-commit-" + dead + "x", "a journal name with more after the digits"}};
    for (const auto& [name, text] : mine) {
        fs::create_directories(fs::path(dir.file(name)).parent_path());
        put(dir.file(name), text);
    }
    fs::create_symlink(dir.file("thesis.old-2019"), dir.file(staged(dead, "link"))); // a link is not a file
    // A journal whose "staged" entry is a user's file: corrupt, so nothing it names is moved.
    {
        std::ofstream j(dir.file(".flowscope-commit-" + std::to_string(deadPid())), std::ios::binary);
        const std::string from = fs::path(dir.file("thesis.old-2019")).lexically_normal().string();
        const std::string to = fs::path(dir.file("stolen")).lexically_normal().string();
        j << "flowscope-commit 1\n"
          << from.size() << ' ' << from << '\n'
          << to.size() << ' ' << to << "\n0 \n";
    }
    writeFileAtomically(dir.file("out.json"), [](std::ostream& o) { o << "{}"; });
    OutputSet set({dir.file("a.npy"), dir.file("a.json")});
    writeAll(set, "new");
    set.commit();
    for (const auto& [name, text] : mine) EXPECT_EQ(slurp(dir.file(name)), text) << name;
    EXPECT_TRUE(fs::is_symlink(dir.file(staged(dead, "link"))));
    EXPECT_FALSE(fs::exists(dir.file("stolen")));
    EXPECT_EQ(recoverOutputs(dir.path()),
              0); // the corrupt journal (marked as ours inside) went, nothing else
}

TEST(OutputSet, EngineWritersStageInTheCapturingSet) {
    test::TempDir dir("outset");
    const std::string covs = dir.file("m.npy");
    MomentTrajectory tr;
    tr.times = {0.0};
    GaussianState s;
    s.mean = Vec::Zero(2);
    s.cov = Mat::Identity(2, 2);
    tr.states = {s};
    OutputSet set({momentsCompanionPath(covs, "times"), momentsCompanionPath(covs, "means"), covs});
    {
        const OutputSet::Capture capture(set);
        writeMomentsNpy(covs, {tr}); // its own set of three, staged in ours
    }
    EXPECT_FALSE(fs::exists(covs));
    set.commit();
    EXPECT_EQ(listing(dir.path()), (std::set<std::string>{"m.npy", "m_means.npy", "m_times.npy"}));

    // Without a capturing set the same writer is a set of its own: atomic, and checked.
    writeMomentsNpy(dir.file("n.npy"), {tr});
    EXPECT_EQ(listing(dir.path()).size(), 6u);
    EXPECT_THROW(writeMomentsNpy(dir.file("missing/n.npy"), {tr}), OutputError);
}

} // namespace
} // namespace flowscope
