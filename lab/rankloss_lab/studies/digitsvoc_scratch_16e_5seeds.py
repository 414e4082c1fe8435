# Seeds 3 and 4 of the 16-epoch study for the rows whose difference to
# cross-entropy 3 seeds did not resolve: the shipped margin-0 RaMBO and the
# mix with sigmoid CE, with their baseline. Same study (`name`), so the runs
# land beside seeds 0-2 and its report pairs each row with CE on the seeds
# both have:
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_scratch_16e_5seeds.py \
#       --phase test --methods ce margin0 rambo_bce --jobs 2
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_scratch_16e_5seeds.py \
#       --report-only
_base_ = './digitsvoc_scratch_16e.py'
name = 'digitsvoc_scratch_16e'
seeds = [0, 1, 2, 3, 4]
