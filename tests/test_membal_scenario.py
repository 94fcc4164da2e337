"""Scenario files: the examples load; bad values give SpecError with file:line, field, value; no garbage
gets past the parser as anything but SpecError."""

from __future__ import annotations

import contextlib
import string
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vmio.errors import SpecError, TraceError
from vmio.membal import workloads as w
from vmio.membal.scenario import load_scenario, parse_scenario

from conftest import CLOUDPHYSICS_SAMPLE

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "membal"
TRACE = CLOUDPHYSICS_SAMPLE

GOOD = """\
[scenario]
name = "t"
memory = "64M"
epoch = 1000
accesses = 10000

[[vm]]
name = "a"
workload = "zipf"
pages = "16M"
alpha = 0.9

[[vm]]
name = "b"
workload = "web-burst"
content = "1G"
hot = "32M"
"""


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_examples_load(path: Path) -> None:
    s = load_scenario(path)
    assert s.policies[0] == "equal" and len(s.vms) >= 2


def test_defaults_and_units() -> None:
    s = parse_scenario(GOOD)
    assert (s.page, s.memory, s.seed, s.grain) == (4096, 16384, 0, 64)
    assert s.policies == ("equal", "efficiency", "marginal", "mom", "refault")
    assert s.vms[0].workload == w.Zipf(4096, 0.9)
    burst = s.vms[1].workload
    assert isinstance(burst, w.WebBurst) and (burst.content_pages, burst.hot_pages, burst.factor) == (
        262144,
        8192,
        100,
    )


@pytest.mark.parametrize(
    ("old", "new", "line", "field"),
    [
        ('memory = "64M"', 'memory = "lots"', 3, "scenario.memory"),
        ("epoch = 1000", "epoch = 0", 4, "scenario.epoch"),
        ("accesses = 10000", "accesses = 10", 5, "scenario.accesses"),
        ("alpha = 0.9", "alpha = -1", 11, "vm[0].alpha"),
        ('workload = "web-burst"', 'workload = "web-brust"', 15, "vm[1].workload"),
        ('hot = "32M"', 'hot = "2G"', 17, "vm[1].hot"),
        ('pages = "16M"', 'pages = "16M"\nsize = 3', 11, "vm[0].size"),
        ('name = "b"', 'name = "a"', 14, "vm[1].name"),
    ],
)
def test_bad_values_name_line_field_and_value(old: str, new: str, line: int, field: str) -> None:
    text = GOOD.replace(old, new)
    with pytest.raises(SpecError) as err:
        parse_scenario(text, "s.toml")
    msg = str(err.value)
    assert msg.startswith(f"s.toml:{line}: {field} = "), msg
    assert "use" in msg or "known" in msg or "unique" in msg


def test_floors_larger_than_memory_are_refused() -> None:
    text = GOOD.replace("alpha = 0.9", 'alpha = 0.9\nfloor = "40M"').replace(
        'hot = "32M"', 'hot = "32M"\nfloor = "30M"'
    )
    with pytest.raises(SpecError, match=r"s.toml:3: scenario.memory = .*floors add up"):
        parse_scenario(text, "s.toml")


def test_unknown_policy_and_policy_parameter() -> None:
    with pytest.raises(SpecError, match=r"policies = 'greedy'"):
        parse_scenario(GOOD.replace("accesses = 10000", 'accesses = 10000\npolicies = ["greedy"]'))
    with pytest.raises(
        SpecError, match=r":8: policy.marginal.decay = 2 is not accepted; use a number above 0.0 up to 1.0"
    ):
        parse_scenario(GOOD.replace("\n[[vm]]", "\n[policy.marginal]\ndecay = 2\n\n[[vm]]", 1))


def test_trace_workload_reads_the_shared_trace(tmp_path: Path) -> None:
    if not TRACE.exists():
        pytest.skip(f"the shared CloudPhysics trace is not at {TRACE}")
    text = GOOD.replace(
        'workload = "zipf"\npages = "16M"\nalpha = 0.9', f'workload = "trace"\npath = "{TRACE}"'
    )
    s = parse_scenario(text)
    trace = s.vms[0].workload
    assert isinstance(trace, w.Trace) and trace.stream.size == 1_141_869 and trace.footprint == 269_210


