# The longer DigitsVOC budget of the dense configs, as variables
# (docs/architecture.md#configs): 56 epochs, lr / 10 after 42, the 16-epoch
# warm-up (100 iterations). Chosen on val from focal loss's own curves
# (docs/evidence/digitsvoc_dense_budget_rule.md and
# digitsvoc_dense_budget_96e_rule.md); a `_56e_` config inherits its 16-epoch
# twin and this file.
long_epochs = 56
long_param_scheduler = [
    dict(
        type='LinearLR', start_factor=0.001, by_epoch=False, begin=0,
        end=100),
    dict(
        type='MultiStepLR',
        begin=0,
        end=long_epochs,
        by_epoch=True,
        milestones=[long_epochs * 3 // 4],
        gamma=0.1)
]
