#include "engine/io/OutputSet.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <pthread.h>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace flowscope {

namespace {

thread_local OutputSet* tlsCapture = nullptr;
std::atomic<OutputSet::FaultHook> faultHook{nullptr};

void fault(const char* point, int index = 0) {
    if (OutputSet::FaultHook hook = faultHook.load()) hook(point, index);
}

constexpr const char* kJournalPrefix = ".flowscope-commit-";
constexpr const char* kStagedPrefix = ".flowscope-tmp-";
constexpr const char* kBackupPrefix = ".flowscope-old-";
constexpr std::size_t kRandomDigits = 16;

std::string errnoText() {
    return std::strerror(errno);
}

// --- The staged files a signal handler removes (async-signal-safe: fixed slots, unlink only) ---

struct StagedSlot {
    std::atomic<int> state{0}; // 0 free, 1 being filled, 2 holds a path
    char path[4096];
};
std::array<StagedSlot, 64> stagedSlots;

int registerStaged(const std::string& path) {
    if (path.size() >= sizeof(StagedSlot::path)) return -1;
    for (int i = 0; i < int(stagedSlots.size()); ++i) {
        int expected = 0;
        if (stagedSlots[std::size_t(i)].state.compare_exchange_strong(expected, 1)) {
            std::memcpy(stagedSlots[std::size_t(i)].path, path.c_str(), path.size() + 1);
            stagedSlots[std::size_t(i)].state.store(2);
            return i;
        }
    }
    return -1; // more than 64 files staged at once: the next run's clean-up removes what a signal leaves
}

void unregisterStaged(int slot) {
    if (slot >= 0) stagedSlots[std::size_t(slot)].state.store(0);
}

extern "C" void removeStagedAndDie(int sig) {
    for (StagedSlot& s : stagedSlots)
        if (s.state.load() == 2) ::unlink(s.path);
    ::signal(sig, SIG_DFL);
    ::raise(sig); // delivered when the handler returns: the process ends as the signal's default does
}

constexpr std::array<int, 3> kCleanupSignals{SIGINT, SIGTERM, SIGHUP};

// Blocks the clean-up signals on this thread while it lives: a commit's renames are not interrupted.
class SignalBlock {
  public:
    SignalBlock() {
        sigset_t set;
        sigemptyset(&set);
        for (int s : kCleanupSignals) sigaddset(&set, s);
        pthread_sigmask(SIG_BLOCK, &set, &old_);
    }
    ~SignalBlock() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

  private:
    sigset_t old_;
};

// --- Files ---

bool fsyncPath(const std::string& path, bool directory) {
    const int fd = ::open(path.c_str(), (directory ? O_DIRECTORY : 0) | O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = ::fsync(fd) == 0;
    ::close(fd);
    return ok;
}

} // namespace

std::string directoryOf(const std::string& path) {
    const fs::path p = fs::path(path).parent_path();
    return p.empty() ? "." : p.string();
}

std::string stagedPathFor(const std::string& path, bool backup) {
    static thread_local std::mt19937_64 random{
        std::random_device{}() ^ (std::uint64_t(::getpid()) << 32 | std::uint64_t(::time(nullptr)))};
    char hex[kRandomDigits + 1];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(random()));
    std::string head =
        std::string(backup ? kBackupPrefix : kStagedPrefix) + std::to_string(::getpid()) + "-" + hex + "-";
    std::string name = fs::path(path).filename().string();
    if (name.empty()) name = "output";
    if (head.size() + name.size() > 255) { // NAME_MAX: keep the head, cut the name at a character boundary
        std::size_t keep = 255 - head.size();
        while (keep > 0 && (static_cast<unsigned char>(name[keep]) & 0xC0) == 0x80) --keep;
        name.resize(keep);
    }
    const fs::path dir = fs::path(path).parent_path();
    return (dir / (head + name)).string();
}

