// Flowscope engine: a sweep, one value that describes a whole study (docs/sweeps.md).
//
// A sweep is a base scene, axes that set scene fields by JSON pointer, the measures recorded per run and the
// replicates per cell. Its cells are the points of the axes' grid (the first axis varies slowest); each cell
// runs `replicates` times, and run r = cell * replicates + replicate is a pure function of the spec and r:
// its scene is the base with the axes' values applied, its seed is derived from (spec seed, cell, replicate),
// and its measures are computed from that scene alone. So a table sorted by run index is the same whatever
// the order the runs ran in, and on however many workers.
//
// SWEEP.json is parsed and validated as strictly as a scene (engine/io/JsonReader.h): every error names the
// field by JSON pointer. A scene field set by an axis is checked by the scene's own reader; the message then
// names the axis value and the scene field ("/axes/0/values/2: sets /attention/beta: expected number > 0, got
// -1").
#pragma once

#include "engine/attention/VelocityField.h"
#include "engine/backend/ComputeBackend.h"
#include "engine/dynamics/DeviceStepper.h"
#include "engine/io/JsonReader.h"
#include "engine/scene/RunBudget.h"
#include "engine/scene/RunCost.h"
#include "engine/scene/Scene.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace flowscope {

// A malformed sweep spec; `pointer` is in the spec (a bad input: exit code 2).
struct SweepError : JsonError {
    using JsonError::JsonError;
};

// A particle simulation, the Gaussian mode's moment ODEs, a generative flow's training (the base: training
// settings, engine/flows/TrainerSettings.h) or a posterior flow's (the base: an inverse problem,
// engine/inverse/Problem.h). The last two are the training modes (docs/sweeps.md#flow-sweeps).
enum class SweepMode { Particles, Moments, Flow, Posterior };
inline bool isTrainingMode(SweepMode m) {
    return m == SweepMode::Flow || m == SweepMode::Posterior;
}

struct SweepAxis {
    std::string name;                  // the table's column
    std::vector<std::string> pointers; // the scene fields it sets, all to the same value
    bool scale = false;                // multiply every number under each pointer by the value instead
    bool integer = false;              // values are integers (a range's points rounded)
    std::vector<double> values;
    std::string at; // where the values are in the spec ("/axes/0/values" or "/axes/0/range")
};

// A random matrix drawn for every run from the run's seed and written to scene fields (e.g. the random Q of
// the rank histograms of Figs 4 and 11). normal: rows x d entries N(0, 1); gram: S S^T with S a d x d normal
// matrix (a random covariance). Each target gets the matrix times its scale (and / sqrt(d) when asked).
struct SweepDraw {
    enum class Kind { Normal, Gram } kind = Kind::Normal;
    enum class Rows { HalfD, D, Fixed } rowsKind = Rows::HalfD; // normal: floor(d/2), d or `rows` rows
    int rows = 0;
    struct Target {
        std::string pointer;
        double scale = 1.0;
        bool overSqrtD = false;
    };
    std::vector<Target> targets;
};

enum class SweepMeasure {
    Clusters,       // particles: final cluster count
    Rank,           // particles: final numerical rank of the covariance; moments: #eigenvalues > threshold
    TimeToClusters, // particles: first recorded time with at most k clusters (NaN: never)
    DivergenceTime, // particles: the time of the run's stopping event; moments: the first blow-up event
    Energy,         // particles: final interaction energy
    Entropy,        // particles: final mean attention entropy
    Kinetic,        // particles: final kinetic energy
    Outcomes,       // moments: trajectories converged / blown up / at max_iter / other
    TMax,           // moments: the smallest finite blow-up time t_max of the cell's trajectories
    Prop2TMax,      // moments: Prop 2's predicted t_max for the first initial covariance (NaN: none)
    Prop2BlowUp,    // moments: 1 when B = VA + A^T V^T has a positive eigenvalue (Prop 2: blow-up), else 0
    // The training modes: measured on the trained flow (the averaged parameters).
    Kl,       // flow: held-out NLL - H(p) (8gaussians, checkerboard; NaN elsewhere); posterior: the reverse
              // KL E_q[log q - log p(x | y)] where the posterior is Gaussian in closed form (a linear model
              // and a Gaussian prior; NaN elsewhere)
    Mmd2,     // flow: MMD² of generated samples against held-out data
    Nll,      // flow: held-out NLL
    Lambda,   // both: the final λ, and β
    Beta,     //
    Rejected, // both: the steps rejected (a non-finite loss or gradient)
    Seconds,  // both: the run's wall time (training and the final evaluation)
    RelL1,    // posterior: the relative L1 error of the posterior mean against the truth (NaN without one)
    Misfit,   // posterior: the mean data misfit of the final samples
    Outside,  // posterior: final samples outside the forward model's domain (EIT: κ <= 0 somewhere)
    Folded,   // flow: the fraction of generated tokens where the worst RWPO sub-step folds (det J_F <= 0)
    Mass,     // flow: the model density's mass on a grid (Evaluation::gridMass): about 1 where the density
              // formula is a density; above 1 the NLL and KL are not a likelihood's (they can go below 0)
    Plateaus, // particles: how many plateaus log E_beta climbs against log t (engine/dynamics/Staircase.h)
};

struct SweepMeasureSpec {
    SweepMeasure kind = SweepMeasure::Clusters;
    int k = 1; // TimeToClusters
};

