"""A RaMBO-only detector does not flood the picture a user looks at.

Rank-trained scores are not probabilities: the quickstart's RaMBO detector,
with raw scores, draws many times more boxes than there are objects at
MMDetection's display threshold 0.3. The quickstart's RaMBO config carries
a Platt calibration fitted on the toy VOC's held-out val split
(``tools/quickstart.py --calibrate``). This trains that config as shipped
(8 epochs, one intra-op thread, as ``tools/quickstart.py`` does; about two
minutes on 2 CPU cores), runs MMDetection's ``DetInferencer`` on the test
images, and counts the boxes it draws.
"""
import os
import os.path as osp
import subprocess
import sys

import numpy as np
import pytest
from mmengine.config import Config

from mmdet_rankloss.evaluation.voc_files import load_voc_ground_truth
from rankloss_lab.datasets.toy_voc import make_toy_voc

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIG = osp.join(ROOT, 'configs', 'quickstart',
                  'faster-rcnn_r18-w32_fpn_rambo_toyvoc.py')
THRESHOLD = 0.3  # DetInferencer's default pred_score_thr
# DetInferencer loads the checkpoint through MMEngine: under torch >= 2.6
# with the checkpoint loader of mmdet_rankloss.patches, as a user opts in
pytestmark = pytest.mark.usefixtures('mmengine_patches')


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
    """The quickstart's data and its RaMBO checkpoint, trained as shipped."""
    base = tmp_path_factory.mktemp('quickstart')
    root = str(base / 'VOCdevkit') + '/'
    make_toy_voc(root, num_trainval=256, num_test=64, num_val=64)
    work = str(base / 'rambo')
    env = dict(os.environ, OMP_NUM_THREADS='1')
    proc = subprocess.run(
        [sys.executable, 'tools/train.py', CONFIG, '--work-dir', work,
         '--cfg-options'] + [
             f'{split}_dataloader.dataset.data_root={root}'
             for split in ('train', 'val', 'test')
         ], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    with open(osp.join(work, 'last_checkpoint'), encoding='utf-8') as f:
        return root, f.read().strip()


def drawn_boxes_per_image(config, checkpoint, root):
    """Boxes ``DetInferencer`` draws per test image at the threshold (its
    visualiser keeps the instances scoring above ``pred_score_thr``), and
    the objects per image."""
    from mmdet.apis import DetInferencer
    from mmdet.datasets import VOCDataset
    ids, gts = load_voc_ground_truth(root, 'test',
                                     VOCDataset.METAINFO['classes'])
    images = [osp.join(root, 'VOC2007', 'JPEGImages', f'{i}.jpg')
              for i in ids]
    inferencer = DetInferencer(model=config, weights=checkpoint,
                               device='cpu', show_progress=False)
    result = inferencer(images, pred_score_thr=THRESHOLD, no_save_vis=True,
                        return_datasamples=True, batch_size=8)
    drawn = [int((p.pred_instances.scores > THRESHOLD).sum())
             for p in result['predictions']]
    return float(np.mean(drawn)), float(np.mean(
        [len(gt['labels']) for gt in gts]))


@pytest.mark.slow
def test_the_shipped_calibration_keeps_the_picture_readable(trained,
                                                            tmp_path):
    root, checkpoint = trained
    cfg = Config.fromfile(CONFIG)
    calibration = cfg.model.roi_head.bbox_head.loss_cls.calibration
    assert calibration is not None and calibration[0] > 0
    boxes, objects = drawn_boxes_per_image(CONFIG, checkpoint, root)
    assert boxes <= 2 * objects, (boxes, objects)
    # the check can fail: without the calibration the same checkpoint
    # floods the picture
    raw = tmp_path / 'raw.py'
    raw.write_text(f"_base_ = '{CONFIG}'\n"
                   'model = dict(roi_head=dict(bbox_head=dict(loss_cls=dict('
                   'calibration=None))))\n')
    raw_boxes, _ = drawn_boxes_per_image(str(raw), checkpoint, root)
    assert raw_boxes > 2 * objects, (raw_boxes, objects)
