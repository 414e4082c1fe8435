"""tools/misc/split_coco.py: every image in exactly one part with its
annotations, the fraction and the seed as asked, and both parts load with
CheckedCocoDataset."""
import json

import pytest

from rankloss_lab.datasets import TOY_CLASSES, make_toy_coco


@pytest.fixture
def trainval(tmp_path):
    make_toy_coco(str(tmp_path / 'data'), splits=(('trainval', 20),
                                                  ('test', 2)),
                  image_size=64)
    return tmp_path / 'data'


def test_the_parts_cover_the_file_once(trainval, load_tool):
    tool = load_tool('tools/misc/split_coco.py')
    ann = trainval / 'annotations'
    train, val = tool.main([str(ann / 'trainval.json'),
                            str(ann / 'train.json'), str(ann / 'val.json'),
                            '--val-fraction', '0.2', '--seed', '0'])
    data = json.loads((ann / 'trainval.json').read_text())
    ids = [img['id'] for img in data['images']]
    t_ids = [img['id'] for img in train['images']]
    v_ids = [img['id'] for img in val['images']]
    assert len(v_ids) == 4 and sorted(t_ids + v_ids) == sorted(ids)
    for part, part_ids in ((train, t_ids), (val, v_ids)):
        assert part['categories'] == data['categories']
        assert sorted(a['id'] for a in part['annotations']) == sorted(
            a['id'] for a in data['annotations']
            if a['image_id'] in part_ids)
    assert json.loads((ann / 'val.json').read_text()) == val
    # the same seed, the same split; another seed, another one
    again = tool.split_coco(data, 0.2, seed=0)[1]
    other = tool.split_coco(data, 0.2, seed=1)[1]
    assert again == val and other != val


def test_the_parts_load_as_datasets(trainval, load_tool):
    from mmdet.registry import DATASETS
    from mmengine.registry import init_default_scope

    import mmdet_rankloss  # noqa: F401
    tool = load_tool('tools/misc/split_coco.py')
    ann = trainval / 'annotations'
    tool.main([str(ann / 'trainval.json'), str(ann / 'train.json'),
               str(ann / 'val.json')])
    init_default_scope('mmdet')
    sizes = []
    for split in ('train', 'val'):
        dataset = DATASETS.build(dict(
            type='CheckedCocoDataset', data_root=str(trainval),
            ann_file=f'annotations/{split}.json', metainfo=dict(
                classes=TOY_CLASSES), data_prefix=dict(img='images/'),
            test_mode=True, pipeline=[]))
        sizes.append(len(dataset))
    assert sizes == [16, 4]


@pytest.mark.parametrize('args, message', [
    (['--val-fraction', '1.5'], 'val_fraction must lie in'),
    (['--val-fraction', '0'], 'val_fraction must lie in'),
])
def test_bad_input_is_named(trainval, load_tool, args, message):
    tool = load_tool('tools/misc/split_coco.py')
    ann = trainval / 'annotations'
    with pytest.raises(SystemExit, match=message):
        tool.main([str(ann / 'trainval.json'), str(ann / 'a.json'),
                   str(ann / 'b.json')] + args)
    with pytest.raises(SystemExit, match='overwrite the input'):
        tool.main([str(ann / 'trainval.json'), str(ann / 'trainval.json'),
                   str(ann / 'b.json')])
