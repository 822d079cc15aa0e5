"""What PHD costs in training: forward + backward of :func:`~phdlib.codes.autograd.phd_score`
against :func:`~phdlib.codes.autograd.hamming_score`.

The paper's Table 2 times the *search* (one AND more per word, or none with the
items stored negated); this times the other half, the differentiable score
a model trains with: PHD adds one ``(B, m)`` product (the projection
``b_u * b_i``) to the forward pass and its two products to the backward pass.
One call of either method draws the bits (stochastic by default, from a
generator re-seeded each call so every call computes the same numbers),
scores a batch of ``B`` pairs of ``m``-bit logits (float32), and takes the
gradient of the summed score into both logits with ``torch.autograd.grad``;
CUDA is synchronised before the clock stops.

Calls are interleaved (:func:`phdlib.bench.timing.interleaved`, alternating
order: Hamming-PHD, PHD-Hamming, ...) and the ratio is the median of the
per-round ratios (:func:`~phdlib.bench.timing.paired_ratio`).

Run ``python -m phdlib.bench.autograd --device cuda --json``: one JSON object
(:func:`run`'s dictionary) on standard output.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys

import numpy as np
import torch

from ..codes.autograd import hamming_score, phd_score
from .timing import interleaved, paired_ratio


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _step(fn, u, i, gen, seed, stochastic, device):
    """One forward + backward; returns the summed score (an exact integer, as a float)."""
    gen.manual_seed(seed)
    s, _, _ = fn(u, i, stochastic=stochastic, generator=gen)
    torch.autograd.grad(s.sum(), (u, i))
    total = float(s.detach().sum())  # a device -> host copy: the work is done
    _sync(device)
    return total


def run(device: str = "cpu", batch: int = 1 << 16, bits: int = 64, repeats: int = 21,
        stochastic: bool = True, threads: int | None = None, min_seconds: float = 0.02,
        seed: int = 0) -> dict:
    """Time forward + backward of the PHD and the Hamming score; return a JSON-able dict.

    device: ``"cpu"``, ``"cuda"`` or ``"cuda:n"``; batch ``B`` pairs of
    ``bits`` = ``m`` bits (float32 logits ``N(0, 1)``); ``repeats`` rounds;
    ``threads``: torch CPU threads for the run (None: as set). Each timing
    sample repeats a call until it lasts ``min_seconds``. Returns
    ``{"seconds": {"hamming", "phd"}`` (median seconds per call),
    ``"seconds_all"`` (every round), ``"ratio"`` (PHD / Hamming: median,
    q25, q75, rounds), ``"ratio_of_medians"``, and the setting: device and its
    name, torch version, threads, batch, bits, stochastic.
    """
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:n', got {device!r}") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r}: no CUDA device is available here")
    if dev.type == "cuda" and (dev.index or 0) >= torch.cuda.device_count():
        raise ValueError(f"device {device!r}: this machine has {torch.cuda.device_count()} "
                         f"CUDA device(s)")
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:n', got {device!r}")
    if batch < 1 or bits < 1 or repeats < 1:
        raise ValueError(f"batch, bits and repeats must be positive, got {batch}, {bits}, "
                         f"{repeats}")
    old_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(int(threads))
    try:
        g = torch.Generator().manual_seed(seed)
        u = torch.randn(batch, bits, generator=g).to(dev).requires_grad_()
        i = torch.randn(batch, bits, generator=g).to(dev).requires_grad_()
        gen = torch.Generator(device=dev)
        fns = {"hamming": lambda: _step(hamming_score, u, i, gen, seed, stochastic, dev),
               "phd": lambda: _step(phd_score, u, i, gen, seed, stochastic, dev)}
        times, values = interleaved(fns, repeats, seed=seed, min_seconds=min_seconds,
                                    alternate=True)
        used_threads = torch.get_num_threads()
    finally:
        torch.set_num_threads(old_threads)
    med = {k: float(np.median(v)) for k, v in times.items()}
    return {"device": str(dev), "device_name": _device_name(dev), "torch": torch.__version__,
            "threads": used_threads, "batch": int(batch), "bits": int(bits),
            "stochastic": bool(stochastic), "repeats": int(repeats),
            "seconds": med, "seconds_all": {k: v.tolist() for k, v in times.items()},
            "ratio": paired_ratio(times["phd"], times["hamming"]),
            "ratio_of_medians": med["phd"] / med["hamming"],
            "score_sums": values}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m phdlib.bench.autograd",
                                 description="forward + backward of phd_score vs hamming_score")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:n (default cpu)")
    ap.add_argument("--batch", type=int, default=1 << 16, help="pairs per call (default 65536)")
    ap.add_argument("--bits", type=int, default=64, help="code width m (default 64)")
    ap.add_argument("--repeats", type=int, default=21, help="interleaved rounds (default 21)")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    ap.add_argument("--deterministic", action="store_true", help="mu = 0.5 instead of sampling")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    a = ap.parse_args(argv)
    try:
        res = run(a.device, a.batch, a.bits, a.repeats, not a.deterministic, a.threads)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(res))
    else:
        r = res["ratio"]
        print(f"{res['device_name']} ({res['device']}, {res['threads']} threads), "
              f"B={res['batch']}, m={res['bits']}: hamming {res['seconds']['hamming'] * 1e3:.3f} ms, "
              f"phd {res['seconds']['phd'] * 1e3:.3f} ms, PHD/Hamming {r['median']:.3f} "
              f"[{r['q25']:.3f}, {r['q75']:.3f}] over {r['rounds']} rounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
