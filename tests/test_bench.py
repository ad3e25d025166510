"""The benchmark runner: a tiny grid end to end, resumability, tables, significance, bad configs."""

import gzip
import json
import random
import shutil
from pathlib import Path

import pytest
import torch
from seqeval.metrics import f1_score
from seqeval.scheme import IOB2
from test_cli import encoders, write_dataset  # noqa: F401  (the fixture)

from entangle.bench import (
    BenchConfig,
    BenchConfigError,
    BenchRunError,
    compare,
    comparison_line,
    data_options,
    decoding_table,
    finished_result,
    macro_average,
    macro_table,
    markdown_table,
    noisy_table,
    paired_bootstrap,
    plotted_as,
    predictions_file,
    result_dir,
    report,
    resolved_options,
    run_bench,
    run_dir,
    summarize,
    task_of,
    train_arguments,
    train_command,
)
from entangle.cli import main
from entangle.options import UsageError
from entangle.tasks import TASKS


def test_example_counts_add_up_to_the_corpus_scores():
    rng = random.Random(0)
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    gold = [[rng.choice(tags) for _ in range(rng.randint(1, 12))] for _ in range(200)]
    gold = [["O" if t.startswith("I-") and (i == 0 or s[i - 1] == "O") else t for i, t in enumerate(s)] for s in gold]
    predicted = [[t if rng.random() < 0.7 else rng.choice(tags) for t in s] for s in gold]
    ner, tagging = TASKS["ner"], TASKS["tagging"]
    counts = ner.example_counts(gold, predicted)
    assert ner.score_of_counts(counts) == pytest.approx(f1_score(gold, predicted, mode="strict", scheme=IOB2))
    accuracy = sum(g == p for gs, ps in zip(gold, predicted) for g, p in zip(gs, ps)) / sum(map(len, gold))
    assert tagging.score_of_counts(tagging.example_counts(gold, predicted)) == pytest.approx(accuracy)
    better = ner.example_counts(gold, gold)
    result = paired_bootstrap(ner, [(better, counts)], samples=200)
    assert result["ci95"][0] <= result["difference"] <= result["ci95"][1]
    assert result["difference"] > 0 and result["p_not_better"] == 0.0


def test_a_result_says_its_task_or_its_options_and_dataset_do():
    result = {"dataset": "tweebank", "options": {"task": None}}
    assert task_of(result).name == "tagging"  # the dataset's task, as entangle train resolves it
    assert task_of({**result, "options": {"task": "ner"}}).name == "ner"
    assert task_of({**result, "task": "classification"}).name == "classification"  # recorded since


