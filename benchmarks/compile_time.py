#!/usr/bin/env python
"""Capture + compile time of real architectures: Cuvil against torch.compile's first call.

    python benchmarks/compile_time.py                # BERT-base encoder and a Llama-like stack
    python benchmarks/compile_time.py --models bert  # one

Each measurement runs in a fresh Python process (so both sides pay their one-time warm-ups):

* ``cuvil``: ``cuvil_ref.torch.compile(model, example_inputs=...)`` (torch.export, decomposition,
  conversion, passes, lowering for ``ref``), compile cache off; ``cuvil warm`` is a second compile
  of the same model in the same process;
* ``inductor``: ``torch.compile(model)`` plus the first call, which is where Dynamo traces and
  Inductor generates and builds its kernels (its cache directory is fresh).

Models (random weights, ``transformers`` configs): a BERT-base-sized encoder (12 layers, hidden
768, 12 heads, seq 128) and a Llama-like decoder stack (8 layers, hidden 768, 12 heads, 4 KV
heads, seq 128). Prints a Markdown table; the ratio is inductor / cuvil.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import json, os, sys, time, warnings
warnings.simplefilter("ignore")
import torch
import transformers as tf
torch.set_grad_enabled(False)
name, side = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
if name == "bert":
    cfg = tf.BertConfig(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                        intermediate_size=3072, vocab_size=30522)
    model = tf.BertModel(cfg).eval()
else:
    cfg = tf.LlamaConfig(hidden_size=768, num_hidden_layers=8, num_attention_heads=12,
                         num_key_value_heads=4, intermediate_size=2048, vocab_size=32000,
                         use_cache=False, pad_token_id=0)
    model = tf.LlamaModel(cfg).eval()
ids = torch.randint(3, 1000, (1, 128))
out = {}
if side == "cuvil":
    import cuvil_ref as cuvil
    t = time.perf_counter()
    cm = cuvil.torch.compile(model, example_inputs=(ids,), cache=False)
    out["seconds"] = time.perf_counter() - t
    t = time.perf_counter()
    cm = cuvil.torch.compile(model, example_inputs=(ids,), cache=False)
    out["warm_seconds"] = time.perf_counter() - t
    got, want = cm(ids).last_hidden_state, model(ids).last_hidden_state
    out["max_rel_error"] = float((got - want).abs().max() / want.abs().max())
    out["nodes"] = len(cm.module.graph.nodes)
else:
    t = time.perf_counter()
    compiled = torch.compile(model)
    compiled(ids)
    out["seconds"] = time.perf_counter() - t
print("RESULT " + json.dumps(out))
"""


def run(name: str, side: str, timeout: float) -> dict:
    env = dict(os.environ)
    env["CUVIL_CACHE"] = "0"
    env["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-")
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, name, side],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise RuntimeError(f"{name}/{side} failed:\n{proc.stderr[-3000:]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", default=["bert", "llama"])
    ap.add_argument("--timeout", type=float, default=1800)
    args = ap.parse_args()
    print("| model | cuvil capture+compile s | cuvil warm s | inductor first call s | "
          "inductor / cuvil | cuvil max rel error |")
    print("|---|---|---|---|---|---|")
    for name in args.models:
        t0 = time.time()
        c = run(name, "cuvil", args.timeout)
        i = run(name, "inductor", args.timeout)
        print(
            f"| {name} | {c['seconds']:.2f} | {c['warm_seconds']:.2f} | {i['seconds']:.1f} | "
            f"{i['seconds'] / c['seconds']:.1f}x | {c['max_rel_error']:.1e} |",
            flush=True,
        )
        print(f"<!-- {name}: {time.time() - t0:.0f} s wall, {c['nodes']} IR nodes -->", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
