"""The SOP-size retrieval benchmark at toy size, with its comparisons (times
are not asserted; the values must agree)."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / 'tools' / 'analysis_tools' / 'benchmark_retrieval_metric.py'


@pytest.mark.slow
def test_retrieval_benchmark_smoke():
    compare = ['reid'] + (['faiss']
                          if importlib.util.find_spec('faiss') else [])
    out = subprocess.run(
        [
            sys.executable,
            str(SCRIPT), '--num', '1500', '--dim', '16', '--classes', '300',
            '--threads', '1', '--floor', '--reid-num', '400', '--compare'
        ] + compare,
        capture_output=True,
        text=True,
        timeout=300,
        check=True).stdout
    assert 'ours (R@K + MAP@R)' in out and 'topk(k=1001)' in out
    assert 'CMC@K vs our R@K: agree' in out
    if 'faiss' in compare:
        assert 'identical to ours' in out
