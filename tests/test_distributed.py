"""Two CPU processes (gloo, launched by torchrun): training saves one model (DDP told of the
parameters no loss reaches), distributed evaluation gives exactly the single-process metrics, and
character pretraining runs its steps through DDP."""

import json
import os
import subprocess
import sys


from entangle.cli import main
from test_cli import DEV, encoders, write_dataset  # noqa: F401  (fixture)
from tiny import CORPUS

# An odd number of dev sentences: the two processes get uneven shares.
DEV_ODD = DEV + "\n" + "Rome\tB-LOC\nsleeps\tO\n\nBob\tB-PER\n\nit\tO\nrains\tO\nin\tO\nLima\tB-LOC\n"


def launch(*args: str) -> None:
    # torchrun's two processes, which Accelerate runs as MULTI_CPU (gloo) when told to use the CPU:
    # `accelerate launch --cpu --num_processes 2` starts one process unless mpirun is set up.
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "entangle.cli", *args]
    # No GPU in sight either: on a machine with one, gloo's barrier (Accelerate passes each rank's
    # index as device_ids) would look for a CUDA device per process.
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ACCELERATE_USE_CPU": "true", "CUDA_VISIBLE_DEVICES": ""}
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]


def test_two_processes_train_one_model_and_evaluate_like_one(tmp_path, encoders):  # noqa: F811
    data = write_dataset(tmp_path / "data", dev=DEV_ODD)
    out = tmp_path / "run"
    launch("train", "--data", str(data), "--char", str(encoders / "char"), "--subword", str(encoders / "subword"),
           "-m", "1", "--epochs", "2", "--batch-size", "2", "--output", str(out))
    assert (out / "model" / "model.safetensors").is_file()
    assert json.loads((out / "train_summary.json").read_text())["processes"] == 2  # two, not one launched alone
    assert not list(tmp_path.glob("run*/*.tmp")) and len((out / "metrics.jsonl").read_text().splitlines()) == 2

    main(["evaluate", str(out), "--data", str(data), "--output", str(tmp_path / "single.json")])
    launch("evaluate", str(out), "--data", str(data), "--output", str(tmp_path / "double.json"))
    single = json.loads((tmp_path / "single.json").read_text())["results"]
    double = json.loads((tmp_path / "double.json").read_text())["results"]
    assert double == single
    support = sum(t["support"] for t in single["subword"]["per_type"].values())
    assert support == DEV_ODD.count("B-")  # every entity counted once


def test_two_processes_pretrain_a_character_encoder(tmp_path, encoders):  # noqa: F811
    text = tmp_path / "text.txt"
    text.write_text("\n".join(CORPUS) + "\n")
    out = tmp_path / "char"
    launch("pretrain-char", "--text", str(text), "--char", str(encoders / "char"), "--teacher", str(encoders / "subword"),
           "--max-steps", "3", "--max-minutes", "30", "--batch-size", "2", "--max-chars", "64", "--save-steps", "2",
           "--output", str(out))  # a time budget: the processes agree on the time spent
    summary = json.loads((out / "pretraining.json").read_text())
    assert summary["processes"] == 2 and summary["steps"] == 3
    assert {"mlm_loss", "distill_loss"} <= set(summary["last_log"])