def test_missing_trace_is_a_trace_error_with_the_line(tmp_path: Path) -> None:
    text = GOOD.replace(
        'workload = "zipf"\npages = "16M"\nalpha = 0.9', 'workload = "trace"\npath = "nope.csv"'
    )
    with pytest.raises(TraceError, match=r"^s.toml:10: vm\[0\].path: .*nope.csv"):
        parse_scenario(text, "s.toml", base=tmp_path)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=string.printable, max_size=300))
def test_garbage_text_is_a_spec_error(text: str) -> None:
    with contextlib.suppress(SpecError):  # anything else (a traceback) fails the test
        parse_scenario(text)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, len(GOOD)), st.integers(0, 20), st.text(alphabet=string.printable, max_size=20))
def test_mangled_scenarios_are_spec_errors(at: int, cut: int, insert: str) -> None:
    with contextlib.suppress(SpecError):
        parse_scenario(GOOD[:at] + insert + GOOD[at + cut :])


VALUES = st.one_of(
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True),
    st.booleans(),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=3),
    st.sampled_from(["4k", "1G", "-1", "0", "zipf", "loop", "phases"]),
)
KEYS = [
    "memory",
    "page",
    "epoch",
    "accesses",
    "seed",
    "policies",
    "grain",
    "name",
    "workload",
    "pages",
    "alpha",
    "rate",
    "floor",
    "content",
    "hot",
    "factor",
    "burst_every",
    "burst_length",
    "images",
    "boot",
    "phases",
    "run",
    "file",
    "format",
]


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v) if v == v and abs(v) != float("inf") else "nan"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(v)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(KEYS), VALUES, st.booleans())
def test_any_field_value_is_accepted_or_a_spec_error(key: str, value: object, in_vm: bool) -> None:
    lines = GOOD.splitlines()
    at = 9 if in_vm else 2
    lines = [ln for ln in lines if not ln.startswith(f"{key} =")] if not in_vm else lines
    lines.insert(at, f"{key} = {_toml_value(value)}")
    try:
        s = parse_scenario("\n".join(lines))
    except SpecError as exc:
        assert str(exc).startswith("<scenario>:")
    else:
        assert s.memory > 0 and s.epoch > 0 and all(vm.workload.footprint > 0 for vm in s.vms)


def test_errors_inside_phases_point_at_the_phases_line() -> None:
    phases = 'workload = "phases"\nphases = [{workload = "loop", pages = 10, length = 5}, {workload = "zip"}]'
    text = GOOD.replace('workload = "zipf"\npages = "16M"\nalpha = 0.9', phases)
    with pytest.raises(SpecError, match=r"^s.toml:10: vm\[0\].phases\[1\].workload = 'zip' is not accepted"):
        parse_scenario(text, "s.toml")
    s = parse_scenario(text.replace('{workload = "zip"}', '{workload = "uniform", pages = 20, length = 3}'))
    stream = s.vms[0].workload.generate(16, np.random.default_rng(0))
    assert stream[:5].tolist() == [0, 1, 2, 3, 4] and stream[8:13].tolist() == [0, 1, 2, 3, 4]


def test_a_simulation_larger_than_the_available_memory_is_refused_before_it_starts(tmp_path: Path) -> None:
    from vmio.errors import InputError
    from vmio.membal.outcome import BASE_BYTES, BYTES_PER_ACCESS, check_memory
    from vmio.membal.scenario import load_scenario

    scenario = load_scenario(Path(__file__).parents[1] / "examples" / "membal" / "uniform-vs-skewed.toml")
    need = BASE_BYTES + BYTES_PER_ACCESS * scenario.accesses
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal: 99999999 kB\nMemAvailable: {need // 1024 - 1} kB\n")
    with pytest.raises(
        InputError, match=r"400000 accesses need about .* GiB available \(MemAvailable, the limit\)"
    ):
        check_memory(scenario, meminfo)
    meminfo.write_text(f"MemAvailable: {need // 1024 + 1} kB\n")
    check_memory(scenario, meminfo)  # enough: no error
