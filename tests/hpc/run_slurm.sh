#!/usr/bin/env bash
# Prove the SLURM profile on a real (one-node, localhost) SLURM cluster.
#
#   tests/hpc/run_slurm.sh [--smoke-only] [--keep-cluster]
#
# 1. installs Debian's slurm-wlm and munge when they are missing (needs root);
# 2. starts munged (as user munge), slurmctld and slurmd for a one-node cluster
#    on localhost: /etc/slurm/slurm.conf (written only when absent or written
#    by this script before; nested `srun` inside a job finds no other place,
#    because the jobstep plugin strips SLURM_CONF from its environment), state,
#    logs and the job-completion record in $GLFS_HPC_WORK/slurm;
# 3. submits a trivial job with sbatch, then a trivial Snakefile through
#    `snakemake --executor slurm`;
# 4. runs the tiny test workflow (tests/workflow/tiny/config.yaml, plus a
#    minimal simulation: tests/hpc/tiny_simulation.yaml) through
#    profiles/slurm into one directory and locally (--cores 2) into another;
# 5. checks that the compute jobs went through sbatch (slurmctld's job
#    completion log: job ids, rule names, states) and that the outputs of the two
#    runs are identical (tests/hpc/compare_outputs.py);
# 6. stops only the daemons it started.
#
# Exits non-zero on any failure.  Environment overrides:
#   GLFS_HPC_WORK     work directory (default: a fresh mktemp -d)
#   GLFS_HPC_CONFIG   workflow config file(s) for step 4, space-separated (default
#                     tests/workflow/tiny/config.yaml tests/hpc/tiny_simulation.yaml)
#   GLFS_HPC_TARGETS  snakemake targets for step 4 (default: the config's rule all)
#   GLFS_HPC_TIMEOUT  seconds before a snakemake run is killed (default 1800)
#   SNAKEMAKE, PYTHON paths of the snakemake and python executables
#                     (default: the snakemake on PATH and the python next to it,
#                     else /work/venv/bin/*)
#
# Facts about SLURM 22.05 on this kind of machine (see docs/guides/atlases.md):
# no systemd, so the daemons are started directly; proctrack/linuxproc and
# task/none because cgroups are not available in a container; no slurmdbd, so
# `sacct` fails ("accounting storage is disabled") and the profile uses
# `slurm-status-command: squeue`; a hung snakemake is stopped with SIGKILL
# (timeout -s KILL), never SIGTERM (it would wait for lost jobs for ever).
set -euo pipefail

SMOKE_ONLY=0
KEEP_CLUSTER=0
for arg in "$@"; do
    case "$arg" in
        --smoke-only) SMOKE_ONLY=1 ;;
        --keep-cluster) KEEP_CLUSTER=1 ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "$0" | sed '$d'
            exit 0
            ;;
        *)
            echo "run_slurm.sh: unknown argument '$arg' (expected --smoke-only or --keep-cluster)" >&2
            exit 2
            ;;
    esac
done

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# The snakemake on PATH (e.g. an activated CI virtualenv), else /work/venv.
if command -v snakemake >/dev/null 2>&1; then VENV_BIN="$(dirname "$(command -v snakemake)")"; else VENV_BIN=/work/venv/bin; fi
SNAKEMAKE="${SNAKEMAKE:-$VENV_BIN/snakemake}"
PYTHON="${PYTHON:-$VENV_BIN/python}"
export PATH="$(dirname "$SNAKEMAKE"):$PATH"
WORK="${GLFS_HPC_WORK:-$(mktemp -d /tmp/glfs-hpc.XXXXXX)}"
CONFIG="${GLFS_HPC_CONFIG:-tests/workflow/tiny/config.yaml tests/hpc/tiny_simulation.yaml}"
TIMEOUT="${GLFS_HPC_TIMEOUT:-1800}"
STATE="$WORK/slurm"
CONF=/etc/slurm/slurm.conf
MARKER="# Written by tests/hpc/run_slurm.sh"
HOST="$(hostname -s)"
T0=$(date +%s)

log() { echo "[run_slurm $(($(date +%s) - T0))s] $*"; }
die() {
    echo "[run_slurm] FAIL: $*" >&2
    exit 1
}

