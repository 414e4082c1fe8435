"""The retrieval quickstart script runs end to end (shortened)."""
import json
import os.path as osp

import pytest

# a shortened run: one epoch of one or two batches, 60 test digits
SHORT = [
    '--epochs', '1', '--cfg-options', 'train_cfg.val_interval=1',
    'val_dataloader.dataset.indices=60', 'test_dataloader.dataset.indices=60'
]


@pytest.mark.slow
def test_quickstart_prints_recall_table(tmp_path, capsys, load_tool):
    module = load_tool('tools/retrieval_quickstart.py')
    results = module.main(['--work-dir', str(tmp_path)] + SHORT +
                          ['train_dataloader.sampler.num_batches=2'])
    out = capsys.readouterr().out
    # the digit-instance demo is the default: trained on some instances,
    # reported on held-out test instances, settings chosen on val ones
    assert 'digit-instances.py' in out and 'held-out test instance' in out
    for row in ('pixels, no network', 'untrained network',
                'trained, final epoch', 'best R@1 during training',
                'val R@1 at the last evaluation'):
        assert row in out
    assert 'R@8' in out and 'MAP@R' in out
    assert len(list(tmp_path.glob('best_retrieval_R@1_epoch_1.pth'))) == 1
    assert osp.isfile(tmp_path / 'results.txt')
    assert set(results) == {0} and results[0]['seconds'] > 0
    # the same numbers as JSON, for tools/retrieval_study.py
    with open(tmp_path / 'results.json') as f:
        saved = json.load(f)['seeds']['0']
    assert saved['trained, final epoch']['R@1'] == pytest.approx(
        results[0]['trained, final epoch']['R@1'])
    assert saved['last_val_r1'] == pytest.approx(results[0]['last_val'])
    for row in module.ROWS:
        assert 0 <= results[0][row]['R@1'] <= 1


@pytest.mark.slow
def test_quickstart_seeds_give_mean_and_spread(tmp_path, capsys, load_tool):
    module = load_tool('tools/retrieval_quickstart.py')
    results = module.main(['--work-dir', str(tmp_path), '--seeds', '0',
                           '1'] + SHORT +
                          ['train_dataloader.sampler.num_batches=1'])
    out = capsys.readouterr().out
    assert 'mean ± standard deviation over seeds [0, 1]' in out
    assert {osp.basename(p) for p in tmp_path.glob('seed*')} == {
        'seed0', 'seed1'
    }
    # the test views do not depend on the training seed: nor do raw pixels
    pixels = [results[s]['pixels, no network']['R@1'] for s in (0, 1)]
    assert pixels[0] == pixels[1]


def test_the_default_config_is_the_digit_instances_demo(load_tool):
    module = load_tool('tools/retrieval_quickstart.py')
    assert module.parse_args([]).config == module.DEFAULT_CONFIG
    assert module.DEFAULT_CONFIG.endswith('_digit-instances.py')
    assert osp.isfile(module.DEFAULT_CONFIG)


@pytest.mark.slow
def test_a_peer_loss_replaces_the_rambo_loss(tmp_path, capsys, load_tool):
    module = load_tool('tools/retrieval_quickstart.py')
    module.main(['--work-dir', str(tmp_path), '--loss', 'fastap'] + SHORT +
                ['train_dataloader.sampler.num_batches=1'])
    assert 'FastAPLoss, trained on the train digit instances' in \
        capsys.readouterr().out
    with open(tmp_path / 'results.json') as f:
        assert json.load(f)['loss'] == 'fastap'
    # the whole loss is replaced: no RaMBO argument is left to reach FastAP
    assert module.PEER_LOSSES['fastap'] == dict(type='FastAPLoss',
                                                num_bins=10)
