"""The options every checked dataset takes (:class:`CheckedVOCDataset`,
:class:`CheckedCocoDataset`), validated in one place."""
from typing import Tuple

__all__ = ['check_options', 'CheckedOptions']


def check_options(unknown_class: str, check_images: bool) -> Tuple[str, bool]:
    """``(unknown_class, check_images)`` checked: ``unknown_class`` is
    ``'error'`` or ``'skip'``, ``check_images`` a bool."""
    if unknown_class not in ('error', 'skip'):
        raise ValueError("unknown_class must be 'error' or 'skip', got "
                         f'{unknown_class!r}')
    if not isinstance(check_images, bool):
        raise ValueError(
            f'check_images must be True or False, got {check_images!r}')
    return unknown_class, check_images


class CheckedOptions:
    """Takes and checks ``unknown_class`` and ``check_images`` before the
    dataset class after it in the bases (``**kwargs`` go on to it)."""

    def __init__(self,
                 unknown_class: str = 'error',
                 check_images: bool = True,
                 **kwargs) -> None:
        self.unknown_class, self.check_images = check_options(
            unknown_class, check_images)
        super().__init__(**kwargs)
