"""Tests of the SoDeep sorters, synthetic data, checkpoints and the tool."""
import math

import pytest
import torch

from mmdet_rankloss.networks.sorters import (CNNSorter, HandcraftedSorter,
                                             LSTMSorter, build_sorter,
                                             load_sorter, normalized_ranks,
                                             save_sorter, synthetic_scores)


def test_handcrafted_sorter_is_eq12():
    torch.manual_seed(0)
    y = torch.randn(3, 7, dtype=torch.float64)
    out = HandcraftedSorter(7, lambda_val=10.0)(y)
    for n in range(3):
        for i in range(7):
            f_h = sum(1 / (1 + math.exp(-10.0 * (y[n, j] - y[n, i])))
                      for j in range(7) if j != i)  # Eq. 11-12
            assert out[n, i].item() == pytest.approx((1 + f_h) / 7)
    # sharp comparisons give the exact normalised ranks
    torch.testing.assert_close(
        HandcraftedSorter(7, 1e6)(y), normalized_ranks(y))


@pytest.mark.parametrize('cls', [LSTMSorter, CNNSorter])
def test_learned_sorters_shapes_and_length_check(cls):
    sorter = cls(seq_len=12)
    y = torch.randn(5, 12)
    assert sorter(y).shape == (5, 12)
    with pytest.raises(ValueError, match='seq_len=12'):
        sorter(torch.randn(5, 11))
    with pytest.raises(ValueError, match='shape'):
        sorter(torch.randn(12))


def test_cnn_filters_shrink_the_sequence_to_one_position():
    sorter = CNNSorter(seq_len=100)
    convs = [m for m in sorter.blocks if isinstance(m, torch.nn.Conv1d)]
    assert len(convs) == 8 and convs[-1].out_channels == 100
    assert sum(c.kernel_size[0] - 1 for c in convs) == 99
    assert CNNSorter(seq_len=3)(torch.randn(2, 3)).shape == (2, 3)


@pytest.mark.parametrize('cfg', [
    dict(type='LSTMSorter', seq_len=9, hidden_size=8, num_layers=1),
    dict(type='CNNSorter', seq_len=9, channels=[4, 4, 4, 4, 4, 4, 4]),
    dict(type='HandcraftedSorter', seq_len=9, lambda_val=3.0),
])
def test_checkpoint_round_trip_with_weights_only(cfg, tmp_path):
    sorter = build_sorter(cfg).eval()
    path = tmp_path / 'sorter.pth'
    save_sorter(sorter, str(path), steps=3, val_l1=0.5)
    raw = torch.load(path, weights_only=True)
    assert raw['type'] == cfg['type'] and raw['meta']['steps'] == 3
    loaded = load_sorter(str(path))
    y = torch.randn(4, 9)
    torch.testing.assert_close(loaded(y), sorter(y))
    assert not loaded.training


def test_bad_sorter_configs_and_files(tmp_path):
    with pytest.raises(ValueError, match='type'):
        build_sorter(dict(type='Bubble', seq_len=4))
    with pytest.raises(ValueError, match='seq_len'):
        LSTMSorter(seq_len=0)
    with pytest.raises(ValueError, match='channels'):
        CNNSorter(seq_len=5, channels=(4, 4))
    path = tmp_path / 'other.pth'
    torch.save({'state_dict': {}}, path)
    with pytest.raises(ValueError, match='save_sorter'):
        load_sorter(str(path))


def test_synthetic_scores_follow_section_3_1_2():
    g = torch.Generator().manual_seed(0)
    uni = synthetic_scores(200, 50, 'uniform', generator=g)
    assert uni.shape == (200, 50) and uni.abs().max() <= 1
    lin = synthetic_scores(20, 50, 'linspace', generator=g)
    steps = lin.sort(1).values.diff(1)
    torch.testing.assert_close(steps, steps[:, :1].expand_as(steps))
    assert lin.abs().max() <= 1 and not torch.equal(lin, lin.sort(1).values)
    normal = synthetic_scores(400, 50, 'normal', generator=g)
    assert abs(normal.std().item() - 1) < 0.05
    a = synthetic_scores(8, 10, generator=torch.Generator().manual_seed(1))
    b = synthetic_scores(8, 10, generator=torch.Generator().manual_seed(1))
    assert torch.equal(a, b)
    with pytest.raises(ValueError, match='kind'):
        synthetic_scores(2, 3, 'beta')


@pytest.mark.slow
def test_pretrain_tool_trains_saves_and_evaluates(tmp_path, capsys,
                                                 load_tool):
    pretrain_sorter = load_tool('tools/misc/pretrain_sorter.py')
    out = tmp_path / 'lstm_d8.pth'
    pretrain_sorter.main([
        'train', '--arch', 'lstm', '--seq-len', '8', '--hidden-size', '16',
        '--num-layers', '1', '--steps', '60', '--batch-size', '64',
        '--lr', '0.01', '--log-interval', '20', '--val-size', '200',
        '--out', str(out)
    ])
    log = capsys.readouterr().out
    assert 'step     20' in log and 'saved' in log
    ckpt = torch.load(out, weights_only=True)
    assert ckpt['meta']['steps'] == 60
    untrained = pretrain_sorter.l1_error(
        LSTMSorter(8, 16, 1), pretrain_sorter.held_out_set(200, 8))
    assert ckpt['meta']['val_l1'] < 0.6 * untrained
    pretrain_sorter.main(['evaluate', '--seq-len', '8', '--val-size', '200',
                          str(out)])
    table = capsys.readouterr().out
    assert 'handcrafted' in table and 'LSTMSorter' in table
