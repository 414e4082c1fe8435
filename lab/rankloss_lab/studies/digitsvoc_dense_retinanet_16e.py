# Study: focal loss against the RaMBO AP loss ranked over all anchors
# (`RaMBORetinaHead`) on DigitsVOC, RetinaNet R18-w32 FPN trained from
# scratch for 16 epochs.
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_dense_retinanet_16e.py
# The data, seeds and protocol are those of the two-stage study
# (`digitsvoc_scratch_16e.py`). Each loss's learning rate is chosen on val
# from its own grid (RaMBO's holds the 2-2.5x ratio to the baseline that the
# two-stage studies selected, and more); the ablation rows reuse RaMBO's
# selected lr ("lr_from"). Results: docs/evidence/, docs/dense.md.
_base_ = './digitsvoc_scratch_16e.py'  # data, seeds, selection seed
description = """RetinaNet R18-w32 FPN **from scratch**, 16 epochs (lr / 10
after 12), batch 8, DigitsVOC train (384 images) / val (160) / test (320)."""
baseline = 'focal'

_focal = 'configs/dense/retinanet/retinanet_r18-w32_fpn_focal_16e_digitsvoc.py'
_rambo = 'configs/dense/retinanet/retinanet_r18-w32_fpn_rambo_16e_digitsvoc.py'
_loss = 'model.bbox_head.loss_cls.'
methods = dict(
    _delete_=True,  # not the two-stage study's methods
    # 0.08 was added to focal's grid (and 0.2 to RaMBO's) after focal's best
    # of the first grid came out at its edge (0.04: val AP50 9.3; 0.02: 4.1)
    focal=dict(label='focal loss', config=_focal,
               lrs=[0.005, 0.01, 0.02, 0.04, 0.08]),
    rambo=dict(label='RaMBO over all anchors (sigmoid, margin 0)',
               config=_rambo, lrs=[0.01, 0.02, 0.04, 0.1, 0.2]),
    # the paper's margin, which gives no gradient at the head's
    # initialisation (docs/dense.md): does training ever start?
    margin015=dict(label='RaMBO, margin 0.15', config=_rambo,
                   lr_from='rambo', options=[_loss + 'margin=0.15']),
    space_logits=dict(label='RaMBO, logits score space', config=_rambo,
                      lr_from='rambo',
                      options=[_loss + 'score_space=logits']),
    tau7=dict(label='RaMBO, memory tau=7', config=_rambo, lr_from='rambo',
              options=[_loss + 'memory=7']),
)
# RaMBO plus focal loss (MixedRankLoss), as in the ATSS study: the focal row
# is its control (the mix's focal term is exactly the focal twin's loss).
# Grid first {0.02, 0.04, 0.08} (up to focal's selected 0.08); 0.005 and
# 0.01 added after its best came out at the low edge (0.02: val AP50 5.8;
# 0.04 and 0.08: 0.0).
methods['mix'] = dict(
    label='RaMBO + focal (MixedRankLoss)',
    config='configs/dense/retinanet/'
    'retinanet_r18-w32_fpn_rambo-focal_16e_digitsvoc.py',
    lrs=[0.005, 0.01, 0.02, 0.04, 0.08],
    # the sigmoid mix this study ran (the config ranks the logits since)
    options=['model.bbox_head.loss_cls.rank_loss.score_space=sigmoid'])
