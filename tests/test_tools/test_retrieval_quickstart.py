"""The retrieval quickstart script runs end to end (shortened)."""
import os.path as osp

# a shortened run: one epoch of one or two batches, 60 test digits
SHORT = [
    '--epochs', '1', '--cfg-options', 'train_cfg.val_interval=1',
    'val_dataloader.dataset.indices=60', 'test_dataloader.dataset.indices=60'
]


def test_quickstart_prints_recall_table(tmp_path, capsys, load_tool):
    module = load_tool('tools/retrieval_quickstart.py')
    results = module.main(['--work-dir', str(tmp_path)] + SHORT +
                          ['train_dataloader.sampler.num_batches=2'])
    out = capsys.readouterr().out
    # the plain digits are the default (the scene demo does not learn yet)
    assert 'digits.py' in out and 'digits-scene' not in out
    for row in ('pixels, no network', 'untrained network',
                'trained, final epoch', 'best R@1 during training'):
        assert row in out
    assert 'R@8' in out and 'MAP@R' in out
    assert len(list(tmp_path.glob('best_retrieval_R@1_epoch_1.pth'))) == 1
    assert osp.isfile(tmp_path / 'results.txt')
    assert set(results) == {0} and results[0]['seconds'] > 0
    for row in module.ROWS:
        assert 0 <= results[0][row]['R@1'] <= 1


def test_quickstart_seeds_give_mean_and_spread(tmp_path, capsys, load_tool):
    module = load_tool('tools/retrieval_quickstart.py')
    results = module.main(['--work-dir', str(tmp_path), '--scene', '--seeds',
                           '0', '1'] + SHORT +
                          ['train_dataloader.sampler.num_batches=1'])
    out = capsys.readouterr().out
    assert 'digits-scene' in out
    assert 'mean ± standard deviation over seeds [0, 1]' in out
    assert {osp.basename(p) for p in tmp_path.glob('seed*')} == {
        'seed0', 'seed1'
    }
    # the test scenes do not depend on the training seed: nor do raw pixels
    pixels = [results[s]['pixels, no network']['R@1'] for s in (0, 1)]
    assert pixels[0] == pixels[1]


def test_scene_option_selects_the_scene_demo(load_tool):
    module = load_tool('tools/retrieval_quickstart.py')
    assert module.parse_args([]).config == module.DEFAULT_CONFIG
    assert module.DEFAULT_CONFIG.endswith('_digits.py')
    assert module.parse_args(['--scene']).config == module.SCENE_CONFIG
    # the old flag still names the (now default) plain-digits demo
    assert module.parse_args(['--plain-digits'
                              ]).config == module.DEFAULT_CONFIG
    assert osp.isfile(module.SCENE_CONFIG) and osp.isfile(
        module.DEFAULT_CONFIG)
