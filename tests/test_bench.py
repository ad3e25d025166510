"""The benchmark runner: a tiny grid end to end, resumability, tables, significance, bad configs."""

import json
import random

import pytest
from seqeval.metrics import f1_score
from seqeval.scheme import IOB2
from test_cli import encoders, write_dataset  # noqa: F401  (the fixture)

from entangle.bench import BenchConfig, BenchConfigError, corpus_score, paired_bootstrap, sentence_counts
from entangle.cli import main


def test_sentence_counts_add_up_to_the_corpus_scores():
    rng = random.Random(0)
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    gold = [[rng.choice(tags) for _ in range(rng.randint(1, 12))] for _ in range(200)]
    gold = [["O" if t.startswith("I-") and (i == 0 or s[i - 1] == "O") else t for i, t in enumerate(s)] for s in gold]
    predicted = [[t if rng.random() < 0.7 else rng.choice(tags) for t in s] for s in gold]
    counts = sentence_counts("f1", gold, predicted)
    assert corpus_score("f1", counts) == pytest.approx(f1_score(gold, predicted, mode="strict", scheme=IOB2))
    accuracy = sum(g == p for gs, ps in zip(gold, predicted) for g, p in zip(gs, ps)) / sum(map(len, gold))
    assert corpus_score("accuracy", sentence_counts("accuracy", gold, predicted)) == pytest.approx(accuracy)
    better = sentence_counts("f1", gold, gold)
    result = paired_bootstrap("f1", [(better, counts)], samples=200)
    assert result["ci95"][0] <= result["difference"] <= result["ci95"][1]
    assert result["difference"] > 0 and result["p_not_better"] == 0.0


def test_grid_runs_resumes_and_reports(tmp_path, encoders):  # noqa: F811
    data = write_dataset(tmp_path / "tiny")
    config = tmp_path / "bench.yaml"
    config.write_text(json.dumps({
        "output": str(tmp_path / "bench"), "datasets": [str(data)], "seeds": [1, 2], "bootstrap": 50,
        "train": {"epochs": 1, "batch-size": 4, "patience": 0, "char": str(encoders / "char"),
                  "subword": str(encoders / "subword")},
        "systems": {"subword alone": {"m": 0, "side": "subword"}, "entangle m=1": {"m": 1, "side": "both"}},
        "compare": ["entangle m=1:subword", "subword alone:subword"],
    }))
    main(["bench", str(config)])
    run = tmp_path / "bench" / "tiny" / "entangle_m=1" / "seed-2"
    result = json.loads((run / "result.json").read_text())
    assert set(result["test"]) == {"subword", "char"} and result["versions"]["torch"]
    assert result["peak_memory_mb"] > 0 and "--seed 2" in result["command"]
    markdown = (tmp_path / "bench" / "RESULTS.md").read_text()
    assert markdown.count("| entangle m=1 |") == 2 and "**" in markdown and "paired-bootstrap" in markdown
    summary = json.loads((tmp_path / "bench" / "summary.json").read_text())
    assert summary["summary"][str(data)]["subword alone"]["subword"]["test"]["n"] == 2
    assert set(summary["comparison"][str(data)]["per_seed"]) == {"1", "2"}
    assert (tmp_path / "bench" / "tiny.png").read_bytes().startswith(b"\x89PNG")
    # Rerunning trains nothing: finished runs are read back.
    stamp = (run / "result.json").stat().st_mtime_ns
    main(["bench", str(config)])
    assert (run / "result.json").stat().st_mtime_ns == stamp


def test_bad_configs_are_named(tmp_path):
    config = tmp_path / "bench.yaml"
    config.write_text("output: x\ndatasets: [wnut17]\n")
    with pytest.raises(BenchConfigError, match="bench.yaml: missing systems"):
        BenchConfig.from_file(config)
    config.write_text("output: x\ndatasets: [wnut17]\nsystems: {a: {m: 0, seed: 3}}\n")
    with pytest.raises(BenchConfigError, match="'seed' is set by the benchmark"):
        BenchConfig.from_file(config)
    config.write_text("output: x\ndatasets: [wnut17]\nsystems: {a: {m: 0}}\ncompare: ['a:subword', 'b:subword']\n")
    with pytest.raises(SystemExit, match="compare needs two"):
        main(["bench", str(config)])
