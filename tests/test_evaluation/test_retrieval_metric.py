"""Recall@K and MAP@R against brute force, chunking, the MMEngine metric."""
import numpy as np
import pytest
import torch

from mmdet_rankloss.evaluation import (RetrievalMetric, map_at_r,
                                       recall_at_k, retrieval_metrics)
from mmdet_rankloss.evaluation import functional

DEVICES = ['cpu'] + (['cuda'] if torch.cuda.is_available() else [])


def brute_force(query, qlabels, gallery=None, glabels=None, ks=(1, )):
    """Sort every row fully by (score descending, index ascending)."""
    query = query.double().numpy()
    qlabels = qlabels.numpy()
    self_gallery = gallery is None
    if self_gallery:
        gallery, glabels = query, qlabels
    else:
        gallery, glabels = gallery.double().numpy(), glabels.numpy()
    # fp32 scores, as the metric computes them
    scores = (query.astype(np.float32) @ gallery.astype(np.float32).T)
    hits, ap, valid = np.zeros(len(ks)), 0.0, 0
    for i in range(len(query)):
        idx = np.arange(len(gallery))
        if self_gallery:
            idx = idx[idx != i]  # by index: a duplicate of i stays
        order = idx[np.lexsort((idx, -scores[i, idx]))]
        rel = glabels[order] == qlabels[i]
        num_rel = int(rel.sum())
        if num_rel == 0:
            continue
        valid += 1
        first = int(np.argmax(rel)) + 1
        hits += np.array([first <= k for k in ks])
        top = rel[:num_rel]
        precision = np.cumsum(top) / np.arange(1, num_rel + 1)
        ap += float((precision * top).sum()) / num_rel
    out = {f'R@{k}': hits[j] / max(valid, 1) for j, k in enumerate(ks)}
    out['MAP@R'] = ap / max(valid, 1)
    out['num_queries'] = valid
    return out


def tied_embeddings(n, dim=4, classes=5, seed=0):
    """Few distinct integer vectors: many exact ties and duplicates."""
    gen = torch.Generator().manual_seed(seed)
    emb = torch.randint(-2, 3, (n, dim), generator=gen).float()
    emb[1] = emb[0]  # an exact duplicate of a query
    labels = torch.randint(0, classes, (n, ), generator=gen)
    return emb, labels


def assert_same(out, ref):
    assert set(ref) <= set(out)
    for key, value in ref.items():
        assert out[key] == pytest.approx(value, abs=1e-12), key


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('chunk_size', [None, 1, 7, 1000])
@pytest.mark.parametrize('size', [(60, 5, 0), (150, 40, 1), (150, 40, 2)])
@pytest.mark.parametrize('path', [(1, 1.0, 2**24, 2), (32, 0.0, 0, 0)])
def test_self_retrieval_matches_brute_force(device, chunk_size, size, path,
                                            monkeypatch):
    # both ways of listing MAP@R's first R items (ranking only the blocks
    # that can hold them, or whole rows; on a copy of the rows that need it
    # or on the whole chunk; lists of exactly R or wider) and both counting
    # buffers (fp32, fp64) must agree with brute force
    min_width, subset_fraction, fp32_limit, blocks_per_item = path
    monkeypatch.setattr(functional, '_MIN_WIDTH', min_width)
    monkeypatch.setattr(functional, '_SUBSET_FRACTION', subset_fraction)
    monkeypatch.setattr(functional, '_FP32_COUNT_LIMIT', fp32_limit)
    monkeypatch.setattr(functional, '_BLOCKS_PER_ITEM', blocks_per_item)
    n, classes, seed = size
    emb, labels = tied_embeddings(n, dim=3, classes=classes, seed=seed)
    ks = (1, 2, 4, 8, 100)
    out = retrieval_metrics(
        emb.to(device), labels.to(device), ks=ks, chunk_size=chunk_size)
    assert_same(out, brute_force(emb, labels, ks=ks))


