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


def test_ce_and_rambo_take_no_loss_options(load_tool):
    tool = load_tool('tools/quickstart.py')
    assert set(tool.LOSS_OPTIONS) == {'ap-sigmoid', 'ap-sodeep'}
    assert set(tool.LOSS_OPTIONS) | {'ce', 'rambo'} == set(tool.CONFIGS)
