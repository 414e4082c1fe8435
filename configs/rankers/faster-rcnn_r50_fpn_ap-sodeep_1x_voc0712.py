# Faster R-CNN R50-FPN on VOC07+12 with the RaMBO config's AP loss (memory 7,
# margin 0.15, mAP + APC 2 : 1, lr 0.1) but the ranks of a frozen SoDeep
# BiLSTM sorter (seq_len 100, pre-trained by `tools/pretrain_sorter.py`) as
# the ranking surrogate, in random chunks of 100 RoIs. Not a configuration
# of any paper: no reference number exists.
_base_ = '../rambo/faster-rcnn_r50_fpn_rambo_1x_voc0712.py'

model = dict(
    roi_head=dict(
        bbox_head=dict(
            loss_cls=dict(
                ranker=dict(
                    type='SorterRanker',
                    checkpoint='work_dirs/sorters/lstm_d100.pth')))))
