"""The Spark writer and reader for upsert Kafka topics (needs the `spark` extra)."""
