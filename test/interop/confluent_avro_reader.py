#!/usr/bin/env python3
"""Independent-reader interop check: consume a topic with Confluent's official
Python client (confluent-kafka) and its schema-registry AvroDeserializer.

Records must be in the Confluent wire format: magic byte 0, a 4-byte big-endian
schema id, then the Avro binary body. The writer schema is fetched by id from a
Confluent-API-compatible schema registry; no reader schema is given.

Prints one JSON line per record on stdout:
  {"topic", "partition", "offset", "key", "value", "schema_id"}

Exit codes:
  0  --expect N records were read
  2  the timeout passed with fewer than N records (stderr says how many)
  1  a record could not be deserialized (stderr names topic/partition/offset
     and the error), or the consumer hit a fatal error
  64 bad command-line arguments (argparse's own 2 would read as a timeout)

Install: pip install -r test/interop/requirements.txt (Python 3.11).
"""

import argparse
import base64
import datetime
import decimal
import json
import math
import struct
import sys
import time
import uuid

from confluent_kafka import Consumer, KafkaError
from confluent_kafka.schema_registry import (
    SchemaRegistryClient,
    prefix_schema_id_deserializer,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_TIMEOUT = 2
EXIT_USAGE = 64


class ArgParser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, "%s: error: %s\n" % (self.prog, message))

MAGIC_BYTE = 0
HEADER_LEN = 5  # magic byte + 4-byte schema id


class WireFormatError(Exception):
    """The value is not framed as magic byte 0 + 4-byte schema id + body."""


def parse_args(argv):
    p = ArgParser(
        description="Read Confluent-wire-format Avro records with confluent-kafka's AvroDeserializer."
    )
    p.add_argument("--brokers", required=True, help="bootstrap servers, e.g. 127.0.0.1:9092")
    p.add_argument("--registry", required=True, help="schema registry URL, e.g. http://127.0.0.1:8081")
    p.add_argument("--topic", required=True)
    p.add_argument("--expect", type=int, required=True, help="stop after this many records")
    p.add_argument("--timeout-s", type=float, default=30.0, help="overall deadline in seconds (default 30)")
    p.add_argument("--registry-user", default=None)
    p.add_argument("--registry-password", default=None)
    p.add_argument("--group", default=None, help="consumer group id (default: a unique one)")
    args = p.parse_args(argv)
    if args.expect < 0:
        p.error("--expect must be >= 0")
    if args.timeout_s <= 0:
        p.error("--timeout-s must be > 0")
    if (args.registry_user is None) != (args.registry_password is None):
        p.error("--registry-user and --registry-password must be given together")
    if args.group is None:
        args.group = "interop-reader-" + uuid.uuid4().hex
    return args


def to_jsonable(v):
    """Make a decoded Avro datum JSON-serialisable.

    bytes/fixed -> base64 string; decimal -> string (exact); uuid -> string;
    date/time/timestamp logical types -> ISO-8601 string; non-finite floats ->
    "NaN"/"Infinity"/"-Infinity" (json.dumps would otherwise emit bare NaN,
    which strict JSON parsers reject). Anything unexpected raises TypeError.
    """
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return v
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, dict):
        return {str(k): to_jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [to_jsonable(x) for x in v]
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    raise TypeError("cannot render decoded value of type %s as JSON" % type(v).__name__)


def wire_schema_id(raw):
    """Schema id from bytes 1..4 of a Confluent-framed value (None for a null value)."""
    if raw is None:
        return None
    if len(raw) < HEADER_LEN:
        raise WireFormatError("value is %d bytes, shorter than the 5-byte Confluent header" % len(raw))
    if raw[0] != MAGIC_BYTE:
        raise WireFormatError("magic byte is %d, expected %d" % (raw[0], MAGIC_BYTE))
    return struct.unpack(">I", raw[1:HEADER_LEN])[0]


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)

    sr_conf = {"url": args.registry}
    if args.registry_user is not None:
        sr_conf["basic.auth.user.info"] = "%s:%s" % (args.registry_user, args.registry_password)
    sr_client = SchemaRegistryClient(sr_conf)
    # No reader schema: the writer schema fetched by id is used to decode.
    # The schema id is taken from the payload prefix only (not from headers),
    # because the payload framing is what this check is about.
    value_deserializer = AvroDeserializer(
        sr_client, conf={"schema.id.deserializer": prefix_schema_id_deserializer}
    )

    if args.expect == 0:
        return EXIT_OK

    consumer = Consumer(
        {
            "bootstrap.servers": args.brokers,
            "group.id": args.group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    got = 0
    deadline = time.monotonic() + args.timeout_s
    try:
        consumer.subscribe([args.topic])
        while got < args.expect:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                print(
                    "timeout after %.1fs: got %d of %d expected records from topic %s"
                    % (args.timeout_s, got, args.expect, args.topic),
                    file=sys.stderr,
                )
                return EXIT_TIMEOUT
            msg = consumer.poll(min(1.0, remaining))
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                if err.fatal():
                    print("fatal consumer error: %s" % err, file=sys.stderr)
                    return EXIT_ERROR
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                # Transient (e.g. topic not yet known): report and keep polling until the deadline.
                print("consumer error (continuing): %s" % err, file=sys.stderr)
                continue

            topic, partition, offset = msg.topic(), msg.partition(), msg.offset()
            raw_key, raw_value = msg.key(), msg.value()
            try:
                key = None if raw_key is None else raw_key.decode("utf-8")
                schema_id = wire_schema_id(raw_value)
                ctx = SerializationContext(topic, MessageField.VALUE, msg.headers())
                value = value_deserializer(raw_value, ctx)
                line = json.dumps(
                    {
                        "topic": topic,
                        "partition": partition,
                        "offset": offset,
                        "key": key,
                        "value": to_jsonable(value),
                        "schema_id": schema_id,
                    },
                    ensure_ascii=False,
                )
            except Exception as e:  # reported and turned into exit 1, never swallowed
                print(
                    "deserialization error at topic=%s partition=%d offset=%d: %s: %s"
                    % (topic, partition, offset, type(e).__name__, e),
                    file=sys.stderr,
                )
                return EXIT_ERROR
            print(line, flush=True)
            got += 1
        return EXIT_OK
    finally:
        consumer.close()


if __name__ == "__main__":
    sys.exit(main())
