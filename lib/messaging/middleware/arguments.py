"""Refuses messages whose arguments do not fit the actor they are for."""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from functools import cache
from typing import Any

from dramatiq import Broker, MessageProxy, Middleware

from lib.core.errors import BadMessage


@cache
def _signature(fn: Callable[..., Any]) -> tuple[inspect.Signature, dict[str, Any]]:
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # unresolvable annotations: check arity only
        hints = {}
    return inspect.signature(fn), hints


def _fits(value: object, hint: Any) -> bool:
    """Whether a decoded msgpack value fits a simple annotation (unknown ones always fit)."""
    if hint is typing.Any or hint is inspect.Parameter.empty:
        return True
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    target = origin or hint
    if target is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if target is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if target in (list, tuple):
        return isinstance(value, (list, tuple))
    if target in (str, bytes, bool, dict):
        return isinstance(value, target)
    return True


def check_arguments(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Raise ``BadMessage`` saying which argument is missing, extra or of the wrong type."""
    signature, hints = _signature(fn)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as e:
        raise BadMessage(f"arguments do not fit {fn.__name__}: {e} (signature {fn.__name__}{signature})") from None
    for name, value in bound.arguments.items():
        parameter = signature.parameters[name]
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        hint = hints.get(name, inspect.Parameter.empty)
        if not _fits(value, hint):
            raise BadMessage(
                f"argument {name!r} of {fn.__name__} must be {getattr(hint, '__name__', hint)}, "
                f"got {type(value).__name__} {value!r:.80}")


class ArgumentCheck(Middleware):
    """Dead-letters, with the reason, a message that does not fit its actor's signature."""

    def before_process_message(self, broker: Broker, message: MessageProxy) -> None:
        actor = broker.get_actor(message.actor_name)
        check_arguments(actor.fn, message.args, message.kwargs)