def test_grid_runs_resumes_and_reports(tmp_path, encoders):  # noqa: F811
    # A line of dev and test with a column more: read only with --ragged-columns, by every step of a run.
    data = write_dataset(tmp_path / "tiny", dev="Paris\tNNP\tB-LOC\nis\tO\n\nAnna\tB-PER\nsings\tO\n")
    config = tmp_path / "bench.yaml"
    config.write_text(json.dumps({
        "output": str(tmp_path / "bench"), "results": str(tmp_path / "kept"), "datasets": [str(data)], "seeds": [2],
        "bootstrap": 50,
        "train": {"epochs": 1, "batch-size": 4, "patience": 0, "char": str(encoders / "char"),
                  "subword": str(encoders / "subword"), "ragged-columns": True},
        "systems": {"subword alone": {"m": 0, "side": "subword"}, "entangle m=1": {"m": 1, "side": "both"}},
        "compare": [["entangle m=1:subword", "subword alone:subword"], ["entangle m=1:char", "subword alone:subword"]],
        "macro_average": True,
        "noisy_tests": ["charbert@1.0", "lower@1.0"],
    }))
    main(["bench", str(config), "--workers", "2"])  # both runs at once, one thread each
    run = tmp_path / "kept" / "tiny" / "entangle_m=1" / "seed-2"
    assert sorted(p.name for p in run.iterdir()) == [  # small files only: the scores, the predictions per test set
        "result.json", "test_predictions.json.gz", "test_predictions_charbert_1.0.json.gz", "test_predictions_lower_1.0.json.gz"]
    assert (tmp_path / "bench" / "tiny" / "entangle_m=1" / "seed-2" / "model").is_dir()
    assert not (tmp_path / "bench" / "tiny" / "entangle_m=1" / "seed-2" / "checkpoint").exists()  # finished: not kept
    result = json.loads((run / "result.json").read_text())
    sides = {"subword", "char", "joint"}  # both sides and, by default, the joint head
    assert set(result["test"]) == sides and result["versions"]["torch"]
    assert set(result["test_argmax"]) == sides  # the same model decoded word by word
    assert set(result["noisy_test"]) == {"charbert@1.0", "lower@1.0"} and set(result["noisy_test"]["lower@1.0"]) == sides
    assert result["peak_memory_mb"] > 0 and "--seed 2" in result["command"]
    if torch.cuda.is_available():  # where Accelerate trains: the GPU's name, else the CPU and its threads
        assert result["devices"] == [torch.cuda.get_device_name(0)]
    else:
        assert result["devices"][0].startswith("cpu, ") and "thread" in result["devices"][0]
    assert [(e["epoch"], set(e["dev"])) for e in result["history"]] == [(1, sides)]
    assert result["history"][0]["dev"]["char"]["f1"] == result["dev"]["char"]["f1"]  # one epoch: the best one
    markdown = (tmp_path / "bench" / "RESULTS.md").read_text()
    # 3 heads in 4 tables: the grid's, the noisy test sets', the decodings', the macro average's
    assert markdown.count("| entangle m=1 |") == 12 and "**" in markdown and "paired-bootstrap" in markdown
    assert "| system | side | runs | constrained | argmax | constrained − argmax |" in markdown
    assert f"Trained on: {result['devices'][0]} (2 runs)." in markdown
    assert "| system | side | clean | charbert@1.0 | lower@1.0 |" in markdown
    summary = json.loads((tmp_path / "bench" / "summary.json").read_text())
    assert summary["summary"][str(data)]["subword alone"]["subword"]["test"]["n"] == 1
    # Both comparisons in the order listed, each on the clean test set and then on each noisy copy.
    headline, *headline_noisy, second, _, _ = summary["comparison"][str(data)]
    assert set(headline["per_seed"]) == {"2"} and second["a"] == "entangle m=1:char"
    assert [c["test"] for c in (headline, *headline_noisy)] == ["clean", "charbert@1.0", "lower@1.0"]
    noisy_f1 = result["noisy_test"]["charbert@1.0"]["subword"]["f1"]
    baseline = json.loads((tmp_path / "kept" / "tiny" / "subword_alone" / "seed-2" / "result.json").read_text())
    assert headline_noisy[0]["per_seed"]["2"] == pytest.approx(100 * (noisy_f1 - baseline["noisy_test"]["charbert@1.0"]["subword"]["f1"]))
    assert headline_noisy[0]["bootstrap"]["difference"] == pytest.approx(headline_noisy[0]["per_seed"]["2"])
    assert markdown.count("paired-bootstrap interval") == 6 and markdown.count("on the lower@1.0 copy of test") == 2
    assert (tmp_path / "bench" / "tiny.png").read_bytes().startswith(b"\x89PNG")
    # The macro average over one dataset is that dataset's mean.
    macro = summary["macro_average"]["entangle m=1"]["char"]
    assert macro["test"]["mean"] == pytest.approx(summary["summary"][str(data)]["entangle m=1"]["char"]["test"]["mean"])
    assert "### Macro average over 1 dataset\n\n| system | side | seeds |" in markdown
    # A noisy copy added to the grid since: the finished runs' models are scored on it, not trained again.
    trained = (tmp_path / "bench" / "tiny" / "entangle_m=1" / "seed-2" / "train_summary.json").stat().st_mtime_ns
    config.write_text(json.dumps({**json.loads(config.read_text()), "noisy_tests": ["charbert@1.0", "lower@1.0", "lower@0.5"]}))
    main(["bench", str(config)])
    rescored = json.loads((run / "result.json").read_text())
    assert set(rescored["noisy_test"]) == {"charbert@1.0", "lower@1.0", "lower@0.5"}
    assert {k: v for k, v in rescored.items() if k != "noisy_test"} == {k: v for k, v in result.items() if k != "noisy_test"}
    assert (run / "test_predictions_lower_0.5.json.gz").is_file()
    assert (tmp_path / "bench" / "tiny" / "entangle_m=1" / "seed-2" / "train_summary.json").stat().st_mtime_ns == trained
    markdown = (tmp_path / "bench" / "RESULTS.md").read_text()
    assert "| system | side | clean | charbert@1.0 | lower@1.0 | lower@0.5 |" in markdown
    # Rerunning trains nothing, even on a machine without the models (output gone): finished runs
    # are read back from results, and the report (with its bootstrap) is the same.
    stamp = (run / "result.json").stat().st_mtime_ns
    shutil.rmtree(tmp_path / "bench")
    main(["bench", str(config)])
    assert (run / "result.json").stat().st_mtime_ns == stamp
    assert not (tmp_path / "bench" / "tiny" / "entangle_m=1").exists()
    assert (tmp_path / "bench" / "RESULTS.md").read_text() == markdown


def fake_result(config: BenchConfig, dataset: str, system: str, seed: int, scores: dict[str, float]) -> dict:
    """What ``run_one`` leaves in ``result.json``, with the given test F1 per side."""
    return {"dataset": dataset, "system": system, "seed": seed, "task": "ner",
            "command": train_command(config, dataset, system, seed),
            "options": resolved_options(train_arguments(config, dataset, system, seed)),
            "test": {side: {"f1": f} for side, f in scores.items()}, "dev": {side: {"f1": f / 2} for side, f in scores.items()},
            "best_epoch": 1, "steps": 1, "train_time_s": 1.0, "wall_time_s": 1.0, "peak_memory_mb": 1.0}  # fmt: skip