@pytest.mark.parametrize('chunk_size', [None, 3])
def test_query_gallery_matches_brute_force(chunk_size):
    query, qlabels = tied_embeddings(40, seed=2)
    gallery, glabels = tied_embeddings(55, seed=3)
    gallery[:5] = query[:5]  # queries duplicated in the gallery
    ks = (1, 10, 20, 30, 40, 50)
    out = retrieval_metrics(
        query, qlabels, gallery, glabels, ks=ks, chunk_size=chunk_size)
    assert_same(out, brute_force(query, qlabels, gallery, glabels, ks))


@pytest.mark.parametrize('subset_fraction,blocks', [(0.0, 1024), (1.0, 7)])
def test_random_real_valued_and_chunked_equals_unchunked(
        subset_fraction, blocks, monkeypatch):
    monkeypatch.setattr(functional, '_SUBSET_FRACTION', subset_fraction)
    monkeypatch.setattr(functional, '_CAND_BLOCKS', blocks)
    torch.manual_seed(0)
    emb = torch.nn.functional.normalize(torch.randn(300, 16), dim=1)
    labels = torch.randint(0, 30, (300, ))
    ks = (1, 2, 4, 8)
    full = retrieval_metrics(emb, labels, ks=ks, chunk_size=300)
    assert_same(full, brute_force(emb, labels, ks=ks))
    for chunk in (1, 16, 299):
        assert retrieval_metrics(emb, labels, ks=ks, chunk_size=chunk) == full


@pytest.mark.parametrize('blocks', [1, 3, 7, 64, 1024])
@pytest.mark.parametrize('width', [1, 5, 40])
def test_top_items_exact_with_ties(blocks, width, monkeypatch):
    # the first `width` items by (score desc, column asc), against a full
    # lexsort; blocks of 1 to 200 columns with a partial tail, integer
    # scores with many ties, -inf entries (excluded items)
    monkeypatch.setattr(functional, '_CAND_BLOCKS', blocks)
    gen = torch.Generator().manual_seed(blocks * 100 + width)
    scores = torch.randint(-3, 4, (30, 203), generator=gen).float()
    scores[:5] = torch.randn(5, 203, generator=gen)
    scores[5, :] = 0.0  # one value only
    scores[6, ::2] = float('-inf')
    cols = np.arange(scores.shape[1])
    expected = np.stack([
        cols[np.lexsort((cols, -row))][:width] for row in scores.numpy()
    ])
    assert (functional._top_items(scores, width).numpy() == expected).all()


def test_self_excluded_by_index_not_by_first_neighbour():
    # item 1 duplicates item 0 and shares its class: with exclusion by
    # index both find each other at rank 1; "dropping the first neighbour"
    # would drop the duplicate for one of them.
    emb = torch.tensor([[1., 0.], [1., 0.], [0., 1.], [0.1, 1.]])
    labels = torch.tensor([0, 0, 1, 2])
    assert recall_at_k(emb, labels, ks=(1, )) == {1: 1.0}
    # a query whose only duplicate is of another class misses at rank 1
    labels = torch.tensor([0, 1, 0, 1])
    out = retrieval_metrics(emb, labels, ks=(1, 2, 3))
    assert out['R@1'] == 0.0 and out['R@3'] == 1.0


def test_docstring_example_and_skipped_queries():
    emb = torch.tensor([[1., 0.], [.9, .1], [0., 1.], [.1, .9]])
    assert recall_at_k(emb, torch.tensor([0, 1, 1, 0]), ks=(1, 2, 3)) == {
        1: 0.0,
        2: 0.5,
        3: 1.0
    }
    # embeddings still attached to a graph are scored without it
    out = retrieval_metrics(
        emb.requires_grad_(), torch.tensor([0, 0, 1, 2]), ks=(1, ))
    assert out['num_queries'] == 2 and out['num_skipped'] == 2
    assert out['R@1'] == 1.0 and out['MAP@R'] == 1.0
    assert map_at_r(emb, torch.tensor([0, 0, 1, 2])) == 1.0


