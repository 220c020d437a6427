"""A small decoder for the Kubernetes protobuf encoding (``application/vnd.kubernetes.protobuf``).

helm writes its release Secrets as protobuf, and client-go sends DeleteOptions bodies as
protobuf. The encoding is the 4-byte magic ``k8s\\x00`` followed by a ``runtime.Unknown``
message {1: TypeMeta {1: apiVersion, 2: kind}, 2: raw}, where ``raw`` is the object's own
message. Only the kinds in ``SCHEMAS`` (Secret, ConfigMap, Namespace, DeleteOptions) are decoded, and
only the fields listed there; anything else raises ``ProtobufError``.
"""

import base64

MAGIC = b"k8s\x00"


class ProtobufError(ValueError):
    """The body is not protobuf this decoder understands."""


def _varint(data, pos):
    result, shift = 0, 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


_FIXED_SIZES = {1: 8, 5: 4}


def parse_fields(data):
    """Wire-format message -> {field number: [raw values]} (ints or bytes)."""
    fields, pos = {}, 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, pos = _varint(data, pos)
        elif wire_type == 2:
            length, pos = _varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        elif wire_type in _FIXED_SIZES:
            size = _FIXED_SIZES[wire_type]
            value, pos = data[pos:pos + size], pos + size
        else:
            raise ProtobufError(f"unsupported wire type {wire_type}")
        fields.setdefault(number, []).append(value)
    return fields


def _scalar(kind, raw):
    if kind == "str":
        return raw.decode("utf-8")
    if kind == "bytes":
        return base64.b64encode(raw).decode("ascii")
    if kind == "int":
        return raw - (1 << 64) if raw >= 1 << 63 else raw
    if kind == "bool":
        return bool(raw)
    return decode_message(kind, raw)


def decode_message(schema, data):
    """Decode ``data`` with a schema {number: (json name, type)}.

    A type is "str", "int", "bool", "bytes" (rendered base64 as in JSON), a nested schema
    dict, ("map", value type) or ("list", item type).
    """
    result = {}
    for number, values in parse_fields(data).items():
        if number not in schema:
            continue
        name, kind = schema[number]
        if isinstance(kind, tuple) and kind[0] == "map":
            entries = [parse_fields(entry) for entry in values]
            result[name] = {e[1][0].decode("utf-8"): _scalar(kind[1], e.get(2, [b""])[0])
                            for e in entries}
        elif isinstance(kind, tuple) and kind[0] == "list":
            result[name] = [_scalar(kind[1], value) for value in values]
        else:
            result[name] = _scalar(kind, values[-1])
    return result


OWNER_REFERENCE = {1: ("kind", "str"), 3: ("name", "str"), 4: ("uid", "str"),
                   5: ("apiVersion", "str"), 6: ("controller", "bool"),
                   7: ("blockOwnerDeletion", "bool")}
OBJECT_META = {1: ("name", "str"), 2: ("generateName", "str"), 3: ("namespace", "str"),
               5: ("uid", "str"), 6: ("resourceVersion", "str"), 7: ("generation", "int"),
               11: ("labels", ("map", "str")), 12: ("annotations", ("map", "str")),
               13: ("ownerReferences", ("list", OWNER_REFERENCE)),
               14: ("finalizers", ("list", "str"))}
SCHEMAS = {
    "Secret": {1: ("metadata", OBJECT_META), 2: ("data", ("map", "bytes")), 3: ("type", "str"),
               4: ("stringData", ("map", "str")), 5: ("immutable", "bool")},
    "ConfigMap": {1: ("metadata", OBJECT_META), 2: ("data", ("map", "str")),
                  3: ("binaryData", ("map", "bytes")), 4: ("immutable", "bool")},
    # kubectl create namespace sends protobuf too (found by tests/cluster/test_fake_fidelity.py)
    "Namespace": {1: ("metadata", OBJECT_META), 2: ("spec", {1: ("finalizers", ("list", "str"))})},
    "DeleteOptions": {1: ("gracePeriodSeconds", "int"), 3: ("orphanDependents", "bool"),
                      4: ("propagationPolicy", "str"), 5: ("dryRun", ("list", "str"))},
}
_TYPE_META = {1: ("apiVersion", "str"), 2: ("kind", "str")}


def decode(body):
    """Decode an enveloped protobuf body into a JSON-style dict with apiVersion and kind."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing k8s protobuf magic")
    fields = parse_fields(body[len(MAGIC):])
    type_meta = decode_message(_TYPE_META, fields.get(1, [b""])[0])
    kind = type_meta.get("kind", "")
    if kind not in SCHEMAS:
        raise ProtobufError(f"protobuf decoding of kind {kind!r} is not supported")
    obj = decode_message(SCHEMAS[kind], fields.get(2, [b""])[0])
    return {"apiVersion": type_meta.get("apiVersion", ""), "kind": kind, **obj}
