#!/usr/bin/env bash
# Distributed training on one machine: tools/dist_train.sh CONFIG GPUS [train.py args]
# e.g. tools/dist_train.sh configs/rambo/faster-rcnn_r50_fpn_rambo_1x_voc0712.py 8
# NNODES, NODE_RANK, PORT and MASTER_ADDR select a multi-machine run.
set -euo pipefail
CONFIG=$1
GPUS=$2
NNODES=${NNODES:-1}
NODE_RANK=${NODE_RANK:-0}
PORT=${PORT:-29500}
MASTER_ADDR=${MASTER_ADDR:-127.0.0.1}
PYTHON=${PYTHON:-python}

PYTHONPATH="$(dirname "$0")/..${PYTHONPATH:+:$PYTHONPATH}" \
"$PYTHON" -m torch.distributed.run \
    --nnodes="$NNODES" \
    --node_rank="$NODE_RANK" \
    --master_addr="$MASTER_ADDR" \
    --nproc_per_node="$GPUS" \
    --master_port="$PORT" \
    "$(dirname "$0")/train.py" \
    "$CONFIG" \
    --launcher pytorch "${@:3}"
