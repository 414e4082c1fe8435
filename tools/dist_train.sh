#!/usr/bin/env bash
# Distributed training on one machine: tools/dist_train.sh CONFIG GPUS [train.py args]
# e.g. tools/dist_train.sh configs/rambo/faster-rcnn_r50_fpn_rambo_1x_voc0712.py 8
# NNODES, NODE_RANK, PORT and MASTER_ADDR select a multi-machine run
# (tools/dist_launch.sh).
set -euo pipefail
exec bash "$(dirname "$0")/dist_launch.sh" train.py "$2" \
    "$1" --launcher pytorch "${@:3}"
