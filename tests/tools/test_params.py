import pytest

from sopgraph.graphs.loader import SopError
from sopgraph.graphs.model import Sop
from sopgraph.tools.params import ParamError, ParamStore


def make_sop(**extra) -> Sop:
    return Sop.model_validate(
        {
            "id": "s",
            "params": {"idle_pct_threshold": 25, "window_min": 15, "robots": ["a"], "on": True},
            "entry": {"a": ["obs"]},
            "nodes": {"obs": {"kind": "observation", "text": "idle > {idle_pct_threshold}%"}},
            **extra,
        }
    )


def write_site(tmp_path, site: str, text: str) -> None:
    (tmp_path / "params").mkdir(exist_ok=True)
    (tmp_path / "params" / f"{site}.yaml").write_text(text)


def test_site_overrides_defaults(tmp_path):
    write_site(tmp_path, "BFI4", "idle_pct_threshold: 30\n")
    write_site(tmp_path, "ATL6", "window_min: 10.5\nrobots: [x, y]\n")
    store = ParamStore(make_sop(), tmp_path)
    assert store.keys() == ["ATL6", "BFI4"]
    assert store.for_key("BFI4") == {
        "idle_pct_threshold": 30,
        "window_min": 15,
        "robots": ["a"],
        "on": True,
    }
    assert store.for_key("ATL6")["window_min"] == 10.5
    assert store.for_key("ATL6")["robots"] == ["x", "y"]


def test_unknown_site_and_none_get_defaults(tmp_path):
    store = ParamStore(make_sop(), tmp_path)
    assert store.keys() == []
    assert store.for_key("NOWHERE") == make_sop().params
    assert store.for_key(None) == make_sop().params
    result = store.for_key(None)
    result["idle_pct_threshold"] = 99  # callers get a copy
    assert store.for_key(None)["idle_pct_threshold"] == 25


def test_unknown_parameter_is_an_error_line(tmp_path):
    write_site(tmp_path, "BFI4", "# site BFI4\nidle_pct_threshold: 30\nidle_pct_treshold: 40\n")
    store = ParamStore(make_sop(), tmp_path)
    with pytest.raises(ParamError) as err:
        store.for_key("BFI4")
    assert isinstance(err.value, SopError)
    msg = str(err.value)
    assert msg.startswith(f"error: {tmp_path / 'params' / 'BFI4.yaml'}:3: idle_pct_treshold: ")
    assert "not defined in the SOP's params" in msg and "\n" not in msg
    assert [p.line for p in store.check()] == [3]


def test_wrong_type_and_wrong_shape(tmp_path):
    write_site(tmp_path, "A", "idle_pct_threshold: high\n")
    write_site(tmp_path, "B", "- idle_pct_threshold\n")
    write_site(tmp_path, "C", "on: 1\n")
    store = ParamStore(make_sop(), tmp_path)
    with pytest.raises(ParamError, match=r"A.yaml:1: idle_pct_threshold: value 'high' is not"):
        store.for_key("A")
    with pytest.raises(ParamError, match="flat mapping"):
        store.for_key("B")
    with pytest.raises(ParamError, match="not a boolean"):
        store.for_key("C")
    assert len(store.check()) == 3


def test_empty_site_file_means_defaults(tmp_path):
    write_site(tmp_path, "E", "# nothing yet\n")
    assert ParamStore(make_sop(), tmp_path).for_key("E") == make_sop().params


def test_set_writes_the_site_file_and_is_seen(tmp_path):
    write_site(tmp_path, "BFI4", "window_min: 10\n")
    store = ParamStore(make_sop(), tmp_path)
    assert store.for_key("BFI4")["idle_pct_threshold"] == 25
    store.set("BFI4", "idle_pct_threshold", 31)
    assert store.for_key("BFI4")["idle_pct_threshold"] == 31
    assert store.for_key("BFI4")["window_min"] == 10
    assert ParamStore(make_sop(), tmp_path).for_key("BFI4")["idle_pct_threshold"] == 31
    store.set("NEW", "window_min", 5)
    assert store.keys() == ["BFI4", "NEW"]
    with pytest.raises(ParamError, match="not defined in the SOP's params"):
        store.set("BFI4", "nope", 1)
    with pytest.raises(ParamError, match="cannot name a file"):
        store.set("../x", "window_min", 1)


def test_edit_by_another_writer_is_seen(tmp_path):
    write_site(tmp_path, "S", "window_min: 10\n")
    store = ParamStore(make_sop(), tmp_path)
    assert store.for_key("S")["window_min"] == 10
    write_site(tmp_path, "S", "window_min: 12\n")
    assert store.for_key("S")["window_min"] == 12


def test_a_run_reads_the_file_its_params_by_field_names(tmp_path):
    write_site(tmp_path, "acme", "idle_pct_threshold: 40\n")
    write_site(tmp_path, "7", "window_min: 5\n")
    sop = make_sop(params_by="customer", input={"customer": {"type": "string"}})
    store = ParamStore(sop, tmp_path)
    assert store.for_input({"customer": "acme", "site": "7"})["idle_pct_threshold"] == 40
    assert store.for_input({"customer": 7})["window_min"] == 5  # an integer key names 7.yaml
    assert store.for_input({"customer": "nobody"}) == sop.params
    assert store.for_input({}) == sop.params  # the field is optional: defaults
    with pytest.raises(ParamError, match="customer value cannot name a file"):
        store.for_input({"customer": "../acme"})


def test_an_sop_without_params_by_runs_on_its_defaults(tmp_path):
    write_site(tmp_path, "BFI4", "idle_pct_threshold: 30\n")
    store = ParamStore(make_sop(), tmp_path)
    assert store.for_input({"site": "BFI4"}) == make_sop().params
    assert store.for_key("BFI4")["idle_pct_threshold"] == 30  # read only when asked by key
