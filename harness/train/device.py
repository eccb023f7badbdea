"""Device, precision and compile choices of a run, and the device's peak throughput for MFU."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch

#: Dense bf16 peak FLOP/s by device-name fragment (datasheet values, no sparsity).
PEAK_BF16_FLOPS: dict[str, float] = {
    "A100": 312e12,
    "H100": 989e12,
    "H200": 989e12,
    "GH200": 989e12,
    "L40S": 362e12,
    "A10": 125e12,
}


@dataclass(frozen=True, slots=True)
class Placement:
    """Where and how a run computes."""

    device: torch.device
    """The torch device of this process."""
    autocast_dtype: torch.dtype | None
    """bf16 under autocast, or None for full fp32."""
    compile: bool
    """Whether the model is wrapped in ``torch.compile``."""

    @property
    def name(self) -> str:
        """``cpu`` or ``cuda:<device name>`` for the result row."""
        if self.device.type == "cuda":
            return f"cuda:{torch.cuda.get_device_name(self.device)}"
        return self.device.type

    def autocast(self) -> contextlib.AbstractContextManager[None]:
        """The autocast context of the forward pass (a no-op in fp32)."""
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.autocast_dtype)

    def peak_flops(self) -> float | None:
        """bf16 peak FLOP/s of this device, None on CPU or an unknown GPU."""
        return peak_flops(self.device)


def peak_flops(device: torch.device) -> float | None:
    """bf16 peak FLOP/s of ``device`` (longest matching name in ``PEAK_BF16_FLOPS``), None on
    CPU or an unknown GPU."""
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    for key in sorted(PEAK_BF16_FLOPS, key=len, reverse=True):
        if key in name:
            return PEAK_BF16_FLOPS[key]
    return None


def mfu(
    tokens_per_s: float | None, flops_per_token: float, peak_flops: float | None, devices: int
) -> float | None:
    """Model-FLOPs utilisation: achieved training FLOP/s over the peak of all ``devices`` the
    run used (``tokens_per_s`` counts the whole global batch); None without a known peak."""
    if not tokens_per_s or not peak_flops:
        return None
    return tokens_per_s * flops_per_token / (peak_flops * devices)


def place(precision: str, compile: str, local_rank: int = 0) -> Placement:
    """Choose device, autocast dtype and compilation for a run's ``precision``/``compile``."""
    cuda = torch.cuda.is_available()
    device = torch.device(f"cuda:{local_rank}") if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
        torch.set_float32_matmul_precision("high")  # TF32 for fp32 matmuls
        torch.backends.cudnn.allow_tf32 = True
    bf16 = precision == "bf16" or (precision == "auto" and cuda)
    do_compile = compile == "on" or (compile == "auto" and cuda)
    return Placement(device, torch.bfloat16 if bf16 else None, do_compile)
