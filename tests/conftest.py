import os
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
# At most 2 threads a test, and no more than the cores each pytest-xdist worker has to itself.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", 1))
torch.set_num_threads(int(os.environ.get("ENTANGLE_TEST_THREADS", max(1, min(2, torch.get_num_threads() // _WORKERS)))))

SHARED_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def shared_data(*parts: str) -> Path:
    """A path under ../shared/data; skips the test, saying why, when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data not available: {path} is absent (the shared data folder sits beside the repository)")
    return path