def test_map_at_r_hand_computed():
    # query 0 ranks: 1 (rel), 2 (not), 3 (rel); R = 2 -> AP@R = 1/2
    emb = torch.tensor([[1., 0.], [.9, .1], [.8, .2], [.7, .3]])
    labels = torch.tensor([0, 0, 1, 0])
    ranks = brute_force(emb, labels)
    assert map_at_r(emb, labels) == pytest.approx(ranks['MAP@R'])
    query = emb[:1]
    value = map_at_r(query, labels[:1], emb[1:], labels[1:])
    assert value == pytest.approx(0.5)


def test_pytorch_metric_learning_agrees():
    pytest.importorskip('pytorch_metric_learning')
    from pytorch_metric_learning.distances import CosineSimilarity
    from pytorch_metric_learning.utils.accuracy_calculator import \
        AccuracyCalculator
    from pytorch_metric_learning.utils.inference import CustomKNN
    torch.manual_seed(0)
    emb = torch.nn.functional.normalize(torch.randn(400, 32), dim=1)
    labels = torch.randint(0, 20, (400, ))
    calc = AccuracyCalculator(
        include=('precision_at_1', 'mean_average_precision_at_r'),
        k='max_bin_count',
        device=torch.device('cpu'),
        knn_func=CustomKNN(CosineSimilarity()))
    ref = calc.get_accuracy(emb, labels)
    out = retrieval_metrics(emb, labels, ks=(1, ))
    assert out['R@1'] == pytest.approx(ref['precision_at_1'], abs=1e-6)
    assert out['MAP@R'] == pytest.approx(
        ref['mean_average_precision_at_r'], abs=1e-6)


def test_faiss_exact_search_agrees():
    # faiss-cpu is optional (tools/install.sh installs it when it can)
    faiss = pytest.importorskip('faiss')
    torch.manual_seed(0)
    n, ks = 600, (1, 5, 20, 100)
    emb = torch.nn.functional.normalize(torch.randn(n, 24), dim=1)
    labels = torch.randint(0, 60, (n, ))
    index = faiss.IndexFlatIP(emb.shape[1])
    index.add(emb.numpy())
    neighbours = index.search(emb.numpy(), max(ks) + 1)[1]
    # remove each query by index (random floats: no duplicates, no ties)
    not_self = neighbours != np.arange(n)[:, None]
    assert (not_self.sum(1) == max(ks)).all()
    neighbours = neighbours[not_self].reshape(n, max(ks))
    match = labels.numpy()[neighbours] == labels.numpy()[:, None]
    first = np.where(match.any(1), match.argmax(1) + 1, n)
    valid = np.bincount(labels.numpy())[labels.numpy()] > 1
    out = recall_at_k(emb, labels, ks=ks)
    for k in ks:
        assert out[k] == (first[valid] <= k).sum() / valid.sum(), k
    assert 0 < out[1] < out[100] < 1  # a case that can tell them apart


def test_mmdet_reid_metrics_cmc_agrees():
    # ReIDMetrics ranks by squared L2 distance (the inner-product order for
    # unit vectors) over the whole set and removes "self" as the first
    # neighbour: the same protocol as ours when no item duplicates another.
    # 1000 queries, all with relevant items: R@K = hits / 1000 is exact at
    # ReIDMetrics' 3 decimals. (Its mAP is AP over the full ranking, not
    # MAP@R, so it is not compared.)
    from mmdet.evaluation.metrics import ReIDMetrics
    torch.manual_seed(1)
    n, ks = 1000, (1, 5, 10, 20)
    emb = torch.nn.functional.normalize(torch.randn(n, 8), dim=1)
    labels = torch.arange(n) % 100
    metric = ReIDMetrics(
        metric=['CMC'], metric_options=dict(rank_list=list(ks), max_rank=20))
    ref = metric.compute_metrics([
        dict(pred_feature=emb[i], gt_label=labels[i:i + 1]) for i in range(n)
    ])
    out = recall_at_k(emb, labels, ks=ks)
    for k in ks:
        assert out[k] == pytest.approx(float(ref[f'R{k}']), abs=1e-9), k
    assert 0 < out[1] < out[20] < 1


