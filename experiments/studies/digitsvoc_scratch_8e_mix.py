# Study: the mix (RaMBO + sigmoid CE) at the quickstart's budget, 8 epochs,
# which `digitsvoc_scratch_8e.py` did not run: does the mix's 16-epoch gain
# hold at half the budget? Same data, seeds and protocol as that study (the
# mix's lr chosen again on val at this budget); cross-entropy at its lr
# selected there (0.04) is re-run on the same seeds so that the pairs come
# from one study (its runs reproduce that study's CE rows).
#   python tools/study.py experiments/studies/digitsvoc_scratch_8e_mix.py --jobs 2
_base_ = './digitsvoc_scratch_8e.py'
description = """Faster R-CNN R18-w32 FPN **from scratch**, 8 epochs (lr / 10
after 6; the quickstart's budget), batch 8, DigitsVOC train (384 images) / val
(160) / test (320): cross-entropy and RaMBO + sigmoid CE."""
_frcnn = 'configs/digitsvoc/faster-rcnn_r18-w32_fpn_{}_16e_digitsvoc.py'
methods = dict(
    _delete_=True,
    ce=dict(label='cross-entropy', config=_frcnn.format('ce'), lr=0.04,
            selected_on=dict(study='digitsvoc_scratch_8e', seeds=[0],
                             note='val AP50 of the grid 0.01 / 0.02 / 0.04 / '
                             '0.08')),
    rambo_bce=dict(label='RaMBO + sigmoid CE (MixedRankLoss)',
                   config=_frcnn.format('rambo-bce'), lrs=[0.02, 0.04, 0.1]),
)
