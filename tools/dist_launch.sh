#!/usr/bin/env bash
# What tools/dist_train.sh and tools/dist_test.sh share: runs a script of
# tools/ in NPROC processes with torch.distributed.run and MMEngine's pytorch
# launcher (the packages installed, as tools/install.sh installs them).
#   tools/dist_launch.sh SCRIPT NPROC [SCRIPT args]
# NNODES, NODE_RANK, PORT and MASTER_ADDR select a multi-machine run, PYTHON
# the interpreter.
set -euo pipefail
SCRIPT=$1
NPROC=$2
NNODES=${NNODES:-1}
NODE_RANK=${NODE_RANK:-0}
PORT=${PORT:-29500}
MASTER_ADDR=${MASTER_ADDR:-127.0.0.1}
PYTHON=${PYTHON:-python}

exec "$PYTHON" -m torch.distributed.run \
    --nnodes="$NNODES" \
    --node_rank="$NODE_RANK" \
    --master_addr="$MASTER_ADDR" \
    --nproc_per_node="$NPROC" \
    --master_port="$PORT" \
    "$(dirname "$0")/$SCRIPT" \
    "${@:3}"
