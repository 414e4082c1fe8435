"""``tools/quickstart.py --losses ap-sigmoid ap-sodeep``: the RaMBO
quickstart config with only the ranker changed, by ``--cfg-options`` as a
user would pass them."""
import argparse
import os.path as osp

import pytest
from mmengine.config import Config, DictAction

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


def with_options(config, options):
    parser = argparse.ArgumentParser()
    parser.add_argument('--cfg-options', nargs='+', action=DictAction)
    cfg = Config.fromfile(osp.join(ROOT, config))
    cfg.merge_from_dict(
        parser.parse_args(['--cfg-options'] + options).cfg_options)
    return cfg


@pytest.mark.parametrize('loss', ['ap-sigmoid', 'ap-sodeep'])
def test_ranker_options_change_only_the_ranker(loss, load_tool):
    tool = load_tool('tools/quickstart.py')
    assert tool.CONFIGS[loss] == tool.CONFIGS['rambo']
    ours = with_options(tool.CONFIGS[loss], tool.LOSS_OPTIONS[loss]).to_dict()
    rambo = Config.fromfile(osp.join(ROOT, tool.CONFIGS['rambo'])).to_dict()
    ranker = ours['model']['roi_head']['bbox_head']['loss_cls'].pop('ranker')
    assert ours == rambo
    # the ranker of the configs/rankers/ VOC config of the same name
    voc = Config.fromfile(
        osp.join(ROOT, 'configs', 'rankers',
                 f'faster-rcnn_r50_fpn_{loss}_1x_voc0712.py'))
    assert ranker == voc.model.roi_head.bbox_head.loss_cls.ranker.to_dict()


def test_ce_rambo_and_mix_take_no_loss_options(load_tool):
    tool = load_tool('tools/quickstart.py')
    assert set(tool.LOSS_OPTIONS) == {'ap-sigmoid', 'ap-sodeep'}
    assert set(tool.LOSS_OPTIONS) | {'ce', 'rambo', 'rambo-bce'} == set(
        tool.CONFIGS)
    # the default run: the recipe the README recommends beside CE and RaMBO
    assert tool.parse_args([]).losses == ['ce', 'rambo', 'rambo-bce']


def test_box_count_and_lr_helpers(load_tool, tmp_path):
    """Boxes per image count the detections at or above the threshold;
    the lr is the config's unless an option sets it."""
    import pickle

    import torch
    tool = load_tool('tools/quickstart.py')
    results = [
        dict(img_path=f'/x/{i}.jpg', pred_instances=dict(
            bboxes=torch.zeros(4, 4), labels=torch.zeros(4).long(),
            scores=torch.tensor(scores)))
        for i, scores in enumerate([[0.9, 0.3, 0.29, 0.1], [0.5, 0.4, 0.0,
                                                            0.0]])
    ]
    pkl = tmp_path / 'dets.pkl'
    pkl.write_bytes(pickle.dumps(results))
    assert tool.boxes_per_image(str(pkl)) == 2.0
    assert tool.boxes_per_image(str(pkl), threshold=0.45) == 1.0
    assert tool.config_lr(tool.CONFIGS['rambo'], []) == 0.1
    assert tool.config_lr(tool.CONFIGS['rambo-bce'], []) == 0.04
    assert tool.config_lr(tool.CONFIGS['ce'],
                          ['optim_wrapper.optimizer.lr=0.5']) == 0.5


def test_config_loads_from_its_threads_do_not_overlap(load_tool,
                                                      monkeypatch):
    """The quickstart's runs are threads, and MMEngine reloads
    ``pkg_resources`` while it resolves an ``mmdet::`` base: two loads at
    once failed with a TypeError. Every in-process load goes through
    ``load_config``, which lets one thread in at a time."""
    import threading
    import time

    from mmengine.config import Config
    tool = load_tool('tools/quickstart.py')
    inside, most = [0], [0]
    count = threading.Lock()
    real = Config.fromfile

    def slow_fromfile(path, *args, **kwargs):
        with count:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.05)
        try:
            return real(path, *args, **kwargs)
        finally:
            with count:
                inside[0] -= 1

    monkeypatch.setattr(Config, 'fromfile', slow_fromfile)
    config = tool.CONFIGS['ce']
    threads = [threading.Thread(target=tool.config_lr, args=(config, []))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1
    assert tool.config_lr(config, []) == pytest.approx(0.04)
