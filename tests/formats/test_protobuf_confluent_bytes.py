"""protobuf-registry against confluent-kafka's ProtobufSerializer: the same records, the same
framed bytes (magic byte, id, message index, body), for the first, a later and a nested message."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
from typing import Any

import pytest
from confluent_kafka.schema_registry.common.protobuf import decimal_to_protobuf
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import message_factory

from keyguard.formats.codec import CodecContext, create_codec
from keyguard.formats.protobuf_format import ProtobufRegistryCodec
from keyguard.formats.protobuf_schema import descriptor_pool, parse_proto, to_proto
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.registry.registration import bind_schema_id
from keyguard.formats.sqltypes import parse_type

_SCOPES = itertools.count()

TABLE = parse_type(
    "ROW<id BIGINT NOT NULL, name STRING, n INT NOT NULL, small SMALLINT, ok BOOLEAN, "
    "f FLOAT, d DOUBLE NOT NULL, raw BYTES, tags ARRAY<STRING NOT NULL>, "
    "counts MAP<STRING, BIGINT NOT NULL>, at TIMESTAMP(3), day DATE, tod TIME(3), "
    "amount DECIMAL(10, 2), address ROW<street STRING, no INT NOT NULL>, "
    "lines ARRAY<ROW<sku STRING NOT NULL, qty INT NOT NULL> NOT NULL>>").not_null()

ROWS: list[dict[str, Any]] = [
    {"id": 1, "name": "ada", "n": -5, "small": 300, "ok": True, "f": 1.5, "d": 2.25,
     "raw": b"\x00\xff", "tags": ["a", "b"], "counts": {"x": 1, "y": -2},
     "at": dt.datetime(2024, 5, 1, 12, 30, 0, 123000), "day": dt.date(2024, 5, 1),
     "tod": dt.time(23, 59, 58, 7000), "amount": decimal.Decimal("-1234.50"),
     "address": {"street": "Main", "no": 7},
     "lines": [{"sku": "s1", "qty": 2}, {"sku": "s2", "qty": 0}]},
    # Every default: proto3 writes none of them; nullable columns null: not set at all.
    {"id": 0, "name": None, "n": 0, "small": None, "ok": None, "f": None, "d": 0.0,
     "raw": None, "tags": [], "counts": {}, "at": None, "day": None, "tod": None,
     "amount": None, "address": None, "lines": []},
    # Present but default: an `optional` field and a message field carry their presence.
    {"id": -(2 ** 63), "name": "", "n": 2 ** 31 - 1, "small": 0, "ok": False, "f": 0.0,
     "d": -0.0, "raw": b"", "tags": [""], "counts": {"": 0},
     "at": dt.datetime(1969, 12, 31, 23, 59, 59, 999000), "day": dt.date(1, 1, 1),
     "tod": dt.time(0, 0), "amount": decimal.Decimal("0.00"),
     "address": {"street": None, "no": 0}, "lines": [{"sku": "", "qty": 0}]},
]


def _scope() -> MockRegistry:
    return MockRegistry(f"proto-bytes-{next(_SCOPES)}")


def _message(proto_text: str, full_name: str) -> Any:
    """The message built from the same descriptors, the runtime's class, filled by hand."""
    pool = descriptor_pool(parse_proto(proto_text))
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(full_name))


def _theirs(registry: MockRegistry, cls: Any, msg: Any, topic: str = "orders") -> bytes:
    serializer = ProtobufSerializer(cls, registry.client, {"use.deprecated.format": False})
    return bytes(serializer(msg, SerializationContext(topic, MessageField.VALUE)))


def _fill_table_message(cls: Any, row: dict[str, Any]) -> Any:
    """The record as a confluent-kafka user writes it: field by field, nulls left unset."""
    msg = cls()
    for name in ("id", "name", "n", "small", "ok", "f", "d", "raw"):
        if row[name] is not None:
            setattr(msg, name, row[name])
    msg.tags.extend(row["tags"])
    for k, v in row["counts"].items():  # a map as Confluent derives it: repeated entries
        msg.counts.add(key=k, value=v)
    if row["at"] is not None:
        msg.at.FromDatetime(row["at"])
    if row["day"] is not None:
        msg.day.year, msg.day.month, msg.day.day = (row["day"].year, row["day"].month,
                                                    row["day"].day)
    if row["tod"] is not None:
        t = row["tod"]
        msg.tod.SetInParent()
        msg.tod.hours, msg.tod.minutes, msg.tod.seconds = t.hour, t.minute, t.second
        msg.tod.nanos = t.microsecond * 1000
    if row["amount"] is not None:
        # Confluent's own conversion (its class is another pool's: copied by bytes).
        msg.amount.MergeFromString(decimal_to_protobuf(row["amount"], 2).SerializeToString())
        msg.amount.SetInParent()
    if row["address"] is not None:
        msg.address.SetInParent()
        if row["address"]["street"] is not None:
            msg.address.street = row["address"]["street"]
        msg.address.no = row["address"]["no"]
    for line in row["lines"]:
        msg.lines.add(sku=line["sku"], qty=line["qty"])
    return msg