def test_noisy_copies_are_compared_on_the_seeds_that_kept_their_predictions(tmp_path):
    config = BenchConfig(output=str(tmp_path), datasets=["wnut17"], seeds=[1, 2], systems={"a": {"m": 0}, "b": {"m": 0}},
                         compare=["a:subword", "b:subword"], noisy_tests=["charbert@1.0"], bootstrap=20)
    gold = [["B-person", "O"], ["O", "B-location"]]
    right, wrong = gold, [["O", "O"], ["O", "O"]]
    results = []
    for system, clean, noisy in (("a", right, right), ("b", right, wrong)):
        for seed in (1, 2):
            result = fake_result(config, "wnut17", system, seed, {"subword": 1.0})
            result["noisy_test"] = {"charbert@1.0": {"subword": {"f1": 1.0 if noisy is right else 0.0}}}
            results.append(result)
            kept = {None: clean, "charbert@1.0": noisy} if seed == 1 else {None: clean}  # seed 2: kept before noisy ones were
            for variant, predicted in kept.items():
                path = result_dir(config, "wnut17", system, seed) / predictions_file(variant)
                path.parent.mkdir(parents=True, exist_ok=True)
                with gzip.open(path, "wt", encoding="utf-8") as file:
                    json.dump({"gold": gold, "predicted": {"subword": predicted}}, file)
    clean, noisy = compare(config, results)["wnut17"]
    assert clean["test"] == "clean" and clean["per_seed"] == {1: 0.0, 2: 0.0} and clean["bootstrap"]["difference"] == 0.0
    assert noisy["test"] == "charbert@1.0" and noisy["per_seed"] == {1: 100.0}  # seed 2 has no predictions to resample
    assert noisy["bootstrap"]["difference"] == 100.0 and noisy["bootstrap"]["ci95"] == [100.0, 100.0]
    assert clean["left_out"] == [] and noisy["left_out"] == [2]
    assert "per seed: +100.00 (1) (seed 2: no predictions kept on this copy); mean +100.00" in comparison_line(noisy)
    assert "no predictions kept" not in comparison_line(clean)
    for system in ("a", "b"):  # no seed kept them: the comparison stays, to be counted in the report
        (result_dir(config, "wnut17", system, 1) / predictions_file("charbert@1.0")).unlink()
    clean, noisy = compare(config, results)["wnut17"]
    assert noisy["per_seed"] == {} and noisy["left_out"] == [1, 2] and "bootstrap" not in noisy
    markdown = report(config, results)
    assert "copy of test" not in markdown and "No interval for 1 comparison on noisy copies" in markdown


def test_the_seeds_of_a_comparison_share_one_test_set(tmp_path):
    """Each resample draws the same sentences for every seed: a seed scored on a shorter test set
    failed with an IndexError, a longer one had its extra sentences ignored."""
    config = BenchConfig(output=str(tmp_path), datasets=["wnut17"], seeds=[1, 2], systems={"a": {"m": 0}, "b": {"m": 0}},
                         compare=["a:subword", "b:subword"], bootstrap=40)
    gold = [["B-person", "O"], ["O", "B-location"]]
    results = []
    for system in ("a", "b"):
        for seed, seen in ((1, gold), (2, gold[:1])):
            results.append(fake_result(config, "wnut17", system, seed, {"subword": 1.0}))
            path = result_dir(config, "wnut17", system, seed) / predictions_file()
            path.parent.mkdir(parents=True, exist_ok=True)
            with gzip.open(path, "wt", encoding="utf-8") as file:
                json.dump({"gold": seen, "predicted": {"subword": seen}}, file)
    with pytest.raises(BenchRunError, match=r"wnut17: seeds 1 and 2 of 'a' were scored on different test sets "
                                            r"\(2 and 1 examples, or other labels or words\)"):
        compare(config, results)


def test_runs_scored_on_other_words_with_the_same_labels_are_not_paired(tmp_path):
    """Two noisy copies of one test set keep its labels: the words' hash tells them apart (a run
    kept without it is paired by its labels alone, as before)."""
    config = BenchConfig(output=str(tmp_path), datasets=["wnut17"], seeds=[1], systems={"a": {"m": 0}, "b": {"m": 0}},
                         compare=["a:subword", "b:subword"], bootstrap=40)
    gold = [["B-person", "O"]]
    results = [fake_result(config, "wnut17", system, 1, {"subword": 1.0}) for system in ("a", "b")]
    for system, words in (("a", "1" * 64), ("b", "2" * 64)):
        path = result_dir(config, "wnut17", system, 1) / predictions_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "wt", encoding="utf-8") as file:
            json.dump({"gold": gold, "predicted": {"subword": gold}, **({"words_sha256": words} if words else {})}, file)
    with pytest.raises(BenchRunError, match="'a' and 'b' were scored on different test sets .* or other labels or words"):
        compare(config, results)
    with gzip.open(path, "wt", encoding="utf-8") as file:  # b's from before the hash was kept
        json.dump({"gold": gold, "predicted": {"subword": gold}}, file)
    assert compare(config, results)["wnut17"][0]["per_seed"] == {1: 0.0}


def test_one_lucky_seed_is_not_the_best_in_bold(tmp_path):
    config = BenchConfig(output=str(tmp_path), datasets=["wnut17"], seeds=[1, 2], systems={"a": {"m": 0}, "b": {"m": 0}})
    results = [fake_result(config, "wnut17", "a", seed, {"subword": f}) for seed, f in ((1, 0.5), (2, 0.6))]
    results.append(fake_result(config, "wnut17", "b", 1, {"subword": 0.9}))
    table = markdown_table("wnut17", summarize(results)["wnut17"])
    assert "| a | subword | 2 | **27.50 ± 3.54** | **55.00 ± 7.07** |" in table and "| b | subword | 1 | 45.00 | 90.00 |" in table
    assert table.endswith("Mean ± sample standard deviation (n − 1) over the runs' seeds; in bold the best of the rows "
                          "with the most runs (2).")


