"""keyguard: byte-exact keys for compacted (upsert) Kafka topics.

One import root: `keyguard.formats` (Flink's and the registries' key and value formats),
`keyguard.guard` (the key-evolution guard, audit and value compatibility) and `keyguard.sparkio`
(the Spark `upsert-kafka` data source, guard first). Importing this package imports none of them.
"""

__version__ = "0.2.0"

__all__ = ["__version__"]
