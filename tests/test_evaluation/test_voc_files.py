"""Detections of ``tools/test.py --out`` read by image id."""
import pickle
import re

import numpy as np
import pytest

from mmdet_rankloss.evaluation.voc_files import load_detections


def result(img_path, score=0.5):
    """One entry of a ``tools/test.py --out`` results file."""
    return dict(img_path=img_path,
                pred_instances=dict(bboxes=np.array([[1., 2., 3., 4.]]),
                                    scores=np.array([score]),
                                    labels=np.array([0])))


def write(tmp_path, results):
    path = tmp_path / 'results.pkl'
    path.write_bytes(pickle.dumps(results))
    return str(path)


def test_detections_are_keyed_by_file_stem(tmp_path):
    pkl = write(tmp_path, [result('data/VOC2007/JPEGImages/000001.jpg', 0.9),
                           result('data/VOC2007/JPEGImages/000002.jpg', 0.1)])
    dets = load_detections(pkl)
    assert sorted(dets) == ['000001', '000002']
    assert dets['000001']['scores'].tolist() == [0.9]
    assert dets['000002']['bboxes'].shape == (1, 4)


def test_two_images_with_one_stem_are_refused(tmp_path):
    first, second = 'a/JPEGImages/0001.jpg', 'b/JPEGImages/0001.png'
    pkl = write(tmp_path, [result(first), result('a/JPEGImages/0002.jpg'),
                           result(second)])
    with pytest.raises(ValueError) as info:
        load_detections(pkl)
    message = str(info.value)
    assert pkl in message and "'0001'" in message
    assert re.search(f'{re.escape(first)} and {re.escape(second)}', message)


def test_the_same_image_twice_is_refused(tmp_path):
    path = 'a/JPEGImages/0001.jpg'
    pkl = write(tmp_path, [result(path), result(path)])
    with pytest.raises(ValueError, match=f'holds the image {path} twice'):
        load_detections(pkl)
