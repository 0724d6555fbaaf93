"""Byte-exact key and value formats for upsert Kafka topics, compatible with Flink's formats.

Pure functions over rows and Arrow batches; no network except through `keyguard.formats.registry`.
"""
