"""The YAML/override config loader: unknown keys, wrong types and bad literals name the key."""

from dataclasses import dataclass, field
from typing import Literal

import pytest

from jaxopt_rl.config import ConfigError, apply_overrides, from_dict, load_config, require, to_dict


@dataclass(frozen=True)
class Inner:
    kind: Literal["abs", "rel"] = "abs"
    threshold: float = 2.0

    def __post_init__(self):
        require(self.threshold > 0, "threshold", f"must be positive, got {self.threshold}")


@dataclass(frozen=True)
class Outer:
    name: str = "x"
    steps: int = 10
    kinds: tuple[str, ...] = ("T0",)
    inner: Inner = field(default_factory=Inner)
    limit: float | None = None


def test_defaults_and_nested_values():
    cfg = from_dict(Outer, {"steps": 3, "inner": {"kind": "rel", "threshold": 1}})
    assert cfg == Outer(steps=3, inner=Inner(kind="rel", threshold=1.0))
    assert isinstance(cfg.inner.threshold, float)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"stepz": 3}, "stepz: unknown key; did you mean steps"),
        ({"inner": {"knd": "abs"}}, "inner.knd: unknown key"),
        ({"steps": "ten"}, "steps: expected an integer"),
        ({"steps": True}, "steps: expected an integer"),
        ({"inner": {"kind": "median"}}, "inner.kind: 'median' is not one of 'abs', 'rel'"),
        ({"inner": {"threshold": -1}}, "inner.threshold: must be positive"),
        ({"kinds": "T0"}, "kinds: expected a list"),
        ({"kinds": ["T0", 3]}, "kinds[1]: expected a string"),
        ({"limit": "soon"}, "limit: expected a number"),
    ],
)
def test_errors_name_the_key(data, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        from_dict(Outer, data)


def test_overrides_parse_yaml_scalars_and_create_sections(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("name: base\ninner:\n  kind: abs\n")
    cfg = load_config(Outer, path, ["inner.threshold=1e-3", "steps=7", "limit=null", "kinds=[T0, TO]"])
    assert cfg.inner.threshold == pytest.approx(1e-3)
    assert cfg.steps == 7 and cfg.limit is None and cfg.kinds == ("T0", "TO")
    assert apply_overrides({}, ["a.b.c=1"]) == {"a": {"b": {"c": 1}}}
    with pytest.raises(ConfigError, match="not of the form key=value"):
        apply_overrides({}, ["steps"])
    with pytest.raises(ConfigError, match="name: is not a section"):
        apply_overrides({"name": "x"}, ["name.sub=1"])


def test_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(Outer, tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1, 2\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(Outer, bad)


def test_to_dict_round_trips():
    cfg = Outer(kinds=("T0", "T+"), inner=Inner(kind="rel"))
    assert from_dict(Outer, to_dict(cfg)) == cfg


def test_yaml_aliases_are_refused_before_they_expand(tmp_path):
    """Once, 349 bytes of nested aliases took 0.45 s to load and each extra level ~17x
    more (a 520-byte file ran for hours before 'unknown key'). Aliases are refused at parse
    time, naming the file and the place, however deep the nesting."""
    from jaxopt_rl.config import load_yaml

    # 17^29 leaves if expanded; refused at the first alias (line 2) instead
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 17)}]" for i in range(1, 30)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=r"bomb.yaml: not valid YAML: aliases \(\*name\) are "
                                          r"not allowed \(line 2, column"):
        load_yaml(bomb)
    anchors_only = tmp_path / "plain.yaml"
    anchors_only.write_text("a: &x 1\nb: 2\n")  # an anchor nobody refers to is harmless
    assert load_yaml(anchors_only) == {"a": 1, "b": 2}


def test_an_override_cannot_smuggle_an_alias():
    from jaxopt_rl.config import apply_overrides

    with pytest.raises(ConfigError):
        apply_overrides({}, ["a=[*b]"])
