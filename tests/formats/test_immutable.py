"""`Value`: equality, hash, repr and `replace` from FIELDS, for the classes built on it."""

import pickle

import pytest

from keyguard.formats.codec import format_factory
from keyguard.formats.framing import CONFLUENT, PrefixFrame
from keyguard.formats.sqltypes import parse_type
from keyguard.formats.types import DecimalType, Field, IntType, RowType
from keyguard.guard.keys.side import KeySide
from keyguard.guard.report import Finding, Report
from keyguard.guard.rules import TOPIC_NOT_COMPACTED

ROW = RowType(fields=(Field("id", IntType(nullable=False)),)).not_null()


def test_replace_changes_the_named_fields_and_checks_the_result_as_new() -> None:
    d = DecimalType(precision=10, scale=2)
    assert d.replace(scale=3) == DecimalType(precision=10, scale=3)
    assert d.replace() == d and d.replace() is not d
    with pytest.raises(TypeError, match="no field scal"):
        d.replace(scal=3)
    side = KeySide("avro-registry", ROW)  # an alias: the side names the format itself
    moved = side.replace(partitions=6)
    assert (moved.format, moved.partitions, moved.row_type) == ("avro-confluent", 6, ROW)
    with pytest.raises(Exception, match="partitioner"):
        side.replace(partitioner="nonesuch")  # made anew: checked as any side is


def test_equal_fields_make_equal_values_of_one_class_only() -> None:
    assert PrefixFrame("x") == PrefixFrame("x") != PrefixFrame("x", id_bytes=8)
    assert hash(PrefixFrame("x")) == hash(PrefixFrame("x"))
    assert CONFLUENT != PrefixFrame(*[getattr(CONFLUENT, f) for f in PrefixFrame.FIELDS])
    assert KeySide("json", ROW) == KeySide("json", ROW, options={})
    assert KeySide("json", ROW) != KeySide("json", ROW, options={"ignore-parse-errors": "true"})
    with pytest.raises(TypeError, match="unhashable"):
        hash(KeySide("json", ROW))  # its options are a mapping


def test_a_value_pickles_and_shows_its_fields() -> None:
    t = parse_type("ROW<a DECIMAL(5, 1), b ARRAY<VARCHAR(3)>>")
    assert pickle.loads(pickle.dumps(t)) == t
    assert repr(DecimalType(precision=5, scale=1)) == \
        "DecimalType(nullable=True, precision=5, scale=1)"
    factory = format_factory("avro-confluent")
    assert factory.replace(name="other").name == "other" and factory.name == "avro-confluent"


def test_a_record_is_a_value_not_a_tuple() -> None:
    finding = Finding(TOPIC_NOT_COMPACTED, "$", "not compacted", topic="orders")
    moved = finding.replace(topic="payments")
    assert (moved.topic, moved.rule, finding.topic) == ("payments", TOPIC_NOT_COMPACTED, "orders")
    assert Report.of([finding]) == Report((finding,)) != Report.of([moved])
    assert finding != (TOPIC_NOT_COMPACTED, "$", "not compacted", None, "orders")
    assert pickle.loads(pickle.dumps(Report.of([finding]))) == Report.of([finding])


def _value_classes() -> list[type]:
    import importlib
    import pkgutil

    import keyguard.formats
    import keyguard.guard
    from keyguard.formats.immutable import Value

    for package in (keyguard.formats, keyguard.guard):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not info.name.endswith("__main__"):  # that one runs the CLI
                importlib.import_module(info.name)
    found, todo = [], [Value]
    while todo:
        for sub in todo.pop().__subclasses__():
            found.append(sub)
            todo.append(sub)
    return found


def test_every_value_class_takes_its_fields_in_order_and_declares_them() -> None:
    # `replace`, equality and repr read FIELDS; the constructor must take exactly those names,
    # in that order, and the class must declare each (a slot, or an attribute of its own).
    import inspect

    classes = _value_classes()
    assert len(classes) > 60  # records, frames, factories, sides and the logical types
    for cls in (c for c in classes if c.FIELDS):  # not the logical types' fieldless base
        params = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
        assert tuple(params) == cls.FIELDS, cls
        annotated = {n for c in cls.__mro__ for n in vars(c).get("__annotations__", {})}
        assert set(cls.FIELDS) <= annotated | {s for c in cls.__mro__
                                                 for s in vars(c).get("__slots__", ())}, cls
