# The longer DigitsVOC budget of the DINO configs, as variables
# (docs/architecture.md#configs): 36 epochs, lr / 10 after 27, val after the
# last epoch only. Chosen on val from focal loss's own curves
# (docs/evidence/digitsvoc_dino_budget_rule.md and
# digitsvoc_dino_budget_72e_rule.md); a `_36e_` config inherits its 12-epoch
# twin and this file.
long_epochs = 36
long_train_cfg = dict(max_epochs=long_epochs, val_interval=long_epochs)
long_param_scheduler = [
    dict(
        type='MultiStepLR',
        begin=0,
        end=long_epochs,
        by_epoch=True,
        milestones=[long_epochs * 3 // 4],
        gamma=0.1)
]
