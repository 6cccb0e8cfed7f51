#!/usr/bin/env bash
# The RWPO study (docs/rwpo-study.md, issue 50): flow sweeps with and without the RWPO layer, from the same
# seeds, on 8gaussians, checkerboard and moons over λ0 x layers (h = 1/layers), then the kernel form and
# include-self at each dataset's best cell, then the linear-Gaussian posterior (closed-form KL) with and
# without the layer. Every figure under docs/figures/rwpo-study/ and every table of the doc comes from here.
#
#   scripts/rwpo-study.sh CLI [--quick] [--out DIR] [--jobs N] [--figures DIR]
#
# --quick is what docs/rwpo-study.md reports (sized to a 2-core machine: 800 iterations of batch 256 for the
# generative flows; 600 of batch 128 and a smaller λ0 x layers grid for the posterior; three seeds a cell);
# without it the same grids run at the generative flows' defaults (3000 iterations, batch 1024) and the
# posterior's (1500 of batch 256, the full grid). DIR (default build/rwpo-study) keeps the sweeps' directories: a rerun runs only what
# is missing (the sweeps' journals). The tables are printed and written to DIR/tables.md.
set -euo pipefail

cli=${1:?usage: scripts/rwpo-study.sh CLI [--quick] [--out DIR] [--jobs N] [--figures DIR]}
shift
here=$(cd "$(dirname "$0")/.." && pwd)
out=build/rwpo-study
figures=$here/docs/figures/rwpo-study
jobs=2
quick=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) quick=1 ;;
    --out) out=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --figures) figures=$2; shift ;;
    *) echo "rwpo-study: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
if [[ $quick == 1 ]]; then
  iterations=800 batch=256 posterior_iterations=600 posterior_batch=128
  posterior_lambdas='[0.01, 0.05, 0.2]' posterior_layers='[4, 8]'
else
  iterations=3000 batch=1024 posterior_iterations=1500 posterior_batch=256
  posterior_lambdas='[0.01, 0.05, 0.2, 0.5]' posterior_layers='[4, 8, 16]'
fi
lambdas='[0.01, 0.05, 0.2, 0.5]'
layers='[4, 8, 16]'
measures='["kl", "mmd2", "nll", "lambda", "beta", "rejected", "folded", "seconds"]'
# The later sweeps also record the density's mass on a grid (about 1 for a density).
measures_mass='["kl", "mmd2", "nll", "lambda", "beta", "rejected", "folded", "mass", "seconds"]'
mkdir -p "$out/specs" "$figures"

sweep() { # NAME SPEC-JSON: writes the spec and runs it (a rerun does only the missing runs)
  echo "$2" > "$out/specs/$1.json"
  nice -n 19 "$cli" sweep "$out/specs/$1.json" --out "$out/$1" --jobs "$jobs"
}

plot() { # SWEEP BASELINE X Y MEASURE FIGURE
  "$cli" sweep plot "$out/$1" --minus "$out/$2" --x "$3" --y "$4" --measure "$5" --out "$figures/$6.png"
}

# The best cell of a sweep against its baseline: the (lambda0, layers) with the lowest mean paired difference
# of MEASURE (KL where the dataset has a density, else MMD²).
best_cell() { # SWEEP BASELINE MEASURE -> "lambda0 layers"
  python3 - "$out/$1/results.csv" "$out/$2/results.csv" "$3" <<'EOF'
import csv, sys, statistics
rows = list(csv.DictReader(open(sys.argv[1])))
base = {(r["seed"], r["layers"]): float(r[sys.argv[3]]) for r in csv.DictReader(open(sys.argv[2]))}
cells = {}
for r in rows:
    cells.setdefault((r["lambda0"], r["layers"]), []).append(float(r[sys.argv[3]]) - base[(r["seed"], r["layers"])])
best = min(cells, key=lambda k: statistics.mean(cells[k]))
print(f"{float(best[0]):g} {float(best[1]):g}")
EOF
}

base() { # DATASET [EXTRA-FIELDS]: a flow base
  echo "{\"dataset\": \"$1\", \"iterations\": $iterations, \"batch\": $batch${2:-}}"
}

