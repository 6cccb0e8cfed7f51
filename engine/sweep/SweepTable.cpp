// Flowscope engine: a sweep's directory, journals and table (SweepTable.h).
#include "engine/sweep/SweepTable.h"

#include "engine/core/Text.h"
#include "engine/io/AtomicFile.h"
#include "engine/io/Npy.h"
#include "engine/io/OutputSet.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/file.h>
#include <unistd.h>

namespace flowscope {

namespace {

namespace fs = std::filesystem;

std::string specPath(const std::string& dir) {
    return (fs::path(dir) / "sweep.json").string();
}

std::string readAll(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

nlohmann::json headerOf(const SweepSpec& spec) {
    return {{"sweep", spec.hash()}, {"name", spec.name}, {"runs", spec.runs()}, {"columns", spec.columns()}};
}

std::string anotherSpec(const std::string& path) {
    return quoteForMessage(path, kMaxQuotedPath) +
           " belongs to another sweep spec (a changed spec needs a new --out directory)";
}

// What is wrong with a journal's first line, or "" when it is the header of `spec`'s journal.
std::string headerProblem(const std::string& path, const std::string& line, const SweepSpec& spec) {
    std::string hash;
    try {
        const nlohmann::json j = nlohmann::json::parse(line);
        if (j.is_object() && j.contains("sweep") && j["sweep"].is_string())
            hash = j["sweep"].get<std::string>();
    } catch (const std::exception&) {
    }
    if (hash.empty())
        return quoteForMessage(path, kMaxQuotedPath) +
               " is not a sweep journal (its first line is not a journal header): move it out of the journal "
               "folder to resume";
    return hash == spec.hash() ? "" : anotherSpec(path);
}

nlohmann::json numberOrText(double v) {
    if (std::isfinite(v)) return v;
    return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
}

double numberOf(const nlohmann::json& j) {
    if (j.is_number()) return j.get<double>();
    if (j.is_string()) {
        const std::string s = j.get<std::string>();
        if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
        if (s == "inf") return std::numeric_limits<double>::infinity();
        if (s == "-inf") return -std::numeric_limits<double>::infinity();
    }
    throw std::runtime_error("expected a number");
}

std::string csvNumber(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

} // namespace

void prepareSweepDir(const std::string& dir, const SweepSpec& spec) {
    std::error_code ec;
    const fs::path parent = fs::absolute(dir, ec).parent_path();
    if (!fs::is_directory(parent, ec))
        throw OutputError("--out", "the directory " + quoteForMessage(parent.string(), kMaxQuotedPath) +
                                       " does not exist");
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
        throw OutputError("--out", quoteForMessage(dir, kMaxQuotedPath) + " is not a directory");
    fs::create_directories(fs::path(dir) / "journal", ec);
    if (ec)
        throw OutputError("--out", "cannot create " + quoteForMessage(dir, kMaxQuotedPath) +
                                       "/journal: " + ec.message());
    const std::string path = specPath(dir);
    const std::string text = spec.canonical.dump(1) + "\n";
    if (fs::exists(path, ec)) {
        try {
            if (parseJson(readAll(path)) == spec.canonical) return;
        } catch (const JsonError&) {
        }
        throw OutputError("--out", anotherSpec(path));
    }
    writeFileAtomically(path, [&](std::ostream& o) { o << text; });
}

SweepSpec loadSweepDir(const std::string& dir) {
    const std::string path = specPath(dir);
    if (!notARegularFile(path).empty())
        throw OutputError(dir, "no sweep here (" + quoteForMessage(path, kMaxQuotedPath) + ": " +
                                   notARegularFile(path) + ")");
    return sweepFromJson(readAll(path), dir, dir);
}

std::string sweepJournalLine(const SweepJournalEntry& e) {
    nlohmann::json m = nlohmann::json::array();
    for (double v : e.result.measures) m.push_back(numberOrText(v));
    nlohmann::json j{
        {"run", e.run}, {"valid", e.result.valid ? 1 : 0}, {"measures", m}, {"seconds", e.seconds}};
    j["check"] = fnv1a64Hex(j.dump());
    return j.dump() + "\n";
}

SweepJournalEntry parseSweepJournalLine(const std::string& line, std::size_t measures) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (!j.is_object() || !j.contains("check") || !j["check"].is_string())
        throw std::runtime_error("has no checksum");
    const std::string check = j["check"].get<std::string>();
    j.erase("check");
    // The writer's dump, parsed and dumped again, is the same text: numbers print as the shortest form that
    // reads back to the same double, and the keys in one order.
    if (fnv1a64Hex(j.dump()) != check) throw std::runtime_error("fails its checksum");
    SweepJournalEntry e;
    e.run = j.at("run").get<long>();
    e.result.valid = j.at("valid").get<int>() != 0;
    for (const auto& v : j.at("measures")) e.result.measures.push_back(numberOf(v));
    if (e.result.measures.size() != measures)
        throw std::runtime_error("expected " + std::to_string(measures) + " measures");
    e.seconds = j.value("seconds", 0.0);
    return e;
}

SweepJournal::SweepJournal(const std::string& dir, const std::string& name, const SweepSpec& spec)
    : path_((fs::path(dir) / "journal" / (name + ".jsonl")).string()) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0)
        throw OutputError("--out", "cannot open " + quoteForMessage(path_, kMaxQuotedPath) + ": " +
                                       std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        ::close(fd_);
        throw OutputError("--out",
                          quoteForMessage(path_, kMaxQuotedPath) + " is in use by another sweep process");
    }
    const std::string text = readAll(path_);
    const std::string header = headerOf(spec).dump() + "\n";
    if (text.empty()) {
        if (::write(fd_, header.data(), header.size()) != ssize_t(header.size()) || ::fdatasync(fd_) != 0)
            throw std::runtime_error("cannot write " + path_ + ": " + std::strerror(errno));
        return;
    }
    const std::size_t firstEnd = text.find('\n');
    if (const std::string problem = headerProblem(path_, text.substr(0, firstEnd), spec); !problem.empty()) {
        ::close(fd_);
        throw OutputError("--out", problem);
    }
    if (text.back() != '\n') { // a torn line of a killed process
        if (::ftruncate(fd_, off_t(text.rfind('\n') + 1)) != 0)
            throw std::runtime_error("cannot truncate " + path_ + ": " + std::strerror(errno));
    }
}