def test_a_run_tagged_word_by_word_is_compared_with_the_others_word_by_word_tags(tmp_path):
    """A run from before constrained decoding kept only word-by-word (argmax) tags; comparing them
    with another run's constrained tags would credit the decoder to the model (session 40: 1.2 F1)."""
    config = BenchConfig(output=str(tmp_path), datasets=["wnut17"], seeds=[1], systems={"old": {"m": 0}, "new": {"m": 0}},
                         compare=["new:subword", "old:subword"], bootstrap=20)
    gold = [["B-person", "I-person", "O"], ["O", "B-location", "O"]]
    argmax = [["O", "I-person", "O"], ["O", "B-location", "O"]]  # the first name missed...
    constrained = [["B-person", "I-person", "O"], ["O", "B-location", "O"]]  # ...and repaired by the decoder
    old = fake_result(config, "wnut17", "old", 1, {"subword": 0.5})
    new = fake_result(config, "wnut17", "new", 1, {"subword": 1.0})
    new["test_argmax"] = {"subword": {"f1": 0.5}}
    for result, saved in ((old, {"predicted": {"subword": argmax}}),
                          (new, {"predicted": {"subword": constrained}, "predicted_argmax": {"subword": argmax}})):
        path = result_dir(config, "wnut17", result["system"], 1) / predictions_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "wt", encoding="utf-8") as file:
            json.dump({"gold": gold, **saved}, file)
    (both,) = compare(config, [old, new])["wnut17"]
    assert both["decoding"] == "argmax" and both["per_seed"] == {1: 0.0} and both["bootstrap"]["difference"] == 0.0
    assert "(both decoded word by word" in comparison_line(both)
    new_too = {**fake_result(config, "wnut17", "old", 1, {"subword": 1.0}), "test_argmax": {"subword": {"f1": 0.5}}}
    path = result_dir(config, "wnut17", "old", 1) / predictions_file()
    with gzip.open(path, "wt", encoding="utf-8") as file:
        json.dump({"gold": gold, "predicted": {"subword": constrained}, "predicted_argmax": {"subword": argmax}}, file)
    (both,) = compare(config, [new_too, new])["wnut17"]  # both constrained: their own tags, as before
    assert "decoding" not in both and both["per_seed"] == {1: 0.0} and "word by word" not in comparison_line(both)
    # Runs scored on different test sets (another reading of the data) are not paired silently.
    with gzip.open(path, "wt", encoding="utf-8") as file:
        json.dump({"gold": gold[:1], "predicted": {"subword": constrained[:1]}, "predicted_argmax": {"subword": argmax[:1]}}, file)
    with pytest.raises(BenchRunError, match=r"wnut17, seed 1: 'new' and 'old' were scored on different test sets "
                                            r"\(2 and 1 examples, or other labels or words\)"):
        compare(config, [new_too, new])


def test_the_noisy_table_leaves_a_copy_a_run_was_not_scored_on_empty(tmp_path):
    config = BenchConfig(output=str(tmp_path), datasets=["wnut17"], seeds=[1], systems={"a": {"m": 0}})
    result = fake_result(config, "wnut17", "a", 1, {"subword": 0.5})
    result["noisy_test"] = {"charbert@1.0": {"subword": {"f1": 0.25}}}  # scored before lower@1.0 joined the grid
    table = noisy_table("wnut17", [result], ["charbert@1.0", "lower@1.0"])
    assert "| a | subword | 50.00 | 25.00 | – |" in table
    # Scored on the copy at one seed of two: its mean is another seeds' than the clean one's, and says so.
    other = fake_result(config, "wnut17", "a", 2, {"subword": 0.3})
    other["noisy_test"] = {}
    table = noisy_table("wnut17", [result, other], ["charbert@1.0"])
    assert "| a | subword | 40.00 ± 14.14 | 25.00 (1 of 2 runs) |" in table


def test_the_decoding_table_shows_what_constrained_decoding_changed(tmp_path):
    config = BenchConfig(output=str(tmp_path), datasets=["wnut17"], seeds=[1, 2], systems={"a": {"m": 0}, "b": {"m": 0}})
    results = []
    for seed, (constrained, argmax) in ((1, (0.50, 0.48)), (2, (0.40, 0.41))):
        result = fake_result(config, "wnut17", "a", seed, {"subword": constrained})
        result["test_argmax"] = {"subword": {"f1": argmax}}
        results.append(result)
    table = decoding_table("wnut17", results + [fake_result(config, "wnut17", "b", 1, {"subword": 0.3})])
    assert "| a | subword | 2 | 45.00 ± 7.07 | 44.50 ± 4.95 | +0.50 ± 2.12 |" in table
    assert "| b |" not in table  # a run that recorded one decoding has no row
    assert decoding_table("wnut17", results[:0]) == ""


def test_a_macro_average_over_f1_and_accuracy_is_not_made():
    """NER's F1 and POS's accuracy were averaged into one number headed "f1"."""
    def entry(score, value):
        return {"score": score, "seeds": [1], "dev": {"values": [value]}, "test": {"values": [value]}}

    summary = {"wnut17": {"a": {"subword": entry("f1", 40.0)}}, "tweebank": {"a": {"subword": entry("accuracy", 90.0)}}}
    macro = macro_average(summary, ["wnut17", "tweebank"])
    assert macro["a"]["subword"]["seeds"] == [] and "test" not in macro["a"]["subword"]
    assert "| a | subword | - | not averaged: its datasets score accuracy and f1 |" in macro_table(macro)


