#!/usr/bin/env bash
# Distributed training on one machine:
#   tools/dist_train.sh CONFIG GPUS [--total-batch N] [train.py args]
# e.g. the RaMBO paper's setting (total batch 8, lr 0.1) on 8 GPUs:
#   tools/dist_train.sh configs/rambo/faster-rcnn_r50_fpn_rambo_1x_voc0712.py 8 \
#       --total-batch 8 --cfg-options model.roi_head.bbox_head.loss_cls.global_ranking=True
# Without --total-batch each process loads the config's batch_size images, so
# the total batch is GPUS x batch_size and auto_scale_lr scales the lr to it.
# --total-batch N sets the per-process batch to N / (GPUS x NNODES) instead
# (lab/rankloss_lab/batch.py; docs/multi_gpu.md): with N the config's
# auto_scale_lr.base_batch_size, the run trains the config's total batch at
# the config's lr. NNODES, NODE_RANK, PORT and MASTER_ADDR select a
# multi-machine run (tools/dist_launch.sh), PYTHON the interpreter.
set -euo pipefail
CONFIG=$1
GPUS=$2
TOTAL=
ARGS=()
CFG_OPTIONS=()  # the --cfg-options given, for the batch helper
IN_OPTIONS=0
shift 2
while (($#)); do
    case $1 in
        --total-batch)
            [[ $# -ge 2 ]] || { echo 'dist_train.sh: --total-batch needs a number' >&2; exit 2; }
            TOTAL=$2
            IN_OPTIONS=0
            shift 2 ;;
        --total-batch=*)
            TOTAL=${1#--total-batch=}
            IN_OPTIONS=0
            shift ;;
        --cfg-options)
            IN_OPTIONS=1
            ARGS+=("$1")
            shift ;;
        -*)
            IN_OPTIONS=0
            ARGS+=("$1")
            shift ;;
        *)
            ((IN_OPTIONS)) && CFG_OPTIONS+=("$1")
            ARGS+=("$1")
            shift ;;
    esac
done
if [[ -n $TOTAL ]]; then
    WORLD=$((GPUS * ${NNODES:-1}))
    # the per-process batch (and a PKSampler's batch) for that total
    OPTIONS=$("${PYTHON:-python}" -m rankloss_lab.batch \
        "$CONFIG" --processes "$WORLD" --total-batch "$TOTAL" --print-options \
        ${CFG_OPTIONS[@]+--cfg-options "${CFG_OPTIONS[@]}"})
    read -r -a SPLIT <<< "$OPTIONS"
    ARGS+=(--cfg-options "${SPLIT[@]}")
fi
exec bash "$(dirname "$0")/dist_launch.sh" train.py "$GPUS" \
    "$CONFIG" --launcher pytorch ${ARGS[@]+"${ARGS[@]}"}
