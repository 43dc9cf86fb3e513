#!/usr/bin/env python3
"""Qwen-Image on one Mac: eager, model CPU offload, or staged (one big model
loaded per stage, released when its stage ends). docs/python.md, "Staging
models", tells what the seeds measured; docs/benchmarks.md has the numbers.

On a Mac with the model (diffusers, transformers, torch with MPS, the
weights in the Hugging Face cache or a directory):

    python bench/qwen_image.py --model Qwen/Qwen-Image --mode staged

1024x1024, 20 steps, seed 7, in bfloat16 on MPS, inside
stageload.guard(swap_budget="8G") (a daemon is used when one answers;
--no-guard runs without), with a MemoryMeter trace per run
(--trace-dir). staged builds the pipeline with text_encoder=None and
transformer=None, puts stand-ins in their place (their config.json read
from the checkpoint), loads each model with from_pretrained(...,
subfolder=...) when its stage begins and hooks encode_prompt,
prepare_latents and _unpack_latents to begin the stages encode, denoise
and decode. Each run prints, per stage, its duration, the peak footprint
and the swap growth from the trace, and the image's SHA-256.

--synthetic runs the same code with a pipeline of the same shape made here
(the same method names, the same stage hooks, modules laid out like the
real ones and scaled down by --scale from the seeds' sizes: text encoder
16.3 GB, transformer 13.3 GB, VAE 1.3 GB), in float32 on the CPU, with
weights from fixed seeds, at 128x128 (--size): it needs only torch, and
on Linux it also prints each stage's exact peak resident set (VmHWM, reset
at each stage through /proc/self/clear_refs) above the baseline taken
after import torch and a warm-up.

--mode all runs eager, offload and staged, each in a process of its own,
and prints one table. --json FILE writes the runs' numbers.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    import stageload
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    import stageload

GB = 1000 ** 3
MB = 1000 ** 2
SEEDS_SIZES = {"text_encoder": 16.3 * GB, "transformer": 13.3 * GB, "vae": 1.3 * GB}
STAGES = {"encode": ["text_encoder"], "denoise": ["transformer"], "decode": []}
HOOKS = (("encode_prompt", "encode"), ("prepare_latents", "denoise"),
         ("_unpack_latents", "decode"))


# ---- measuring ----

def _status(key):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


class StagePeaks:
    """Each stage's exact peak RSS (Linux: VmHWM, reset through
    /proc/self/clear_refs when a stage begins) above a baseline, and its
    duration. Elsewhere only durations."""

    def __init__(self):
        self.linux = _status("VmHWM") is not None and os.access("/proc/self/clear_refs",
                                                                os.W_OK)
        self.baseline = _status("VmRSS") or 0
        self.stage = None
        self.t = time.monotonic()
        self.rows = []  # [stage, seconds, peak bytes above the baseline or None]
        self._reset()

    def _reset(self):
        if self.linux:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")

    def begin(self, stage):
        if stage == self.stage:
            return
        self.end()
        self.stage = stage
        self.t = time.monotonic()
        self._reset()

    def end(self):
        now = time.monotonic()
        peak = (_status("VmHWM") - self.baseline) if self.linux else None
        self.rows.append([self.stage or "load", now - self.t, peak])
        self.t = now


# ---- the real pipeline (a Mac with diffusers and the weights) ----

def _config_path(model, sub):
    if os.path.isdir(model):
        return os.path.join(model, sub, "config.json")
    from huggingface_hub import hf_hub_download  # the cache the weights are in
    return hf_hub_download(model, "config.json", subfolder=sub)


def real_pipeline(args, mode):
    """The pipeline and, when staged, what stage_pipeline takes (else
    None). Not run on the project's machines (no diffusers, no weights, no
    MPS)."""
    import torch
    from diffusers import QwenImagePipeline

    dtype = torch.bfloat16
    device = torch.device(args.device)
    mode = "staged" if mode.startswith("staged") else mode
    if mode == "eager":
        return QwenImagePipeline.from_pretrained(args.model, torch_dtype=dtype).to(device), None
    if mode == "offload":
        pipe = QwenImagePipeline.from_pretrained(args.model, torch_dtype=dtype)
        pipe.enable_model_cpu_offload(device=args.device)
        return pipe, None
    from diffusers import QwenImageTransformer2DModel
    from transformers import Qwen2_5_VLForConditionalGeneration

    pipe = QwenImagePipeline.from_pretrained(args.model, text_encoder=None, transformer=None,
                                             torch_dtype=dtype).to(device)
    loaders = {
        "text_encoder": lambda: Qwen2_5_VLForConditionalGeneration.from_pretrained(
            args.model, subfolder="text_encoder", torch_dtype=dtype).to(device),
        "transformer": lambda: QwenImageTransformer2DModel.from_pretrained(
            args.model, subfolder="transformer", torch_dtype=dtype).to(device),
    }
    configs = {n: _config_path(args.model, n) for n in loaders}
    return pipe, (loaders, configs, dtype, device)


def stage_pipeline(pipe, loaders, configs, dtype, device, keep="never", margin=None):
    """The staged modes' setup, the same for the real pipeline and the
    synthetic one: StagedModels over loaders, stand-ins in place of the
    two big models, and attach: the hooks that begin each stage and the
    end of each call."""
    models = stageload.StagedModels(loaders, STAGES, keep=keep, margin=margin)
    for name in ("text_encoder", "transformer"):
        setattr(pipe, name, stageload.stand_in(models, name, configs[name], dtype=dtype,
                                               device=device))
    models.attach(pipe, dict(HOOKS))
    return models


# ---- the synthetic pipeline: the same shape, scaled down, CPU only ----

def synthetic_classes():
    import torch
    import torch.nn as nn
    from stageload.staging import Config

    def n_blocks(target, per_block):
        return max(1, int(round(target / per_block)))

    class Attention(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(d, 3 * d)
            self.out = nn.Linear(d, d)

        def forward(self, x):
            b, n, d = x.shape
            q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(
                2, 0, 3, 1, 4)
            w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // self.heads), dim=-1)
            return self.out((w @ v).transpose(1, 2).reshape(b, n, d))

    class DecoderLayer(nn.Module):
        """A text encoder's layer: attention and a gated MLP (Qwen2.5-VL's
        layout: intermediate about 5.3 x hidden)."""

        def __init__(self, d):
            super().__init__()
            self.norm1 = nn.LayerNorm(d)
            self.attn = Attention(d, 8)
            self.norm2 = nn.LayerNorm(d)
            inter = int(d * 5.3)
            self.gate = nn.Linear(d, inter, bias=False)
            self.up = nn.Linear(d, inter, bias=False)
            self.down = nn.Linear(inter, d, bias=False)

        def forward(self, x):
            x = x + self.attn(self.norm1(x))
            h = self.norm2(x)
            return x + self.down(torch.nn.functional.silu(self.gate(h)) * self.up(h))

    class TextEncoder(nn.Module):
        def __init__(self, target, d=512, vocab=4096):
            super().__init__()
            self.embed = nn.Embedding(vocab, d)
            per = sum(p.numel() for p in DecoderLayer(64).parameters()) * (d / 64) ** 2 * 4
            self.layers = nn.ModuleList([DecoderLayer(d) for _ in
                                         range(n_blocks(target - vocab * d * 4, per))])
            self.norm = nn.LayerNorm(d)

        def forward(self, ids):
            x = self.embed(ids)
            for layer in self.layers:
                x = layer(x)
            return self.norm(x)

    class DualBlock(nn.Module):
        """An MMDiT block: image and text streams, joint attention,
        modulation from the timestep."""

        def __init__(self, d):
            super().__init__()
            self.mod_img = nn.Linear(d, 6 * d)
            self.mod_txt = nn.Linear(d, 6 * d)
            self.attn = Attention(d, 8)
            self.txt_proj = nn.Linear(d, d)
            self.mlp_img = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            self.mlp_txt = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, img, txt, temb):
            si, gi, mi, s2, g2, m2 = self.mod_img(temb).chunk(6, dim=-1)
            st = self.mod_txt(temb).chunk(6, dim=-1)
            n = img.shape[1]
            joint = torch.cat([img * (1 + si) + gi, txt * (1 + st[0]) + st[1]], dim=1)
            a = self.attn(joint)
            img = img + mi * a[:, :n]
            txt = txt + st[2] * self.txt_proj(a[:, n:])
            img = img + m2 * self.mlp_img(img * (1 + s2) + g2)
            txt = txt + st[5] * self.mlp_txt(txt * (1 + st[3]) + st[4])
            return img, txt

    class Transformer(nn.Module):
        config_dict = {"in_channels": 64, "patch_size": 2, "guidance_embeds": False}

        def __init__(self, target, d=384, txt_dim=512):
            super().__init__()
            self.img_in = nn.Linear(self.config_dict["in_channels"], d)
            self.txt_in = nn.Linear(txt_dim, d)
            self.t_in = nn.Linear(1, d)
            per = sum(p.numel() for p in DualBlock(d).parameters()) * 4
            self.blocks = nn.ModuleList([DualBlock(d) for _ in range(n_blocks(target, per))])
            self.out = nn.Linear(d, self.config_dict["in_channels"])
            self.config = Config(self.config_dict)

        @property
        def dtype(self):
            return self.out.weight.dtype

        def forward(self, hidden_states, timestep, encoder_hidden_states):
            img = self.img_in(hidden_states)
            txt = self.txt_in(encoder_hidden_states)
            temb = torch.tanh(self.t_in(timestep.view(-1, 1, 1)))
            for blk in self.blocks:
                img, txt = blk(img, txt, temb)
            return self.out(img)

    class VAE(nn.Module):
        """A decoder: convolutions at the latent size, then 8x up to RGB."""

        def __init__(self, target, z=16, c=256):
            super().__init__()
            self.conv_in = nn.Conv2d(z, c, 3, padding=1)
            per = 9 * c * c * 4
            self.mid = nn.ModuleList([nn.Conv2d(c, c, 3, padding=1)
                                      for _ in range(n_blocks(target * 0.8, per))])
            ups, ch = [], c
            for _ in range(3):
                ups += [nn.Upsample(scale_factor=2.0), nn.Conv2d(ch, ch // 2, 3, padding=1),
                        nn.SiLU()]
                ch //= 2
            self.up = nn.Sequential(*ups)
            self.conv_out = nn.Conv2d(ch, 3, 3, padding=1)
            self.z_dim = z

        def decode(self, latents):
            x = self.conv_in(latents)
            for conv in self.mid:
                x = x + torch.nn.functional.silu(conv(x))
            return torch.tanh(self.conv_out(self.up(x)))

    class Output:
        def __init__(self, images):
            self.images = images

    class SyntheticQwenPipeline:
        """QwenImagePipeline's shape: encode_prompt, prepare_latents,
        _unpack_latents (static), and a __call__ that reads
        self.transformer.config before denoising."""

        vae_scale_factor = 8

        def __init__(self, text_encoder, transformer, vae):
            self.text_encoder = text_encoder
            self.transformer = transformer
            self.vae = vae

        def encode_prompt(self, prompt, device=None):
            data = hashlib.sha256(prompt.encode()).digest()
            ids = torch.tensor([[b * 16 for b in data]], dtype=torch.long)
            return self.text_encoder(ids)

        def prepare_latents(self, batch, channels, height, width, dtype, device, generator):
            h, w = height // self.vae_scale_factor, width // self.vae_scale_factor
            lat = torch.randn((batch, channels // 4, h, w), generator=generator, dtype=dtype)
            return self._pack_latents(lat, batch, channels // 4, h, w)

        @staticmethod
        def _pack_latents(lat, b, c, h, w):
            lat = lat.view(b, c, h // 2, 2, w // 2, 2).permute(0, 2, 4, 1, 3, 5)
            return lat.reshape(b, (h // 2) * (w // 2), c * 4)

        @staticmethod
        def _unpack_latents(latents, height, width, vae_scale_factor):
            b, _, ch = latents.shape
            h, w = height // vae_scale_factor, width // vae_scale_factor
            lat = latents.view(b, h // 2, w // 2, ch // 4, 2, 2).permute(0, 3, 1, 4, 2, 5)
            return lat.reshape(b, ch // 4, h, w)

        def __call__(self, prompt, height, width, num_inference_steps, generator):
            emb = self.encode_prompt(prompt)
            channels = self.transformer.config.in_channels
            dtype = self.transformer.dtype
            latents = self.prepare_latents(1, channels, height, width, dtype, None, generator)
            for i in range(num_inference_steps):
                t = torch.full((1,), 1.0 - i / num_inference_steps)
                noise = self.transformer(hidden_states=latents, timestep=t,
                                         encoder_hidden_states=emb)
                latents = latents - noise / num_inference_steps
            latents = self._unpack_latents(latents, height, width, self.vae_scale_factor)
            return Output(self.vae.decode(latents))

    return TextEncoder, Transformer, VAE, SyntheticQwenPipeline


def synthetic_pipeline(args, mode):
    import torch

    TextEncoder, Transformer, VAE, Pipeline = synthetic_classes()
    cls = {"text_encoder": TextEncoder, "transformer": Transformer, "vae": VAE}
    seeds = {"text_encoder": 1, "transformer": 2, "vae": 3}

    def load(name):
        torch.manual_seed(seeds[name])  # the same weights in every mode
        return cls[name](SEEDS_SIZES[name] / args.scale).eval()

    mode = "staged" if mode.startswith("staged") else mode
    if mode in ("eager", "offload"):
        # offload on a CPU-only machine: the offload device and the
        # execution device are one memory, as "cpu" and "mps" are on a
        # Mac, so nothing moves and it is eager by construction.
        return Pipeline(load("text_encoder"), load("transformer"), load("vae")), None
    pipe = Pipeline(None, None, load("vae"))
    configs = {"text_encoder": {"hidden_size": 512}, "transformer": Transformer.config_dict}
    loaders = {"text_encoder": lambda: load("text_encoder"),
               "transformer": lambda: load("transformer")}
    return pipe, (loaders, configs, torch.float32, torch.device("cpu"))


def warm_up():
    """The ops' code and thread pools, before the baseline."""
    import torch
    import torch.nn as nn
    with torch.no_grad():
        nn.Conv2d(4, 4, 3, padding=1)(torch.randn(1, 4, 8, 8))
        nn.Linear(8, 8)(torch.randn(2, 8)).softmax(-1)
    stageload.release(nn.Linear(8, 8))