def test_macro_average_over_datasets_per_seed(tmp_path):
    config = BenchConfig(output=str(tmp_path / "bench"), datasets=["lang-a", "lang-b"], seeds=[1, 2], macro_average=True,
                         systems={"sub": {"m": 0, "side": "subword"}, "ent": {"m": 1, "side": "both"}})  # fmt: skip
    scores = {("lang-a", "sub", 1): {"subword": 0.50}, ("lang-b", "sub", 1): {"subword": 0.70},
              ("lang-a", "sub", 2): {"subword": 0.60}, ("lang-b", "sub", 2): {"subword": 0.80},
              ("lang-a", "ent", 1): {"subword": 0.9, "char": 0.4}}  # ent never ran on lang-b  # fmt: skip
    for (dataset, system, seed), score in scores.items():
        directory = run_dir(config, dataset, system, seed)
        directory.mkdir(parents=True)
        (directory / "result.json").write_text(json.dumps(fake_result(config, dataset, system, seed, score)))
    markdown = run_bench(config, report_only=True)
    macro = json.loads((tmp_path / "bench" / "summary.json").read_text())["macro_average"]
    # Per seed: (50 + 70) / 2 = 60 and (60 + 80) / 2 = 70, then mean ± std over the seeds.
    assert macro["sub"]["subword"]["test"]["values"] == pytest.approx([60.0, 70.0])
    assert macro["sub"]["subword"]["test"]["mean"] == pytest.approx(65.0)
    assert macro["sub"]["subword"]["dev"]["mean"] == pytest.approx(32.5)
    assert macro["ent"]["char"] == {"score": "f1", "datasets": 1, "of": 2, "seeds": []}
    assert "### Macro average over 2 datasets" in markdown and "| sub | subword | 2 | **32.50 ± 3.54** | **65.00 ± 7.07** |" in markdown
    assert "| ent | char | - | incomplete: 1 of 2 datasets |" in markdown
    # Training only lang-a (where "sub" has finished) trains nothing; the report still shows lang-b.
    only_sub = BenchConfig(output=config.output, datasets=config.datasets, seeds=config.seeds,
                           systems={"sub": config.systems["sub"]})
    assert "### lang-b" in run_bench(only_sub, datasets=["lang-a"])
    with pytest.raises(BenchConfigError, match="lang-c: not among the grid's datasets"):
        run_bench(only_sub, datasets=["lang-c"])
    assert "### lang-b" in run_bench(config, systems=["sub"])  # "sub" has finished everywhere: nothing to train
    with pytest.raises(BenchConfigError, match="other: not among the grid's systems"):
        run_bench(config, systems=["other"])
    # "ent" has finished only lang-a seed 1: that part of the grid trains nothing (the rest would fail here).
    assert "### lang-a" in run_bench(config, datasets=["lang-a"], systems=["ent"], seeds=[1])
    with pytest.raises(BenchConfigError, match="3: not among the grid's seeds"):
        run_bench(config, seeds=[3])


def test_a_result_is_reused_only_with_the_same_options(tmp_path):
    """Results are found by system name; a system edited after it ran, or a default changed since,
    must not reuse its result. The command's wording alone does not matter."""
    config = BenchConfig(output=str(tmp_path / "bench"), datasets=["lang-a"], systems={"ent": {"m": 1, "side": "both"}})
    directory = run_dir(config, "lang-a", "ent", 42)
    directory.mkdir(parents=True)
    result = fake_result(config, "lang-a", "ent", 42, {"subword": 0.5})
    (directory / "result.json").write_text(json.dumps(result))
    assert "| ent | subword |" in run_bench(config, report_only=True)
    config.train = {"epochs": 5}  # the default, now spelled out: the same run
    assert "| ent | subword |" in run_bench(config, report_only=True)
    config.systems = {"new": {"m": 0, "side": "subword"}, "ent": {"m": 2, "side": "both"}}
    with pytest.raises(BenchConfigError, match=r"ent/seed-42/result.json: ran `entangle train .* -m 1 .*` with "
                                                r"coattention_layers 1 \(grid: 2\); rename the system 'ent'"):
        run_bench(config)
    assert not run_dir(config, "lang-a", "new", 42).exists()  # refused before the grid trains anything
    config.systems = {"ent": {"m": 1, "side": "both"}}
    # The same command under an older default (as if --epochs had defaulted to 3 when it ran).
    (directory / "result.json").write_text(json.dumps({**result, "options": {**result["options"], "epochs": 3}}))
    with pytest.raises(BenchConfigError, match=r"with epochs 3 \(grid: 5\)"):
        run_bench(config, report_only=True)
    (directory / "result.json").write_text(json.dumps({k: v for k, v in result.items() if k != "options"}))
    with pytest.raises(BenchConfigError, match="records no options"):
        run_bench(config, report_only=True)
    (directory / "result.json").write_text("<<<<<<< HEAD\n{}\n")  # a merge left its markers
    with pytest.raises(UsageError, match=r"ent/seed-42/result.json: not the JSON entangle wrote \("):
        run_bench(config, report_only=True)


def test_a_system_overrides_the_budget_once():
    config = BenchConfig(output="x", datasets=["d"], train={"epochs": 3, "batch-size": 16},
                         systems={"long": {"m": 0, "side": "char", "epochs": 20}})
    assert train_command(config, "d", "long", 1) == "entangle train --data d --seed 1 --epochs 20 --batch-size 16 -m 0 --side char"


def test_an_interrupted_run_edited_since_is_not_resumed(tmp_path):
    config = BenchConfig(output=str(tmp_path / "bench"), datasets=["lang-a"],
                         systems={"new": {"m": 0, "side": "subword"}, "ent": {"m": 1, "side": "both"}})
    directory = run_dir(config, "lang-a", "ent", 42)
    (directory / "checkpoint").mkdir(parents=True)
    options = resolved_options(train_arguments(config, "lang-a", "ent", 42))
    (directory / "run_args.json").write_text(json.dumps({**options, "coattention_layers": 2, "output": str(directory)}))
    with pytest.raises(BenchConfigError, match=r"ent/seed-42: started with coattention_layers 2 \(grid: 1\); delete"):
        run_bench(config)
    assert not run_dir(config, "lang-a", "new", 42).exists()  # refused before the grid trains anything


