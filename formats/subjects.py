"""Subject name strategies: which registry subject a topic's key or value schema lives under.

Flink's `avro-confluent` takes one explicit `subject`; its Kafka connectors fill in
`<topic>-key` / `<topic>-value` (Confluent's TopicNameStrategy) when it is left out. Confluent's
serializers also offer RecordNameStrategy (`<record full name>`, one subject per record type,
shared by every topic) and TopicRecordNameStrategy (`<topic>-<record full name>`). The names
are Confluent's class names (`key.subject.name.strategy` in Java, `subject.name.strategy` in
confluent-kafka-python), so configurations carry over.
"""

from __future__ import annotations

import re

from keyguard.formats.errors import InvalidOptionError

TOPIC_NAME = "TopicNameStrategy"
RECORD_NAME = "RecordNameStrategy"
TOPIC_RECORD_NAME = "TopicRecordNameStrategy"
STRATEGIES = (TOPIC_NAME, RECORD_NAME, TOPIC_RECORD_NAME)

# confluent-kafka-python's function names, accepted as spellings of the same strategies.
_PYTHON_NAMES = {
    "topic_subject_name_strategy": TOPIC_NAME,
    "record_subject_name_strategy": RECORD_NAME,
    "topic_record_subject_name_strategy": TOPIC_RECORD_NAME,
}


def parse_strategy(raw: str) -> str:
    """`TopicNameStrategy`, its Java class name or its Python function name -> the short name."""
    text = raw.strip()
    short = text.rsplit(".", 1)[-1]
    for s in STRATEGIES:
        if short.lower() == s.lower():
            return s
    if text.lower() in _PYTHON_NAMES:
        return _PYTHON_NAMES[text.lower()]
    raise ValueError("expected one of " + ", ".join(STRATEGIES))


def subject_name(
    strategy: str, *, topic: str | None, role: str, record_name: str | None
) -> str:
    """The subject for a key (`role="key"`) or value schema under `strategy`."""
    if strategy in (TOPIC_NAME, TOPIC_RECORD_NAME) and not topic:
        raise InvalidOptionError(
            f"{strategy} needs the topic name, and none is known here",
            hint="give the subject explicitly with the 'subject' option",
        )
    if strategy == TOPIC_NAME:
        return f"{topic}-{role}"
    if not record_name:
        raise InvalidOptionError(
            f"{strategy} needs a record schema, and this {role} schema is not a record",
            hint="use TopicNameStrategy, or give the subject explicitly",
        )
    if strategy == RECORD_NAME:
        return record_name
    if strategy == TOPIC_RECORD_NAME:
        return f"{topic}-{record_name}"
    raise InvalidOptionError(f"unknown subject name strategy {strategy!r}",
                             hint="use one of " + ", ".join(STRATEGIES))


def parse_context(raw: str) -> str:
    """A Schema Registry context name (`.flink-dev`, Confluent Cloud Flink's
    `*-registry.schema-context`): a dot, then letters, digits, `-`, `_` or `.`."""
    text = raw.strip()
    if not re.fullmatch(r"\.[A-Za-z0-9_.-]+", text):
        raise ValueError("expected a context name starting with a dot, e.g. .flink-dev")
    return text


def qualified(subject: str, context: str | None) -> str:
    """`subject` in a schema context, as Confluent's registry names it (`:.ctx:subject`); as is
    without a context, or when already qualified."""
    if not context or subject.startswith(":"):
        return subject
    return f":{context}:{subject}"