struct SweepSpec {
    std::string name, description;
    SweepMode mode = SweepMode::Particles;
    JsonReader::Json base; // the base scene's JSON; a run's scene is it with the axes and draws applied
    std::string baseDir = ".";
    std::vector<SweepAxis> axes;
    std::vector<SweepDraw> draws;
    std::vector<SweepMeasureSpec> measures;
    int replicates = 1;
    std::uint64_t seed = 1;  // the training modes: replicate r's seed is seed + r in every cell (paired)
    bool seedInitial = true; // set /initial/seed of each run to the run's seed
    bool skipInvalid =
        false; // a cell whose scene is invalid is recorded as invalid (NaN) instead of an error
    double rankThreshold = 0.1; // moments: rank = #eigenvalues of the final covariance > this (Figs 4, 11)
    JsonReader::Json canonical; // the spec with its base resolved: what sweep.json holds and the hash covers

    long cells() const;
    long runs() const { return cells() * replicates; }
    // The table's columns: run, cell, replicate, seed, valid, the axes, the measures' columns.
    std::vector<std::string> columns() const;
    // The measures' columns alone (the values a run computes), in table order.
    std::vector<std::string> measureColumns() const;
    std::size_t fixedColumns() const { return 5 + axes.size(); }
    // A hex digest of the canonical spec: journals and tables of another spec are refused.
    std::string hash() const;
};

// Parses and validates SWEEP.json text. `specDir` resolves a base scene file; `presetDir` the preset names.
// Throws SweepError.
SweepSpec sweepFromJson(const std::string& text, const std::string& specDir, const std::string& presetDir);
// Reads a spec file (SweepError with pointer "" for I/O and syntax errors).
SweepSpec loadSweep(const std::string& path, const std::string& presetDir);

// Where run `run` sits: its cell, replicate, seed (< 2^53, exact as a double) and axis values. A scene's
// seed is derived from (spec seed, cell, replicate); a training mode's is spec seed + replicate, the same in
// every cell, so that cells (and sweeps of the same seed) compare flows trained from the same seeds.
struct SweepPoint {
    long run = 0, cell = 0;
    int replicate = 0;
    std::uint64_t seed = 0;
    std::vector<double> values; // one per axis
};
SweepPoint sweepPoint(const SweepSpec& spec, long run);

// The first cell where the axes named in `values` take those values and the other axes their first value;
// -1 when a name is no axis or an axis has no such value.
long sweepCellWith(const SweepSpec& spec, const std::vector<std::pair<std::string, double>>& values);

// The scene of a run: the base with the axes' values, the draws and the seed applied, validated. Throws
// SweepError naming the cell (its axis values) and the scene's message, or, in a training mode, saying that
// its runs have no scene (sweepRunDocument).
Scene sweepScene(const SweepSpec& spec, long run);
// The document a run computes from: the base with the axes' values, the draws and the seed applied (not
// validated). A scene; in the flow mode the training settings, seed and iterations included; in the
// posterior mode the problem, with /flow/seed and /flow/base_seed the run's seed.
JsonReader::Json sweepRunDocument(const SweepSpec& spec, long run);
// The scene of a run as it is opened elsewhere (flowscope-cli sweep --print-scene, a click on a cell in the
// app): sweepScene, with a moment grid of a single point (a cell of a sweep over the trace-1 disc) turned
// into the initial covariance it stands for and the grid cleared. Then simulate, the particles drawn from
// N(mean, Σ0) and the Gaussian analysis all start from the cell's Σ0; the moment solution is the run's own
// (a grid replaces initial.cov).
Scene sweepSceneToOpen(const SweepSpec& spec, long run);

// Checks every cell's scene before any work (errors name the axis value alone when it is invalid on its own,
// else the cell) and returns the largest run budget among them (engine/scene/RunBudget.h). With skipInvalid,
// invalid cells are counted in `invalid` instead. Throws SweepError.
struct SweepCheck {
    RunBudget largest;
    long invalid = 0;
    // The particle runs' estimated time, all runs on one worker (RunCost.h; the moment mode's runs are not
    // estimated), and the costliest run's.
    double seconds = 0;
    RunCost costliest;
};
SweepCheck checkSweep(const SweepSpec& spec);

// What a sweep's particle runs compute on: the fields (null: the CPU's) and, where the backend has one, its
// device stepper, which keeps the tokens on the device between steps (Simulation::setStepper), as
// flowscope-cli simulate runs a scene.
struct SweepCompute {
    std::shared_ptr<const ComputeBackend> backend; // null: the CPU
};
// An opened backend, kept alive (its device) by the worker that computes on it.
SweepCompute sweepComputeOn(std::shared_ptr<const ComputeBackend> backend);

// One run: the table row's values after the fixed columns' (the measures' columns), computed by simulating
// the run's scene (on `compute`; default: the CPU) or solving its moment ODEs. An invalid cell of a
// skipInvalid sweep gives NaN everywhere and valid = false.
struct SweepRunResult {
    bool valid = true;
    std::vector<double> measures;
};
SweepRunResult runSweepRun(const SweepSpec& spec, long run, const SweepCompute& compute = {});

// The full table row of a run: run, cell, replicate, seed, valid, axis values, then `r.measures`.
std::vector<double> sweepRow(const SweepSpec& spec, long run, const SweepRunResult& r);

} // namespace flowscope
