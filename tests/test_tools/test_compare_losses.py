"""The loss comparison is the retrieval study: the old command names it,
and the study's runs can train every loss the comparison trained."""
import os.path as osp
import subprocess
import sys

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


def test_old_command_names_the_new_one():
    proc = subprocess.run([sys.executable, 'tools/compare_losses.py'],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 1
    assert 'python tools/retrieval_study.py' in proc.stderr


def test_every_peer_loss_is_registered(load_tool):
    from mmdet.registry import MODELS

    import mmdet_rankloss  # noqa: F401
    losses = load_tool('tools/retrieval_quickstart.py').PEER_LOSSES
    assert {'fastap', 'triplet-bh', 'srt-f', 'sodeep-recall', 'auc-bh',
            'wilcoxon-bh'} <= set(losses)
    for cfg in losses.values():
        assert MODELS.get(cfg['type']) is not None, cfg['type']