# ---- one run ----

def run_one(args):
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    warm_up()
    peaks = StagePeaks()
    trace_path = os.path.join(args.trace_dir, "qwen-%s%s.jsonl"
                              % (args.mode, "-synthetic" if args.synthetic else ""))
    meter = stageload.MemoryMeter(trace_path, interval=args.interval)
    g = None if args.no_guard else stageload.guard(swap_budget=args.swap_budget,
                                                   required=False, quiet=True)
    t0 = time.monotonic()
    job_id = None
    digests = []
    image_seconds = []
    with meter:
        if g is not None:
            g.__enter__()
            job_id = g.job_id
        try:
            # inference_mode: no autograd graph holds a released model's weights
            with torch.inference_mode():
                make = synthetic_pipeline if args.synthetic else real_pipeline
                pipe, parts = make(args, args.mode)
                for method, stage in HOOKS:
                    # the measurement's hook, added first so that it runs
                    # before the staged one (which loads); eager and
                    # offload report their stages here
                    stageload.on_call(pipe, method, before=lambda *a, _s=stage, **k: (
                        peaks.begin(_s), None if parts else stageload.stage(_s)))
                models = None
                if parts:
                    keep = "auto" if args.mode == "staged-auto" else "never"
                    models = stage_pipeline(pipe, *parts, keep=keep, margin=args.margin)
                for i in range(args.images):
                    t_img = time.monotonic()
                    # a CPU generator: the same noise on every device
                    gen = torch.Generator().manual_seed(args.seed + i)
                    out = pipe(prompt=args.prompt, height=args.size, width=args.size,
                               num_inference_steps=args.steps, generator=gen).images[0]
                    if hasattr(out, "tobytes"):  # a PIL image
                        digests.append(hashlib.sha256(out.tobytes()).hexdigest())
                    else:
                        digests.append(hashlib.sha256(
                            out.detach().contiguous().numpy().tobytes()).hexdigest())
                    image_seconds.append(round(time.monotonic() - t_img, 3))
                peaks.end()
                if models is not None:
                    loads = dict(models.load_counts)
                    hist = models.history
                    load_seconds = sum(h["seconds"] for h in hist if h["event"] == "load")
                    decisions = {"kept": sum(1 for h in hist if h["event"] == "keep"),
                                 "released": sum(1 for h in hist if h["event"] == "release")}
                    models.close()
                else:
                    loads, load_seconds, decisions = None, None, None
        finally:
            if g is not None:
                g.__exit__(*sys.exc_info())
    total = time.monotonic() - t0
    summary = stageload.trace.summary(trace_path)
    trace_rows = {}
    for r in summary:
        t = trace_rows.setdefault(r.stage or "load", {"footprint_peak_bytes": 0,
                                                      "swap_growth_bytes": 0})
        t["footprint_peak_bytes"] = max(t["footprint_peak_bytes"], r.footprint_peak_bytes)
        t["swap_growth_bytes"] = max(t["swap_growth_bytes"], r.swap_growth_bytes)
    stages = []
    by_stage = {}
    for stage, seconds, peak in peaks.rows:  # a stage of every image: one row
        row = by_stage.get(stage)
        if row is None:
            tr = trace_rows.get(stage, {})
            row = by_stage[stage] = {"stage": stage, "seconds": 0.0, "rss_peak_bytes": peak,
                                     "footprint_peak_bytes": tr.get("footprint_peak_bytes"),
                                     "swap_growth_bytes": tr.get("swap_growth_bytes")}
            stages.append(row)
        row["seconds"] = round(row["seconds"] + seconds, 3)
        if peak is not None:
            row["rss_peak_bytes"] = max(row["rss_peak_bytes"] or 0, peak)
    if args.mode in ("eager", "offload"):
        # each big model made once, up front
        loads = {"text_encoder": 1, "transformer": 1}
        load_seconds = next((s["seconds"] for s in stages if s["stage"] == "load"), None)
    return {"mode": args.mode, "synthetic": args.synthetic, "scale": args.scale,
            "images": args.images, "seconds": round(total, 3), "image_seconds": image_seconds,
            "sha256": digests[0], "sha256s": digests, "baseline_bytes": peaks.baseline,
            "stages": stages, "trace": trace_path, "job_id": job_id, "loads": loads,
            "load_seconds": None if load_seconds is None else round(load_seconds, 3),
            "decisions": decisions,
            "sizes": {n: int(SEEDS_SIZES[n] / args.scale) for n in SEEDS_SIZES}
            if args.synthetic else None}


