# Quickstart twin of `faster-rcnn_r18-w32_fpn_rambo_toyvoc.py` whose AP loss
# ranks with a frozen SoDeep sorter network (a BiLSTM for sequences of 100
# scores, pre-trained on SoDeep's synthetic data by
# `tools/pretrain_sorter.py train --arch lstm --seq-len 100 --out
# work_dirs/sorters/lstm_d100.pth`, which `tools/quickstart.py` runs when
# the file is missing). Each class's RoIs (with the memory) are ranked in
# random chunks of 100; see `SorterRanker`. Everything else is the same.
_base_ = './faster-rcnn_r18-w32_fpn_rambo_toyvoc.py'

model = dict(
    roi_head=dict(
        bbox_head=dict(
            loss_cls=dict(
                ranker=dict(
                    type='SorterRanker',
                    checkpoint='work_dirs/sorters/lstm_d100.pth')))))
