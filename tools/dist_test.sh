#!/usr/bin/env bash
# Distributed testing on one machine: tools/dist_test.sh CONFIG CHECKPOINT GPUS [test.py args]
# NNODES, NODE_RANK, PORT and MASTER_ADDR select a multi-machine run
# (tools/dist_launch.sh).
set -euo pipefail
exec bash "$(dirname "$0")/dist_launch.sh" test.py "$3" \
    "$1" "$2" --launcher pytorch "${@:4}"