def _ours(registry: MockRegistry, row_type: Any, options: dict[str, Any],
          schema_id: int) -> ProtobufRegistryCodec:
    codec = create_codec("protobuf-registry", row_type, {"url": registry.name, **options},
                         CodecContext(role="value", topic="orders", registry=registry))
    assert isinstance(codec, ProtobufRegistryCodec)
    return codec.bind_schema_id(schema_id)


@pytest.mark.parametrize("index", range(len(ROWS)))
def test_a_table_of_types_frames_byte_for_byte_like_protobuf_serializer(index: int) -> None:
    registry = _scope()
    text = to_proto(TABLE)
    cls = _message(text, "io.confluent.protobuf.generated.Row")
    theirs = _theirs(registry, cls, _fill_table_message(cls, ROWS[index]))
    schema_id = int.from_bytes(theirs[1:5], "big")
    codec = _ours(registry, TABLE, {}, schema_id)
    assert codec.encode(ROWS[index]) == theirs
    assert theirs[5] == 0  # the first message: index [0], one byte
    back = codec.decode(theirs)
    assert back is not None
    assert back["id"] == ROWS[index]["id"] and back["lines"] == ROWS[index]["lines"]
    assert back["address"] == ROWS[index]["address"]
    assert back["amount"] == ROWS[index]["amount"]
    # A reader that did not write it: the writer's schema by id, as the serializer registered
    # it (a base64 FileDescriptorProto in the mock), its message by the record's index.
    reader = create_codec("protobuf-registry", TABLE, {"url": registry.name},
                          CodecContext(role="value", topic="orders", registry=registry))
    assert reader.decode(theirs) == back


FILE = """syntax = "proto3";
package shop;

message Header { string source = 1; }

message Order {
  int64 id = 1;
  optional string note = 2;
  message Line {
    string sku = 1;
    int32 qty = 2;
  }
  repeated Line lines = 3;
}

message Refund {
  message Reason {
    enum Code { UNKNOWN = 0; DAMAGED = 1; LATE = 2; }
    Code code = 1;
    string text = 2;
  }
  int64 order_id = 1;
}
"""


@pytest.mark.parametrize("message, columns, row, index", [
    ("Order", "ROW<id BIGINT NOT NULL, note STRING, "
              "lines ARRAY<ROW<sku STRING NOT NULL, qty INT NOT NULL> NOT NULL>>",
     {"id": 42, "note": "gift", "lines": [{"sku": "a", "qty": 1}]}, b"\x02\x02"),
    ("shop.Refund", "ROW<order_id BIGINT NOT NULL>", {"order_id": 7}, b"\x02\x04"),
    ("Refund.Reason", "ROW<code STRING NOT NULL, text STRING NOT NULL>",
     {"code": "LATE", "text": "two weeks"}, b"\x04\x04\x00"),
    ("Order.Line", "ROW<sku STRING NOT NULL, qty INT NOT NULL>", {"sku": "z", "qty": 3},
     b"\x04\x02\x00"),
])
def test_a_later_or_nested_message_carries_its_message_index(
        message: str, columns: str, row: dict[str, Any], index: bytes) -> None:
    registry = _scope()
    full = message if message.startswith("shop.") else f"shop.{message}"
    cls = _message(FILE, full)
    msg = cls()
    for k, v in row.items():
        if isinstance(v, list):
            for item in v:
                getattr(msg, k).add(**item)
        else:
            setattr(msg, k, v)
    theirs = _theirs(registry, cls, msg)
    codec = _ours(registry, parse_type(columns).not_null(), {"schema": FILE, "message": message},
                  int.from_bytes(theirs[1:5], "big"))
    assert theirs[5:5 + len(index)] == index
    assert codec.encode(row) == theirs
    assert codec.decode(theirs) == row


def test_their_deserializer_reads_what_we_write() -> None:
    registry = _scope()
    codec = create_codec("protobuf-registry", parse_type("ROW<id BIGINT NOT NULL, note STRING, "
                         "lines ARRAY<ROW<sku STRING NOT NULL, qty INT NOT NULL> NOT NULL>>")
                         .not_null(), {"url": registry.name, "schema": FILE,
                                       "message": "Order"},
                         CodecContext(role="value", topic="orders", registry=registry))
    bind_schema_id(codec)  # registered under orders-value as PROTOBUF, as .proto text
    assert registry.get_version("orders-value").schema_type == "PROTOBUF"
    data = codec.encode({"id": 9, "note": None, "lines": [{"sku": "q", "qty": 5}]})
    cls = _message(FILE, "shop.Order")
    msg = ProtobufDeserializer(cls, {"use.deprecated.format": False})(
        data, SerializationContext("orders", MessageField.VALUE))
    assert msg.id == 9 and not msg.HasField("note") and msg.lines[0].qty == 5
