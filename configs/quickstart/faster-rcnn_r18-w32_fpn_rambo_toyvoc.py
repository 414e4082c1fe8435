# Quickstart twin of `faster-rcnn_r18-w32_fpn_ce_toyvoc.py` with the RaMBO AP
# loss (margin 0) at its own lr, as chosen on val in the DigitsVOC study
# (docs/evidence/digitsvoc_scratch_16e.md).
# Batch: 8 images per process; lr 0.1 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = './faster-rcnn_r18-w32_fpn_ce_toyvoc.py'

# Test-time Platt calibration, sigmoid(a * logit + b) (docs/thresholds.md):
# without it DetInferencer's 0.3 threshold drew many times more boxes than
# objects. Fitted on the toy VOC's held-out val split from this config's own
# run by `tools/quickstart.py --calibrate` (fit_score_calibration.py
# --write-config); it changes no ranking.
score_calibration = (4.2146, -7.0203)

model = dict(
    roi_head=dict(
        bbox_head=dict(
            loss_cls=dict(
                _delete_=True,
                type='RaMBOAPLoss',
                memory=7,
                margin=0.0,  # the paper's: 0.15
                lambda_val=0.5,
                map_weight=2 / 3,
                apc_weight=1 / 3,
                loss_weight=1.0,
                calibration=score_calibration))),
    test_cfg=dict(rcnn=dict(score_thr=0.0)))

optim_wrapper = dict(optimizer=dict(lr=0.1))

# Exact --resume and fp32 logits under --amp (docs/reliability.md).
custom_hooks = [dict(type='RankLossMemoryHook'), dict(type='RandomStateHook'),
                dict(type='RankLogitsFp32Hook')]
