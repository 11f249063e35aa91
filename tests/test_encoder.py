import pytest
from dramatiq.errors import DecodeError

from lib.messaging.encoder import MessageTooLarge, MsgpackEncoder


def message(**kwargs):
    return {"queue_name": "q", "actor_name": "a", "args": [], "kwargs": kwargs, "options": {},
            "message_id": "m", "message_timestamp": 1}


def test_round_trip_keeps_unicode_and_bytes():
    enc = MsgpackEncoder()
    data = message(title="鬼滅の刃 フィギュア", raw=b"\x00\xff", price=2500, ratio=1.5, flag=None)
    assert enc.decode(enc.encode(data)) == data


@pytest.mark.parametrize("payload, words", [
    (b"\xc1\xc1\xc1", "not valid msgpack"),
    (b"\x93\x01\x02\x03", "not a map"),
    (b"\x81\xa1a\x01", "missing"),
])
def test_garbage_raises_decode_error_with_reason(payload, words):
    with pytest.raises(DecodeError) as e:
        MsgpackEncoder().decode(payload)
    assert words in str(e.value)


def test_wrong_field_types_are_not_messages():
    enc = MsgpackEncoder()
    bad = message()
    bad["kwargs"] = [1, 2]
    with pytest.raises(DecodeError, match="kwargs is a list"):
        enc.decode(enc.encode(bad))


def test_size_limit_both_ways():
    enc = MsgpackEncoder(max_bytes=1000)
    with pytest.raises(MessageTooLarge):
        enc.encode(message(blob="x" * 2000))
    big = MsgpackEncoder().encode(message(blob="x" * 2000))
    with pytest.raises(DecodeError, match="over MESSAGE_MAX_BYTES"):
        enc.decode(big)
