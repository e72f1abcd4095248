"""Where the kernels can run: CPU tensors need Triton's interpreter, and without it every entry
point refuses them with what to do, before any launch (issue 15: Triton's own error there is
"0 active drivers", which says nothing of the interpreter)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import torch
from guarded_kernels import gumbel_sample, resample
from guarded_kernels.sample_reference import gumbel_sample_reference
from guarded_kernels.resample_reference import resample_reference

logits = torch.randn(2, 8)
row_args = (torch.arange(2), torch.ones(2), torch.arange(2), torch.arange(2))
req_args = (torch.randn(2, 1, 8), torch.zeros(2, 1, dtype=torch.int64), torch.zeros(2, dtype=torch.int64),
            torch.tensor([0, 1, 2]), torch.arange(2), torch.ones(2), torch.arange(2), torch.arange(2))
calls = {
    "gumbel_sample": lambda: gumbel_sample(logits, *row_args),
    "gumbel_sample_reference": lambda: gumbel_sample_reference(logits, *row_args),
    "resample": lambda: resample(logits, *req_args),
    "resample_reference": lambda: resample_reference(logits, *req_args),
}
for name, call in calls.items():
    try:
        call()
    except RuntimeError as e:
        print(name, "|", e)
    else:
        print(name, "| no error")
"""


def test_cpu_tensors_without_the_interpreter_are_refused_with_what_to_do():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=300)
    lines = dict(line.split(" | ", 1) for line in out.stdout.splitlines() if " | " in line)
    assert set(lines) == {"gumbel_sample", "gumbel_sample_reference", "resample", "resample_reference"}, (
        out.stdout, out.stderr[-2000:])
    for name, message in lines.items():
        assert "TRITON_INTERPRET=1" in message and "CPU" in message, (name, message)
