"""Regenerates the Python code of the protocol (`scheduler.proto`) with the pinned grpcio-tools:
`python -m harness.external.generate`. The generated modules are checked in, so a run needs
only grpcio and protobuf; `tests/test_external.py` checks they match the .proto."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

GRPCIO_TOOLS = "1.85.1"
"""The grpcio-tools release the checked-in code comes from (pyproject.toml pins the same)."""
ROOT = Path(__file__).resolve().parents[2]
PROTO = "harness/external/scheduler.proto"
GENERATED = ("scheduler_pb2.py", "scheduler_pb2_grpc.py")


def generate(out: Path) -> dict[str, str]:
    """The generated modules' text by file name, built under `out`."""
    from importlib.metadata import version

    from grpc_tools import protoc  # the test extra's, only for regenerating

    if version("grpcio-tools") != GRPCIO_TOOLS:
        raise SystemExit(f"grpcio-tools {GRPCIO_TOOLS} is needed, found {version('grpcio-tools')}")
    args = ["protoc", f"-I{ROOT}", f"--python_out={out}", f"--grpc_python_out={out}", PROTO]
    if protoc.main(args) != 0:
        raise SystemExit(f"protoc failed on {PROTO}")
    folder = out / Path(PROTO).parent
    return {name: (folder / name).read_text() for name in GENERATED}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in generate(Path(tmp)).items():
            (ROOT / Path(PROTO).parent / name).write_text(text)
            print(f"wrote {Path(PROTO).parent / name}", file=sys.stderr)


if __name__ == "__main__":
    main()
