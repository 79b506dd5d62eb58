#!/usr/bin/env bash
# A Slurm batch job that runs one vyred on each of its nodes, owning the node's GPUs, and its
# clients beside it: every task of the job reaches the daemon of its own node through the same
# socket path, in node-local storage. Submit with the client command (default: vyrectl devices):
#
#   sbatch deploy/slurm/vyred-job.sh python3 my_client.py
#
# The daemon step holds the GPUs (--gres); the client steps share the nodes with it (--overlap,
# Slurm 20.11 or later) and need no GPU of their own. On nodes where vyred runs as a systemd
# service instead, drop the daemon step and point VYRED_SOCKET at /run/vyred/vyred.sock.
#
# Environment: VYRED_CACHE, the disk cache folder on each node (default
# /var/tmp/vyred-cache-$USER, kept between jobs so that pipelines come from disk);
# VYRED_BACKEND (default vulkan).
#SBATCH --job-name=vyred
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --gres=gpu:h100:2
#SBATCH --exclusive
#SBATCH --time=01:00:00
set -euo pipefail

export VYRED_SOCKET=${TMPDIR:-/tmp}/vyred-$SLURM_JOB_ID/vyred.sock
export VYRED_CACHE=${VYRED_CACHE:-/var/tmp/vyred-cache-$USER}
export VYRED_BACKEND=${VYRED_BACKEND:-vulkan}
nodes=${SLURM_JOB_NUM_NODES:-1}

# One daemon per node: a step of one task per node that holds the node's GPUs.
# shellcheck disable=SC2016 # expanded by the step's shell, on its node
srun --nodes="$nodes" --ntasks-per-node=1 --gres=gpu:h100:2 --overlap bash -c '
	mkdir -p "$(dirname "$VYRED_SOCKET")" "$VYRED_CACHE"
	exec vyred --socket "$VYRED_SOCKET" --cache-dir "$VYRED_CACHE" --device all \
		--backend "$VYRED_BACKEND"' &
daemons=$!

# Every node's daemon must answer before the clients start.
# shellcheck disable=SC2016 # expanded by the step's shell, on its node
srun --nodes="$nodes" --ntasks-per-node=1 --overlap bash -c '
	for _ in $(seq 1200); do
		vyrectl ping --count 1 >/dev/null 2>&1 && exit 0
		sleep 0.1
	done
	echo "vyred-job: no vyred answered on $(hostname) at $VYRED_SOCKET" >&2
	exit 1'

status=0
if [ $# -gt 0 ]; then
	srun --overlap "$@" || status=$?
else
	srun --nodes="$nodes" --ntasks-per-node=1 --overlap vyrectl devices || status=$?
fi

# SIGTERM reaches the daemons through srun: they finish what is in flight and save their caches.
kill -TERM "$daemons"
wait "$daemons" || true
exit "$status"
