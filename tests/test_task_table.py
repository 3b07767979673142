"""The sync layer's task order as columns (sync.model): inserting rows keeps every row's name,
stream, attached streams and made record together, as a list of tasks would."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from streamalloc.sync.model import Task, TaskColumns, node_mask, node_streams


def _columns(streams: list[int], made_rows: set[int]) -> TaskColumns:
    names = [f"t{r}" for r in range(len(streams))]
    made = {r: Task(names[r], "Send", "g", streams[r], (), sync_id=r, is_sync=True)
            for r in sorted(made_rows)}
    return TaskColumns(names, list(streams), [() for _ in streams], made)


def _as_list(rows: TaskColumns) -> list[tuple[str, int, Task | None]]:
    return [(name, stream, rows.made.get(r))
            for r, (name, stream) in enumerate(zip(rows.names, rows.streams, strict=True))]


@settings(max_examples=200, deadline=None)
@given(data=st.data(), streams=st.lists(st.integers(0, 3), max_size=12))
def test_inserted_is_a_list_insertion(data: st.DataObject, streams: list[int]) -> None:
    made_rows = data.draw(st.sets(st.integers(0, max(len(streams) - 1, 0)), max_size=4)
                          if streams else st.just(set()))
    rows = _columns(streams, made_rows)
    places = sorted(data.draw(st.lists(st.integers(0, len(streams)), max_size=5)))
    inserts = [(p, Task(f"new{k}", "Recv", "g", 9, (), is_sync=True))
               for k, p in enumerate(places)]
    expected = _as_list(rows)
    for offset, (place, task) in enumerate(inserts):  # stable: later ones after earlier ones
        expected.insert(place + offset, (task.name, task.stream, task))
    after = rows.inserted(inserts)
    assert _as_list(after) == expected
    assert list(node_streams(after.table())) == [(n, s) for n, s, made in expected
                                                  if made is None]
    assert list(node_mask(after)) == [made is None for _, _, made in expected]


def test_set_stream_moves_a_made_record_with_its_row() -> None:
    rows = _columns([0, 1, 2], {1})
    rows.set_stream(1, 5)
    rows.set_stream(2, 6)
    assert rows.streams == [0, 5, 6] and rows.made[1].stream == 5


def test_editable_copies_the_made_records() -> None:
    table = _columns([0, 1], {0}).table()
    rows = table.editable()
    rows.set_stream(0, 7)
    assert table.made[0].stream == 0 and table.streams == (0, 1)
