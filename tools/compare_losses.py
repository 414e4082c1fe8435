"""Merged into the retrieval study, which compares the losses per seed."""
raise SystemExit('tools/compare_losses.py was merged into '
                 'tools/retrieval_study.py: python tools/retrieval_study.py '
                 'experiments/studies/digit_instances_losses.py (a method '
                 'trains any loss of tools/retrieval_quickstart.py --loss)')
