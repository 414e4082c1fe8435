# Study: cross-entropy against the RaMBO AP loss on DigitsVOC, Faster R-CNN
# R18-w32 FPN trained from scratch for 16 epochs.
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_scratch_16e.py
# Each method's learning rate is chosen on val (grids wide enough to hold the
# paper's 10x ratio of RaMBO to CE); the ablation rows reuse RaMBO's
# selected lr (marked "lr_from"). Results: docs/evidence/.
description = """Faster R-CNN R18-w32 FPN **from scratch**, 16 epochs (lr / 10
after 12), batch 8, DigitsVOC train (384 images) / val (160) / test (320)."""
data = dict(
    root='data/digits_voc/VOCdevkit',
    make=['tools/dataset_converters/make_digits_voc.py', '{root}'])
seeds = [0, 1, 2]
select_seed = 0
baseline = 'ce'
options = []

_ce = 'configs/digitsvoc/faster-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py'
_rambo = 'configs/digitsvoc/faster-rcnn_r18-w32_fpn_rambo_16e_digitsvoc.py'
_loss = 'model.roi_head.bbox_head.loss_cls.'
# The RaMBO config ships margin 0 (the margin0 row below); the paper's rows
# and ablations set the paper's 0.15 back.
_paper = [_loss + 'margin=0.15']
methods = dict(
    ce=dict(label='cross-entropy', config=_ce,
            lrs=[0.01, 0.02, 0.04, 0.08]),
    rambo=dict(label='RaMBO (paper settings)', config=_rambo,
               lrs=[0.04, 0.1, 0.2, 0.4], options=_paper),
    # ranking back-ends
    ap_sigmoid=dict(label='AP loss, sigmoid ranker t=0.1', config=_rambo,
                    lr_from='rambo',
                    options=_paper + [_loss + 'ranker.type=SigmoidRanker',
                                      _loss + 'ranker.temperature=0.1']),
    ap_sodeep=dict(label='AP loss, SoDeep handcrafted sorter', config=_rambo,
                   lr_from='rambo',
                   options=_paper + [
                       _loss + 'ranker.type=SorterRanker',
                       _loss + 'ranker.sorter.type=HandcraftedSorter',
                       _loss + 'ranker.sorter.seq_len=100',
                       _loss + 'ranker.sorter.lambda_val=10.0']),
    # a mix with cross-entropy: dense gradients while the rank loss orders
    rambo_bce=dict(label='RaMBO + sigmoid CE (MixedRankLoss)',
                   config=_rambo.replace('_rambo_', '_rambo-bce_'),
                   lrs=[0.02, 0.04, 0.1]),
    # its control: the same head, loss and test score without the rank loss
    # (RaMBO's weight 0), so that a gain of the mix is not the sigmoid CE's
    bce=dict(label='sigmoid CE alone (the mix, RaMBO weight 0)',
             config=_rambo.replace('_rambo_', '_rambo-bce_'),
             lrs=[0.02, 0.04, 0.08],
             options=[_loss + 'rank_loss.loss_weight=0.0']),
    # the paper's ablations (Table 8)
    tau0=dict(label='RaMBO, memory tau=0', config=_rambo, lr_from='rambo',
              options=_paper + [_loss + 'memory=0']),
    map_only=dict(label='RaMBO, L_mAP only', config=_rambo, lr_from='rambo',
                  options=_paper + [_loss + 'map_weight=1.0',
                                    _loss + 'apc_weight=0.0']),
    apc_only=dict(label='RaMBO, L_APC only', config=_rambo, lr_from='rambo',
                  options=_paper + [_loss + 'map_weight=0.0',
                                    _loss + 'apc_weight=1.0']),
    lambda01=dict(label='RaMBO, lambda=0.1', config=_rambo, lr_from='rambo',
                  options=_paper + [_loss + 'lambda_val=0.1']),
    lambda25=dict(label='RaMBO, lambda=2.5', config=_rambo, lr_from='rambo',
                  options=_paper + [_loss + 'lambda_val=2.5']),
    # margin 0 gets its own lr grid: it is the variant the configs ship
    margin0=dict(label='RaMBO, margin 0', config=_rambo,
                 lrs=[0.04, 0.1, 0.2],
                 options=[_loss + 'margin=0.0']),
    # bounded score spaces with the margin off: at initialisation every
    # score of [0, 1] is near every other, so a 0.15 margin puts each
    # negative above each positive (no gradient, see the spaces' rows)
    sigmoid_margin0=dict(label='RaMBO, sigmoid score space, margin 0',
                         config=_rambo, lr_from='rambo',
                         options=[_loss + 'score_space=sigmoid',
                                  _loss + 'margin=0.0']),
    # score spaces
    space_sigmoid=dict(label='RaMBO, sigmoid score space', config=_rambo,
                       lr_from='rambo',
                       options=_paper + [_loss + 'score_space=sigmoid']),
    space_softmax=dict(label='RaMBO, softmax score space', config=_rambo,
                       lr_from='rambo',
                       options=_paper + [_loss + 'score_space=softmax']),
)
