"""The one helper for deprecated names of the losses' API.

A renamed function or keyword keeps working for one release and emits a
``DeprecationWarning`` that names its replacement:

* :func:`renamed_keywords`: a decorator for a function whose argument was
  renamed (e.g. ``labels`` -> ``positives``);
* :func:`deprecated_alias`: the old name of a renamed function, with the
  old defaults where they changed, so an old call computes what it did.
"""
import functools
import inspect
import warnings
from typing import Callable

__all__ = ['warn_deprecated', 'renamed_keywords', 'deprecated_alias']


def warn_deprecated(old: str, new: str, stacklevel: int = 3) -> None:
    """``DeprecationWarning``: ``old`` is deprecated, use ``new``."""
    warnings.warn(
        f'{old} is deprecated and will be removed in the next release; use '
        f'{new}', DeprecationWarning, stacklevel=stacklevel)


def _rename(owner: str, kwargs: dict, renamed: dict) -> dict:
    for old, new in renamed.items():
        if old in kwargs:
            if new in kwargs:
                raise TypeError(f'{owner}() got both {new}= and its '
                                f'deprecated name {old}=')
            warn_deprecated(f'{owner}({old}=...)', f'{new}=', stacklevel=4)
            kwargs[new] = kwargs.pop(old)
    return kwargs


def renamed_keywords(**renamed: str) -> Callable:
    """Decorator: the keywords ``old=new`` of ``renamed`` are accepted
    under their old names with a ``DeprecationWarning``. The signature
    seen by ``inspect.signature`` stays the function's own."""

    def decorate(fn: Callable) -> Callable:

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, **_rename(fn.__name__, kwargs, renamed))

        wrapper.renamed_keywords = dict(renamed)
        return wrapper

    return decorate


def deprecated_alias(old_name: str, new: Callable,
                     **old_defaults) -> Callable:
    """``old_name``, a deprecated alias of ``new``: warns, then calls
    ``new`` with ``old_defaults`` for the arguments the call leaves out
    (the defaults the old function had where they changed)."""
    signature = inspect.signature(new)
    renamed = getattr(new, 'renamed_keywords', {})

    def alias(*args, **kwargs):
        warn_deprecated(old_name, new.__name__)
        kwargs = _rename(old_name, kwargs, renamed)
        given = signature.bind_partial(*args, **kwargs).arguments
        kwargs.update({name: value for name, value in old_defaults.items()
                       if name not in given})
        return new(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old_name
    alias.__doc__ = (f'Deprecated alias of :func:`{new.__name__}` (removed '
                     'in the next release)' +
                     (f', with the old defaults {old_defaults}.'
                      if old_defaults else '.'))
    alias.__wrapped__ = new
    return alias
