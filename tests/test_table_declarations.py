"""A paper table is declared once, beside its experiments (conf/experiment/<folder>/<table>.table.yml):
its rows are the experiment files that fill them, its grids their sweeper params. Nothing of it is
restated in Python, and a bad declaration fails naming its file and field."""
from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest
import yaml

from atomicrag.harness.report_tables import TABLES, declared, experiment_names, make_tables
from atomicrag.harness.report_tables.declared import TableDeclarationError, experiment_points
from tests.test_make_tables import write_run

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "conf"
PACKAGE = ROOT / "atomicrag" / "harness" / "report_tables"


def _named(decl: dict) -> list[str]:
    """The experiment files a declaration's rows name."""
    out = []
    for row in decl["rows"]:
        row = {"runs": row} if isinstance(row, (str, list)) else row
        names = row.get("runs", row.get("sweep"))
        out += [names] if isinstance(names, str) else names
    return out


def test_every_row_names_an_experiment_and_every_experiment_fills_a_row() -> None:
    files = declared.declaration_files(CONF)
    assert list(files) == list(TABLES)
    named: dict[str, set[str]] = {}  # folder -> the experiments its declarations name
    for path in files.values():
        for exp in _named(declared.load(path)):
            assert (CONF / "experiment" / f"{exp}.yaml").is_file(), f"{path.name}: no experiment {exp}"
            named.setdefault(path.parent.name, set()).add(exp)
    # every experiment file under a table folder is a row (or a sweep: a row per point) of the
    # table(s) declared in that folder
    for exp in experiment_names(CONF):
        assert exp in named.get(exp.split("/")[0], set()), f"{exp} fills no row of its folder's table"


def test_each_sweep_point_is_a_row_labelled_as_its_run_records_it() -> None:
    spec = TABLES["table12"]("acc")
    params = yaml.safe_load((CONF / "experiment" / "table12" / "sweep.yaml").read_text())["hydra"]["sweeper"]["params"]
    grid = params["retriever.damping"].split(",")
    assert [r.label for r in spec.rows] == grid  # "0.1" ... "0.9": the run's row_label per point
    assert [r.sources for r in spec.rows] == [(("table12", v),) for v in grid]
    assert [r.label for r in TABLES["fig4"]("acc").rows][:2] == ["k=1", "k=5"]
    assert [p.label for p in experiment_points("table13/sweep", CONF)][-1] == "1.0"


def _strings_and_lists(path: Path) -> tuple[set[str], list[list[str]]]:
    tree = ast.parse(path.read_text())
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    lists = [[str(e.value) for e in n.elts if isinstance(e, ast.Constant)]
             for n in ast.walk(tree) if isinstance(n, (ast.List, ast.Tuple))]
    return strings, lists


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_no_row_label_grid_or_experiment_is_restated_in_python() -> None:
    rows: set[str] = set()
    grids: list[set[str]] = []
    for name, factory in TABLES.items():
        spec = factory("acc")
        rows |= {r.label for r in spec.rows} | {label for r in spec.rows for _, label in r.sources}
        sweeps = [s for s in _named(declared.load(declared.declaration_files(CONF)[name])) if s.endswith("/sweep")]
        grids += [{str(p.value) for p in experiment_points(s, CONF)} for s in sweeps]
    rows |= set(experiment_names(CONF))
    rows = {r for r in rows if not _number(r)}  # a lone number ("0.1", a plot's grey) is no row: grids are checked as lists
    for path in sorted(PACKAGE.glob("*.py")):
        strings, lists = _strings_and_lists(path)
        assert not strings & rows, f"{path.name} restates rows {sorted(strings & rows)}"
        for values in lists:
            for grid in grids:
                assert len(set(values) & grid) < 2, f"{path.name} restates a sweep grid: {values}"


