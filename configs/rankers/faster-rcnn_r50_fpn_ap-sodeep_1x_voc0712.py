# Faster R-CNN R50-FPN on VOC07+12 with the RaMBO config's AP loss (memory 7,
# margin 0.15, mAP + APC 2 : 1, the paper's lr 0.1) but the ranks of SoDeep's
# handcrafted sorter (Eq. 11-12, lambda 10) in random chunks of 100 RoIs as the
# ranking surrogate. A pre-trained sorter is `ranker.checkpoint=<file>` away
# (see the quickstart twin for why it is not the default). Not a configuration
# of any paper and not trained on VOC here: no reference number exists.
# Scores: rank-trained, not probabilities: calibrate them before a threshold
# (fit_score_calibration.py --write-config, docs/thresholds.md).
# Batch: 8 images per process; lr 0.1 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = '../rambo/faster-rcnn_r50_fpn_rambo_1x_voc0712.py'

model = dict(
    roi_head=dict(
        bbox_head=dict(
            loss_cls=dict(
                ranker=dict(
                    type='SorterRanker',
                    sorter=dict(
                        type='HandcraftedSorter', seq_len=100,
                        lambda_val=10.0))))))