def test_invalid_inputs():
    emb, labels = tied_embeddings(10)
    with pytest.raises(ValueError, match='ks'):
        retrieval_metrics(emb, labels, ks=(0, ))
    with pytest.raises(ValueError, match='query_labels'):
        retrieval_metrics(emb, labels[:5])
    with pytest.raises(ValueError, match='together'):
        retrieval_metrics(emb, labels, gallery_emb=emb)
    with pytest.raises(ValueError, match='dimension'):
        retrieval_metrics(emb, labels, emb[:, :2], labels)
    with pytest.raises(ValueError, match='NaN'):
        retrieval_metrics(emb / 0, labels)
    with pytest.raises(ValueError, match='chunk_size'):
        retrieval_metrics(emb, labels, chunk_size=0)
    with pytest.raises(ValueError, match='integer'):
        retrieval_metrics(emb, labels.float())


def samples(emb, labels, is_query=None, order=None):
    order = range(len(emb)) if order is None else order
    out = []
    for i in order:
        sample = dict(pred_embedding=emb[i], gt_label=labels[i], sample_idx=i)
        if is_query is not None:
            sample['is_query'] = bool(is_query[i])
        out.append(sample)
    return out


def test_metric_copies_to_the_host_once_per_batch_not_per_sample():
    """Each read from the device waits for it: the batch's embeddings and
    labels go to the host together (before: two reads per sample)."""
    from torch.overrides import TorchFunctionMode

    class Reads(TorchFunctionMode):
        names = ('cpu', 'item', 'tolist', 'numpy', '__int__', '__bool__',
                 '__float__', '__index__')

        def __init__(self):
            super().__init__()
            self.count = 0

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.count += getattr(func, '__name__', '') in self.names
            return func(*args, **(kwargs or {}))

    emb, labels = tied_embeddings(16, seed=5)
    metric = RetrievalMetric()
    with Reads() as reads:
        metric.process({}, samples(emb, labels))
    assert reads.count <= 3  # embeddings, labels, their list
    assert [r['label'] for r in metric.results] == labels.tolist()
    assert all(torch.equal(r['embedding'], e.float())
               for r, e in zip(metric.results, emb))


def test_metric_self_retrieval_order_independent():
    emb, labels = tied_embeddings(50, seed=4)
    metric = RetrievalMetric(topk=(1, 2, 4, 8), chunk_size=7)
    # results arrive shuffled (e.g. from several ranks): sorted by index
    perm = torch.randperm(50, generator=torch.Generator().manual_seed(0))
    metric.process({}, samples(emb, labels, order=perm.tolist()[:30]))
    metric.process({}, samples(emb, labels, order=perm.tolist()[30:]))
    out = metric.evaluate(50)
    ref = brute_force(emb, labels, ks=(1, 2, 4, 8))
    for key in ('R@1', 'R@2', 'R@4', 'R@8', 'MAP@R'):
        assert out[f'retrieval/{key}'] == pytest.approx(ref[key], abs=1e-12)


def test_metric_query_gallery_split():
    emb, labels = tied_embeddings(70, seed=5)
    is_query = torch.arange(70) % 3 == 0
    metric = RetrievalMetric(topk=(1, 10, 20), prefix='inshop')
    metric.process({}, samples(emb, labels, is_query))
    out = metric.evaluate(70)
    ref = brute_force(emb[is_query], labels[is_query], emb[~is_query],
                      labels[~is_query], (1, 10, 20))
    assert out['inshop/R@1'] == pytest.approx(ref['R@1'], abs=1e-12)
    assert out['inshop/R@20'] == pytest.approx(ref['R@20'], abs=1e-12)
    assert out['inshop/MAP@R'] == pytest.approx(ref['MAP@R'], abs=1e-12)
    assert out['inshop/num_queries'] == ref['num_queries']


def test_metric_errors():
    metric = RetrievalMetric()
    with pytest.raises(ValueError, match='pred_embedding'):
        metric.process({}, [dict(gt_label=0)])
    with pytest.raises(ValueError, match='ks'):
        RetrievalMetric(topk=())
    emb, labels = tied_embeddings(6)
    metric.process({}, samples(emb, labels, is_query=[True] * 6))
    with pytest.raises(ValueError, match='queries and gallery'):
        metric.compute_metrics(metric.results)