SweepJournal::~SweepJournal() {
    if (fd_ >= 0) ::close(fd_); // releases the lock
}

void SweepJournal::append(const std::vector<SweepJournalEntry>& entries) {
    std::string lines;
    for (const SweepJournalEntry& e : entries) lines += sweepJournalLine(e);
    std::lock_guard lock(mutex_);
    // write() may take part of the lines (a disk filling up takes what fits, then fails with ENOSPC): the
    // rest goes in further calls, so the error is the system's reason. A torn last line is cut on reading.
    for (std::size_t at = 0; at < lines.size();) {
        const ssize_t n = ::write(fd_, lines.data() + at, lines.size() - at);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw std::runtime_error("cannot append to " + path_ + ": " + std::strerror(errno));
        at += std::size_t(n);
    }
    if (::fdatasync(fd_) != 0)
        throw std::runtime_error("cannot append to " + path_ + ": " + std::strerror(errno));
}

std::map<long, SweepJournalEntry> readSweepJournals(const std::string& dir, const SweepSpec& spec,
                                                    std::vector<std::string>* damaged) {
    std::map<long, SweepJournalEntry> entries;
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::path(dir) / "journal", ec))
        if (e.path().extension() == ".jsonl") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    const std::size_t measures = spec.measureColumns().size();
    for (const fs::path& f : files) {
        std::istringstream in(readAll(f.string()));
        std::string line;
        for (long number = 1; std::getline(in, line); ++number) {
            if (in.eof()) break; // no newline: torn
            if (number == 1) {
                if (const std::string problem = headerProblem(f.string(), line, spec); !problem.empty())
                    throw OutputError("--out", problem);
                continue;
            }
            try {
                SweepJournalEntry e = parseSweepJournalLine(line, measures);
                if (e.run < 0 || e.run >= spec.runs())
                    throw std::runtime_error("names run " + std::to_string(e.run) + " of " +
                                             std::to_string(spec.runs()));
                entries.emplace(e.run, std::move(e));
            } catch (const std::exception& ex) { // a damaged line: its run is computed again
                if (damaged)
                    damaged->push_back(
                        f.filename().string() + " line " + std::to_string(number) + " " +
                        (dynamic_cast<const nlohmann::json::exception*>(&ex) ? "is not JSON" : ex.what()));
            }
        }
    }
    return entries;
}