def test_the_check_above_catches_a_restated_row(tmp_path: Path) -> None:
    """The old specs.py matched 'AtomicRAG' and ablation rows in Python: the same scan finds it."""
    (tmp_path / "specs.py").write_text('ROWS = [("AtomicRAG", ()), ("w/o ERGR", ("ergr",))]\nD = [0.1, 0.2, 0.3]\n')
    strings, lists = _strings_and_lists(tmp_path / "specs.py")
    assert {"AtomicRAG", "w/o ERGR"} <= strings and ["0.1", "0.2", "0.3"] in lists


def _conf_copy(tmp_path: Path) -> Path:
    conf = tmp_path / "conf"
    shutil.copytree(CONF / "experiment", conf / "experiment")
    return conf


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d["rows"].append("table12/missing"), "rows[1].runs: no experiment file"),
    (lambda d: d["columns"].append({"key": "x", "title": "X", "extract": "no_such"}), "columns[1].extract: unknown 'no_such'"),
    (lambda d: d.update(colour="red"), ": colour: unknown field"),
    (lambda d: d["columns"].append({"key": "d", "title": "D", "derive": {"mean_of": ["nope"]}}),
     "columns[1].derive: reads column 'nope'"),
    (lambda d: d["rows"].append({"sweep": "table12/sweep", "label": "x"}), "rows[1]: sweep"),
    (lambda d: d.pop("title"), "title: missing"),
])
def test_a_bad_declaration_names_its_file_and_field(tmp_path: Path, edit, message: str) -> None:
    conf = _conf_copy(tmp_path)
    path = conf / "experiment" / "table12" / "table12.table.yml"
    data = yaml.safe_load(path.read_text())
    edit(data)
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    with pytest.raises(TableDeclarationError, match=r"table12\.table\.yml") as err:
        declared.spec(path, "acc", conf)
    assert message in str(err.value)


def test_runs_fill_rows_by_experiment_and_row_label_not_by_config(tmp_path: Path) -> None:
    """A run's config does not choose its row: the label its experiment recorded does, and a run of
    another experiment never fills the row even when its config is the same."""
    results = tmp_path / "results"
    # the Ours config, but recorded as the RAG row of Table 4: it fills that row
    write_run(results, "table4", "graphbench_medical", "a", {}, acc=61.0, row="Vanilla RAG")
    write_run(results, "table8", "graphbench_medical", "b", {}, acc=99.0, row="Ours")  # another table's run
    md = make_tables(results, tables=["table4"], plots=False)["table4"]["md"].read_text()
    rag = next(line for line in md.splitlines() if line.startswith("| Vanilla RAG |"))
    ours = next(line for line in md.splitlines() if line.startswith("| Ours |"))
    assert "61.0 ref" in rag and "99.0" not in md and "ref" not in ours


def test_hydra_never_takes_a_declaration_for_an_experiment() -> None:
    """The READMEs sweep a folder ('+experiment/table2=glob(*)'): its options are the experiments only."""
    pytest.importorskip("hydra")
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        options = GlobalHydra.instance().config_loader().get_group_options("experiment/table2")
    assert options == [n.split("/", 1)[1] for n in experiment_names(CONF, prefix="table2/")]
    assert (CONF / "experiment" / "table2" / "table2.table.yml").is_file()


def test_a_row_read_from_another_tables_runs_takes_the_run_its_file_records(tmp_path: Path) -> None:
    """Table 2's all-ablated row is Table 1's 'RAG (w/o rerank)' run: a Table 1 run recorded as another
    row never fills it, whatever its config, and the recorded one does."""
    results = tmp_path / "results"
    write_run(results, "table1", "hotpotqa", "ours", {"retriever.name": "dense_passage"}, acc=50.0, row="Ours")
    md = make_tables(results, tables=["table2"], plots=False)["table2"]["md"].read_text()
    assert "50.0" not in md
    write_run(results, "table1", "hotpotqa", "rag", {}, acc=54.5, row="RAG (w/o rerank)")
    md = make_tables(results, tables=["table2"], plots=False)["table2"]["md"].read_text()
    row = next(line for line in md.splitlines() if line.startswith("| w/o {ERGR, AQD, AS, KA} |"))
    assert "54.5 ref (54.0, +0.5)" in row
