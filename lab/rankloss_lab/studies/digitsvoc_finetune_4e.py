# Study: fine-tuning a cross-entropy detector (the stand-in for the
# pre-trained initialisation real users start from) for 4 more epochs with
# cross-entropy or with the RaMBO AP loss, on DigitsVOC.
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_finetune_4e.py
# The starting checkpoint is the final one of the cross-entropy run of
# `digitsvoc_scratch_16e` at its selected lr and selection seed (run that
# study's select phase first). Every seed starts from the same checkpoint;
# seeds vary the fine-tuning only. Learning rates chosen on val.
_base_ = './digitsvoc_scratch_16e.py'
description = """Fine-tuning, 4 epochs (lr / 10 after 3), from the final
cross-entropy checkpoint of the 16-epoch from-scratch study (its selected lr,
seed 0); DigitsVOC train / val / test."""
pretrained = dict(spec='lab/rankloss_lab/studies/digitsvoc_scratch_16e.py', method='ce')
options = [
    'train_cfg.max_epochs=4', 'param_scheduler.0.end=20',
    'param_scheduler.1.end=4', 'param_scheduler.1.milestones=[3]'
]
_ce = 'configs/digitsvoc/faster-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py'
_rambo = 'configs/digitsvoc/faster-rcnn_r18-w32_fpn_rambo_16e_digitsvoc.py'
methods = dict(
    _delete_=True,
    ce=dict(label='cross-entropy', config=_ce,
            lrs=[0.004, 0.01, 0.02, 0.04]),
    # the paper's margin 0.15 (the config ships margin 0)
    rambo=dict(label='RaMBO (paper settings)', config=_rambo,
               lrs=[0.01, 0.04, 0.1, 0.2],
               options=['model.roi_head.bbox_head.loss_cls.margin=0.15']),
    # margin 0, as the from-scratch configs ship (its own lr grid)
    margin0=dict(label='RaMBO, margin 0', config=_rambo,
                 lrs=[0.01, 0.04, 0.1],
                 options=['model.roi_head.bbox_head.loss_cls.margin=0.0']),
)