STARTED_MUNGE_PID=""
STARTED_CTLD=0
STARTED_SLURMD=0
WROTE_CONF=0
LOCAL_PID=""
# Wait up to 10 s for the processes to exit, so that a next run finds the
# ports free (a zombie, left when the parent does not reap, counts as gone).
wait_gone() {
    local pid alive
    for _ in $(seq 100); do
        alive=0
        for pid in "$@"; do
            if [[ -e /proc/$pid ]] && ! grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null; then
                alive=1
            fi
        done
        [[ $alive == 0 ]] && return 0
        sleep 0.1
    done
}
cleanup() {
    local rc=$? pids=()
    if [[ -n $LOCAL_PID ]]; then
        kill -KILL -- "-$LOCAL_PID" 2>/dev/null || kill -KILL "$LOCAL_PID" 2>/dev/null || true
    fi
    if [[ $STARTED_CTLD == 1 && $rc != 0 ]]; then
        # jobs left on the private cluster this script started
        squeue -h -o %i 2>/dev/null | xargs -r scancel 2>/dev/null || true
    fi
    if [[ $KEEP_CLUSTER == 1 ]]; then
        log "leaving the cluster running ($CONF, state in $STATE)"
    else
        if [[ $STARTED_SLURMD == 1 && -s "$STATE/slurmd.pid" ]]; then
            pids+=("$(cat "$STATE/slurmd.pid")")
        fi
        if [[ $STARTED_CTLD == 1 && -s "$STATE/slurmctld.pid" ]]; then
            pids+=("$(cat "$STATE/slurmctld.pid")")
        fi
        [[ -n $STARTED_MUNGE_PID ]] && pids+=("$STARTED_MUNGE_PID")
        if ((${#pids[@]})); then
            kill "${pids[@]}" 2>/dev/null || true
            wait_gone "${pids[@]}"
        fi
        if [[ $WROTE_CONF == 1 ]]; then
            rm -f "$CONF"
        fi
    fi
    if [[ $rc != 0 ]]; then
        echo "[run_slurm] failed (exit $rc) after $(($(date +%s) - T0)) s; logs under $WORK" >&2
        for f in "$STATE/slurmctld.log" "$STATE/slurmd.log"; do
            [[ -f $f ]] && { echo "--- tail $f" >&2; tail -n 20 "$f" >&2; }
        done
    fi
    exit $rc
}
trap cleanup EXIT

# ---- 1. install --------------------------------------------------------------
ensure_installed() {
    local missing=0
    for exe in munged munge unmunge slurmctld slurmd sbatch squeue scontrol sinfo; do
        command -v "$exe" >/dev/null 2>&1 || missing=1
    done
    if [[ $missing == 1 ]]; then
        [[ $(id -u) == 0 ]] || die "slurm-wlm/munge are missing and installing them needs root"
        log "installing slurm-wlm and munge with apt-get"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
    fi
    log "$(slurmctld -V) (Debian slurm-wlm), $(munged -V 2>&1 | head -n1)"
    if ! "$PYTHON" -c "import snakemake_executor_plugin_slurm" 2>/dev/null; then
        log "installing snakemake-executor-plugin-slurm into $("$PYTHON" -c 'import sys; print(sys.prefix)')"
        "$PYTHON" -m pip install --quiet "snakemake-executor-plugin-slurm>=2.8"
    fi
    log "snakemake $("$SNAKEMAKE" --version), executor plugin $("$PYTHON" -c \
        'import importlib.metadata as m; print(m.version("snakemake-executor-plugin-slurm"))')"
}

# ---- 2. cluster --------------------------------------------------------------
start_munge() {
    if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
        log "munged already running"
        return
    fi
    [[ -f /etc/munge/munge.key ]] || {
        if command -v mungekey >/dev/null; then mungekey --create; else create-munge-key -f; fi
        chown munge:munge /etc/munge/munge.key
        chmod 0400 /etc/munge/munge.key
    }
    install -d -o munge -g munge -m 0755 /run/munge
    install -d -o munge -g munge -m 0711 /var/lib/munge
    install -d -o munge -g munge -m 0700 /var/log/munge
    runuser -u munge -- munged
    for _ in $(seq 50); do
        munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break
        sleep 0.1
    done
    munge -n | unmunge >/dev/null || die "munged does not answer"
    STARTED_MUNGE_PID="$(cat /run/munge/munged.pid)"
    log "started munged (pid $STARTED_MUNGE_PID)"
}

write_conf() {
    local ncpu mem
    ncpu="$(nproc)"
    # RealMemory a little below the machine's total: slurmd refuses a node
    # that reports less memory than configured.
    mem="$(free -m | awk '/^Mem:/ {print int($2 * 0.9)}')"
    if [[ -f $CONF ]] && ! grep -qF "$MARKER" "$CONF"; then
        die "$CONF exists and was not written by this script: not overwriting a real cluster's configuration"
    fi
    mkdir -p "$STATE/ctld" "$STATE/spool" "$(dirname "$CONF")"
    WROTE_CONF=1
    cat >"$CONF" <<EOF
$MARKER: a one-node cluster on localhost.
ClusterName=glfs
SlurmctldHost=$HOST
SlurmUser=root
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
# Completed jobs (id, name, state, times) are appended here: the proof that
# the workflow's jobs went through sbatch, independent of slurmdbd.
JobCompType=jobcomp/filetxt
JobCompLoc=$STATE/jobcomp.log
NodeName=$HOST CPUs=$ncpu RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

start_cluster() {
    unset SLURM_CONF
    if [[ -f $CONF ]] && scontrol ping 2>/dev/null | grep -q "is UP"; then
        # Reuse a cluster started earlier by this script (--keep-cluster).
        STATE="$(dirname "$(scontrol show config | awk '/^SlurmctldPidFile/ {print $3}')")"
        log "slurmctld already running (state in $STATE)"
    else
        write_conf
        slurmctld -c -f "$CONF"
        STARTED_CTLD=1
        log "started slurmctld"
    fi
    if [[ -s "$STATE/slurmd.pid" ]] && kill -0 "$(cat "$STATE/slurmd.pid")" 2>/dev/null; then
        log "slurmd already running"
    else
        slurmd -f "$CONF"
        STARTED_SLURMD=1
        log "started slurmd"
    fi
    local state=""
    for _ in $(seq 120); do
        state="$(sinfo -h -N -n "$HOST" -o %T 2>/dev/null || true)"
        [[ $state == idle ]] && break
        if [[ $state == down* || $state == drain* ]]; then
            scontrol update nodename="$HOST" state=resume 2>/dev/null || true
        fi
        sleep 0.5
    done
    [[ $state == idle ]] || die "node $HOST is '$state', not idle, after 60 s"
    log "node $HOST is idle: $(sinfo -h -N -o '%N cpus=%c mem=%m partition=%P')"
    JOBCOMP="$(scontrol show config | awk '/^JobCompLoc/ {print $3}')"
    [[ -n $JOBCOMP ]] || die "slurmctld has no JobCompLoc (jobcomp/filetxt) configured"
}

# ---- 3. smoke tests ----------------------------------------------------------
smoke_sbatch() {
    local out="$WORK/smoke/sbatch.out" jobid
    mkdir -p "$WORK/smoke"
    jobid="$(sbatch --parsable --wait -o "$out" --mem=100 -t 2 --wrap 'echo "hello from $SLURM_JOB_ID on $(hostname -s)"')" ||
        die "trivial sbatch job failed"
    grep -q "hello from $jobid" "$out" || die "sbatch job $jobid wrote no greeting to $out"
    log "sbatch OK: job $jobid ($(cat "$out"))"
}

smoke_snakemake() {
    local d="$WORK/smoke/snakemake"
    mkdir -p "$d"
    cat >"$d/Snakefile" <<'EOF'
rule all:
    input:
        "c.txt",


rule a:
    output:
        "a.txt",
    resources:
        mem_mb=200,
        runtime=2,
    shell:
        "echo $SLURM_JOB_ID > {output}"


rule b:
    input:
        "a.txt",
    output:
        "c.txt",
    resources:
        mem_mb=200,
        runtime=2,
    shell:
        "cat {input} > {output}; echo $SLURM_JOB_ID >> {output}"
EOF
    (cd "$d" && timeout -s KILL 600 "$SNAKEMAKE" --profile "$REPO/profiles/slurm" \
        --slurm-keep-successful-logs --slurm-init-seconds-before-status-checks 5 \
        >"$d/snakemake.log" 2>&1) || {
        tail -n 40 "$d/snakemake.log" >&2
        die "trivial Snakefile through the slurm profile failed (log: $d/snakemake.log)"
    }
    local ids
    ids="$(tr '\n' ' ' <"$d/c.txt")"
    [[ $(wc -l <"$d/c.txt") == 2 ]] && ! grep -qv '^[0-9]\+$' "$d/c.txt" ||
        die "trivial Snakefile: c.txt should hold two SLURM job ids, holds '$ids'"
    "$PYTHON" "$REPO/tests/hpc/check_slurm_jobs.py" "$d/snakemake.log" "$JOBCOMP" ||
        die "trivial Snakefile: SLURM job check failed"
    log "snakemake --profile profiles/slurm OK: rules a, b ran as SLURM jobs $ids"
}

# ---- 4./5. the tiny workflow through SLURM and locally ---------------------
# Each run gets its own directory that links every top-level entry of the
# repository except the ones a run writes (results, logs, benchmarks,
# .snakemake), so config paths relative to the repository root resolve.
make_rundir() {
    local d="$1" e b
    mkdir -p "$d"
    for e in "$REPO"/*; do
        b="$(basename "$e")"
        case "$b" in results | logs | benchmarks) continue ;; esac
        ln -sfn "$e" "$d/$b"
    done
}

run_workflow() {
    local rs="$WORK/run_slurm" rl="$WORK/run_local" targets=() configs=() c
    read -r -a configs <<<"$CONFIG"
    for c in "${configs[@]}"; do
        [[ -f "$REPO/$c" ]] || die "workflow config $c not found"
    done
    if [[ -n ${GLFS_HPC_TARGETS:-} ]]; then read -r -a targets <<<"$GLFS_HPC_TARGETS"; fi
    make_rundir "$rs"
    make_rundir "$rl"
    log "workflow: $CONFIG ${targets[*]:-(rule all)}; SLURM run in $rs, local run in $rl"
    # Local reference run in the background (the SLURM run mostly waits on the
    # scheduler's status checks), the SLURM run in the foreground.
    # setsid: its own process group, so that a failure can stop it (cleanup).
    (cd "$rl" && exec setsid timeout -s KILL "$TIMEOUT" "$SNAKEMAKE" "${targets[@]}" --cores 2 \
        --configfile "${configs[@]}" >"$rl/snakemake.log" 2>&1) &
    LOCAL_PID=$!
    local t_slurm rc_local=0
    t_slurm=$(date +%s)
    (cd "$rs" && timeout -s KILL "$TIMEOUT" "$SNAKEMAKE" "${targets[@]}" \
        --profile profiles/slurm --slurm-keep-successful-logs \
        --slurm-init-seconds-before-status-checks 5 \
        --configfile "${configs[@]}" >"$rs/snakemake.log" 2>&1) || {
        tail -n 60 "$rs/snakemake.log" >&2
        die "workflow through profiles/slurm failed (log: $rs/snakemake.log)"
    }
    log "SLURM run finished in $(($(date +%s) - t_slurm)) s"
    wait "$LOCAL_PID" || rc_local=$?
    LOCAL_PID=""
    if [[ $rc_local != 0 ]]; then
        tail -n 60 "$rl/snakemake.log" >&2
        die "local run failed with exit $rc_local (log: $rl/snakemake.log)"
    fi
    log "local run finished"

    log "checking that the jobs went through sbatch (scheduler record $JOBCOMP)"
    "$PYTHON" "$REPO/tests/hpc/check_slurm_jobs.py" "$rs/snakemake.log" "$JOBCOMP" ||
        die "SLURM job check failed"
    log "comparing outputs: SLURM run vs local run"
    "$PYTHON" "$REPO/tests/hpc/compare_outputs.py" "$rs/results" "$rl/results" ||
        die "outputs of the SLURM run differ from the local run"
}

# ---- main ------------------------------------------------------------------
ensure_installed
start_munge
start_cluster
smoke_sbatch
smoke_snakemake
if [[ $SMOKE_ONLY == 1 ]]; then
    log "smoke tests passed"
    exit 0
fi
run_workflow
log "PASS: SLURM proof complete in $(($(date +%s) - T0)) s"
