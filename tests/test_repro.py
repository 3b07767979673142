"""The reproducers of `data/repro/` (unchanged copies of shared/repro), one test each, run
through the command line like a user would: each says in its comment what the specs expect.

Also: wherever GE itself fails, the exit is 3 or 4 with GE's reason, never 1.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamalloc.cli import main
from streamalloc.ir.loaders import load_graph
from streamalloc.verify import verify_plan

REPRO = Path(__file__).parent / "data" / "repro"


def allocate(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
             ) -> tuple[int, dict[str, object] | None, str]:
    """Exit code, plan (when written) and stderr of `streamalloc allocate REPRO -o plan`."""
    out = tmp_path / "plan.json"
    code = main(["allocate", str(REPRO / name), "-o", str(out)])
    err = capsys.readouterr().err
    return code, json.loads(out.read_text()) if out.exists() else None, err


def test_hccl_task_num_is_the_hccl_node_s_count(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """sync spec 5.4: h1 counts its `_hccl_task_num` (1), not its 245 records: the HCCL stream
    holds 1 + 4 x 245 = 981 units of HCCL work, with the Send of its event to `out` 982, and
    does not split; the plan's `tasks` and the verifier count the same."""
    code, document, _ = allocate("hccl_task_num.yaml", tmp_path, capsys)
    assert code == 0 and document is not None
    assert document["physical_stream_count"] == 2
    assert document["tasks"] == {"0": 981 + 1, "1": 2}
    assert verify_plan(load_graph(REPRO / "hccl_task_num.yaml"), document).ok


def test_a_root_rts_label_node_runs_on_stream_0(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """logical spec 2.6 leaves `lbl` on logical stream -1; sync spec 5.4/B7 run its task on
    physical stream 0."""
    code, document, _ = allocate("rts_label_root.yaml", tmp_path, capsys)
    assert code == 0 and document is not None
    nodes = document["nodes"]
    assert isinstance(nodes, dict)
    assert (nodes["lbl"]["stream"], nodes["lbl"]["physical_stream"]) == (-1, 0)
    assert document["streams"] == {"0": ["a", "lbl", "out"]}
    assert document["tasks"] == {"0": 3 + 1}


@pytest.mark.parametrize("name", ["q1_after_split.yaml", "q1_beyond_last_id.yaml"])
def test_quirk_q1_fails_as_ge_does(name: str, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Quirk Q1 leaves a node on stream 1 of 1 logical stream: GE's split fails on a stream id
    beyond the last id (sync spec 5.5, 8), also when an earlier split raised the last id:
    exit 4 with GE's reason, no plan."""
    code, document, err = allocate(name, tmp_path, capsys)
    assert code == 4 and document is None
    assert "beyond the last stream id 0" in err and "Q1" in err
