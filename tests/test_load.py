"""The load benchmark with small numbers: hook processes at once on one project, then prompts
in a row; nothing fails, no audit line is lost, and the wait is reported."""

from __future__ import annotations

import json

from memsift.bench.load import main, percentiles, run


def test_hooks_at_once_and_in_a_row_lose_no_audit_line(tmp_path):
    at_once, in_a_row = run(processes=3, prompts=12, home=tmp_path / "home")
    for phase in (at_once, in_a_row):
        assert phase.errors == []
        assert phase.lost == 0
        assert len(phase.wait_ms) == phase.prompts
    assert at_once.audit_lines == 3 and in_a_row.audit_lines == 12
    sessions = {json.loads(line)["session"] for line in
                (tmp_path / "home" / "data" / "audit.jsonl").read_text().splitlines()}
    assert sessions == {"load-0", "load-1", "load-2", "load-row"}


def test_the_benchmark_prints_p50_and_p95(tmp_path, capsys):
    assert main(processes=0, prompts=4, as_json=True, home=tmp_path / "home") == 0
    summary = json.loads(capsys.readouterr().out)
    assert [s["prompts"] for s in summary] == [0, 4]
    assert set(summary[1]["wait_ms"]) == {"p50", "p95", "max"}


def test_percentiles():
    values = [float(v) for v in range(1, 101)]
    assert percentiles(values) == {"p50": 50.5, "p95": 95.0, "max": 100.0}
    assert percentiles([]) == {"p50": 0.0, "p95": 0.0, "max": 0.0}
