"""The SoDeep picture: sorter predictions against exact ranks."""
import numpy as np
import pytest
import torch
from PIL import Image

from mmdet_rankloss.networks.sorters import LSTMSorter, save_sorter


@pytest.fixture
def tool(load_tool):
    return load_tool('tools/analysis_tools/plot_sorter_predictions.py')


def test_handcrafted_predictions_match_pairwise_sigmoids(tool):
    (title, sorter), = tool.load_sorters([], seq_len=7, lambda_val=10.0)
    assert 'handcrafted' in title
    scores = torch.randn(5, 7, dtype=torch.float64,
                         generator=torch.Generator().manual_seed(0))
    true, pred = tool.predictions(sorter, scores)
    y = scores.numpy()
    # Eq. 11-12 written out: 1 + sum_{j != i} sigmoid(lambda (y_j - y_i))
    diff = y[:, None, :] - y[:, :, None]  # [n, i, j] = y_j - y_i
    pairwise = 1 / (1 + np.exp(-10.0 * diff))
    expected = (1 + pairwise.sum(-1) - 0.5) / 7  # drop j == i (sigmoid 0)
    np.testing.assert_allclose(pred.numpy(), expected, atol=1e-6)
    exact = np.argsort(np.argsort(-y, axis=1), axis=1) + 1
    np.testing.assert_allclose(true.numpy(), exact / 7)


def test_picture_with_a_checkpoint(tool, tmp_path, capsys):
    ckpt = str(tmp_path / 'lstm_d8.pth')
    save_sorter(LSTMSorter(seq_len=8, hidden_size=4, num_layers=1), ckpt,
                steps=3, train_seconds=0.1)
    out = str(tmp_path / 'img' / 'sorters.png')
    assert tool.main(['--out', out, '--checkpoint', ckpt, '--seq-len', '8',
                      '--num-sequences', '4']) == 0
    image = np.asarray(Image.open(out))
    assert image.shape[1] > image.shape[0]  # two panels side by side
    text = capsys.readouterr().out
    assert 'LSTMSorter (lstm_d8.pth, 3 steps' in text
    assert out in text


def test_wrong_length_checkpoint_named(tool, tmp_path):
    ckpt = str(tmp_path / 'lstm_d8.pth')
    save_sorter(LSTMSorter(seq_len=8, hidden_size=4, num_layers=1), ckpt)
    with pytest.raises(ValueError, match='lstm_d8.pth.*length 8.*--seq-len '
                       '9'):
        tool.load_sorters([ckpt], seq_len=9, lambda_val=10.0)
    with pytest.raises(FileNotFoundError, match='missing.pth'):
        tool.load_sorters([str(tmp_path / 'missing.pth')], 8, 10.0)
