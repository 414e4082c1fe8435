"""The retrieval quickstart's ``--show`` picture: neighbours of each query,
framed by correctness."""
import os.path as osp

import numpy as np
import pytest
import torch
from PIL import Image

from mmdet_rankloss.evaluation import recall_at_k

CONFIG = osp.join('configs', 'retrieval',
                  'retrieval_r18-w16_rambo-log_20e_digit-instances.py')


@pytest.fixture
def tool(load_tool):
    return load_tool('tools/retrieval_quickstart.py')


class FakeDataset:

    def __init__(self, labels):
        self.labels = labels

    def get_data_info(self, i):
        return dict(img=np.full((8, 8), 20 * i, np.uint8),
                    gt_label=self.labels[i])


def test_nearest_matches_brute_force(tool):
    emb = torch.nn.functional.normalize(
        torch.randn(30, 5, generator=torch.Generator().manual_seed(0)), dim=1)
    queries = [0, 7, 29]
    got = tool.nearest(emb, queries, 4).numpy()
    sim = (emb @ emb.T).numpy()
    for row, q in zip(got, queries):
        others = [j for j in np.argsort(-sim[q], kind='stable') if j != q]
        assert list(row) == others[:4]
    with pytest.raises(ValueError, match='--topk 30 .* 30'):
        tool.nearest(emb, queries, 30)


def count(image, colour):
    return int((image == np.array(colour, np.uint8)).all(-1).sum())


def test_frames_mark_right_and_wrong_neighbours(tool):
    labels = torch.tensor([0, 0, 1, 1])
    data = FakeDataset(labels.tolist())
    all_right = np.asarray(tool.grid(data, labels, [0, 2],
                                     torch.tensor([[1], [3]]), 16))
    one_wrong = np.asarray(tool.grid(data, labels, [0, 2],
                                     torch.tensor([[1], [0]]), 16))
    assert count(all_right, tool.WRONG) == 0
    assert count(all_right, tool.RIGHT) > 0
    assert count(one_wrong, tool.WRONG) > 0
    assert count(all_right, tool.QUERY) == count(one_wrong, tool.QUERY) > 0


def test_end_to_end_from_a_checkpoint(tool, tmp_path, capsys):
    from mmengine.config import Config
    from mmengine.registry import init_default_scope

    from mmdet.registry import MODELS
    init_default_scope('mmdet')
    cfg = Config.fromfile(CONFIG)
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    ckpt = str(tmp_path / 'untrained.pth')
    torch.save(dict(state_dict=model.state_dict()), ckpt)
    options = {'test_dataloader.dataset.indices': 40}
    emb, labels, dataset, views = tool.embed_test_set(CONFIG, ckpt, options)
    assert emb.shape[0] == len(dataset) == len(views) == 40
    # the picture shows the test pipeline's images, not the stored ones
    for i in (0, 39):
        assert views[i].shape == (32, 32, 3)
        assert np.array_equal(views[i],
                              dataset[i]['inputs'].permute(1, 2, 0).numpy())
        assert np.array_equal(
            tool.thumbnail(dataset, i, 32, views)[..., 0], views[i][..., 0])
    torch.testing.assert_close(emb.norm(dim=1), torch.ones(40))
    # the same network, run here on the same images, gives the same
    # embeddings (the checkpoint was loaded, the test pipeline applied)
    model.eval()
    loader_images = torch.stack([
        dataset[i]['inputs'].float() for i in range(40)])
    with torch.no_grad():
        direct = model.predict(
            model.data_preprocessor(dict(inputs=list(loader_images)))
            ['inputs'])
    direct = torch.stack([s.pred_embedding for s in direct])
    torch.testing.assert_close(
        emb, torch.nn.functional.normalize(direct, dim=1), rtol=1e-4,
        atol=1e-5)
    out = str(tmp_path / 'grid.png')
    r1, written = tool.main([
        '--config', CONFIG, '--show', ckpt, '--out', out, '--num-queries',
        '3', '--topk', '2', '--scale', '16', '--cfg-options',
        'test_dataloader.dataset.indices=40'
    ])
    assert written == out
    assert r1 == pytest.approx(recall_at_k(emb, labels, ks=(1, ))[1])
    image = np.asarray(Image.open(out))
    assert image.shape[0] > 3 * 16 and image.shape[1] > 3 * 16
    assert out in capsys.readouterr().out


def test_bad_query_ids_named(tool):
    args = tool.parse_args(['--show', 'x.pth', '--query-ids', '3', '50'])
    with pytest.raises(ValueError, match=r'--query-ids \[50\].*40 items'):
        tool.pick_queries(args, 40)
    with pytest.raises(FileNotFoundError, match='missing.pth'):
        tool.embed_test_set(CONFIG, 'missing.pth')
