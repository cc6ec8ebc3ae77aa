"""Mutations of ``.cuvilir`` artifacts that reach past the digests.

Flipping bytes only tests the digest checks. Most mutations here therefore edit one member (its
JSON tree, its IR text, its raw bytes, or the set of members) and then *reseal* the artifact:
meta.json gets the new members' digests and the container header is rewritten with correct
offsets and digests, so the loader's later stages see the hostile content. Other mutations write
a container header of their own (with its correct digest) or edit raw bytes.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from typing import Any

from cuvil_ref.artifacts.container import _PREAMBLE, FORMAT_VERSION, MAGIC, write_container
from cuvil_ref.artifacts.module_io import SIGNED_MEMBERS
from tests.fuzzing.text_mutations import mutate_text

_SENTINEL = "\u0000HOSTILE\u0000"

#: Raw JSON that an artifact never holds (deep nesting, non-finite and huge numbers, odd types).
HOSTILE_JSON = (
    "Infinity",
    "-Infinity",
    "NaN",
    "1e400",
    "-1e400",
    "9" * 5000,
    "-" + "9" * 30,
    "18446744073709551616",
    "9223372036854775807",
    "4294967296",
    "-1",
    "0",
    "1.5",
    "true",
    "false",
    "null",
    '""',
    '"x"',
    '"' + "a" * 100_000 + '"',
    '"\\ud800"',
    "[]",
    "{}",
    "[" * 1000 + "]" * 1000,
    '{"a":' * 1000 + "1" + "}" * 1000,
    "[" * 33 + "]" * 33,
    "[1, 2, 3]",
    '["f32"]',
    '{"sha256": 1}',
    '"f99"',
    '"' + "0" * 64 + '"',
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _get(node: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        node = node[p]
    return node


def mutate_json(data: bytes, rng: random.Random) -> bytes:
    """Replace, delete, duplicate or retype one node of a JSON document (or garble its text)."""
    try:
        tree = json.loads(data)
    except ValueError:
        return data[: rng.randrange(len(data) + 1)]
    paths = _paths(tree)
    path = rng.choice(paths)
    kind = rng.randrange(5)
    if kind == 4 or not path:  # textual damage
        text = data.decode("utf-8", "replace")
        pos = rng.randrange(len(text) + 1)
        return (text[:pos] + rng.choice(["", "]", "}", ",", '"', "{", "["]) + text[pos:]).encode()
    parent, key = _get(tree, path[:-1]), path[-1]
    if kind == 0:  # replace by a hostile literal
        parent[key] = _SENTINEL
        text = json.dumps(tree).replace(json.dumps(_SENTINEL), rng.choice(HOSTILE_JSON))
        return text.encode("utf-8", "surrogatepass")
    if kind == 1:  # delete
        del parent[key]
    elif kind == 2 and isinstance(parent, list):  # duplicate a list item
        parent.insert(key, parent[key])
    elif kind == 2:  # add a stray key
        parent[f"extra{rng.randrange(3)}"] = rng.choice([1, "x", None, [1], {"a": 1}])
    else:  # replace by a value of the wrong type, taken from elsewhere in the document
        parent[key] = copy.deepcopy(_get(tree, rng.choice(paths)))
    return json.dumps(tree).encode()


def reseal(members: dict[str, bytes]) -> dict[str, bytes]:
    """``members`` with meta.json's digests updated (when meta.json is still a JSON object)."""
    try:
        meta = json.loads(members["meta.json"])
    except (KeyError, ValueError):
        return members
    if isinstance(meta, dict) and isinstance(meta.get("sha256"), dict):
        for name in SIGNED_MEMBERS:
            if name in members:
                meta["sha256"][name] = hashlib.sha256(members[name]).hexdigest()
        members = {**members, "meta.json": json.dumps(meta, indent=1, sort_keys=True).encode()}
    return members


def container_bytes(members: dict[str, bytes]) -> bytes:
    """The container file for ``members`` (meta.json first, as ``save_module`` writes it)."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "a.cuvilir"
        order = sorted(members, key=lambda n: n != "meta.json")
        write_container(path, {n: members[n] for n in order})
        return path.read_bytes()


def _raw_header(rng: random.Random, members: dict[str, bytes]) -> bytes:
    """A container whose header JSON is hostile but correctly digested."""
    good = container_bytes(members)
    _, _, header_len, _ = _PREAMBLE.unpack_from(good, 0)
    header = good[_PREAMBLE.size : _PREAMBLE.size + header_len]
    bad = mutate_json(header, rng)
    body = good[_PREAMBLE.size + header_len :]
    preamble = _PREAMBLE.pack(MAGIC, FORMAT_VERSION, len(bad), hashlib.sha256(bad).digest())
    return preamble + bad + body


def _raw_bytes(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(5)
        pos = rng.randrange(len(buf) + 1)
        if kind == 0 and pos < len(buf):
            buf[pos] ^= 1 << rng.randrange(8)
        elif kind == 1:
            del buf[pos:]
        elif kind == 2:
            buf[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 70)))
        elif kind == 3:
            del buf[pos : pos + rng.randint(1, 70)]
        else:
            buf[8:12] = rng.choice([b"\x02\0\0\0", b"\0\0\0\0", b"\xff\xff\xff\xff"])
    return bytes(buf)


def mutate_artifact(seed: dict[str, bytes], rng: random.Random) -> bytes:
    """A malformed artifact file built from the members of a valid one."""
    members = dict(seed)
    kind = rng.randrange(10)
    if kind == 0:
        return _raw_bytes(rng, container_bytes(members))
    if kind == 1:
        return _raw_header(rng, members)
    if kind in (2, 3, 4):  # one JSON member's tree
        name = rng.choice([n for n in members if n.endswith(".json")])
        members = reseal(members)
        members[name] = mutate_json(members[name], rng)
        if name != "meta.json" and rng.random() < 0.8:
            members = reseal(members)
    elif kind in (5, 6, 7):  # the IR text
        text = members["module.cuvil"].decode()
        members["module.cuvil"] = mutate_text(text, rng).encode("utf-8", "surrogatepass")
        members = reseal(members)
    elif kind == 8:  # the raw weights
        blob = members["weights.bin"]
        cut = rng.randrange(len(blob) + 1)
        members["weights.bin"] = rng.choice([blob[:cut], blob + b"\0" * rng.randint(1, 64)])
        members = reseal(members)
    else:  # the set of members
        name = rng.choice(sorted(members))
        action = rng.randrange(3)
        if action == 0:
            del members[name]
        elif action == 1:
            members["stray.bin"] = b"\0" * rng.randint(0, 9)
        else:
            members[name + "x"] = members.pop(name)
        members = reseal(members)
    return container_bytes(members)