def fmt(n):
    return "-" if n is None else "%.1f MB" % (n / MB) if abs(n) < GB else "%.2f GB" % (n / GB)


def print_table(results):
    print("| mode | stage | seconds | peak RSS above baseline (VmHWM) | peak footprint "
          "(trace) | swap growth (trace) |")
    print("|---|---|---|---|---|---|")
    for r in results:
        for s in r["stages"]:
            print("| %s | %s | %.2f | %s | %s | %s |" % (
                r["mode"], s["stage"], s["seconds"], fmt(s["rss_peak_bytes"]),
                fmt(s["footprint_peak_bytes"]), fmt(s["swap_growth_bytes"])))
    print()
    print("| mode | images | loads (text encoder, transformer) | load seconds | peak RSS "
          "above baseline | wall seconds | seconds per image after the first |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        peak = [s["rss_peak_bytes"] for s in r["stages"] if s["rss_peak_bytes"] is not None]
        later = r["image_seconds"][1:]
        print("| %s | %d | %s | %s | %s | %.2f | %s |" % (
            r["mode"], r["images"], "%d, %d" % (r["loads"]["text_encoder"],
                                                 r["loads"]["transformer"]),
            "-" if r["load_seconds"] is None else "%.2f" % r["load_seconds"],
            fmt(max(peak)) if peak else "-", r["seconds"],
            "%.2f" % (sum(later) / len(later)) if later else "-"))
    for r in results:
        print("%s: image sha256 %s" % (r["mode"], " ".join(d[:16] for d in r["sha256s"])
                                        if len(r["sha256s"]) > 1 else r["sha256"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["eager", "offload", "staged", "staged-auto", "all"],
                    default="staged")
    ap.add_argument("--images", type=int, default=1,
                    help="images per run, seeds SEED, SEED+1, ... (the same prompt)")
    ap.add_argument("--margin", help="staged-auto: the free memory kept (a size, e.g. 4G; "
                    "default: the job's wait_free share, else 10%% of memory)")
    ap.add_argument("--model", default="Qwen/Qwen-Image",
                    help="a Hugging Face id or a directory with the checkpoint")
    ap.add_argument("--device", default="mps")
    ap.add_argument("--size", type=int)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--prompt", default="A lighthouse on a cliff at dawn, oil painting")
    ap.add_argument("--swap-budget", default="8G")
    ap.add_argument("--no-guard", action="store_true")
    ap.add_argument("--interval", type=float, default=0.5, help="the trace's interval (s)")
    ap.add_argument("--trace-dir", default=tempfile.gettempdir())
    ap.add_argument("--synthetic", action="store_true",
                    help="a scaled-down pipeline of the same shape, on the CPU (torch only)")
    ap.add_argument("--scale", type=float, default=64.0,
                    help="--synthetic: the seeds' model sizes divided by this")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's choice)")
    ap.add_argument("--json", help="write the runs' numbers to this file")
    args = ap.parse_args()
    if args.size is None:
        args.size = 128 if args.synthetic else 1024
    if args.images < 1:
        ap.error("--images must be at least 1")
    if args.mode != "all":
        results = [run_one(args)]
    else:
        results = []
        for mode in ("eager", "offload", "staged", "staged-auto"):
            with tempfile.NamedTemporaryFile(suffix=".json") as f:
                argv = [a for a in sys.argv[1:]]
                i = argv.index("--mode") if "--mode" in argv else -1
                if i >= 0:
                    del argv[i:i + 2]
                argv = [x for x in argv if not x.startswith("--mode=")]
                j = argv.index("--json") if "--json" in argv else -1
                if j >= 0:
                    del argv[j:j + 2]
                subprocess.run([sys.executable, os.path.abspath(__file__), "--mode", mode,
                                "--json", f.name] + argv, check=True, stdout=subprocess.DEVNULL)
                results.append(json.load(open(f.name))[0])
    print_table(results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
