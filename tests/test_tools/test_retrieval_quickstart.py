"""The retrieval quickstart script runs end to end (shortened)."""


def test_quickstart_prints_recall_table(tmp_path, capsys, load_tool):
    module = load_tool('tools/retrieval_quickstart.py')
    module.main([
        '--work-dir',
        str(tmp_path), '--epochs', '1', '--cfg-options',
        'train_dataloader.sampler.num_batches=2', 'train_cfg.val_interval=1'
    ])
    out = capsys.readouterr().out
    for row in ('pixels, no network', 'untrained network',
                'trained, final epoch', 'best R@1 during training'):
        assert row in out
    assert 'R@8' in out and 'MAP@R' in out
    assert len(list(tmp_path.glob('best_retrieval_R@1_epoch_1.pth'))) == 1
