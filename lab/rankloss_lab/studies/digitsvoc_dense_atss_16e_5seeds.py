# Seeds 3 and 4 of the ATSS study for the row whose difference to focal 3
# seeds did not resolve (RaMBO + focal, +2.1 [-1.3, +5.5]), with its baseline.
# Same study (`name`): the runs land beside seeds 0-2 and the report pairs
# each row with focal on the seeds both have:
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_dense_atss_16e_5seeds.py \
#       --phase test --methods focal mix --jobs 2
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_dense_atss_16e_5seeds.py \
#       --report-only
_base_ = './digitsvoc_dense_atss_16e.py'
name = 'digitsvoc_dense_atss_16e'
seeds = [0, 1, 2, 3, 4]
# and the logits-space mix, to decide on val whether it replaces the shipped
# mix (seeds 3 and 4 added after its first 3 seeds led on val by 0.5 AP50):
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_dense_atss_16e_5seeds.py \
#       --phase test --methods mix_logits