def test_an_interrupted_run_resumes_only_if_an_option_it_did_not_record_is_at_its_default(tmp_path):
    """An option added to entangle train after the run started trains at its default when the run
    resumes: a grid that sets it otherwise was resumed all the same, and recorded the grid's value."""
    config = BenchConfig(output=str(tmp_path / "bench"), datasets=["lang-a"], systems={"ent": {"m": 1, "patience": 7}})
    directory = run_dir(config, "lang-a", "ent", 42)
    (directory / "checkpoint").mkdir(parents=True)
    options = resolved_options(train_arguments(config, "lang-a", "ent", 42))
    del options["patience"]  # recorded before the option existed
    (directory / "run_args.json").write_text(json.dumps({**options, "output": str(directory)}))
    with pytest.raises(BenchConfigError, match=r"ent/seed-42: started with patience 3 \(grid: 7\); delete"):
        run_bench(config)


def test_a_renamed_system_that_keeps_its_folder_reports_under_its_new_name(tmp_path):
    """`ent (m=1)` renamed `ent [m=1]` (one folder, the same options) reused its result under the
    old name: a comparison of it found nothing and the plot failed on the name (KeyError)."""
    old = BenchConfig(output=str(tmp_path / "bench"), datasets=["lang-a"], seeds=[1],
                      systems={"sub": {"m": 0, "side": "subword"}, "ent (m=1)": {"m": 1}})
    for system, scores in (("sub", {"subword": 0.5}), ("ent (m=1)", {"subword": 0.6, "char": 0.4})):
        directory = run_dir(old, "lang-a", system, 1)
        directory.mkdir(parents=True)
        (directory / "result.json").write_text(json.dumps(fake_result(old, "lang-a", system, 1, scores)))
    renamed = BenchConfig(output=old.output, datasets=old.datasets, seeds=old.seeds,
                          systems={"sub": old.systems["sub"], "ent [m=1]": {"m": 1}})
    assert finished_result(renamed, "lang-a", "ent [m=1]", 1)["system"] == "ent [m=1]"
    markdown = run_bench(renamed, report_only=True)  # with its plot
    assert "| ent [m=1] | subword | 1 |" in markdown and "(m=1)" not in markdown
    assert set(json.loads((tmp_path / "bench" / "summary.json").read_text())["summary"]["lang-a"]) == {"sub", "ent [m=1]"}


def test_the_test_set_is_read_with_the_options_a_systems_config_file_sets(tmp_path):
    """Training read a system's --config file; the test set's evaluate and perturb were given only
    the reading options written in the grid itself, so they read another copy of the data."""
    (tmp_path / "run.yaml").write_text(f"data-dir: {tmp_path / 'my-data'}\nragged-columns: true\n")
    config = BenchConfig(output=str(tmp_path / "bench"), datasets=["lang-a"], train={"token-column": 1},
                         systems={"a": {"config": str(tmp_path / "run.yaml")}})
    assert data_options(resolved_options(train_arguments(config, "lang-a", "a", 42))) == {"data_dir": str(tmp_path / "my-data"), "token_column": 1,
                                                       "ragged_columns": True}


def test_the_plot_places_a_system_at_the_m_its_budget_sets():
    config = BenchConfig(output="x", datasets=["lang-a"], train={"m": 0, "side": "subword"},
                         systems={"a": {}, "b": {"m": 2, "side": "both", "train-lowercase": 0.2}})
    assert plotted_as(config, "a") == (0, "") and plotted_as(config, "b") == (2, "train-lowercase 0.2")


def test_a_mistyped_option_stops_the_grid_before_training(tmp_path, capsys):
    config = BenchConfig(output=str(tmp_path / "bench"), datasets=["lang-a"], systems={"ent": {"m": 1, "sides": "both"}})
    with pytest.raises(BenchConfigError, match=r"`entangle train --data lang-a --seed 42 -m 1 --sides both` is not a "
                       r"valid command: unrecognized arguments: --sides both$"):
        run_bench(config)
    assert "usage:" not in capsys.readouterr().err


def test_bad_configs_are_named(tmp_path):
    config = tmp_path / "bench.yaml"
    config.write_text("output: x\ndatasets: [wnut17]\n")
    with pytest.raises(BenchConfigError, match="bench.yaml: missing systems"):
        BenchConfig.from_file(config)
    config.write_text("output: x\ndatasets: [wnut17]\nsystems: {a: {m: 0, seed: 3}}\n")
    with pytest.raises(BenchConfigError, match="'seed' is set by the benchmark"):
        BenchConfig.from_file(config)
    config.write_text("output: x\ndatasets: [wnut17]\nsystems: {a: {m: 0}}\nnoisy_tests: ['charbert@2']\n")
    with pytest.raises(BenchConfigError, match="noisy test 'charbert@2' is not ATTACK@RATE"):
        BenchConfig.from_file(config)
    config.write_text("output: x\ndatasets: [wnut17]\nsystems: {a: {m: 0}}\ncompare: ['a:subword', 'b:subword']\n")
    with pytest.raises(SystemExit, match="compare needs two"):
        main(["bench", str(config)])
    config.write_text("output: x\ndatasets: [wnut17]\nsystems: {a: {m: 0}}\ncompare: [['a:char', 'a:subword'], ['a:char', 'b:char']]\n")
    with pytest.raises(BenchConfigError, match=r"compare needs two .* got \['a:char', 'b:char'\]"):
        BenchConfig.from_file(config)
    config.write_text("output: x\ndatasets: [wnut17]\nsystems: {a: {m: 0}}\ncompare: [['a:char', 'a:subword'], 3]\n")
    with pytest.raises(BenchConfigError, match="compare needs two .* got 3"):
        BenchConfig.from_file(config)
    config.write_text("output: x\ndatasets: [wnut17]\nsystems: {a: {m: 0}}\ncompare: ['a', 'a:subwrd']\n")
    with pytest.raises(BenchConfigError, match=r"each side one of subword, char, joint .* got \['a', 'a:subwrd'\]"):
        BenchConfig.from_file(config)
    config.write_text("output: x\ndatasets: [wnut17]\nsystems: {a: {m: 0}}\ncompare: ['a:char', 'a:subword']\n")
    assert BenchConfig.from_file(config).comparisons == [["a:char", "a:subword"]]  # one pair on its own
    # A side the system does not train: refused before the grid trains, not when its report is written.
    config.write_text(f"output: {tmp_path / 'out'}\ndatasets: [lang-a]\nsystems: {{a: {{m: 0, side: subword}}}}\n"
                      "compare: ['a:char', 'a:subword']\n")
    with pytest.raises(BenchConfigError, match="compare 'a:char': 'a' trains no char head \\(it trains subword\\)"):
        run_bench(BenchConfig.from_file(config))


