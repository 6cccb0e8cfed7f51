// Flowscope engine: a run's output files as one transaction (docs/outputs.md).
//
// A command declares every file it will write before it starts the work; the declaration is checked at once
// (the names must differ from each other and from the inputs, the directory must exist and be writable) and
// stale files of dead processes in that directory are cleaned up. The files are then written to staged names
// (".flowscope-tmp-<pid>-<random>-<name>", stagedPathFor) and flushed to disk; commit() renames them into
// place, all of them or none:
//
//   1. every staged file is complete and fsync'ed;
//   2. each old file at a final name is hard-linked to ".flowscope-old-<pid>-<random>-<name>" (the rollback
//      copy);
//   3. a journal "<dir>/.flowscope-commit-<pid>" lists (staged, final, backup) and is fsync'ed;
//   4. the staged files are renamed in declaration order (the sidecar record last);
//   5. the backups and the journal are removed.
//
// A failed rename in 4 puts the old files back from their backups (a file that did not exist is removed), so
// an error leaves the old set. A process killed between 3 and 5 leaves its journal: the next OutputSet in
// that directory, and every loader of a multi-file set (recoverOutputs), rolls the set forward to the new
// set, so a crash leaves the old set (killed before 3) or the new set (after), never a mix. SIGINT, SIGTERM
// and SIGHUP are blocked during 2-5; at any other time they remove the process's staged files before it dies.
// An OutputSet destroyed without commit() (an exception, a cancelled export) removes its staged files.
//
// Every engine writer goes through writeFileAtomically (AtomicFile.h); inside an OutputSet::Capture, the
// writes to the set's declared paths are staged in that set instead of being committed one by one, so
// writeSafetensors, writeNpy and the other single-file writers take part in a set unchanged.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace flowscope {

// A bad output declaration (a name collision, a missing or read-only directory): bad input, exit code 2.
// `field` is what names the output to the user ("--out", "/output/path", ...).
struct OutputError : std::runtime_error {
    OutputError(const std::string& field, const std::string& detail)
        : std::runtime_error(field + ": " + detail), field(field), detail(detail) {}
    std::string field, detail; // what() is "field: detail"
};

class OutputSet {
  public:
    // Declares `outputs` (renamed in this order at commit) and checks them against each other and `inputs`
    // (files the run reads; the same file under another name or through a link counts). `field` names the
    // option the outputs came from in messages. Cleans up dead processes' staged files and finishes their
    // interrupted commits in the outputs' directories first. Throws OutputError.
    OutputSet(std::vector<std::string> outputs, const std::vector<std::string>& inputs = {},
              std::string field = "--out");
    ~OutputSet(); // removes staged files unless committed
    OutputSet(const OutputSet&) = delete;
    OutputSet& operator=(const OutputSet&) = delete;

    const std::vector<std::string>& paths() const { return paths_; }
    bool declares(const std::string& path) const;
    // Where a declared file is staged until the commit (std::logic_error for an undeclared path).
    const std::string& stagedPath(const std::string& path) const;

    // Writes one declared file to its staged name (flushed and fsync'ed). Throws std::runtime_error naming
    // the path on failure, std::logic_error for an undeclared path.
    void write(const std::string& path, const std::function<void(std::ostream&)>& writer);

    // Renames every declared file into place (the protocol above). Every declared file must have been
    // written (std::logic_error otherwise). Throws std::runtime_error with the old files left in place.
    void commit();
    bool committed() const { return committed_; }

    // While a Capture lives, writeFileAtomically on this thread stages the set's declared paths in it.
    class Capture {
      public:
        explicit Capture(OutputSet& set);
        ~Capture();
        Capture(const Capture&) = delete;
        Capture& operator=(const Capture&) = delete;

      private:
        OutputSet* previous_;
    };
    // The set capturing this thread's writes to `path`, or nullptr.
    static OutputSet* capturing(const std::string& path);

    // For the tests that kill a process at each point of commit(): called with "staged" (after file i was
    // staged), "linked" (after the backups), "journal" (after the journal was written), "renamed" (after
    // rename i) and "done" (before the journal is removed). Not for production use.
    using FaultHook = void (*)(const char* point, int index);
    static void setFaultHook(FaultHook hook);

  private:
    struct Entry {
        std::string path, staged, backup;
        bool written = false, hadOld = false;
        int slot = -1; // in the signal handler's list of staged files
    };
    std::vector<std::string> paths_;
    std::vector<Entry> entries_;
    std::string field_;
    bool committed_ = false;
    void discardStaged() noexcept;
    static void releaseSlot(Entry& e) noexcept;
};

// Writes a set of files in one transaction: declares `outputs`, runs `write` with the set capturing this
// thread's writes, commits. When a set of the caller already declares every one of `outputs`, the files are
// staged in that set instead (the caller commits). This is how the engine's multi-file writers (a model and
// its record, the moments' three arrays) are atomic on their own and inside a command's declared set.
void writeOutputSet(const std::vector<std::string>& outputs, const std::function<void()>& write);

// The names Flowscope stages under, beside `path`: ".flowscope-tmp-<pid>-<16 hex digits>-<name>" for a file
// (or a PNG sequence's folder) being written, ".flowscope-old-<pid>-<16 hex digits>-<name>" for a commit's
// rollback copy (`backup`). The hex digits are random, drawn afresh for every call; <name> is the target's
// file name, shortened (at a UTF-8 boundary) so the whole name stays within 255 bytes.
std::string stagedPathFor(const std::string& path, bool backup = false);

// The process id in a file name made by stagedPathFor (the name alone, no directory), or -1 when `name` is
// not exactly of that form. Recovery removes nothing else.
long stagingPid(const std::string& name);

// Finishes the commits of dead processes in `dir` (rolled forward from their journals) and removes their
// staged files and backups. Only plain files whose names stagingPid recognises are ever removed or renamed,
// never a folder, a link, or a name a user could have chosen for a file of their own
// (docs/outputs.md#recovery). Called by every OutputSet for its directories and by the loaders of multi-file
// sets before they read. Never throws; returns the number of files renamed or removed.
int recoverOutputs(const std::string& dir);

// Installs the SIGINT/SIGTERM/SIGHUP handlers that remove staged files before the process dies (where the
// signal's action is still the default). OutputSet calls it; the CLI and the app call it at start-up.
void installOutputSignalCleanup();

// The directory part of a file path ("." for a bare name).
std::string directoryOf(const std::string& path);

} // namespace flowscope
