# Quickstart twin of `faster-rcnn_r18-w32_fpn_rambo_toyvoc.py` whose AP loss
# ranks with sigmoid soft ranks (the Soft Ranking Threshold surrogate, SRT
# Eq. 4, temperature 1 as in that paper) instead of RaMBO's blackbox
# ranker. Everything else, memory and margin included, is the same, so the
# two configs compare the two surrogates of the ranking.
_base_ = './faster-rcnn_r18-w32_fpn_rambo_toyvoc.py'

model = dict(
    roi_head=dict(
        bbox_head=dict(
            loss_cls=dict(
                ranker=dict(type='SigmoidRanker', temperature=1.0)))))
