"""``python -m experiments.study SPEC ...``: the study tool (as
``tools/study.py``)."""
from experiments.study.cli import main

if __name__ == '__main__':
    main()
