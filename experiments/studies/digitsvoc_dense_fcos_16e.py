# Study: the rank losses on an anchor-free detector. Focal loss, RaMBO
# (logits) + focal and Rank & Sort on FCOS R18-w32 FPN, from scratch, 16
# epochs, DigitsVOC: 3 methods, each with its lr selected here on the grid
# the fixed dense study gave ATSS (docs/dense.md).
#   python tools/study.py experiments/studies/digitsvoc_dense_fcos_16e.py --dry-run
#   python tools/study.py experiments/studies/digitsvoc_dense_fcos_16e.py --phase select --jobs 2
#   python tools/study.py experiments/studies/digitsvoc_dense_fcos_16e.py --freeze
#   python tools/study.py experiments/studies/digitsvoc_dense_fcos_16e.py --phase test --jobs 2
# The protocol of `digitsvoc_dense_fixed_16e.py`, its base: selection seed
# 5, test seeds 6-10, `fair_selection = True` (`--freeze` refuses unless
# every method was selected in this study, on one grid density, with its
# best inside its grid or the step beyond the edge diverged; a method that
# collapsed on the selection seed is re-selected on the mean over seeds 5
# and 11), one evaluation at test-time score threshold 0 for every method
# (rank-trained scores have no scale), hypotheses frozen before any test
# run. The configs ship the ATSS twins' lrs until this study selects
# theirs.
# Another pre-registered dense study takes these methods with
#   _base_ = ['./digitsvoc_dense_fcos_16e.py']
#   methods = dict(_base_.fcos_methods, <its own>)
# the data, seeds, protocol and ATSS grids of the fixed dense study
_base_ = './digitsvoc_dense_fixed_16e.py'
description = """FCOS R18-w32 FPN **from scratch**, 16 epochs (lr / 10
after 12), batch 8, DigitsVOC train (384 images) / val (160) / test (320):
focal, RaMBO (logits) + focal and Rank & Sort, every lr selected in this
study on the factor-2 grid of the ATSS methods of
`digitsvoc_dense_fixed_16e`."""
baseline = 'fcos_focal'
_twins = _base_.methods  # each FCOS method on its ATSS twin's grid
_fcos = 'configs/dense/fcos/fcos_r18-w32_fpn_{}_16e_digitsvoc.py'
# the FCOS method set, a variable so that another study can take it
fcos_methods = dict(
    fcos_focal=dict(label='FCOS, focal loss', config=_fcos.format('focal'),
                    lrs=_twins.atss_focal.lrs),
    # the config ranks the logits: nothing to set
    fcos_rambo_focal=dict(label='FCOS, RaMBO (logits) + focal',
                          config=_fcos.format('rambo-focal'),
                          lrs=_twins.atss_rambo_focal.lrs),
    fcos_rank_sort=dict(label='FCOS, Rank & Sort (delta 0.5)',
                        config=_fcos.format('rank-sort'),
                        lrs=_twins.atss_rank_sort.lrs),
)
methods = dict(
    fcos_methods,
    _delete_=True)  # not the ATSS and RetinaNet methods
# Each rank loss against focal loss, two-sided (on ATSS the earlier studies
# pointed both ways); Holm over the two.
hypotheses = [
    dict(method='fcos_rank_sort', baseline='fcos_focal',
         alternative='two-sided'),
    dict(method='fcos_rambo_focal', baseline='fcos_focal',
         alternative='two-sided'),
]
