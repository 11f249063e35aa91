"""msgpack encoding of Dramatiq messages, with a size limit.

msgpack is smaller and faster than JSON for crawl results (see
``bench/encoding.py``) and keeps bytes as bytes. Every process that sends or
decodes messages installs it through ``lib.broker.build_broker``.
"""

from __future__ import annotations

import msgpack
from dramatiq.encoder import Encoder, MessageData
from dramatiq.errors import DecodeError

#: A message must be a map with these keys to be a Dramatiq message at all.
REQUIRED_FIELDS = ("queue_name", "actor_name", "args", "kwargs", "options", "message_id", "message_timestamp")

FIELD_TYPES = {"queue_name": str, "actor_name": str, "args": (list, tuple), "kwargs": dict, "options": dict,
               "message_id": str, "message_timestamp": int}


class MessageTooLarge(ValueError):
    """An encoded message is larger than MESSAGE_MAX_BYTES."""


class MsgpackEncoder(Encoder):
    """Encodes messages as msgpack; refuses anything over ``max_bytes``."""

    def __init__(self, max_bytes: int = 16 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes

    def encode(self, data: MessageData) -> bytes:
        encoded = msgpack.packb(data, use_bin_type=True, datetime=False)
        if len(encoded) > self.max_bytes:
            raise MessageTooLarge(
                f"message for {data.get('actor_name')!r} is {len(encoded)} bytes, "
                f"over MESSAGE_MAX_BYTES={self.max_bytes}")
        return encoded

    def decode(self, data: bytes) -> MessageData:
        if len(data) > self.max_bytes:
            raise DecodeError(f"message of {len(data)} bytes is over MESSAGE_MAX_BYTES={self.max_bytes}", data[:64], None)
        try:
            fields = msgpack.unpackb(
                data,
                raw=False,
                strict_map_key=True,
            )
        except Exception as e:  # msgpack raises several unrelated exception types
            raise DecodeError(f"not valid msgpack: {e}", data[:64], e) from None
        if not isinstance(fields, dict):
            raise DecodeError(f"not a message: a msgpack {type(fields).__name__}, not a map", data[:64], None)
        missing = [name for name in REQUIRED_FIELDS if name not in fields]
        if missing:
            raise DecodeError(f"not a message: missing {', '.join(missing)}", data[:64], None)
        for name, kind in FIELD_TYPES.items():
            if not isinstance(fields[name], kind):
                raise DecodeError(f"not a message: {name} is a {type(fields[name]).__name__}", data[:64], None)
        return fields
