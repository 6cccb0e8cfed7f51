#include "Help.h"

#include "Commands.h"

#include "engine/backend/Registry.h"
#include "engine/core/Text.h"
#include "engine/scene/SceneSchema.h"

#include <algorithm>
#include <map>
#include <regex>
#include <sstream>

namespace flowscope::cli {

namespace {

// The command table: each entry starts with a line of two spaces and the command's words; lines indented
// further continue it. Blank lines separate groups.
constexpr const char* kUsage = R"(usage: flowscope-cli <command> [options]

commands:
  simulate SCENE.json --out traj.npy [--float32] [--every K] [--backend {backends}] [--max-memory SIZE]
        [--max-time DURATION] [--set /POINTER=VALUE ...]
      integrate the particle system of a scene; writes a (T, N, d) .npy and traj.json beside it
      (times, observables, events); gl and vulkan compute velocities on the GPU in float32; each
      --set /attention/beta=4 (repeatable; any field by its JSON pointer, a JSON value or a bare word:
      /attention/type=l2) replaces a field of the scene before the run, checked as the scene file is
      (`flowscope-cli help set` lists every parameter with its range and default);
      a run estimated above a minute says so before it starts, --max-time 10m refuses one above 10 min
  presets [--dir DIR]
      list the shipped presets, one line each
  share SCENE.json [--set /POINTER=VALUE ...]
      print the scene as one URL-safe share string (fs1. + base64url of its deflated JSON); every command that
      takes a SCENE.json also takes such a string in its place; tokens from a file are inlined
  share --decode STRING [--out scene.json] [--set /POINTER=VALUE ...]
      write the scene of a share string (atomically), or print it without --out
  moments SCENE.json --out moments.json|moments.npy [--method adaptive|paper] [--every K] [--final-only]
        [--max-memory SIZE] [--set /POINTER=VALUE ...]
      Gaussian mode: integrate the mean/covariance ODEs for the scene's initial Gaussian or its trace-1 grid;
      writes times, means, covariances and the event of each trajectory (converged / blow-up with t_max /
      max-iter); --final-only keeps the first and last state of each. .npy: the covariances (R, K, d, d),
      beside them <stem>_means.npy (R, K, d) and <stem>_times.npy (R, K), NaN after a trajectory ends
  bench moments [--json] [--threads 1,2]
      trajectories per second for the Fig 3(a) grid (1184 trajectories) to its stopping rule, adaptive
      against the authors' projected Euler, at each thread count (default: all cores); the authors' NumPy
      algorithm beside it: python3 bench/moments_peer.py --cli PATH/flowscope-cli
  bench particles [--json] [--d D] [--n 1024,4096,...] [--variants softmax,l2,...]
        [--precision float32,float64] [--backend {backends}] [--peak-flops F] [--no-baseline] [--device-steps]
        [--error]
      pair-interactions per second of one velocity evaluation, against a dense Eigen baseline, and the
      fraction of the FP32 peak (measured on the CPU, or F flop/s for a GPU) at (4d + 2) flops per pair;
      --device-steps times whole Euler steps with the tokens kept on the GPU (the GUI's path) instead;
      --error adds the relative error against float64 on 256 evenly spaced rows (kernel averages);
      variants: softmax, l2, sinkhorn, linear, exp, relu, sigmoid, masked, masked-alibi (masked with
      positional decay lambda = 8), multihead, rwpo; a masked row says its time as a fraction of softmax's
  ranks [--attention softmax|l2] [--v identity|random] [--method paper|adaptive] [--dims 3,4,5] [--runs 100]
        [--seed 40] [--threshold 0.1] [--include-exceptions] [--steps a,b,c] [--tol-low X] [--max-iter N]
        [--n-max N] [--threads N] [--out ranks.json]
      rank histograms of the limiting covariances (Fig 4 softmax, Fig 11 l2): prints a table; --out writes
      per-dimension histograms, exceptions, non-converged attempts, exact-limit histograms (V = I), per-run
      spectra and the parameters as JSON. Defaults follow the paper's protocol; --seed is the Q-list seed;
      --max-iter caps Euler steps (paper) or field evaluations per attempt (adaptive, default 2000000)
  theory influence SCENE.json [--out influence.csv|influence.json] [--t T] [--width M]
        [--set /POINTER=VALUE ...]
      the "lost in the middle" profile (arXiv 2605.09213; docs/math/theory.md#influence): the influence of
      each source position on the last token at time T (default: the scene's horizon), predicted to first
      order about independent uniform tokens for softmax with Q = K = V = I on the circle, masked or not,
      with positional decay; --width M: the soft retrieval test's mode weights exp(-pi^2 n^2 / (2 M^2))
      (default 8, the paper's); columns index, s = (index + 1/2) / N, influence (at the scene's N) and
      mean_field (N -> infinity, masked scenes); says whether the profile is U-shaped and until when the
      mean field's is; without --out the CSV goes to stdout

  train --dataset NAME|--data FILE --out model.safetensors [--iters N] [--no-rwpo] [--batch B] [--layers M]
        [--width m] [--lr X] [--lr-final X] [--warmup K] [--clip-median K] [--resample-every K]
        [--average-iters K] [--reference-draws R] [--reference-size n] [--lambda0 X] [--beta0 X]
        [--train-lambda] [--freeze-beta] [--kernel corrected|as-printed|separable] [--include-self]
        [--rwpo-logdet exact|first-order] [--drift-logdet exact|first-order]
        [--transport-weight X (default 1/30)] [--hjb-weight X (default 0.1; 0 with the RWPO layer)]
        [--jitter X] [--seed S] [--eval-every K (default 500)] [--quiet]
        (earlier spellings still taken: --leave-one-out, --exact-logdet, --freeze-lambda)
      train a generative flow (OT-Flow potential + RWPO sparse-transformer layer; --no-rwpo: plain OT-Flow)
      on a toy dataset (swissroll circles rings moons 8gaussians pinwheel 2spirals checkerboard) or points
      from .npy/.csv; prints held-out NLL, KL, MMD2 and the model density's mass on a grid (about 1 unless
      the density formula overstates the map's expansion) as it goes; writes the model and model.json beside
      it (architecture, lambda, beta, h, data, seeds, metrics, training curve); an RWPO model keeps
      --reference-draws R (default 8) draws of --reference-size n points of its data (default: the batch
      size): its density is the mean of the R densities beside each draw's keys, and sample j inverts draw
      j mod R's map (one draw's density is rough where few keys lie within the kernel's width). Defaults not
      the paper's: the RWPO softmax leaves each query's own key out (--include-self: the paper's l = j too),
      and λ stays at --lambda0 (0.05; --train-lambda learns it, but its gradient misses the active set's
      boundary term and it climbs, spoiling the samples). --clip-median K caps each gradient's norm at K
      times the median of the last 64 (default 5; 0 = off): a batch on which the map folds gives a spike;
      --resample-every K draws a new batch every K iterations (default 0: every iteration with the RWPO
      layer, every 25 without)
  sample MODEL.safetensors --out samples.npy [--n 10000] [--seed S | --base Z.npy] [--batch 2000] [--explicit]
      samples (n x d, float32) from base normals drawn by the seed or read from --base (n x d), in batches
      (the RWPO layer's keys when the model has no reference batch); of a posterior flow (infer): n x d
      float64 posterior samples, pushed forward in batches of the training batch's size
  density MODEL.safetensors --out density.npy [--grid 200] [--half-width 4] [--reference 2000] [--seed S]
      the model density on a grid x grid lattice over [-w, w]^2 (row = y, column = x); with the RWPO layer
      the grid points are queries against the frozen keys of the model's reference draws, their densities
      averaged (of a model without a reference: --reference samples of the model's own)
  bench run [--json] [--backend {backends}] [--d 3] [--n 16384,...] [--every 4] [--steps 20]
        [--method euler|heun|rk4|dopri5] [--fields-only]
      whole runs of a softmax scene (Euler unless --method, float32) recording every K steps with every
      observable: steps/s, records/s, the time against the same run recording only at its ends, and per record
      the milliseconds of the download, the one velocity/entropy/energy pass, the moments and the cluster count;
      --fields-only runs a GPU backend's fields without its device stepper (a read-back per stage)
  bench view [--json] [--backend {backends}] [--d 3] [--n 65536,...] [--every 4] [--method euler|...]
        [--seconds 3] [--size 1280x800] [--fps 60]
      the particle view drawn headless (EGL, no display) while the app's run steps, frames paced at --fps
      (0: unpaced): frames/s, milliseconds a frame takes and how late it starts, steps/s against the same
      run not drawn, records/s (every K steps; device runs at most ~15 a second, as the app); with gl the
      points come from the run's device copy of the tokens, as in the app
  bench train [--json] [--iters 20] [training options]
      milliseconds per training iteration, plain OT-Flow against OT-Flow + RWPO, float32 (--no-rwpo: the
      plain model alone)
  bench sweep [--ranks 2] [--json]
      runs per second of the shipped sweeps, serial against two workers (threads, and MPI ranks where built)
  bench model [--json] [--model DIR] [--tokens 512] [--layers L] [--width 768] [--heads 12]
        [--precision float32,float64] [--repeats 3] [--ode-steps 2,...] [--ode-layer 0] [--ode-head 0] [--no-ode]
        [--no-baseline] [--seed S]
      the speed of a checkpoint's forward pass (docs/models.md): without --model a random GPT-2 checkpoint
      of GPT-2 small's shape (or --width, --heads, --layers; F32, seed S) written to a temporary folder;
      tokens 7919 i mod V; per precision the medians of reading the weights and of the pass, the pass on one
      thread as the baseline, float64 against float32, Gflop/s against the FP32 peak, and the checksum
      (sum of |x| over the hidden states); then the ODE of one head beside the layers (the Models tab's Build
      ODE) at each --ode-steps RK4 steps a layer (default: the tab's), with several each one's distance to the
      finest (a convergence study)

  sweep SWEEP.json|NAME --out DIR [--jobs N] [--backend {backends}] [--schedule dynamic|static]
        [--shard I/N] [--max-memory SIZE] [--max-time DURATION]
      a study (docs/sweeps.md): every run of a base scene with its axes' values, each run's measures
      journaled in DIR as it finishes (a rerun, or DIR/sweep.json --out DIR, runs only what is missing),
      then the table DIR/results.csv, results.json and a .npy per column; NAME: a shipped sweep
      (assets/sweeps: fig4-ranks-softmax, fig11-ranks-l2, sphere-beta-n, disc-tmax); under
      mpirun -n P rank 0 hands out the runs; "mode": "flow" or "posterior" sweeps trained flows (the
      base: train's settings, or an inverse problem; docs/sweeps.md#flow-sweeps)
  sweep SWEEP.json --out DIR --slurm-script [--shards N] [--jobs N] > job.sh
      a Slurm job array of N shards and the merge job after it
  sweep merge DIR
      the shards' journals into the table
  sweep plot DIR [--x AXIS] [--y AXIS] --measure M [--minus DIR2] --out fig.png|fig.svg
      a heatmap of M over two axes (each cell's mean and sd written in it on grids up to 8 x 8), or its
      histograms over one; --minus: M less DIR2's M in the row of the same seed and shared axis values
      (paired differences: a flow sweep with the RWPO layer minus one without)
  sweep SWEEP.json --print-scene R
      run R's scene, for simulate or moments
  sweep SWEEP.json --print-run R
      what run R computes: its scene, its train command line (flow) or its problem (posterior)

  infer PROBLEM.json|NAME --out posterior.safetensors [--samples s.npy] [--rwpo|--no-rwpo] [--iters N]
        [--batch B] [--frame prior|laplace] [--seed S] [--every K] [--summary-samples n] [--threads T]
        [--train-lambda] [--max-time DURATION]
      fit a posterior flow to a Bayesian inverse problem (docs/inverse.md): the flow of train run forward
      from N(0, I) and trained by reverse KL against p(x|y) ∝ exp(-|y - F(x)|²/2σ²) p(x); shipped problems:
      linear-gaussian, lorenz63, elliptic, eit (assets/problems); prints the loss, the data misfit, the
      posterior mean and spread and, where the problem has a truth, the relative L1 error of the mean;
      --train-lambda trains the RWPO layer's λ (frozen at 0.05 otherwise) with the active set's boundary
      term (docs/math/flows.md#active-set-gradient); samples outside the forward model's domain (EIT:
      kappa <= 0) reject their step and are counted (the record's training.outside_samples);
      writes the model (sample reads it) and its record (curve, summary) beside it

  train-transformer --task A|B --out model.safetensors [--lambda-ot X] [--steps M] [--arch ot|node|discrete]
        [--blocks D] [--horizon T] [--integrator euler|rk4] [--convention element-mean|paper] [--increment]
        [--layer-norm] [--width d] [--pad-copy] [--routing-init] [--mlp H] [--iters N] [--batch B] [--lr X]
        [--lr-final X] [--average-iters K] [--seed S] [--eval-every K] [--eval-sets 1000]
        [--drop-rates 0,0.01,...] [--quiet]
      train a continuous-time Transformer (OT-Transformer: one ODE whose velocity is the block stack; node:
      one ODE per block; discrete: the plain Transformer) on task A (straight-line toy with a closed-form
      optimum) or B (2-D point-cloud classification; docs/math/transformers.md), objective (8): task loss +
      lambda_ot * transport cost (element-mean: the code's sum dt |f|^2 / numel; paper: 1/2 sum dt |f|^2_F per
      set); prints the stability threshold T L^2, held-out loss, accuracy, straightness, speed CV, distance
      to the closed form (A), the empirical Lipschitz ratio against Theorem 2's bound, and for B accuracy
      against point-drop rate; writes the model and model.json beside it. --average-iters K evaluates and
      saves the running average of the parameters (the mean of the iterates, then an exponential moving
      average with time constant K iterations; default 200; 0: the last iterate)
      Task A: --width d > 2 pads the tokens to [x; 0] (--pad-copy: [x; x; 0]), --routing-init routes the
      copy's mean to the MLP; with --increment --lr-final 5e-3 --iters 16000 this gets within 1 % of the
      closed form (README)
  eval-transformer MODEL.safetensors [--drop-rates 0,0.05,0.1,0.2,0.5] [--sets 1000] [--seed S] [--out r.json]
      the same evaluation on fresh held-out sets (seeded), with the drop-rate table for task B models; a model
      whose outputs are not finite (NaN, overflow) is a runtime failure (exit code 1, nothing written)

  render SCENE.json --out anim.mp4|anim.gif|frames/ [--view particles|cone|disc] [--frames 120] [--fps 30]
        [--size 1280x720] [--dt-per-frame X] [--hud|--no-hud] [--caption auto|TEXT] [--no-particles]
        [--max-time DURATION] [--set /POINTER=VALUE ...]
      an animation of a view, drawn headless (EGL, no display needed): frame k shows simulation time k * X
      (default X: the scene's step times output.every); --hud adds the particle view's heads-up display,
      --caption a strip with the scene's name, parameters and t (auto) or TEXT ({t}: the time);
      --no-particles: the cone or disc without the particles' covariance (no particle simulation)
  render --view training --out anim.mp4|anim.gif|frames/ [--dataset NAME|--data FILE] [--side-by-side]
        [--iters-per-frame 10] [--frames 120] [--fps 30] [--size 1280x720] [--caption auto|TEXT]
        [--picture-samples 1000] [--seed S] [the training options of train: --no-rwpo --batch --lr ...]
      an animation of a flow being trained, drawn headless by the app's Flows view (no display, no OpenGL):
      frame k shows the model after k * K iterations (K: --iters-per-frame; frame 0: the initial model), with
      held-out metrics every 200 iterations as in the app; --side-by-side trains with and without the RWPO
      layer; --caption auto shows the data, the iteration, lambda, beta and the loss, TEXT replaces
      {iteration}; --picture-samples: generated samples and data points drawn (with the RWPO layer a
      picture costs O(n^2) per layer); the same command gives the same frames bit for bit

  model layers MODEL_DIR (--text "..." | --ids 3,1,4) --out h.npy [--float64] [--layers L]
      a Hugging Face checkpoint (MODEL_DIR: config.json, model.safetensors; GPT-2, ALBERT or BERT) run on the
      tokens (--text through the folder's tokenizer: GPT-2 vocab.json + merges.txt, ALBERT spiece.model):
      writes the hidden states (L + 1, n, D) as Hugging Face's output_hidden_states (GPT-2: the last after
      ln_f), float32 unless --float64; --layers L: GPT-2's and BERT's first L layers, ALBERT's shared layer L
      times (any L); docs/models.md
  model gram MODEL_DIR (--text "..." | --ids 3,1,4)... --layers 0,5,30,48 --out gram.png|gram.svg|gram.json
        [--bins 50] [--log]
      histograms of <x_i, x_j> (i < j) of the l2-normalised tokens at each chosen layer, on one set of bins
      over [-1, 1] (counts and densities), and the mean cosine of every layer up to the deepest chosen; a
      .png or .svg draws the panels on one density scale and writes the data to <stem>.json beside it;
      several --text (or --ids) compare inputs: each runs alone, the panels overlay one outline per input
      with a legend, and the JSON lists them under "inputs"; --log draws log10 of the density, in whole
      decades from the one below the smallest non-empty bin's (an empty bin: no bar)
  model scene MODEL_DIR (--text "..." | --ids 3,1,4) --layer K [--head H] --out scene.json
      the scene of the papers' attention ODE with head H of layer K (B = W_Q^T W_K / sqrt(d_k), value map
      W_O W_V; biases left out) from the tokens entering layer K: post-LN models on the sphere, GPT-2 from
      its ln_1 inputs, causal; flowscope-cli simulate runs it (docs/math/models.md)

exit codes: 0 success, 1 runtime failure, 2 invalid input (the message names the field)
)";

// --- Examples and the parsed command table ---

// One example per command, shown under its help.
const std::map<std::string, std::string>& examples() {
    static const std::map<std::string, std::string> table = {
        {"simulate", "flowscope-cli simulate assets/presets/default.json --out traj.npy --every 10"},
        {"presets", "flowscope-cli presets"},
        {"share", "flowscope-cli share assets/presets/default.json"},
        {"moments",
         "flowscope-cli moments assets/presets/cone-fig3a-blowup.json --out moments.npy --final-only"},
        {"bench", "flowscope-cli bench particles --d 3 --n 1024,4096"},
        {"bench moments", "flowscope-cli bench moments --threads 1,2"},
        {"bench run", "flowscope-cli bench run --d 3 --n 16384 --every 4"},
        {"bench view", "flowscope-cli bench view --backend gl --n 65536 --seconds 3"},
        {"bench train", "flowscope-cli bench train --iters 40"},
        {"bench sweep", "flowscope-cli bench sweep --ranks 2"},
        {"bench model", "flowscope-cli bench model --precision float32 --no-ode"},
        {"ranks", "flowscope-cli ranks --dims 3 --runs 20 --out ranks.json"},
        {"train", "flowscope-cli train --dataset moons --iters 2000 --out moons.safetensors"},
        {"sample", "flowscope-cli sample moons.safetensors --n 5000 --out samples.npy"},
        {"density", "flowscope-cli density moons.safetensors --grid 200 --out density.npy"},
        {"sweep", "flowscope-cli sweep sphere-beta-n --out study/ --jobs 2"},
        {"infer", "flowscope-cli infer linear-gaussian --iters 400 --out posterior.safetensors"},
        {"train-transformer", "flowscope-cli train-transformer --task A --iters 2000 --out a.safetensors"},
        {"eval-transformer", "flowscope-cli eval-transformer a.safetensors --sets 1000"},
        {"render", "flowscope-cli render assets/presets/default.json --frames 120 --out clusters.mp4"},
        {"theory",
         "flowscope-cli theory influence assets/presets/lost-in-the-middle.json --out influence.csv"},
        {"model", "flowscope-cli model layers ~/models/gpt2 --text \"The cat sat on the mat.\" --out h.npy"},
        {"model gram", "flowscope-cli model gram ~/models/albert-xlarge-v2 --text \"...\" --layers 0,5,30,48 "
                       "--out gram.png"},
        {"model scene", "flowscope-cli model scene ~/models/gpt2 --text \"The cat sat on the mat.\" --layer "
                        "0 --head 0 --out scene.json"},
    };
    return table;
}

struct Entry {
    std::vector<std::string> words; // the command's words up to its first argument: {"bench", "run"}
    std::string text;               // the entry's lines
};

bool isWord(const std::string& w) {
    return !w.empty() &&
           std::all_of(w.begin(), w.end(), [](char c) { return (c >= 'a' && c <= 'z') || c == '-'; });
}

// The table, parsed once per process (commandNames, commandOptions and commandHelp all read it).
const std::vector<Entry>& entries() {
    static const std::vector<Entry> table = [] {
        std::vector<Entry> list;
        std::istringstream in(withBackendChoices(kUsage));
        bool inCommands = false;
        for (std::string line; std::getline(in, line);) {
            if (line == "commands:") {
                inCommands = true;
                continue;
            }
            if (!inCommands) continue;
            if (line.rfind("exit codes:", 0) == 0) break;
            if (line.size() > 2 && line[0] == ' ' && line[1] == ' ' && line[2] != ' ') {
                Entry e;
                std::istringstream words(line);
                for (std::string w; words >> w && isWord(w) && e.words.size() < 2;) e.words.push_back(w);
                e.text = line + "\n";
                list.push_back(e);
            } else if (!list.empty() && !line.empty()) {
                list.back().text += line + "\n";
            }
        }
        return list;
    }();
    return table;
}

std::vector<std::string> optionsIn(const std::string& text) {
    static const std::regex option("--[a-z][a-z0-9-]*");
    std::vector<std::string> found;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), option); it != std::sregex_iterator(); ++it)
        found.push_back(it->str());
    return found;
}

} // namespace

std::string usageText() {
    return withBackendChoices(kUsage);
}

std::vector<std::string> commandNames() {
    std::vector<std::string> names;
    for (const Entry& e : entries())
        if (std::find(names.begin(), names.end(), e.words.front()) == names.end())
            names.push_back(e.words.front());
    return names;
}

std::vector<std::string> commandOptions(const std::string& command) {
    std::vector<std::string> options;
    bool trainingOptions = false; // bench train, render --view training: train's options too
    for (const Entry& e : entries())
        if (e.words.front() == command) {
            for (const std::string& o : optionsIn(e.text)) options.push_back(o);
            trainingOptions |= command != "train" && e.text.find("training options") != std::string::npos;
        }
    if (trainingOptions)
        for (const std::string& o : commandOptions("train"))
            if (o != "--out") options.push_back(o);
    options.push_back("--help");
    std::sort(options.begin(), options.end());
    options.erase(std::unique(options.begin(), options.end()), options.end());
    return options;
}

std::string commandHelp(const std::vector<std::string>& words) {
    if (words.empty()) return "";
    if (words.front() == "set") return settingsHelp();
    const std::vector<Entry>& all = entries();
    // The entries of the sub-command when one is named and exists ("bench run"), else all of the command's.
    auto matches = [&](const Entry& e, std::size_t n) {
        return e.words.size() >= n && std::equal(words.begin(), words.begin() + long(n), e.words.begin());
    };
    const std::size_t depth = words.size() >= 2 && std::any_of(all.begin(), all.end(),
                                                               [&](const Entry& e) { return matches(e, 2); })
                                  ? 2
                                  : 1;
    std::string body;
    for (const Entry& e : all)
        if (matches(e, depth)) body += e.text;
    if (body.empty()) return "";
    // The commands that take train's options (bench train, render --view training) list them.
    if (words.front() != "train" && body.find("training options") != std::string::npos) {
        std::string line = "      training options (as train):";
        for (const std::string& o : commandOptions("train")) {
            if (o == "--out" || o == "--help") continue;
            if (line.size() + o.size() + 1 > 114) {
                body += line + "\n";
                line = "       ";
            }
            line += " " + o;
        }
        body += line + "\n";
    }
    std::string help = "usage: flowscope-cli " + words.front() +
                       (depth == 2 ? " " + words[1] : std::string()) + " ...\n\n" + body;
    // A subcommand's own example ("bench model"), else its command's.
    auto ex = depth == 2 ? examples().find(words[0] + " " + words[1]) : examples().end();
    if (ex == examples().end()) ex = examples().find(words.front());
    if (ex != examples().end()) help += "\nexample:\n  " + ex->second + "\n";
    help += "\nexit codes: 0 success, 1 runtime failure, 2 invalid input (the message names the field)\n";
    return help;
}

// --- Settings, suggestions, version, completion ---

std::string settingsHelp() {
    std::string text =
        "usage: flowscope-cli COMMAND SCENE ... --set /POINTER=VALUE ...\n\n"
        "The scene's parameters (docs/scene.md), each as POINTER = default (what it accepts; live or "
        "restart).\nlive: a running simulation takes a new value (the Scene panel, flowscope.Run.set); "
        "restart: a new run.\n\n";
    std::string section = "none yet";
    for (const SceneParam& p : sceneParams()) {
        const std::string parent(p.parent());
        if (parent != section) {
            text += "\n" + (parent.empty() ? std::string("scene") : parent.substr(1)) + ":\n";
            section = parent;
        }
        const SceneParam::Json def = paramDefault(p);
        text += "  " + std::string(p.pointer) + " = " +
                (p.required ? std::string("(required)") : def.dump()) + "  (" + acceptedText(p) + "; " +
                (p.edit == ParamEdit::Live ? "live" : "restart") + ")\n      " + std::string(p.summary) +
                "\n";
    }
    text += "\nThe structure is set the same way, with a JSON value: "
            "--set '/attention/heads/0/V=[[0, 1], [-1, 0]]',\n"
            "--set '/initial/mean=[0.5, 0]', --set /initial/path=tokens.npy.\n";
    return text;
}

std::string nearestWord(const std::string& word, const std::vector<std::string>& candidates) {
    const std::vector<std::string_view> names(candidates.begin(), candidates.end());
    return std::string(closestName(word, names, std::max<std::size_t>(1, (word.size() + 1) / 3)));
}

std::string versionText() {
    std::string backends;
    for (const BackendInfo& b : listBackends()) backends += (backends.empty() ? "" : ", ") + b.id;
    std::string parts;
#if FLOWSCOPE_HAVE_MPI
    parts += " mpi";
#endif
#if FLOWSCOPE_HAVE_RENDER
    parts += " render";
#endif
#if FLOWSCOPE_HAVE_HEADLESS_DRAWING
    parts += " headless-drawing";
#endif
    return std::string("flowscope-cli ") + FLOWSCOPE_VERSION + "\nbackends: " + backends +
           "\nbuilt with:" + (parts.empty() ? " nothing optional" : parts) + "\n";
}

std::string bashCompletion() {
    std::string commands, cases;
    for (const std::string& c : commandNames()) {
        commands += (commands.empty() ? "" : " ") + c;
        std::string options;
        for (const std::string& o : commandOptions(c)) options += (options.empty() ? "" : " ") + o;
        cases += "        " + c + ") opts=\"" + options + "\" ;;\n";
    }
    return "# bash completion for flowscope-cli (generated: flowscope-cli completion bash)\n"
           "_flowscope_cli() {\n"
           "    local cur=${COMP_WORDS[COMP_CWORD]} opts\n"
           "    if ((COMP_CWORD == 1)); then\n"
           "        COMPREPLY=($(compgen -W \"" +
           commands +
           " help completion --help --version\" -- \"$cur\"))\n"
           "        return\n"
           "    fi\n"
           "    case ${COMP_WORDS[1]} in\n" +
           cases + "        help) COMPREPLY=($(compgen -W \"" + commands +
           "\" -- \"$cur\")); return ;;\n"
           "        *) opts=\"\" ;;\n"
           "    esac\n"
           "    if [[ $cur == -* ]]; then\n"
           "        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
           "    else\n"
           "        COMPREPLY=($(compgen -f -- \"$cur\"))\n"
           "    fi\n"
           "}\n"
           "complete -o filenames -F _flowscope_cli flowscope-cli\n";
}

} // namespace flowscope::cli
