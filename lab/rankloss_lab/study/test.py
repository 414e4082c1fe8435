"""The test phase: the runs of each method at its selected learning rate,
seed by seed, and the methods a frozen study tests."""
from typing import Dict, List, Optional, Sequence, Tuple

from .common import PreregistrationError, declared_methods


def test_plan(spec: dict, methods: Sequence[str],
              chosen: Dict[str, float]) -> List[Tuple]:
    missing = [m for m in methods if m not in chosen]
    if missing:
        raise RuntimeError(
            f'no learning rate selected yet for {missing}: run the select '
            'phase first (--phase select)')
    # seed by seed: a test phase stopped half-way leaves whole pairs
    return [(m, chosen[m], seed) for seed in spec['seeds'] for m in methods]


def test_methods(spec: dict, record: dict, requested: Optional[Sequence[str]],
                 exploratory: bool) -> List[str]:
    """The methods a frozen study tests (undeclared: ``--exploratory``)."""
    declared = declared_methods(spec)
    if requested is None:
        return declared
    undeclared = [m for m in requested if m not in declared]
    if undeclared and not exploratory:
        raise PreregistrationError(
            f'{undeclared} are not declared in the pre-registration '
            f"{record['path']} (declared: {declared}): their test runs would "
            'be exploratory; pass --exploratory to run them anyway (the '
            'report labels them exploratory)')
    return list(requested)
