"""Rank-based losses, registered in ``mmdet.registry.MODELS``.

Layout (``docs/architecture.md``): a functional core per loss plus a thin
registered module; shared parts in their own modules: the checks
(:mod:`mmdet_rankloss.ops.checks`), :mod:`.utils` (reductions, zero loss,
diagnostics), :mod:`.pairwise` (the retrieval problem and
:class:`EmbeddingLoss`), :mod:`.memory` (:class:`ScoreMemory`) and
:mod:`.score_space` (:class:`ScoreSpace`, the detection head hooks). The
error-driven losses (AP, RS, aLRP) share :mod:`.error_driven` (the core),
:mod:`.error_driven_modes` (the positives' errors per mode),
:mod:`.error_driven_negatives` (the sorted negatives) and
:mod:`.error_driven_head` (the detection module).
"""
from .ap_loss import RaMBOAPLoss, average_precision_loss
from .ap_rankers import BlackboxRanker, SigmoidRanker, SorterRanker
from .memory import ScoreMemory
from .pairwise import (EmbeddingLoss, RetrievalPairs, check_embeddings_labels,
                       retrieval_pairs)
from .recall_loss import RaMBORecallLoss, rambo_recall_loss, recall_rank_weight
from .auc_loss import AUCLoss, auc_loss, auc_sigmoid_slope, relaxed_auc
from .mixed_loss import MixedRankLoss
from .fastap_loss import FastAPLoss, fastap, fastap_loss
from .score_space import ScoreSpace
from .sodeep_loss import (SoDeepAPLoss, SoDeepRecallLoss, SoDeepSpearmanLoss,
                          sodeep_ap_loss, sodeep_recall_loss, spearman_loss)
from .srt_loss import SoftRankThresholdLoss, srt_loss, srt_row_losses
from .triplet_loss import (BatchHardTripletLoss, WilcoxonLoss,
                           batch_hard_triplet_loss, wilcoxon_loss)

__all__ = ['RaMBOAPLoss', 'average_precision_loss',
           'BlackboxRanker', 'SigmoidRanker', 'SorterRanker',
           'ScoreMemory', 'ScoreSpace', 'EmbeddingLoss',
           'RaMBORecallLoss', 'rambo_recall_loss', 'recall_rank_weight',
           'RetrievalPairs', 'check_embeddings_labels', 'retrieval_pairs',
           'AUCLoss', 'auc_loss', 'auc_sigmoid_slope', 'relaxed_auc',
           'FastAPLoss', 'fastap', 'fastap_loss', 'MixedRankLoss',
           'SoDeepAPLoss', 'SoDeepRecallLoss', 'SoDeepSpearmanLoss',
           'sodeep_ap_loss', 'sodeep_recall_loss', 'spearman_loss',
           'SoftRankThresholdLoss', 'srt_loss', 'srt_row_losses',
           'BatchHardTripletLoss', 'WilcoxonLoss', 'batch_hard_triplet_loss',
           'wilcoxon_loss']
from .error_driven import error_driven_loss, error_driven_terms, smoothed_step
from .error_driven_head import ErrorDrivenDetectionLoss
from .rank_sort_loss import ErrorDrivenAPLoss, RankSortLoss
from .alrp_loss import ALRPLoss, ALRPSelfBalanceHook

__all__ += ['ErrorDrivenDetectionLoss', 'error_driven_loss',
            'error_driven_terms', 'smoothed_step', 'RankSortLoss',
            'ErrorDrivenAPLoss', 'ALRPLoss', 'ALRPSelfBalanceHook']
