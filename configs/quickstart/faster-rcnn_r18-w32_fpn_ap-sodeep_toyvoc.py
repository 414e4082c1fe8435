# Quickstart twin of `faster-rcnn_r18-w32_fpn_rambo_toyvoc.py` whose AP loss
# ranks with a SoDeep sorter: each class's RoIs (with the memory) are ranked
# in random chunks of 100 by the sorter (see `SorterRanker`). Everything
# else, memory, margin and learning rate included, is the same.
# The sorter is SoDeep's handcrafted one (Eq. 11-12, lambda 10, on scores
# standardised per row): 74.9 AP50 here. A learned BiLSTM sorter (pre-trained
# 8 min by `tools/pretrain_sorter.py train --arch lstm --seq-len 100 --out
# work_dirs/sorters/lstm_d100.pth`, held-out L1 0.037) is one override away,
#   --cfg-options model.roi_head.bbox_head.loss_cls.ranker.checkpoint=\
#   work_dirs/sorters/lstm_d100.pth
# but gave 0.5 AP50: the detector did not learn (docs/detection.md).
_base_ = './faster-rcnn_r18-w32_fpn_rambo_toyvoc.py'

model = dict(
    roi_head=dict(
        bbox_head=dict(
            loss_cls=dict(
                ranker=dict(
                    type='SorterRanker',
                    sorter=dict(
                        type='HandcraftedSorter', seq_len=100,
                        lambda_val=10.0))))))
