# The DINO configs' longer DigitsVOC budget, chosen on val from focal's own
# curves (docs/evidence/digitsvoc_dino_budget_rule.md, then _72e_rule.md):
# 36 epochs, lr / 10 after 27, val after the last. A `_36e_` config takes its
# 12-epoch twin's bases and this file.
long_train_cfg = dict(max_epochs=36, val_interval=36)
long_param_scheduler = [
    dict(type='MultiStepLR', begin=0, end=36, by_epoch=True, milestones=[27],
         gamma=0.1)
]
