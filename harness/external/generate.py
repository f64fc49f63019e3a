"""Regenerates what comes from the protocol (`scheduler.proto`) with the pinned grpcio-tools:
its Python code and its reference page (docs/reference/scheduler-protocol.md, from the .proto's
comments): `python -m harness.external.generate`. Both are checked in, so a run needs only
grpcio and protobuf; `tests/external/test_external.py` checks they match the .proto."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

GRPCIO_TOOLS = "1.85.1"
"""The grpcio-tools release the checked-in code comes from (pyproject.toml pins the same)."""
ROOT = Path(__file__).resolve().parents[2]
PROTO = "harness/external/scheduler.proto"
CODE = ("scheduler_pb2.py", "scheduler_pb2_grpc.py")
REFERENCE = "docs/reference/scheduler-protocol.md"
GENERATED = (*(f"{Path(PROTO).parent}/{name}" for name in CODE), REFERENCE)
"""Every file made from the .proto, by path from the project's root."""


def generate(out: Path) -> dict[str, str]:
    """The text of every file in `GENERATED`, by its path, built under `out`."""
    from importlib.metadata import version

    from grpc_tools import protoc  # the test extra's, only for regenerating

    if version("grpcio-tools") != GRPCIO_TOOLS:
        raise SystemExit(f"grpcio-tools {GRPCIO_TOOLS} is needed, found {version('grpcio-tools')}")
    described = out / "scheduler.desc"
    args = ["protoc", f"-I{ROOT}", f"--python_out={out}", f"--grpc_python_out={out}", PROTO]
    args += ["--include_source_info", f"--descriptor_set_out={described}"]
    if protoc.main(args) != 0:
        raise SystemExit(f"protoc failed on {PROTO}")
    texts = {path: (out / path).read_text() for path in GENERATED if path != REFERENCE}
    texts[REFERENCE] = reference(described.read_bytes())
    return texts


def reference(descriptor_set: bytes) -> str:
    """The protocol's reference in Markdown: the service's calls, then every message and enum
    with its fields, each with its comment from the .proto."""
    from google.protobuf import descriptor_pb2

    (file,) = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set).file
    comments = {
        tuple(loc.path): " ".join(loc.leading_comments.split())
        for loc in file.source_code_info.location
        if loc.leading_comments
    }
    short = f".{file.package}."
    lines = [
        "# The scheduler protocol (reference)",
        "",
        f"Generated from `{PROTO}` (package `{file.package}`) by `python -m "
        "harness.external.generate`; the guide is docs/guides/external-scheduler.md.",
        "",
    ]
    for s, service in enumerate(file.service):
        lines += [
            f"## service {service.name}",
            "",
            "| call | request | reply | |",
            "|---|---|---|---|",
        ]
        for m, method in enumerate(service.method):
            request, reply = (
                t.removeprefix(short) for t in (method.input_type, method.output_type)
            )
            note = comments.get((6, s, 2, m), "")
            lines.append(f"| `{method.name}` | `{request}` | `{reply}` | {note} |")
        lines.append("")
    entries = {m.name: m for m in file.message_type}
    for i, message in enumerate(file.message_type):
        lines += [f"## message {message.name}", ""]
        if (4, i) in comments:
            lines += [comments[(4, i)], ""]
        if message.field:
            lines += ["| field | type | number | |", "|---|---|---|---|"]
        for f, field in enumerate(message.field):
            kind = _type_name(field, short, message, entries)
            oneof = (
                f" (one of `{message.oneof_decl[field.oneof_index].name}`)"
                if field.HasField("oneof_index")
                else ""
            )
            note = comments.get((4, i, 2, f), "")
            lines.append(
                f"| `{field.name}` | `{kind}` | {field.number} | {(note + oneof).strip()} |"
            )
        lines.append("")
    for e, enum in enumerate(file.enum_type):
        lines += [f"## enum {enum.name}", ""]
        if (5, e) in comments:
            lines += [comments[(5, e)], ""]
        lines += ["| value | number | |", "|---|---|---|"]
        for v, value in enumerate(enum.value):
            lines.append(f"| `{value.name}` | {value.number} | {comments.get((5, e, 2, v), '')} |")
        lines.append("")
    return "\n".join(lines)


def _type_name(field: Any, short: str, message: Any, entries: dict[str, Any]) -> str:
    """A field's type as the .proto writes it: `repeated T`, `map<K, V>` or `T`."""
    from google.protobuf import descriptor_pb2

    f = descriptor_pb2.FieldDescriptorProto
    if field.type in (f.TYPE_MESSAGE, f.TYPE_ENUM):
        name = field.type_name.removeprefix(short)
    else:
        name = f.Type.Name(field.type).removeprefix("TYPE_").lower()
    nested = {n.name: n for n in message.nested_type}
    entry = nested.get(name.rpartition(".")[2])
    if entry is not None and entry.options.map_entry:
        key, value = (_type_name(x, short, entry, entries) for x in entry.field)
        return f"map<{key}, {value}>"
    repeated = field.label == f.LABEL_REPEATED
    return f"repeated {name}" if repeated else name


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for path, text in generate(Path(tmp)).items():
            (ROOT / path).parent.mkdir(parents=True, exist_ok=True)
            (ROOT / path).write_text(text)
            print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