long stagingPid(const std::string& name) {
    for (const char* prefix : {kStagedPrefix, kBackupPrefix}) {
        const std::size_t n = std::strlen(prefix);
        if (name.compare(0, n, prefix) != 0) continue;
        const std::size_t dash = name.find('-', n);
        if (dash == std::string::npos || dash == n || dash - n > 9) return -1;
        const std::string digits = name.substr(n, dash - n);
        if (digits.find_first_not_of("0123456789") != std::string::npos) return -1;
        const std::string hex = name.substr(dash + 1, kRandomDigits);
        if (hex.size() != kRandomDigits || hex.find_first_not_of("0123456789abcdef") != std::string::npos)
            return -1;
        if (name.size() <= dash + 1 + kRandomDigits + 1 || name[dash + 1 + kRandomDigits] != '-') return -1;
        return std::stol(digits);
    }
    return -1;
}

namespace {

// A name that identifies a file however it is spelled: the absolute, lexically normal path of its
// directory's canonical form.
std::string normalName(const std::string& path) {
    std::error_code ec;
    fs::path p = fs::absolute(path, ec);
    if (ec) return path;
    const fs::path canonical = fs::weakly_canonical(p, ec);
    return (ec ? p : canonical).lexically_normal().string();
}

bool sameFile(const std::string& a, const std::string& b) {
    if (normalName(a) == normalName(b)) return true;
    struct stat sa {
    }, sb{};
    return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

bool processAlive(long pid) {
    if (pid <= 0 || pid > 0x7fffffffL) return false;
    return ::kill(pid_t(pid), 0) == 0 || errno == EPERM;
}

// The pid in "<prefix><digits>" (the whole rest of the name), or -1.
long pidAfter(const std::string& name, const std::string& prefix) {
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
    const std::string digits = name.substr(prefix.size());
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
    return std::stol(digits);
}

// A plain file (not a folder, not a link), by lstat.
bool isPlainFile(const std::string& p) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The journal: "flowscope-commit 1\n" then, per file, three length-prefixed paths (staged, final, backup;
// an empty backup: there was no old file).
void putPath(std::ostream& out, const std::string& p) {
    out << p.size() << ' ' << p << '\n';
}

bool getPath(std::istream& in, std::string& p) {
    std::size_t n = 0;
    if (!(in >> n) || in.get() != ' ' || n > 4096) return false;
    p.assign(n, '\0');
    return bool(in.read(p.data(), std::streamsize(n))) && in.get() == '\n';
}

struct JournalEntry {
    std::string staged, final, backup;
};

enum class Journal { Valid, Corrupt, NotOurs };

Journal readJournal(const std::string& path, const std::string& dir, std::vector<JournalEntry>& entries) {
    if (!isPlainFile(path)) return Journal::NotOurs;
    std::ifstream in(path, std::ios::binary);
    std::string magic;
    if (!std::getline(in, magic) || magic != "flowscope-commit 1") return Journal::NotOurs;
    const std::string dirName = normalName(dir);
    for (JournalEntry e; getPath(in, e.staged) && getPath(in, e.final) && getPath(in, e.backup);) {
        // Only files of this directory: a journal never moves anything elsewhere. The staged file and the
        // backup carry the staging names: a journal never renames or removes a file a user named.
        for (const std::string* p : {&e.staged, &e.final, &e.backup})
            if (!p->empty() && normalName(directoryOf(*p)) != dirName) return Journal::Corrupt;
        if (stagingPid(fs::path(e.staged).filename().string()) < 0 ||
            (!e.backup.empty() && stagingPid(fs::path(e.backup).filename().string()) < 0))
            return Journal::Corrupt;
        entries.push_back(e);
    }
    return in.eof() && !entries.empty() ? Journal::Valid : Journal::Corrupt;
}

bool exists(const std::string& p) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0;
}

// A dead process's interrupted commit: its staged files are all complete (the journal is written after
// them), so the set is completed; if a rename fails, the old set is put back from the backups.
int rollForward(const std::string& journal, const std::string& dir) {
    std::vector<JournalEntry> entries;
    int changed = 0;
    const Journal kind = readJournal(journal, dir, entries);
    if (kind == Journal::NotOurs) return 0; // a file of someone else's that only looks like a journal
    if (kind == Journal::Valid) {
        bool failed = false;
        for (const JournalEntry& e : entries)
            if (isPlainFile(e.staged)) {
                if (::rename(e.staged.c_str(), e.final.c_str()) != 0)
                    failed = true;
                else
                    ++changed;
            }
        if (failed)
            for (const JournalEntry& e : entries) {
                if (!e.backup.empty() && isPlainFile(e.backup))
                    ::rename(e.backup.c_str(), e.final.c_str());
                else if (e.backup.empty() && !exists(e.staged) && isPlainFile(e.final))
                    ::unlink(e.final.c_str());
                if (isPlainFile(e.staged)) ::unlink(e.staged.c_str());
            }
        for (const JournalEntry& e : entries)
            if (!e.backup.empty() && isPlainFile(e.backup)) ::unlink(e.backup.c_str());
        fsyncPath(dir, true);
    }
    ::unlink(journal.c_str());
    return changed + 1;
}

} // namespace

int recoverOutputs(const std::string& dir) {
    int changed = 0;
    try {
        std::error_code ec;
        std::vector<fs::path> journals, stale;
        for (const auto& e : fs::directory_iterator(dir, ec)) {
            const std::string name = e.path().filename().string();
            if (!isPlainFile(e.path().string()))
                continue; // never a folder (a PNG sequence's stays) or a link
            if (name.rfind(kJournalPrefix, 0) == 0) {
                const long pid = pidAfter(name, kJournalPrefix);
                if (pid > 0 && !processAlive(pid))
                    journals.push_back(e.path());
                else if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0) {
                    const long writer = pidAfter(name.substr(0, name.size() - 4), kJournalPrefix);
                    if (writer > 0 && !processAlive(writer))
                        stale.push_back(e.path()); // a journal being written when its process died
                }
                continue;
            }
            const long pid = stagingPid(name);
            if (pid > 0 && !processAlive(pid)) stale.push_back(e.path());
        }
        for (const fs::path& j : journals) changed += rollForward(j.string(), dir);
        for (const fs::path& p : stale)
            if (isPlainFile(p.string()) && ::unlink(p.c_str()) == 0) ++changed;
    } catch (...) {
    }
    return changed;
}

