#!/usr/bin/env bash
# The shipped sweeps run serially, under MPI and as a real Slurm job array, and all three give the same table
# (docs/sweeps.md, "Slurm"). This starts a one-node Slurm on localhost: munged, slurmctld and slurmd from
# Debian's munge and slurm-wlm, with their own key, socket, ports, state and logs in a temporary directory,
# so nothing of the machine's own configuration is read or changed. Then, per sweep, it submits the script
# that `flowscope-cli sweep --slurm-script` prints as a 3-task array, the merge as a job that depends on it
# (the two commands the script's header gives), and compares the merged table with the serial one byte for
# byte; and the same for `mpirun -n 2` where Open MPI is installed.
#
#   tests/slurm/one-node-slurm.sh FLOWSCOPE_CLI [SWEEP ...]      (default: the four shipped sweeps)
#
# Exit 0: every table identical. 77: skipped, with the reason (not root, or the packages are missing; ctest
# reports it as skipped). Anything else: a failure, with the daemons' logs printed.
set -uo pipefail

cli=$(realpath "$1")
shift
sweeps=("$@")
((${#sweeps[@]})) || sweeps=(disc-tmax sphere-beta-n fig4-ranks-softmax fig11-ranks-l2)

skip() {
    echo "SKIPPED: $*"
    exit 77
}
((EUID == 0)) || skip "slurmd must run as root to start jobs"
for tool in munged munge slurmctld slurmd sbatch sinfo scancel python3; do
    command -v "$tool" >/dev/null || skip "$tool is not installed (Debian: munge, slurm-wlm)"
done

work=$(mktemp -d /tmp/flowscope-slurm.XXXXXX)
chmod 755 "$work" # munged wants its socket directory searchable by all
pids=()
cleanup() {
    [[ -n ${SLURM_CONF:-} ]] && scancel --quiet --user=root 2>/dev/null
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null
    done
    [[ -n ${KEEP_SLURM_DIR:-} ]] || rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "FAILED: $*"
    for log in "$work"/*.log; do
        echo "--- $log (last 15 lines)"
        tail -n 15 "$log"
    done
    exit 1
}
# Waits up to $1 seconds for the command after it to succeed.
wait_for() {
    local seconds=$1
    shift
    for _ in $(seq $((seconds * 10))); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}

# Two free TCP ports for slurmctld and slurmd (the standard 6817/6818 may be a real cluster's).
read -r ctld_port slurmd_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')
node=$(hostname -s)
mkdir -p "$work/state" "$work/spool"

# munge: a fresh key, our own socket.
head -c 1024 /dev/urandom >"$work/munge.key"
chmod 600 "$work/munge.key"
munged --foreground --force --socket="$work/munge.sock" --key-file="$work/munge.key" \
    --pid-file="$work/munged.pid" --log-file="$work/munged.log" --seed-file="$work/munge.seed" 2>"$work/munged-stderr.log" &
pids+=($!)
wait_for 10 munge --socket="$work/munge.sock" --no-input || fail "munged did not start"

cat >"$work/slurm.conf" <<EOF
ClusterName=flowscope-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$work/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=flowscope Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$work/slurm.conf
slurmctld -D -f "$SLURM_CONF" >"$work/slurmctld-stdout.log" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$node" >"$work/slurmd-stdout.log" 2>&1 &
pids+=($!)
node_idle() { [[ $(sinfo --noheader --nodes="$node" --format=%t 2>/dev/null) == idle ]]; }
wait_for 60 node_idle || fail "the node did not come up idle"
echo "one-node Slurm up: $(sinfo --noheader --format='%P %D node(s) %c CPUs %t')"

# The table a run writes: results.csv and every column's .npy, in name order (results.json differs: it
# records the build, the machine and how the table was made).
table() {
    local dir=$1 f
    cat "$dir/results.csv"
    for f in "$dir"/*.npy; do
        echo "${f##*/}"
        cat "$f"
    done
}
same_table() { # NAME REF DIR
    cmp -s <(table "$2") <(table "$3") || fail "$1: the table of $3 differs from the serial one"
}

# All sweeps' arrays and merge jobs are queued at once: the node runs the tasks as its CPUs free up, and the
# test waits for the scheduler once, not per sweep.
merges=()
for sweep in "${sweeps[@]}"; do
    "$cli" sweep "$sweep" --out "$work/$sweep-slurm" --slurm-script --shards 3 --jobs 1 >"$work/$sweep.sh" ||
        fail "$sweep: --slurm-script failed"
    array=$(sbatch --parsable "$work/$sweep.sh") || fail "$sweep: sbatch refused the array script"
    # The merge, as the script's header says.
    merges+=("$(sbatch --parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes \
        --output="$work/$sweep-merge.log" --wrap "$cli sweep merge $work/$sweep-slurm")") ||
        fail "$sweep: sbatch refused the merge job"
done
all=$(
    IFS=,
    echo "${merges[*]}"
)
# squeue, not `sbatch --wait`: that polls with a back-off and would add half a minute to every wait.
jobs_left() { [[ -n $(squeue --noheader --jobs="$all" 2>/dev/null) ]]; }
for _ in $(seq 1200); do jobs_left || break; sleep 0.5; done
jobs_left && fail "the jobs did not end within 600 s"
echo "Slurm: ${#sweeps[@]} arrays of 3 tasks and their merge jobs ended after $SECONDS s"

have_mpi=0
command -v mpirun >/dev/null && have_mpi=1
for sweep in "${sweeps[@]}"; do
    "$cli" sweep "$sweep" --out "$work/$sweep-serial" --jobs 1 2>/dev/null || fail "$sweep: the serial run failed"
    [[ -f $work/$sweep-slurm/results.csv ]] ||
        fail "$sweep: the merge wrote no table ($(cat "$work/$sweep-merge.log" 2>/dev/null))"
    same_table "$sweep" "$work/$sweep-serial" "$work/$sweep-slurm"
    echo "$sweep: serial = Slurm array of 3 tasks + merge job"

    if ((have_mpi)); then
        mpirun --allow-run-as-root --oversubscribe -n 2 "$cli" sweep "$sweep" --out "$work/$sweep-mpi" \
            --jobs 1 >/dev/null 2>&1 || fail "$sweep: mpirun -n 2 failed"
        same_table "$sweep" "$work/$sweep-serial" "$work/$sweep-mpi"
        echo "$sweep: serial = mpirun -n 2"
    fi
done
echo "PASSED: ${#sweeps[@]} sweeps, identical tables ($SECONDS s)"
