"""Minimal valid instances of the `openai` SDK's types, built from their own field declarations.

Each required field gets the simplest value its annotation allows (the first literal, the first
member of a union, an empty list, "x"), so every item type of the installed SDK, present or
future, can be constructed with `model_validate` and handed to `dispatch`.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal, Union

import pydantic
from openai.types.chat.chat_completion_message_tool_call import ChatCompletionMessageToolCallUnion
from openai.types.responses.response_input_item import ResponseInputItem
from openai.types.responses.response_item import ResponseItem
from openai.types.responses.response_output_item import ResponseOutputItem

__all__ = ["UNIONS", "example", "item_types", "members"]

UNIONS: dict[str, Any] = {
    "ResponseOutputItem": ResponseOutputItem,
    "ResponseItem": ResponseItem,
    "ResponseInputItem": ResponseInputItem,
    "ChatCompletionMessageToolCallUnion": ChatCompletionMessageToolCallUnion,
}


def members(union: Any) -> list[type[pydantic.BaseModel]]:
    """The model classes of a (possibly annotated) union."""
    if typing.get_origin(union) is typing.Annotated:
        union = typing.get_args(union)[0]
    return [cls for cls in typing.get_args(union) if isinstance(cls, type)]


def item_types(cls: type[pydantic.BaseModel]) -> list[str]:
    """The values the `type` field of `cls` may take."""
    annotation = cls.model_fields["type"].annotation
    found: list[str] = []
    stack = [annotation]
    while stack:
        current = stack.pop()
        if typing.get_origin(current) is Literal:
            found += [v for v in typing.get_args(current) if isinstance(v, str)]
        else:
            stack += list(typing.get_args(current))
    return found


def _value(annotation: Any) -> Any:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is type(None):
        return None
    if origin is typing.Annotated:
        return _value(args[0])
    if origin is Literal:
        return args[0]
    if origin in (Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        return None if len(members) < len(args) else _value(members[0])
    if origin in (list, typing.List, typing.Sequence):  # noqa: UP006
        return []
    if origin in (dict, typing.Dict):  # noqa: UP006
        return {}
    simple: dict[Any, Any] = {str: "x", int: 0, float: 0.0, bool: False, object: {}, Any: {}}
    if annotation in simple:
        return simple[annotation]
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return example_fields(annotation)
    raise TypeError(f"no example value for {annotation!r}")


def example_fields(cls: type[pydantic.BaseModel]) -> dict[str, Any]:
    """The required fields of `cls`, each with its simplest value (wire names)."""
    return {
        field.alias or name: _value(field.annotation)
        for name, field in cls.model_fields.items()
        if field.is_required()
    }


def example(cls: type[pydantic.BaseModel], **fields: Any) -> Any:
    """A valid instance of `cls`, with `fields` set on top of the simplest required ones."""
    return cls.model_validate({**example_fields(cls), **fields})