void installOutputSignalCleanup() {
    // A write past the file-size limit (ulimit -f) then fails with EFBIG, which the writers report and clean
    // up after, instead of SIGXFSZ killing the process with its staged file left behind.
    if (struct sigaction old{}; ::sigaction(SIGXFSZ, nullptr, &old) == 0 && old.sa_handler == SIG_DFL)
        ::signal(SIGXFSZ, SIG_IGN);
    for (int sig : kCleanupSignals) { // each time: an action reset to the default since is taken over again
        struct sigaction old {};
        if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
        struct sigaction sa {};
        sa.sa_handler = removeStagedAndDie;
        sigemptyset(&sa.sa_mask);
        ::sigaction(sig, &sa, nullptr);
    }
}

void OutputSet::setFaultHook(FaultHook hook) {
    faultHook.store(hook);
}

OutputSet::OutputSet(std::vector<std::string> outputs, const std::vector<std::string>& inputs,
                     std::string field)
    : paths_(std::move(outputs)), field_(std::move(field)) {
    std::vector<std::string> dirs;
    for (std::size_t i = 0; i < paths_.size(); ++i) {
        const std::string& p = paths_[i];
        if (p.empty()) throw OutputError(field_, "an output file name is empty");
        if (const std::string name = fs::path(p).filename().string(); name.size() > 255)
            throw OutputError(field_, "the file name '" + name.substr(0, 40) + "…' is " +
                                          std::to_string(name.size()) +
                                          " bytes long; a file name has at most 255 bytes");
        const std::string dir = directoryOf(p);
        struct stat st {};
        if (::stat(dir.c_str(), &st) != 0)
            throw OutputError(field_, "the directory '" + dir + "' of '" + p + "' does not exist");
        if (!S_ISDIR(st.st_mode))
            throw OutputError(field_, "'" + dir + "' in '" + p + "' is not a directory");
        if (::access(dir.c_str(), W_OK | X_OK) != 0)
            throw OutputError(field_, "the directory '" + dir + "' is not writable (" + errnoText() + ")");
        if (::stat(p.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
            throw OutputError(field_, "'" + p + "' exists and is " +
                                          (S_ISDIR(st.st_mode) ? "a directory" : "not a regular file"));
        for (std::size_t j = 0; j < i; ++j)
            if (sameFile(p, paths_[j]))
                throw OutputError(field_, "'" + paths_[j] + "' and '" + p +
                                              "' are the same file: one output would overwrite the other");
        for (const std::string& in : inputs)
            if (!in.empty() && sameFile(p, in))
                throw OutputError(field_, "'" + p + "' is an input of this run (" + in +
                                              "); writing it would replace it");
        if (std::find(dirs.begin(), dirs.end(), normalName(dir)) == dirs.end())
            dirs.push_back(normalName(dir));
        entries_.push_back({p, stagedPathFor(p), stagedPathFor(p, true)});
    }
    if (dirs.size() > 1) // the journal lives in one directory and only ever names files there
        throw std::logic_error("OutputSet: the files of one set must share a directory");
    for (const std::string& dir : dirs) recoverOutputs(dir);
    installOutputSignalCleanup();
}

OutputSet::~OutputSet() {
    if (!committed_) discardStaged();
}

void OutputSet::discardStaged() noexcept {
    for (Entry& e : entries_) {
        if (e.written) ::unlink(e.staged.c_str());
        e.written = false;
        releaseSlot(e);
    }
}

void OutputSet::releaseSlot(Entry& e) noexcept {
    unregisterStaged(e.slot);
    e.slot = -1;
}

bool OutputSet::declares(const std::string& path) const {
    return std::find(paths_.begin(), paths_.end(), path) != paths_.end();
}

const std::string& OutputSet::stagedPath(const std::string& path) const {
    for (const Entry& e : entries_)
        if (e.path == path) return e.staged;
    throw std::logic_error("OutputSet::stagedPath: '" + path + "' was not declared");
}

void OutputSet::write(const std::string& path, const std::function<void(std::ostream&)>& writer) {
    if (committed_) throw std::logic_error("OutputSet::write after commit: " + path);
    const auto it =
        std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.path == path; });
    if (it == entries_.end()) throw std::logic_error("OutputSet::write: '" + path + "' was not declared");
    Entry& e = *it;
    if (e.slot < 0) e.slot = registerStaged(e.staged);
    try {
        std::ofstream out(e.staged, std::ios::binary | std::ios::trunc);
        if (!out) throw std::runtime_error("cannot write " + path + " (" + errnoText() + ")");
        writer(out);
        out.flush();
        if (!out) throw std::runtime_error("writing " + path + " failed (" + errnoText() + ")");
        out.close();
        if (!out || !fsyncPath(e.staged, false))
            throw std::runtime_error("writing " + path + " failed (" + errnoText() + ")");
    } catch (...) {
        ::unlink(e.staged.c_str());
        unregisterStaged(e.slot);
        e.slot = -1;
        e.written = false;
        throw;
    }
    e.written = true; // and still registered: until the commit, a signal removes it
    fault("staged", int(it - entries_.begin()));
}

