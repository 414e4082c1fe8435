"""``python -m rankloss_lab.study SPEC ...``: the study tool (as
``tools/study.py``)."""
from rankloss_lab.study.cli import main

if __name__ == '__main__':
    main()