void writeSweepTable(const std::string& dir, const SweepSpec& spec,
                     const std::map<long, SweepJournalEntry>& entries, const nlohmann::json& record) {
    const long runs = spec.runs();
    for (long r = 0; r < runs; ++r)
        if (!entries.count(r))
            throw std::logic_error("sweep table: run " + std::to_string(r) + " is missing");
    const SweepTable table = sweepTableOf(spec, entries);
    const std::vector<std::string>& columns = table.columns;
    const std::vector<std::vector<double>>& values = table.values;
    double seconds = 0;
    for (const auto& [r, e] : entries) seconds += e.seconds;
    const fs::path base(dir);
    std::vector<std::string> paths;
    for (const std::string& c : columns) paths.push_back((base / (c + ".npy")).string());
    const std::string csv = (base / "results.csv").string(), json = (base / "results.json").string();
    paths.push_back(csv);
    paths.push_back(json);
    OutputSet outputs(paths, {}, "--out");
    {
        const OutputSet::Capture capture(outputs);
        for (std::size_t c = 0; c < columns.size(); ++c) writeNpy(paths[c], {runs}, values[c].data(), false);
        writeFileAtomically(csv, [&](std::ostream& o) {
            for (std::size_t c = 0; c < columns.size(); ++c) o << (c ? "," : "") << columns[c];
            o << "\n";
            for (long r = 0; r < runs; ++r) {
                for (std::size_t c = 0; c < columns.size(); ++c)
                    o << (c ? "," : "") << csvNumber(values[c][std::size_t(r)]);
                o << "\n";
            }
        });
        nlohmann::json j = record;
        j.update(table.record);
        j["cells"] = spec.cells();
        j["replicates"] = spec.replicates;
        j["run_seconds_total"] = seconds;
        writeFileAtomically(json, [&](std::ostream& o) { o << j.dump(1) << "\n"; });
    }
    outputs.commit();
}

const std::vector<double>& SweepTable::column(const std::string& name) const {
    for (std::size_t c = 0; c < columns.size(); ++c)
        if (columns[c] == name) return values[c];
    std::string list;
    for (const std::string& c : columns) list += (list.empty() ? "" : ", ") + c;
    throw std::invalid_argument("no column " + quoteForMessage(name) + " (the table has " + list + ")");
}

SweepTable readSweepTable(const std::string& dir) {
    const std::string json = (fs::path(dir) / "results.json").string();
    recoverOutputs(dir);
    if (const std::string why = notARegularFile(json); !why.empty())
        throw OutputError(dir, "no sweep table here (" + quoteForMessage(json, kMaxQuotedPath) + ": " + why +
                                   "; run the sweep to its end, or sweep merge the shards)");
    SweepTable t;
    try {
        t.record = nlohmann::json::parse(readAll(json));
        t.columns = t.record.at("columns").get<std::vector<std::string>>();
    } catch (const std::exception& e) {
        throw OutputError(dir, quoteForMessage(json, kMaxQuotedPath) + " is no sweep record: " + e.what());
    }
    for (const std::string& c : t.columns) {
        // A column name is letters, digits and _ (SweepSpec), so it names a file of DIR only.
        if (c.empty() ||
            c.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") !=
                std::string::npos)
            throw OutputError(dir, "bad column name in " + json);
        t.values.push_back(readNpy((fs::path(dir) / (c + ".npy")).string()).data);
        if (t.values.back().size() != t.values.front().size())
            throw OutputError(dir, "column " + c + " has another length");
    }
    return t;
}

SweepTable sweepTableOf(const SweepSpec& spec, const std::map<long, SweepJournalEntry>& entries) {
    SweepTable t;
    t.columns = spec.columns();
    t.values.assign(t.columns.size(), {});
    for (std::vector<double>& v : t.values) v.reserve(entries.size());
    for (const auto& [r, e] : entries) { // a std::map: in run order
        const std::vector<double> row = sweepRow(spec, r, e.result);
        for (std::size_t c = 0; c < t.columns.size(); ++c) t.values[c].push_back(row[c]);
    }
    t.record = {
        {"sweep", spec.canonical}, {"hash", spec.hash()}, {"columns", t.columns}, {"runs", spec.runs()}};
    return t;
}

} // namespace flowscope
