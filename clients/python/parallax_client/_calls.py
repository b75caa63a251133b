"""Calling an SDK method or tool function with its arguments by name: the
firewall checks a call by its named arguments and runs the (possibly
rewritten) call from them."""

from __future__ import annotations

import inspect
from typing import Any, Callable, Mapping


def bind_arguments(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """A call's arguments by name (``**kwargs`` flattened in), so a tool call
    and its rewrite can be expressed as keyword arguments."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        if args:
            raise TypeError(
                f"{getattr(func, '__name__', func)!s} has no signature to read: pass its arguments by name"
            ) from None
        return dict(kwargs)
    bound = sig.bind(*args, **kwargs)
    named: dict[str, Any] = {}
    for pname, value in bound.arguments.items():
        kind = sig.parameters[pname].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            named.update(value)
        elif kind is inspect.Parameter.VAR_POSITIONAL:
            if value:
                raise TypeError(f"*{pname} cannot be checked by name: pass those arguments by name")
        else:
            named[pname] = value
    return named


def invoke(func: Callable[..., Any], named: Mapping[str, Any]) -> Any:
    """Calls ``func`` with arguments by name, passing its positional-only
    parameters (those of C methods such as ``sqlite3.Cursor.execute``) by
    position."""
    rest = dict(named)
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return func(**rest)
    positional = []
    for p in params:
        if p.kind is not inspect.Parameter.POSITIONAL_ONLY:
            break
        if p.name not in rest:
            break
        positional.append(rest.pop(p.name))
    return func(*positional, **rest)
