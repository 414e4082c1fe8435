"""Recall@K and MAP@R as an MMEngine metric for retrieval models."""
from typing import Any, Dict, List, Optional, Sequence

import torch
from mmengine.evaluator import BaseMetric

from mmdet.registry import METRICS
from .functional import check_ks, retrieval_metrics

__all__ = ['RetrievalMetric']


def _get(sample: Any, key: str, default=None):
    if isinstance(sample, dict):
        return sample.get(key, default)
    return getattr(sample, key, default)


@METRICS.register_module()
class RetrievalMetric(BaseMetric):
    """Recall@K (any list of K) and MAP@R of predicted embeddings
    (docs/retrieval.md#evaluation).

    Consumes ``predict`` data samples with ``pred_embedding`` (D,),
    ``gt_label``, ``sample_idx`` and, with separate query and gallery sets
    (In-Shop), ``is_query``: without it every image queries the whole set
    (itself excluded by index); with it the queries query the rest. Results are
    sorted by ``sample_idx`` first (a tie-break independent of the workers) and
    scored in chunks. Keys ``R@K``, ``MAP@R`` (in [0, 1]; ``retrieval/R@1``
    with the default prefix) and ``num_queries``.

    Args:
        topk (Sequence[int]): Values of K. Defaults to (1,) (CUB: 1, 2, 4, 8;
            SOP: 1, 10, 100, 1000; In-Shop: 1, 10, 20, 30, 40, 50).
        map_at_r (bool): Also report MAP@R. Defaults to True.
        chunk_size (int, optional): Queries scored at a time; None picks it
            from the gallery size (about 0.5 GB). Defaults to None.
        device (str, optional): Device to score on, e.g. ``'cuda'``; None uses
            the device the embeddings were collected on (CPU).
        collect_device (str): Device used to gather results across ranks.
            Defaults to 'cpu'.
        prefix (str, optional): Prefix of the metric names. Defaults to None
            (``'retrieval'``).
        collect_dir (str, optional): Directory for gathering results on CPU.
            Defaults to None.
    """
    default_prefix: Optional[str] = 'retrieval'

    def __init__(self,
                 topk: Sequence[int] = (1, ),
                 map_at_r: bool = True,
                 chunk_size: Optional[int] = None,
                 device: Optional[str] = None,
                 collect_device: str = 'cpu',
                 prefix: Optional[str] = None,
                 collect_dir: Optional[str] = None) -> None:
        super().__init__(
            collect_device=collect_device,
            prefix=prefix,
            collect_dir=collect_dir)
        self.topk = check_ks(topk)
        self.map_at_r = bool(map_at_r)
        if chunk_size is not None and (isinstance(chunk_size, bool)
                                       or not isinstance(chunk_size, int)
                                       or chunk_size < 1):
            raise ValueError(
                f'chunk_size must be None or an int >= 1, got {chunk_size!r}')
        self.chunk_size = chunk_size
        self.device = device

    def process(self, data_batch: Any, data_samples: Sequence[Any]) -> None:
        """Store each sample's embedding (fp32, CPU), label and flags.

        The batch's embeddings and labels are stacked where they are and
        copied to the CPU together: two device-to-host copies per batch,
        not two per sample (each copy waits for the device).

        Args:
            data_batch (Any): The batch from the dataloader (unused).
            data_samples (Sequence): Outputs of the model's ``predict``.
        """
        embeddings, labels = [], []
        for sample in data_samples:
            emb = _get(sample, 'pred_embedding')
            label = _get(sample, 'gt_label')
            if emb is None or label is None:
                got = sorted(sample.keys()) if isinstance(
                    sample, dict) else type(sample)
                raise ValueError(
                    'RetrievalMetric needs data samples with pred_embedding '
                    'and gt_label (a retrieval model in predict mode), got '
                    f'keys {got}')
            embeddings.append(emb.detach().reshape(-1))
            labels.append(torch.as_tensor(label).reshape(-1)[:1])
        if not embeddings:
            return
        embeddings = torch.stack(embeddings).float().cpu()
        # the labels of a batch share a device (the data preprocessor's)
        labels = torch.cat([label.to(labels[0].device)
                            for label in labels]).cpu()
        for sample, emb, label in zip(data_samples, embeddings,
                                      labels.tolist()):
            self.results.append(
                dict(
                    embedding=emb.clone(),  # not a view of the batch
                    label=int(label),
                    is_query=_get(sample, 'is_query'),
                    sample_idx=_get(sample, 'sample_idx')))

    def compute_metrics(self, results: List[dict]) -> Dict[str, float]:
        """Score all collected samples.

        Args:
            results (list[dict]): Collected from all ranks.

        Returns:
            dict[str, float]: ``R@K`` for each K, ``MAP@R`` and
            ``num_queries``.
        """
        if not results:
            raise ValueError('RetrievalMetric got no samples to evaluate')
        if all(r['sample_idx'] is not None for r in results):
            results = sorted(results, key=lambda r: int(r['sample_idx']))
        embeddings = torch.stack([r['embedding'] for r in results])
        labels = torch.tensor([r['label'] for r in results])
        if self.device is not None:
            embeddings = embeddings.to(self.device)
        flags = [r['is_query'] for r in results]
        if all(f is None for f in flags):
            out = retrieval_metrics(
                embeddings,
                labels,
                ks=self.topk,
                with_map_at_r=self.map_at_r,
                chunk_size=self.chunk_size)
        else:
            if any(f is None for f in flags):
                raise ValueError('some samples have is_query and others do '
                                 'not: cannot tell queries from gallery')
            is_query = torch.tensor([bool(f) for f in flags])
            if not bool(is_query.any()) or bool(is_query.all()):
                raise ValueError(
                    'is_query must mark both queries and gallery items, got '
                    f'{int(is_query.sum())} queries of {len(flags)} samples')
            query = is_query.to(embeddings.device)
            out = retrieval_metrics(
                embeddings[query],
                labels[is_query],
                embeddings[~query],
                labels[~is_query],
                ks=self.topk,
                with_map_at_r=self.map_at_r,
                chunk_size=self.chunk_size)
        out.pop('num_skipped')
        return out
