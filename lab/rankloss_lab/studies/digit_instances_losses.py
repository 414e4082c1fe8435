# Retrieval losses on the digit-instance demo (`tools/retrieval_quickstart.py`
# default: each scikit-learn digit image a class, random views, disjoint
# train / val / test instances): the RaMBO recall loss against the usual
# batch-hard triplet baseline and FastAP, each with its own Adam lr chosen by
# the mean val R@1 over the three seeds; the test split is only reported.
#   python tools/retrieval_study.py lab/rankloss_lab/studies/digit_instances_losses.py \
#       --jobs 2
# Results: docs/evidence/digit_instances_losses.md, docs/retrieval.md.
description = """ResNet-18 (16 base channels) from scratch, 20 epochs of 66
batches (30 instances x 2 views), Adam (embedding lr x 10, weight decay
4e-4, lr x 0.3 after 15 epochs); 997 train / 300 val / 500 test digit
instances, 4 fixed views per val and test instance."""
seeds = [0, 1, 2]
baseline = 'rambo'
_lrs = [3e-4, 1e-3, 3e-3]
_demo = 'configs/retrieval/retrieval_r18-w16_rambo-log_20e_digit-instances.py'
# the peers: the demo's config with its loss replaced (retrieval_quickstart's
# --loss), at their papers' settings
methods = dict(
    rambo=dict(label='RaMBO recall loss (log)', config=_demo, lrs=_lrs),
    triplet=dict(label='batch-hard triplet (margin 0.3)', config=_demo,
                 lrs=_lrs, args=['--loss', 'triplet-bh']),
    fastap=dict(label='FastAP (10 bins)', config=_demo, lrs=_lrs,
                args=['--loss', 'fastap']),
)
