"""msgpack encoding of Dramatiq messages, with a size limit.

msgpack is smaller and faster than JSON for crawl results (see
``bench/encoding.py``) and keeps bytes as bytes. Every process that sends or
decodes messages installs it through ``lib.messaging.broker.build_broker``.
"""

from __future__ import annotations

from typing import Any

import msgpack
from dramatiq.encoder import Encoder, MessageData
from dramatiq.errors import DecodeError

#: A message must be a map with these keys to be a Dramatiq message at all.
REQUIRED_FIELDS = ("queue_name", "actor_name", "args", "kwargs", "options", "message_id", "message_timestamp")

FIELD_TYPES: dict[str, type | tuple[type, ...]] = {
    "queue_name": str, "actor_name": str, "args": (list, tuple), "kwargs": dict, "options": dict,
    "message_id": str, "message_timestamp": int,
}


#: Bytes of MESSAGE_MAX_BYTES per array or map a message may hold. An empty array is one byte on the wire and
#: some 60 bytes in Python, so without this cap a 16 MB message of empty arrays decodes to over 1 GB (and
#: seconds of CPU); with it, containers cost at most about MESSAGE_MAX_BYTES. A crawl item (a map) takes
#: ~200 bytes encoded, so real messages stay far below the cap.
BYTES_PER_CONTAINER = 64


class MessageTooLarge(ValueError):
    """An encoded message is larger than MESSAGE_MAX_BYTES."""


class _TooManyContainers(Exception):
    pass


class MsgpackEncoder(Encoder):
    """Encodes messages as msgpack; refuses anything over ``max_bytes``."""

    def __init__(self, max_bytes: int = 16 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self.max_containers = max(1024, max_bytes // BYTES_PER_CONTAINER)

    def encode(self, data: MessageData) -> bytes:
        encoded: bytes = msgpack.packb(data, use_bin_type=True, datetime=False)
        if len(encoded) > self.max_bytes:
            raise MessageTooLarge(
                f"message for {data.get('actor_name')!r} is {len(encoded)} bytes, "
                f"over MESSAGE_MAX_BYTES={self.max_bytes}")
        return encoded

    def decode(self, data: bytes) -> MessageData:
        if len(data) > self.max_bytes:
            raise DecodeError(f"message of {len(data)} bytes is over MESSAGE_MAX_BYTES={self.max_bytes}", data[:64],
                              None)
        fields = self._unpack(data)
        if not isinstance(fields, dict):
            raise DecodeError(f"not a message: a msgpack {type(fields).__name__}, not a map", data[:64], None)
        missing = [name for name in REQUIRED_FIELDS if name not in fields]
        if missing:
            raise DecodeError(f"not a message: missing {', '.join(missing)}", data[:64], None)
        for name, kind in FIELD_TYPES.items():
            if not isinstance(fields[name], kind):
                raise DecodeError(f"not a message: {name} is a {type(fields[name]).__name__}", data[:64], None)
        return fields

    def _unpack(self, data: bytes) -> Any:
        """msgpack with every limit explicit: no string, binary, array or map may declare more than the message
        holds (a crafted header claiming 2**31 elements fails at once, before anything is allocated), no ext
        types (Dramatiq messages have none), at most ``max_containers`` arrays and maps, and msgpack's own
        nesting limit."""
        left = [self.max_containers]

        def count(container: object) -> object:
            left[0] -= 1
            if left[0] < 0:
                raise _TooManyContainers
            return container

        size = len(data)
        try:
            return msgpack.unpackb(data, raw=False, strict_map_key=True, max_str_len=size, max_bin_len=size,
                                   max_array_len=size, max_map_len=size // 2, max_ext_len=0,
                                   list_hook=count, object_hook=count)
        except _TooManyContainers:
            problem = (f"more than {self.max_containers} arrays and maps (at most one per {BYTES_PER_CONTAINER} "
                       f"bytes of MESSAGE_MAX_BYTES={self.max_bytes})")
        except msgpack.StackError:
            problem = "nested too deeply (msgpack allows 1024 levels)"
        except msgpack.FormatError:
            problem = "a byte that starts no msgpack value (not msgpack at all?)"
        except ValueError as e:
            text = str(e) or type(e).__name__
            if "max_ext_len" in text:
                problem = f"ext types are not part of a message ({text})"
            elif "exceeds max_" in text:
                problem = f"a declared length is larger than the whole message ({size} bytes): {text}"
            elif "incomplete input" in text:
                problem = f"truncated, or a declared length is larger than the message ({size} bytes): {text}"
            else:
                problem = text
        except Exception as e:  # msgpack raises several unrelated exception types
            problem = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        raise DecodeError(f"not valid msgpack: {problem}", data[:64], None)