@pytest.mark.parametrize(("line", "message"), [
    ("systems: [a, b]", "systems: expected a mapping of system names to their train options, got ['a', 'b']"),
    ("systems: {0: {m: 0}}", "systems: expected a mapping of system names to their train options, got {0: {'m': 0}}"),
    ("train: 'epochs 1'", "train: expected a mapping of train options, got 'epochs 1'"),
    ("seeds: a", "seeds: expected a list of integer seeds, got 'a'"),
    ("datasets: wnut17", "datasets: expected a list of dataset names, got 'wnut17'"),
    ("output: [1]", "output: expected a path, got [1]"),
    ("bootstrap: 0", "bootstrap: expected a number of resamples, at least 40, got 0"),
    ("bootstrap: 39", "bootstrap: expected a number of resamples, at least 40, got 39"),
    # Counted twice (a spread of 0), or two names for one run directory: refused before anything trains.
    ("seeds: [42, 42]", "seeds: 42 listed more than once"),
    ("datasets: [wnut17, wnut17]", "datasets: wnut17 listed more than once"),
    ("noisy_tests: ['charbert@0.5', 'charbert@.5']", "noisy_tests: charbert@.5, charbert@0.5 listed more than once"),
    ("datasets: [/a/data, /b/data]", "datasets: '/a/data' and '/b/data' would share the run directory 'data': rename one"),
    ("systems: {m 1: {m: 1}, m_1: {m: 0}}", "systems: 'm 1' and 'm_1' would share the run directory 'm_1': rename one"),
    # One folder where case is ignored (macOS, Windows), or none of the run's own ('..': the dataset's).
    ("systems: {CharBERT: {m: 0}, charbert: {m: 1}}",
     "systems: 'CharBERT' and 'charbert' would share the run directory 'CharBERT': rename one"),
    ("systems: {'..': {m: 0}}", "systems: '..' gives the run directory '..', which is none of its own "
     "(the folder above, or the dataset's): rename it"),
    ("seeds: [-1]", "seeds: -1 outside 0 to 2**32 - 1"),
    ("systems: {a: {1: 2}}", "system 'a': option 1 is not a name (an option of entangle train)"),
    ("systems: {a: {epochs: false}}", "system 'a': epochs: false would leave the option out; give its value"),
])
def test_a_grid_field_of_the_wrong_kind_is_named(line, message, tmp_path):
    config = tmp_path / "bench.yaml"
    fields = {"output": "output: x", "datasets": "datasets: [wnut17]", "systems": "systems: {a: {m: 0}}"}
    fields[line.partition(":")[0]] = line
    config.write_text("\n".join(fields.values()) + "\n")
    with pytest.raises(BenchConfigError) as error:
        BenchConfig.from_file(config)
    assert str(error.value) == f"{config}: {message}"


def test_a_grid_that_would_fail_late_or_change_nothing_is_refused_first(tmp_path):
    config = tmp_path / "bench.yaml"
    config.write_text("output: x\ndatasets: [wnut17]\nsystems: {a: {m: 0}}\nseed:\n")  # 'seeds' misspelt, left empty
    with pytest.raises(BenchConfigError, match="bench.yaml: unknown seed$"):
        BenchConfig.from_file(config)
    config.write_text("output: x\ndatasets: [wnut17]\nsystems: {a: {m: 0}}\ncompare: ['a:subword', 'a:subword']\n")
    with pytest.raises(BenchConfigError, match="compare needs two different"):
        BenchConfig.from_file(config)
    config.write_text(f"output: {config}\ndatasets: [wnut17]\nsystems: {{a: {{m: 0}}}}\n")
    with pytest.raises(BenchConfigError, match=f"output: {config} is a file, not a directory"):
        BenchConfig.from_file(config)
    (tmp_path / "run.yaml").write_text("epochs: 2\nresume: old/run\n")  # read by every run: each would resume one
    config.write_text(f"output: x\ndatasets: [wnut17]\nsystems: {{a: {{m: 0, config: {tmp_path / 'run.yaml'}}}}}\n")
    with pytest.raises(BenchConfigError, match="run.yaml sets resume, which the benchmark sets per run"):
        BenchConfig.from_file(config)
    grid = BenchConfig(output=str(tmp_path / "bench"), datasets=["lang-a"], systems={"a": {"m": 0}})
    for subset in ({"workers": 2}, {"seeds": [42]}):
        with pytest.raises(BenchConfigError, match="--report-only trains nothing"):
            run_bench(grid, report_only=True, **subset)
    # A misspelt dataset after a good one: named before the good one trains, not after.
    data = write_dataset(tmp_path / "tiny")
    grid = BenchConfig(output=str(tmp_path / "bench"), datasets=[str(data), "wnut71"], systems={"a": {"m": 0}})
    with pytest.raises(BenchConfigError, match="dataset 'wnut71': wnut71 is neither a known dataset name"):
        run_bench(grid)
    grid.train = {"task": "ner"}  # told the task, a data path was not looked for
    with pytest.raises(BenchConfigError, match="dataset 'wnut71': wnut71 is neither a known dataset name"):
        run_bench(grid)
    # A value out of range after a good system: named before the good one trains (it was at its turn);
    # an abbreviated option is not taken for the one it begins (`epoch: 0` was --epochs 0).
    grid = BenchConfig(output=str(tmp_path / "bench"), datasets=[str(data)], systems={"a": {"m": 0}, "b": {"m": 0, "epochs": 0}})
    with pytest.raises(BenchConfigError, match=r"-m 0 --epochs 0` is not a valid command: epochs must be at least 1, got 0$"):
        run_bench(grid)
    grid.systems["b"] = {"m": 0, "epoch": 2}
    with pytest.raises(BenchConfigError, match=r"is not a valid command: unrecognized arguments: --epoch 2$"):
        run_bench(grid)
    # Noisy copies of data labelled per text or per character: perturb refused each after its run trained.
    for dataset, task in (("tweeteval-emotion", "classification"), ("turkish-german-sagt", "char-tagging")):
        grid = BenchConfig(output=str(tmp_path / "bench"), datasets=[str(data), dataset], systems={"a": {"m": 0}},
                           noisy_tests=["charbert@0.5"])
        with pytest.raises(BenchConfigError, match=f"noisy_tests: .* labelled per word; '{dataset}' is {task} data"):
            run_bench(grid)
    assert not (tmp_path / "bench" / "tiny").exists()


