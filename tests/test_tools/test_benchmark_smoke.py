"""The benchmark is a tool users rerun: CI runs it at toy sizes so that it
cannot rot (times are not asserted, a slow machine is not a failure)."""
import json

import pytest


def test_benchmark_smoke(tmp_path, load_tool):
    bench = load_tool('tools/analysis_tools/benchmark_rank_losses.py')
    out = tmp_path / 'bench'
    result = bench.main(['--smoke', '--out', str(out)])
    saved = json.loads((tmp_path / 'bench.json').read_text())
    assert saved['machine'] == result['machine']
    for rows in saved['ap'].values():
        assert [r['length'] for r in rows] == [1_000, 10_000]
        for r in rows:  # the reported ratios are those of the reported times
            assert r['ours_over_sort'] == pytest.approx(
                r['ours']['median_s'] / r['sort']['median_s'])
            assert r['naive_over_ours'] == pytest.approx(
                r['naive']['median_s'] / r['ours']['median_s'])
    names = ' '.join(r['name'] for r in saved['retrieval'])
    for loss in ('RaMBORecallLoss', 'FastAPLoss', 'SoftRankThresholdLoss',
                 'AUCLoss', 'BatchHardTripletLoss', 'SoDeepRecallLoss'):
        assert loss in names
    detection = ' '.join(r['name'] for r in saved['detection'])
    for ranker in ('blackbox', 'sigmoid', 'sorter'):
        assert ranker in detection
    assert '| length | torch.sort |' in (tmp_path / 'bench.md').read_text()


def test_benchmark_times_only_the_devices_asked_for(tmp_path, load_tool):
    bench = load_tool('tools/analysis_tools/benchmark_rank_losses.py')
    result = bench.main(['--smoke', '--skip-others', '--devices', 'cpu-1',
                         '--out', str(tmp_path / 'bench')])
    assert list(result['ap']) == ['CPU, 1 thread']


def test_benchmark_refuses_cuda_alone_without_cuda(tmp_path, load_tool,
                                                    monkeypatch, capsys):
    bench = load_tool('tools/analysis_tools/benchmark_rank_losses.py')
    monkeypatch.setattr(bench.torch.cuda, 'is_available', lambda: False)
    with pytest.raises(SystemExit):
        bench.main(['--smoke', '--devices', 'cuda',
                    '--out', str(tmp_path / 'bench')])
    assert 'torch.cuda.is_available() is False' in capsys.readouterr().err
