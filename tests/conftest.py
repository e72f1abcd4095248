"""Suite-wide setup: Triton kernels run on the CPU through the interpreter when CUDA is absent.

TRITON_INTERPRET must be set before triton is first imported, so it is decided here from the
driver's presence (nvidia-smi / /dev/nvidia0), not by importing torch.
"""

import os
import shutil
from pathlib import Path

if "TRITON_INTERPRET" not in os.environ:
    has_cuda = Path("/dev/nvidia0").exists() or shutil.which("nvidia-smi") is not None
    if not has_cuda:
        os.environ["TRITON_INTERPRET"] = "1"

REPO = Path(__file__).resolve().parent.parent
# The bug reproductions shared by the project live beside the checkout; tests read them there.
CASES = Path(os.environ.get("STRIDECHECK_CASES", REPO.parent / "shared" / "cases"))