def test_a_system_named_with_a_colon_is_compared(tmp_path):
    """``compare`` entries are ``system:side``: the side follows the last colon."""
    config = tmp_path / "bench.yaml"
    config.write_text("output: x\ndatasets: [wnut17]\nsystems: {'m=1:both': {m: 1}, a: {m: 0}}\n"
                      "compare: ['m=1:both:joint', 'a:subword']\n")
    assert BenchConfig.from_file(config).comparisons == [["m=1:both:joint", "a:subword"]]


def test_a_system_without_options_of_its_own_takes_the_budgets(tmp_path):
    config = tmp_path / "bench.yaml"
    config.write_text("output: x\ndatasets: [wnut17]\nsystems: {a: null}\ntrain: {m: 0}\n")
    assert BenchConfig.from_file(config).systems == {"a": {}}


def test_a_failing_run_stops_the_grid_with_its_directory_named(tmp_path):
    data = write_dataset(tmp_path / "tiny")
    config = BenchConfig(output=str(tmp_path / "bench"), datasets=[str(data)], seeds=[1, 2],
                         systems={"broken": {"m": 1, "coattention-width": 10, "coattention-heads": 3}})
    with pytest.raises(BenchRunError, match=r"bench/tiny/broken/seed-\d: entangle.cli train failed \(exit \d+\)"):
        run_bench(config, workers=2)


REPO = Path(__file__).resolve().parent.parent


def test_committed_results_still_match_their_grids(monkeypatch):
    """Every committed result belongs to a grid that would reuse it: a default changed since (or a
    grid edited so that it no longer says what ran) fails here, not when the grid is next resumed."""
    monkeypatch.chdir(REPO)  # the grids' folders are relative to the repository
    reused = set()
    for path in sorted(Path("benchmarks").glob("*.yaml")):
        config = BenchConfig.from_file(path)
        for key in [(d, system, seed) for d in config.datasets for system in config.systems for seed in config.seeds]:
            if finished_result(config, *key) is not None:
                reused.add(result_dir(config, *key) / "result.json")
    committed = set(Path("benchmarks/results").rglob("result.json"))
    assert committed and reused == committed


def test_grid_results_copies_the_report_and_only_the_plots_it_links(tmp_path, monkeypatch, capsys):
    """benchmarks/grid_results.py copied every PNG of the output directory, a plot of a dataset
    since dropped from the grid among them, and showed a bad grid as a traceback."""
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    import grid_results

    # A dataset whose name holds "]", which ended the plot's link text: its plot went uncopied.
    config = BenchConfig(output=str(tmp_path / "bench"), datasets=["lang-a", "x]y"], systems={"sub": {"m": 0, "side": "subword"}})
    for dataset in config.datasets:
        directory = run_dir(config, dataset, "sub", 42)
        directory.mkdir(parents=True)
        (directory / "result.json").write_text(json.dumps(fake_result(config, dataset, "sub", 42, {"subword": 0.5})))
    target = tmp_path / "committed"
    target.mkdir()
    for stale in (Path(config.output) / "lang-dropped.png", target / "lang-dropped.png"):
        stale.write_bytes(b"an old plot")
    (target / "official.json").write_text("{}")  # a file of the results folder's own: kept
    copied = grid_results.copy_report(config, target)
    assert sorted(path.name for path in copied) == ["RESULTS.md", "lang-a.png", "summary.json", "x_y.png"]
    assert sorted(path.name for path in target.iterdir()) == ["RESULTS.md", "lang-a.png", "official.json", "summary.json",
                                                              "x_y.png"]
    grid = tmp_path / "grid.yaml"
    grid.write_text("output: x\ndatasets: [wnut17]\n")
    monkeypatch.setattr("sys.argv", ["grid_results.py", str(grid)])
    with pytest.raises(SystemExit, match=rf"^grid_results: error: {grid}: .*systems"):
        grid_results.main()
