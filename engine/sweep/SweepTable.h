// Flowscope engine: a sweep's directory, its journals and its table (docs/sweeps.md, "Files").
//
//   DIR/sweep.json             the canonical spec (its base scene resolved), written once; a run in a DIR of
//                              another spec is refused
//   DIR/journal/<name>.jsonl   one line a finished run, appended with one write(2) and fdatasync'ed: a header
//                              line {"sweep": hash, ...}, then {"check": c, "measures": [...], "run": r,
//                              "seconds": s, "valid": 1}, where c is the FNV-1a hash of the line without its
//                              check. A process killed mid-line leaves a torn last line, which the next
//                              opener cuts off; so a kill loses only the runs in flight. A line that fails
//                              its check is not trusted: its run is computed again. Each process appends to
//                              its own journal ("all", or "shard-I-of-N"), locked with flock(2).
//   DIR/results.csv            the table: one row a run, in run order, numbers as %.17g ("nan")
//   DIR/<column>.npy           each column as float64 (runs,)
//   DIR/results.json           the record: the spec, the columns, the build and the machine
// The table's files are one OutputSet (engine/io/OutputSet.h): all of them or none.
#pragma once

#include "engine/sweep/Sweep.h"

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace flowscope {

// Creates DIR (its parent must exist) and DIR/journal, and writes DIR/sweep.json, or checks that the one
// there is this spec's. Throws OutputError("--out", ...).
void prepareSweepDir(const std::string& dir, const SweepSpec& spec);

// The spec a sweep directory holds (DIR/sweep.json). Throws SweepError / OutputError("DIR", ...).
SweepSpec loadSweepDir(const std::string& dir);

struct SweepJournalEntry {
    long run = 0;
    SweepRunResult result;
    double seconds = 0; // the run's wall time (not in the table)
};

// One process's journal, open for appending. Thread-safe.
class SweepJournal {
  public:
    // Opens (creating) DIR/journal/<name>.jsonl, locks it, cuts a torn last line, writes the header when new.
    // Throws OutputError("--out", ...) when another process holds it or it is of another spec.
    SweepJournal(const std::string& dir, const std::string& name, const SweepSpec& spec);
    ~SweepJournal();
    SweepJournal(const SweepJournal&) = delete;
    SweepJournal& operator=(const SweepJournal&) = delete;

    // Appends one line per entry in one write and waits until they are on disk (one fdatasync: an MPI rank's
    // chunk of runs costs one, not one per run). Throws std::runtime_error when it cannot.
    void append(const std::vector<SweepJournalEntry>& entries);
    void append(const SweepJournalEntry& entry) { append(std::vector<SweepJournalEntry>{entry}); }
    const std::string& path() const { return path_; }

  private:
    std::string path_;
    int fd_ = -1;
    std::mutex mutex_;
};

// A journal line and back (numbers exactly; NaN and infinities as strings; with its checksum). The parser
// throws std::runtime_error or nlohmann::json::exception for a line without a valid checksum, or not a run's.
std::string sweepJournalLine(const SweepJournalEntry& entry);
SweepJournalEntry parseSweepJournalLine(const std::string& line, std::size_t measures);

// Every finished run in DIR/journal/*.jsonl (the first valid line of a run wins; torn last lines are
// skipped). Lines that fail their checksum, or name no run of the spec, are left out (their runs are computed
// again); `damaged`, when given, receives one "FILE line L fails its checksum"-style note for each. Throws
// OutputError("--out", ...) for a journal of another spec, or a .jsonl file that is not a journal.
std::map<long, SweepJournalEntry> readSweepJournals(const std::string& dir, const SweepSpec& spec,
                                                    std::vector<std::string>* damaged = nullptr);

// Writes the table of `entries` (every run of the spec) as one set; `record` is merged into results.json.
// Throws std::logic_error when a run is missing.
void writeSweepTable(const std::string& dir, const SweepSpec& spec,
                     const std::map<long, SweepJournalEntry>& entries, const nlohmann::json& record);

// The table of a finished sweep, by column (results.json's columns, DIR/<column>.npy).
struct SweepTable {
    std::vector<std::string> columns;
    std::vector<std::vector<double>> values; // values[c][row]
    nlohmann::json record;
    // The column named `name`, or throws std::invalid_argument listing the columns.
    const std::vector<double>& column(const std::string& name) const;
};
SweepTable readSweepTable(const std::string& dir);

// The table of the runs in `entries`, in run order: every run of the spec (what writeSweepTable writes), or
// the finished ones of a sweep still running (the app's Sweeps tab draws it as it fills in). The record holds
// the spec ("sweep"), its hash, the columns and the runs.
SweepTable sweepTableOf(const SweepSpec& spec, const std::map<long, SweepJournalEntry>& entries);

} // namespace flowscope
