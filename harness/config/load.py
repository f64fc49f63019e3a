"""Reading a scenario: a TOML file, then `--set key=value` overrides, then validation."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from harness.config.schema import Config
from harness.config.validate import ConfigError, from_dict, set_dotted


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


def load(path: str | Path, overrides: list[str] = ()) -> Config:
    """Read a TOML config, apply `--set` overrides, validate."""
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
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError("", f"{path} is not valid TOML: {e}") from None
    run = raw.setdefault("run", {})
    if isinstance(run, dict):  # anything else is refused, naming the section, by from_dict
        run.setdefault("name", path.stem)
    for text in overrides:
        set_dotted(raw, *parse_override(text))
    return from_dict(raw)
