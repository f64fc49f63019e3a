"""Reading a scenario: a TOML file, then `--set key=value` overrides, then validation."""

from __future__ import annotations

import re
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.config.config import Config, from_dict
from harness.config.validation import ConfigError, parse_threshold, set_dotted


def parse_override(text: str) -> tuple[str, Any]:
    """`key=value`; the value is read as TOML (numbers, booleans, lists), else as a string."""
    key, sep, value_text = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError("--set", f"expected key=value, got {text!r}")
    try:
        value = tomllib.loads(f"v = {value_text}")["v"]
    except tomllib.TOMLDecodeError:
        value = value_text.strip()
    return key.strip(), value


def with_thresholds(config: Config, texts: list[str]) -> Config:
    """`config` with the `--threshold` expressions added after its own [thresholds]."""
    extra = tuple(parse_threshold(text, "--threshold") for text in texts)
    return replace(config, thresholds=config.thresholds + extra)


_WHERE = re.compile(r"\(at line (\d+), column \d+\)$")
_HEADER = re.compile(r"\s*(\[\[?)\s*([^\]]*?)\s*\]")


def _bad_key(text: str, line_no: int) -> str | None:
    """The dotted name of a bare key outside ASCII on line `line_no` (tomllib stops there
    saying only where), or None when the mistake on that line is another one."""
    lines = text.splitlines()
    if not 0 < line_no <= len(lines):
        return None
    line = lines[line_no - 1]
    header = _HEADER.match(line)
    name = header.group(2) if header else line.partition("=")[0].strip()
    if name.isascii():
        return None
    if header:
        return name
    prefix, arrays = "", {}
    for before in lines[: line_no - 1]:
        if h := _HEADER.match(before):
            table = h.group(2)
            if h.group(1) == "[[":
                arrays[table] = arrays.get(table, -1) + 1
                prefix = f"{table}[{arrays[table]}]."
            else:
                prefix = f"{table}."
    return prefix + name


def parse_toml(text: str, path: Path) -> dict[str, Any]:
    """`text` (the file `path`) as TOML, or a ConfigError that names a bare key outside ASCII
    when that is the mistake: TOML allows only A-Z a-z 0-9 _ - unquoted."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        where = _WHERE.search(str(e))
        key = _bad_key(text, int(where.group(1))) if where else None
        if key is not None:
            reason = (
                f"not a valid TOML key ({path.name} line {where.group(1)}): a bare key takes "
                "only ASCII letters, digits, _ and -"
            )
            raise ConfigError(key, reason) from None
        raise ConfigError("", f"{path} is not valid TOML: {e}") from None


def load(path: str | Path, overrides: list[str] = (), thresholds: list[str] = ()) -> Config:
    """Read a TOML config, apply `--set` overrides and add `--threshold`s, validate."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError("", f"config file {path} does not exist") from None
    except IsADirectoryError:
        raise ConfigError("", f"config file {path} is a directory") from None
    except UnicodeDecodeError as e:
        raise ConfigError("", f"config file {path} is not UTF-8 text ({e.reason})") from None
    except OSError as e:
        raise ConfigError("", f"cannot read config file {path}: {e.strerror}") from None
    raw = parse_toml(text, path)
    if "sweep" in raw:  # the commonest mix-up, said as such rather than as an unknown section
        raise ConfigError("", f"{path} is a sweep file ([sweep]): run it with harness sweep {path}")
    run = raw.setdefault("run", {})
    if isinstance(run, dict):  # anything else is refused, naming the section, by from_dict
        run.setdefault("name", path.stem)
    _absolute_trace(raw, path.parent)
    for text in overrides:
        set_dotted(raw, *parse_override(text))
    _absolute_trace(raw, Path.cwd())
    return with_thresholds(from_dict(raw), thresholds)


def _absolute_trace(raw: dict[str, Any], folder: Path) -> None:
    """`workload.trace` as an absolute path, a relative one read from `folder` (the config
    file's for the file's value, the current one for --set): the file is opened later, and on
    Ray by actors whose current folder is another."""
    workload = raw.get("workload")
    if isinstance(workload, dict) and isinstance(workload.get("trace"), str) and workload["trace"]:
        workload["trace"] = str(folder / workload["trace"])


def stored_config(raw: Any, path: Path) -> Config:
    """The config a results folder was run with, or a ConfigError naming its file: one edited
    by hand, or by another version, may no longer be valid."""
    try:
        return from_dict(raw)
    except ConfigError as e:
        raise ConfigError(str(path), f"holds a config that is not valid: {e}") from None
