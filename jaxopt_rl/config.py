"""Typed configuration: frozen dataclasses loaded from YAML, overridden by `key=value`, validated.

Every component owns one frozen dataclass (`EnvConfig`, `ModelConfig`, ...). This module is the
only place that turns untyped YAML into those dataclasses, so every config in the project gets
the same guarantees:

* an unknown key is rejected with its dotted path and the closest valid names;
* a value of the wrong type (or outside a `Literal`) is rejected with its dotted path;
* a dataclass may validate cross-field rules in `__post_init__` by raising `ConfigError` through
  `require(...)`, and the loader prefixes the message with the dataclass's path;
* overrides `a.b=c` are parsed as YAML scalars (`lr=1e-6`, `filter.kind=abs`, `ties=average`);
* YAML aliases (`*name`) are refused (`parse_yaml`): no config needs them, and a few hundred
  bytes of nested aliases expand exponentially once the loader walks them.

Usage::

    env = load_config(EnvConfig, "configs/env/qp_p30.yaml", ["ranking.threshold=0.5"])
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

import yaml

T = TypeVar("T")


class ConfigError(ValueError):
    """A configuration value or key is invalid. The message names the dotted key."""


def require(condition: bool, key: str, message: str) -> None:
    """Raise `ConfigError` for `key` unless `condition` holds (for use in `__post_init__`)."""
    if not condition:
        raise ConfigError(f"{key}: {message}")


PROJECT_ROOT = Path(__file__).resolve().parents[1]  # the folder that holds jaxopt_rl/


def project_path(path: str | Path) -> Path:
    """A path named in a config: as given when it exists (or is absolute), else relative to the
    installed project, so shipped files (configs, the demo's SFT checkpoint) are found from any
    working directory."""
    given = Path(path)
    return given if given.exists() or given.is_absolute() else PROJECT_ROOT / given


class _NoAliasLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that refuses aliases, so a document's size bounds its expansion."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.YAMLError(f"aliases (*name) are not allowed (line {mark.line + 1}, "
                                 f"column {mark.column + 1})")
        return super().compose_node(parent, index)


def parse_yaml(text: str) -> Any:
    """YAML text as plain data (safe types only, no aliases); `yaml.YAMLError` if invalid."""
    return yaml.load(text, Loader=_NoAliasLoader)


def load_yaml(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        data = parse_yaml(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from err
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: top level must be a mapping, got {type(data).__name__}")
    return data


def apply_overrides(data: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """Return a copy of `data` with each `dotted.key=value` applied (value parsed as YAML)."""
    result = _deep_copy(data)
    for override in overrides:
        if "=" not in override:
            raise ConfigError(f"override {override!r} is not of the form key=value")
        key, raw_value = override.split("=", 1)
        key = key.strip()
        if not key:
            raise ConfigError(f"override {override!r} has an empty key")
        try:
            value = parse_yaml(raw_value) if raw_value.strip() else ""
        except yaml.YAMLError as err:
            raise ConfigError(f"{key}: cannot parse value {raw_value!r}: {err}") from err
        node = result
        parts = key.split(".")
        for depth, part in enumerate(parts[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ConfigError(f"{'.'.join(parts[: depth + 1])}: is not a section, cannot set {key}")
            node = child
        node[parts[-1]] = value
    return result


def from_dict(cls: type[T], data: Mapping[str, Any], key: str = "") -> T:
    """Build dataclass `cls` from a mapping, checking keys and types recursively."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls} is not a dataclass")
    if not isinstance(data, Mapping):
        raise ConfigError(f"{key or '<root>'}: expected a mapping, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    hints = get_type_hints(cls)
    unknown = [name for name in data if name not in fields]
    if unknown:
        name = unknown[0]
        close = difflib.get_close_matches(str(name), fields, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; valid keys: {', '.join(fields)}"
        raise ConfigError(f"{_join(key, str(name))}: unknown key{hint}")
    kwargs = {}
    for name, value in data.items():
        kwargs[name] = _convert(hints[name], value, _join(key, name))
    try:
        return cls(**kwargs)
    except ConfigError as err:
        raise ConfigError(f"{key + '.' if key else ''}{err}") from None
    except TypeError as err:  # missing required fields
        raise ConfigError(f"{key or cls.__name__}: {err}") from None


def load_config(cls: type[T], path: str | Path | None = None, overrides: Sequence[str] = ()) -> T:
    """Load `cls` from a YAML file (or defaults when `path` is None) and apply overrides."""
    data = load_yaml(path) if path is not None else {}
    return from_dict(cls, apply_overrides(data, overrides))


def to_dict(config: Any) -> dict[str, Any]:
    """Plain-data view of a config dataclass (tuples become lists), for logging and YAML dumps."""

    def plain(value: Any) -> Any:
        if dataclasses.is_dataclass(value):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, tuple | list):
            return [plain(v) for v in value]
        return value

    return plain(config)


def _convert(annotation: Any, value: Any, key: str) -> Any:
    origin = get_origin(annotation)
    if annotation is Any:
        return value
    if origin is Literal:
        allowed = get_args(annotation)
        if value not in allowed:
            raise ConfigError(f"{key}: {value!r} is not one of {', '.join(map(repr, allowed))}")
        return value
    if origin in (Union, types.UnionType):
        options = get_args(annotation)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _convert(option, value, key)
            except ConfigError as err:
                errors.append(str(err))
        raise ConfigError(errors[0] if len(errors) == 1 else f"{key}: {value!r} matches none of {annotation}")
    if origin in (tuple, list, Sequence, typing.Sequence):
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{key}: expected a list, got {type(value).__name__} {value!r}")
        args = get_args(annotation)
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(args) != len(value):
                raise ConfigError(f"{key}: expected {len(args)} items, got {len(value)}")
            return tuple(_convert(a, v, f"{key}[{i}]") for i, (a, v) in enumerate(zip(args, value)))
        item_type = args[0] if args else Any
        return tuple(_convert(item_type, v, f"{key}[{i}]") for i, v in enumerate(value))
    if origin in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise ConfigError(f"{key}: expected a mapping, got {type(value).__name__}")
        _, value_type = get_args(annotation) or (Any, Any)
        return {k: _convert(value_type, v, _join(key, str(k))) for k, v in value.items()}
    if dataclasses.is_dataclass(annotation):
        if isinstance(value, annotation):
            return value
        return from_dict(annotation, value if value is not None else {}, key)
    if annotation is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: expected true or false, got {value!r}")
        return value
    if annotation is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key}: expected an integer, got {value!r}")
        return value
    if annotation is float:
        if isinstance(value, str):  # YAML 1.1 reads "1e-6" as a string
            try:
                value = float(value)
            except ValueError:
                raise ConfigError(f"{key}: expected a number, got {value!r}") from None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{key}: expected a number, got {value!r}")
        return float(value)
    if annotation is str:
        if not isinstance(value, str):
            raise ConfigError(f"{key}: expected a string, got {value!r}")
        return value
    if isinstance(annotation, type) and not isinstance(value, annotation):
        raise ConfigError(f"{key}: expected {annotation.__name__}, got {value!r}")
    return value


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _deep_copy(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _deep_copy(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_deep_copy(v) for v in data]
    return data