void OutputSet::commit() {
    if (committed_) throw std::logic_error("OutputSet::commit twice");
    for (const Entry& e : entries_)
        if (!e.written) throw std::logic_error("OutputSet::commit: '" + e.path + "' was not written");
    const SignalBlock block;
    auto unregisterAll = [&] {
        for (Entry& e : entries_) releaseSlot(e);
    };
    if (entries_.size() == 1) { // one rename is atomic by itself
        const Entry& e = entries_.front();
        if (::rename(e.staged.c_str(), e.path.c_str()) != 0) {
            const std::string why = errnoText();
            discardStaged();
            unregisterAll();
            throw std::runtime_error("cannot rename the written file to " + e.path + " (" + why + ")");
        }
        fsyncPath(directoryOf(e.path), true);
        committed_ = true;
        unregisterAll();
        return;
    }

    const std::string dir = directoryOf(entries_.front().path);
    const std::string journal =
        (fs::path(dir) / (std::string(kJournalPrefix) + std::to_string(::getpid()))).string();
    auto fail = [&](const std::string& message, std::size_t renamed) {
        for (std::size_t j = 0; j < renamed; ++j) { // put the old files back
            const Entry& e = entries_[j];
            if (e.hadOld)
                ::rename(e.backup.c_str(), e.path.c_str());
            else
                ::unlink(e.path.c_str());
        }
        for (Entry& e : entries_)
            if (e.hadOld) ::unlink(e.backup.c_str());
        discardStaged();
        ::unlink(journal.c_str()); // last: killed before this, the next run completes the set instead
        throw std::runtime_error(message);
    };

    // 2. Backups of the old files: hard links, so the old set stays whole under the final names.
    for (Entry& e : entries_) {
        e.hadOld = false;
        if (!exists(e.path)) continue;
        ::unlink(e.backup.c_str());
        if (::link(e.path.c_str(), e.backup.c_str()) != 0)
            fail("cannot replace " + e.path + " (" + errnoText() + ")", 0);
        e.hadOld = true;
    }
    fault("linked");
    // 3. The journal, written whole under a temporary name, then renamed: it exists complete or not at all.
    {
        std::ofstream out(journal + ".tmp", std::ios::binary | std::ios::trunc);
        out << "flowscope-commit 1\n";
        for (const Entry& e : entries_) {
            putPath(out, normalName(e.staged));
            putPath(out, normalName(e.path));
            putPath(out, e.hadOld ? normalName(e.backup) : std::string());
        }
        out.close();
        if (!out || !fsyncPath(journal + ".tmp", false) ||
            ::rename((journal + ".tmp").c_str(), journal.c_str()) != 0) {
            const std::string why = errnoText();
            ::unlink((journal + ".tmp").c_str());
            fail("cannot write the commit journal in " + dir + " (" + why + ")", 0);
        }
        fsyncPath(dir, true);
    }
    fault("journal");
    // 4. The renames, in declaration order.
    for (std::size_t i = 0; i < entries_.size(); ++i) {
        if (::rename(entries_[i].staged.c_str(), entries_[i].path.c_str()) != 0) {
            const std::string why = errnoText();
            fail("cannot rename the written file to " + entries_[i].path + " (" + why +
                     "); the previous files are kept",
                 i);
        }
        fault("renamed", int(i));
    }
    fsyncPath(dir, true);
    fault("done");
    // 5. The new set is in place.
    for (const Entry& e : entries_)
        if (e.hadOld) ::unlink(e.backup.c_str());
    ::unlink(journal.c_str());
    committed_ = true;
    unregisterAll();
}

OutputSet::Capture::Capture(OutputSet& set) : previous_(tlsCapture) {
    tlsCapture = &set;
}
OutputSet::Capture::~Capture() {
    tlsCapture = previous_;
}

OutputSet* OutputSet::capturing(const std::string& path) {
    return tlsCapture && !tlsCapture->committed_ && tlsCapture->declares(path) ? tlsCapture : nullptr;
}

void writeOutputSet(const std::vector<std::string>& outputs, const std::function<void()>& write) {
    if (tlsCapture && !tlsCapture->committed() &&
        std::all_of(outputs.begin(), outputs.end(),
                    [](const std::string& p) { return tlsCapture->declares(p); })) {
        write();
        return;
    }
    OutputSet set(outputs, {}, "output");
    {
        const OutputSet::Capture capture(set);
        write();
    }
    set.commit();
}

} // namespace flowscope