for data in 8gaussians checkerboard moons; do
  measure=kl
  [[ $data == moons ]] && measure=mmd2 # moons has no closed-form density: no KL
  sweep "$data-plain" "{\"name\": \"$data without RWPO\", \"mode\": \"flow\", \"base\": $(base $data ', "rwpo": false'),
    \"axes\": [{\"pointer\": \"/layers\", \"values\": $layers}], \"measures\": $measures, \"replicates\": 3}"
  sweep "$data-rwpo" "{\"name\": \"$data with RWPO\", \"mode\": \"flow\", \"base\": $(base $data),
    \"axes\": [{\"pointer\": \"/lambda0\", \"values\": $lambdas}, {\"pointer\": \"/layers\", \"values\": $layers}],
    \"measures\": $measures, \"replicates\": 3}"
  for m in kl mmd2; do
    [[ $data == moons && $m == kl ]] && continue
    plot "$data-rwpo" "$data-plain" lambda0 layers $m "$data-$m"
  done
  read -r best_lambda best_layers < <(best_cell "$data-rwpo" "$data-plain" $measure)
  echo "$data: best cell lambda0 = $best_lambda, layers = $best_layers (by $measure)"
  # The kernel form (0 corrected, 1 as printed, 2 separable) and include-self (0: leave-one-out, the
  # default; 1: the paper's softmax over l = j too) at the best cell.
  sweep "$data-kernel" "{\"name\": \"$data with RWPO, kernels\", \"mode\": \"flow\",
    \"base\": $(base $data ", \"lambda0\": $best_lambda"),
    \"axes\": [{\"pointer\": \"/layers\", \"values\": [$best_layers]}, {\"pointer\": \"/kernel\", \"values\": [0, 1, 2]},
               {\"pointer\": \"/include_self\", \"values\": [0, 1]}],
    \"measures\": $measures_mass, \"replicates\": 3}"
  plot "$data-kernel" "$data-plain" kernel include_self $measure "$data-kernel-$measure"
done

# β0 x λ0 at 8 layers: the kernel's variance is 2h/β, so β0 sets how far the sub-step's kernel reaches (β is
# learned from β0).
for data in 8gaussians checkerboard moons; do
  measure=kl
  [[ $data == moons ]] && measure=mmd2
  sweep "$data-beta" "{\"name\": \"$data with RWPO, 8 layers\", \"mode\": \"flow\", \"base\": $(base $data),
    \"axes\": [{\"pointer\": \"/layers\", \"values\": [8]}, {\"pointer\": \"/lambda0\", \"values\": [0.01, 0.05, 0.2]},
               {\"pointer\": \"/beta0\", \"values\": [0.25, 1, 4]}],
    \"measures\": $measures_mass, \"replicates\": 3}"
  plot "$data-beta" "$data-plain" lambda0 beta0 $measure "$data-beta-$measure"
done

# The shipped defaults at the full budget (3000 iterations of batch 1024, 8 layers, λ0 = 0.05): does the
# difference the short runs show survive training to the end?
for data in 8gaussians checkerboard; do
  full='"iterations": 3000, "batch": 1024'
  sweep "$data-full-plain" "{\"name\": \"$data without RWPO, full budget\", \"mode\": \"flow\",
    \"base\": {\"dataset\": \"$data\", $full, \"rwpo\": false},
    \"axes\": [{\"pointer\": \"/layers\", \"values\": [8]}], \"measures\": $measures_mass, \"replicates\": 3}"
  sweep "$data-full-rwpo" "{\"name\": \"$data with RWPO, full budget\", \"mode\": \"flow\",
    \"base\": {\"dataset\": \"$data\", $full},
    \"axes\": [{\"pointer\": \"/lambda0\", \"values\": [0.05]}, {\"pointer\": \"/layers\", \"values\": [8]}],
    \"measures\": $measures_mass, \"replicates\": 3}"
done

# EIT (d = 32), 400 iterations as docs/inverse.md#comparison, seeds 0, 1, 2 (the seeds of its table).
eit_measures='["rel_l1", "misfit", "lambda", "beta", "rejected", "outside", "seconds"]'
sweep eit-plain "{\"name\": \"EIT without RWPO\", \"mode\": \"posterior\", \"base\": \"eit\",
  \"set\": {\"/flow/rwpo\": false, \"/flow/iterations\": 400},
  \"axes\": [{\"name\": \"layers\", \"pointer\": \"/flow/layers\", \"values\": [8]}],
  \"measures\": $eit_measures, \"replicates\": 3, \"seed\": 0}"
sweep eit-rwpo "{\"name\": \"EIT with RWPO\", \"mode\": \"posterior\", \"base\": \"eit\",
  \"set\": {\"/flow/rwpo\": true, \"/flow/iterations\": 400},
  \"axes\": [{\"name\": \"lambda0\", \"pointer\": \"/flow/lambda0\", \"values\": [0.01, 0.05]},
             {\"name\": \"layers\", \"pointer\": \"/flow/layers\", \"values\": [8]}],
  \"measures\": $eit_measures, \"replicates\": 3, \"seed\": 0}"

# The linear-Gaussian posterior: KL against the closed form, with the layer over λ0 x layers, without it over
# layers (the prior's frame, as the problem file).
posterior_measures='["kl", "rel_l1", "misfit", "lambda", "beta", "rejected", "outside", "seconds"]'
sweep linear-gaussian-plain "{\"name\": \"linear-Gaussian without RWPO\", \"mode\": \"posterior\",
  \"base\": \"linear-gaussian\", \"set\": {\"/flow/rwpo\": false, \"/flow/iterations\": $posterior_iterations,
  \"/flow/batch\": $posterior_batch},
  \"axes\": [{\"name\": \"layers\", \"pointer\": \"/flow/layers\", \"values\": $posterior_layers}],
  \"measures\": $posterior_measures, \"replicates\": 3}"
sweep linear-gaussian-rwpo "{\"name\": \"linear-Gaussian with RWPO\", \"mode\": \"posterior\",
  \"base\": \"linear-gaussian\", \"set\": {\"/flow/rwpo\": true, \"/flow/iterations\": $posterior_iterations,
  \"/flow/batch\": $posterior_batch},
  \"axes\": [{\"name\": \"lambda0\", \"pointer\": \"/flow/lambda0\", \"values\": $posterior_lambdas},
             {\"name\": \"layers\", \"pointer\": \"/flow/layers\", \"values\": $posterior_layers}],
  \"measures\": $posterior_measures, \"replicates\": 3}"
plot linear-gaussian-rwpo linear-gaussian-plain lambda0 layers kl linear-gaussian-kl

# The tables: with and without the layer at the defaults (lambda0 0.05, 8 layers) and at the best cell.
python3 - "$out" <<'EOF' | tee "$out/tables.md"
import csv, os, statistics, sys
out = sys.argv[1]

def table(name):
    return list(csv.DictReader(open(os.path.join(out, name, "results.csv"))))

def stat(values):
    v = [x for x in values if x == x]
    if not v:
        return "n/a"
    sd = statistics.stdev(v) if len(v) > 1 else float("nan")
    return f"{statistics.mean(v):.3g} ± {sd:.2g}"

def rows_at(rows, **at):
    return [r for r in rows if all(float(r[k]) == v for k, v in at.items())]

def paired(rwpo, plain, measure):
    base = {(r["seed"], r["layers"]): float(r[measure]) for r in plain}
    return [float(r[measure]) - base[(r["seed"], r["layers"])] for r in rwpo]

def headline(sets, measures, nll=False):
    # nll: also the paired NLL difference, which is the KL difference (the same entropy), moons' included.
    print("| problem | cell | " + " | ".join(f"{m} with | {m} without | {m} with − without" for m in measures)
          + (" | NLL with − without" if nll else "") + " | seconds with / without |")
    print("|---" * (2 + 3 * len(measures) + nll + 1) + "|")
    for name, pick in sets:
        rwpo, plain = table(name + "-rwpo"), table(name + "-plain")
        cells = {(float(r["lambda0"]), float(r["layers"])) for r in rwpo}
        def score(cell):
            return statistics.mean(paired(rows_at(rwpo, lambda0=cell[0], layers=cell[1]),
                                          rows_at(plain, layers=cell[1]), pick))
        best = min(cells, key=score)
        for label, (lam, lay) in (("defaults", (0.05, 8.0)), ("best", best)):
            w, p = rows_at(rwpo, lambda0=lam, layers=lay), rows_at(plain, layers=lay)
            line = f"| {name} | {label}: λ0 = {lam:g}, {lay:g} layers |"
            for m in measures:
                line += f" {stat([float(r[m]) for r in w])} | {stat([float(r[m]) for r in p])} | {stat(paired(w, p, m))} |"
            if nll:
                line += f" {stat(paired(w, p, 'nll'))} |"
            line += f" {stat([float(r['seconds']) for r in w])} / {stat([float(r['seconds']) for r in p])} |"
            print(line)

print("### Generative flows (mean ± sd over 3 seeds; with − without paired by seed)\n")
headline([("8gaussians", "kl"), ("checkerboard", "kl"), ("moons", "mmd2")], ["kl", "mmd2"], nll=True)
print("\n### The kernel training chooses: final β and the kernel's width s = √(2h/β), h = 1/M (λ0 = 0.05)\n")
print("| dataset | M | final β | s |")
print("|---|---|---|---|")
for data in ("8gaussians", "checkerboard", "moons"):
    rwpo = table(data + "-rwpo")
    for m in (4, 8, 16):
        w = rows_at(rwpo, lambda0=0.05, layers=m)
        widths = [(2 / (m * float(r["beta"]))) ** 0.5 for r in w]
        print(f"| {data} | {m} | {stat([float(r['beta']) for r in w])} | {stat(widths)} |")
print("\n### The shipped defaults at the full budget (3000 iterations, batch 1024, λ0 = 0.05, 8 layers)\n")
print("| dataset | KL with | KL without | KL with − without | MMD² with | MMD² without | MMD² with − without | seconds with / without |")
print("|---|---|---|---|---|---|---|---|")
for data in ("8gaussians", "checkerboard"):
    w, p = table(data + "-full-rwpo"), table(data + "-full-plain")
    line = f"| {data} |"
    for m in ("kl", "mmd2"):
        line += f" {stat([float(r[m]) for r in w])} | {stat([float(r[m]) for r in p])} | {stat(paired(w, p, m))} |"
    print(line + f" {stat([float(r['seconds']) for r in w])} / {stat([float(r['seconds']) for r in p])} |")
print("\n### β0 x λ0 at 8 layers (with − without, paired by seed; final β)\n")
print("| dataset | λ0 | β0 | KL with − without | MMD² with − without | final β | grid mass |")
print("|---|---|---|---|---|---|---|")
for data in ("8gaussians", "checkerboard", "moons"):
    rows, plain = table(data + "-beta"), table(data + "-plain")
    for lam in (0.01, 0.05, 0.2):
        for beta in (0.25, 1, 4):
            w = rows_at(rows, lambda0=lam, beta0=beta)
            p = rows_at(plain, layers=8)
            print(f"| {data} | {lam:g} | {beta:g} | {stat(paired(w, p, 'kl'))} | {stat(paired(w, p, 'mmd2'))} | "
                  f"{stat([float(r['beta']) for r in w])} | {stat([float(r['mass']) for r in w])} |")
print("\n### EIT (d = 32, 400 iterations, seeds 0 / 1 / 2)\n")
print("| flow | relative L1 error | misfit | rejected steps | samples outside | seconds |")
print("|---|---|---|---|---|---|")
def seeds(rows, m, fmt):
    return " / ".join(format(float(r[m]), fmt) for r in rows)
eit = [("none", table("eit-plain"))]
for lam in (0.01, 0.05):
    eit.append((f"RWPO, λ0 = {lam:g}", rows_at(table("eit-rwpo"), lambda0=lam)))
for label, rows in eit:
    print(f"| {label} | {seeds(rows, 'rel_l1', '.3e')} | {seeds(rows, 'misfit', '.4g')} | "
          f"{seeds(rows, 'rejected', '.0f')} | {seeds(rows, 'outside', '.0f')} | {seeds(rows, 'seconds', '.0f')} |")
print("\n### The linear-Gaussian posterior (KL against the closed form; relative L1 error of the mean)\n")
headline([("linear-gaussian", "kl")], ["kl", "rel_l1"])
print("\n### Kernel form and include-self at the best cell (with − without, paired by seed)\n")
print("| dataset | kernel | include-self | KL with − without | MMD² with − without | grid mass with | final β |")
print("|---|---|---|---|---|---|---|")
for data in ("8gaussians", "checkerboard", "moons"):
    rows, plain = table(data + "-kernel"), table(data + "-plain")
    for kernel, kname in ((0, "corrected"), (1, "as printed"), (2, "separable")):
        for self_ in (0, 1):
            w = rows_at(rows, kernel=kernel, include_self=self_)
            p = rows_at(plain, layers=float(w[0]["layers"]))
            print(f"| {data} | {kname} | {'yes' if self_ else 'no'} | {stat(paired(w, p, 'kl'))} | "
                  f"{stat(paired(w, p, 'mmd2'))} | {stat([float(r['mass']) for r in w])} | "
                  f"{stat([float(r['beta']) for r in w])} |")
print("\n### Cost: total training seconds per sweep (one worker's time, summed)\n")
print("| sweep | runs | seconds |")
print("|---|---|---|")
for name in sorted(d for d in os.listdir(out) if os.path.isfile(os.path.join(out, d, "results.csv"))):
    rows = table(name)
    print(f"| {name} | {len(rows)} | {sum(float(r['seconds']) for r in rows):.0f} |")
EOF
