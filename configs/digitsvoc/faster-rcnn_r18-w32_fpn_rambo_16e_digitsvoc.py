# RaMBO AP loss twin of `faster-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py`: the
# paper's loss settings but margin 0, its own lr and score threshold 0
# (docs/detection.md#which-scores-rambo-ranks).
# Calibrate before thresholding (fit_score_calibration.py --write-config).
# Batch: 8 images per process; lr 0.1 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = './faster-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py'

model = dict(
    roi_head=dict(
        bbox_head=dict(
            # the loss's defaults are the paper's; for its margin:
            # --cfg-options model.roi_head.bbox_head.loss_cls.margin=0.15
            loss_cls=dict(_delete_=True, type='RaMBOAPLoss', margin=0.0))),
    test_cfg=dict(rcnn=dict(score_thr=0.0)))
# lr: chosen on val at margin 0, as at the paper's margin
# (docs/evidence/digitsvoc_scratch_16e.md)
optim_wrapper = dict(optimizer=dict(lr=0.1))

# Exact --resume and fp32 logits under --amp (docs/reliability.md).
custom_hooks = [dict(type='RankLossMemoryHook'), dict(type='RandomStateHook'),
                dict(type='RankLogitsFp32Hook')]
