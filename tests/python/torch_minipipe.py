"""A miniature diffusion pipeline for test_torch.py, run in a process of
its own so its peak memory is its own:

    python torch_minipipe.py eager|staged OUT_DIR

Three real torch modules of known sizes (float32): a 300 MB "text
encoder", a 200 MB "transformer", a 20 MB "VAE", each made from a seed of
its own so every run has the same weights. The transformer's loader, as
from_pretrained can, leaves a 200 MB temporary in a reference cycle old
enough that only a full collection frees it.

The pipeline behaves as diffusers 0.35's DiffusionPipeline and
QwenImagePipeline do where staging meets them: .to() first probes every
component with hasattr for the bitsandbytes flags, then moves the
torch.nn.Module components only; _execution_device and
maybe_free_model_hooks() probe the components (_hf_hook,
_reset_stateful_cache); encode_prompt is always called and uses the text
encoder only without prompt_embeds; __call__ reads
self.transformer.config before prepare_latents; output_type="latent"
skips the static _unpack_latents and the VAE.

eager loads all three up front. staged puts stand-ins in the pipeline and
attaches a StagedModels (keep="never") to it, inside stageload.guard()
when $STAGELOAD_SOCKET is set, then runs: pipe.to("cpu") and
pipe.to(torch.float32); a call (the output); a call with prompt_embeds; a
latent call; a call that fails mid-denoise.

Writes OUT_DIR/MODE.pt (the output tensor) and OUT_DIR/MODE.json: the
baseline RSS (after import torch and a warm-up of the ops), the peak
(VmHWM after resetting it through /proc/self/clear_refs) per stage and
overall, denoise's peak from the transformer's first step on, the order of
events (loads, method calls, config reads), what each later call loaded
and left loaded, and the job id.
"""

import gc
import json
import os
import sys

import torch
import torch.nn as nn

import stageload

MB = 1000 * 1000
WIDTH = 1000  # one Linear(1000, 1000) without bias: 4 MB of float32
EVENTS = []


def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def reset_peak():
    # 5: reset the peak resident set size (VmHWM) to the current RSS
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


class Stack(nn.Module):
    """layers Linear(WIDTH, WIDTH) with a tanh between: 4 MB a layer."""

    def __init__(self, layers):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(WIDTH, WIDTH, bias=False)
                                     for _ in range(layers)])

    def forward(self, x):
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return x

    @property
    def dtype(self):
        return self.layers[0].weight.dtype

    @property
    def device(self):
        return self.layers[0].weight.device


class Transformer(Stack):
    config = {"in_channels": 64, "patch_size": 2, "guidance_embeds": False}


def make(name):
    EVENTS.append("load " + name)
    layers = {"text_encoder": 75, "transformer": 50, "vae": 5}[name]
    torch.manual_seed({"text_encoder": 1, "transformer": 2, "vae": 3}[name])
    m = (Transformer if name == "transformer" else Stack)(layers)
    m.eval()
    if name == "transformer":
        # the loader's garbage: a 200 MB temporary in a reference cycle,
        # promoted to the oldest generation while still reachable (as a
        # loader's many allocations promote its objects), then dropped
        junk = {"state": torch.ones(50 * WIDTH * WIDTH)}
        junk["self"] = junk
        gc.collect()
        del junk
    return m


def _check_bnb_status(module):
    # diffusers.quantizers.bitsandbytes.utils._check_bnb_status's probes
    four = hasattr(module, "is_loaded_in_4bit") and module.is_loaded_in_4bit and \
        getattr(module, "quantization_method", None) == "bitsandbytes"
    eight = hasattr(module, "is_loaded_in_8bit") and module.is_loaded_in_8bit and \
        getattr(module, "quantization_method", None) == "bitsandbytes"
    return four or eight, four, eight


class DiffusersLikePipeline:
    def __init__(self, text_encoder, transformer, vae):
        self.text_encoder = text_encoder
        self.transformer = transformer
        self.vae = vae

    @property
    def components(self):
        return {"text_encoder": self.text_encoder, "transformer": self.transformer,
                "vae": self.vae}

    def to(self, *args, **kwargs):
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        for a in args:
            if isinstance(a, torch.dtype):
                dtype = a
            else:
                device = torch.device(a)
        any(any(_check_bnb_status(m)) for m in self.components.values())
        any(hasattr(m, "_hf_hook") for m in self.components.values())
        for m in [m for m in self.components.values() if isinstance(m, nn.Module)]:
            _, four, eight = _check_bnb_status(m)
            if not four and not eight:
                m.to(device, dtype)
        return self

    @property
    def device(self):
        for m in self.components.values():
            if isinstance(m, nn.Module):
                return m.device
        return torch.device("cpu")

    @property
    def _execution_device(self):
        for m in self.components.values():
            if isinstance(m, nn.Module) and not hasattr(m, "_hf_hook"):
                return self.device
        return self.device

    def maybe_free_model_hooks(self):
        for c in self.components.values():
            if hasattr(c, "_reset_stateful_cache"):
                c._reset_stateful_cache()
        if not hasattr(self, "_all_hooks") or not self._all_hooks:
            return

    def encode_prompt(self, prompt_ids=None, prompt_embeds=None, device=None):
        EVENTS.append("encode_prompt")
        device = device or self._execution_device
        if prompt_embeds is None:
            dtype = self.text_encoder.dtype
            g = torch.Generator().manual_seed(int(prompt_ids))
            x = torch.randn(16, WIDTH, generator=g, dtype=dtype)
            prompt_embeds = self.text_encoder(x)
        return prompt_embeds

    def prepare_latents(self, channels, seed):
        EVENTS.append("prepare_latents")
        g = torch.Generator().manual_seed(seed)
        return torch.randn(channels, WIDTH, generator=g)

    @staticmethod
    def _unpack_latents(latents):
        EVENTS.append("_unpack_latents")
        return latents.reshape(-1, WIDTH).contiguous()

    def __call__(self, prompt_ids=None, prompt_embeds=None, steps=4, seed=7, output_type="pt",
                 fail_at_step=None):
        emb = self.encode_prompt(prompt_ids, prompt_embeds=prompt_embeds)
        EVENTS.append("read transformer.config")
        channels = self.transformer.config["in_channels"]
        latents = self.prepare_latents(channels, seed)
        if self.transformer.config["guidance_embeds"]:
            raise AssertionError("not guidance-distilled")
        cond = emb.mean(dim=0, keepdim=True)
        for i in range(steps):
            if fail_at_step == i:
                raise RuntimeError("failed at step %d" % i)
            latents = latents - 0.1 * self.transformer(latents + cond)
        if output_type == "latent":
            image = latents
        else:
            image = self.vae(self._unpack_latents(latents))
        self.maybe_free_model_hooks()
        return image


HOOKS = {"encode_prompt": "encode", "prepare_latents": "denoise", "_unpack_latents": "decode"}


def run_staged(out, baseline):
    info = {}
    peaks = {}
    models = stageload.StagedModels(
        {"text_encoder": lambda: make("text_encoder"),
         "transformer": lambda: make("transformer")},
        {"encode": ["text_encoder"], "denoise": ["transformer"], "decode": []})
    pipe = DiffusersLikePipeline(None, None, make("vae"))
    pipe.text_encoder = stageload.stand_in(models, "text_encoder", {"hidden": WIDTH},
                                           cls=Stack)
    pipe.transformer = stageload.stand_in(models, "transformer", Transformer.config,
                                          dtype=torch.float32, device=torch.device("cpu"))
    pipe.to("cpu")
    pipe.to(torch.float32)
    pipe.to(device="cpu", dtype=torch.float32)
    info["loads_after_to"] = sum(models.load_counts.values())

    # the measurement's hooks, added before attach's so they run first:
    # each stage's peak, and denoise's from the transformer's first step
    # on (after its load and what comes after a load)
    state = {"stage": None, "steady": None}

    def begin(stage):
        def before(*a, **k):
            if state["stage"] is not None and state["stage"] != stage:
                peaks[state["stage"]] = status("VmHWM") - baseline
                if state["stage"] == "denoise" and state["steady"] is not None:
                    state["steady"] = status("VmHWM") - baseline
                reset_peak()
            state["stage"] = stage
        return before

    for method, stage in HOOKS.items():
        stageload.on_call(pipe, method, before=begin(stage))
    att = models.attach(pipe, HOOKS)
    first = {}

    def on_first_step(module, args):
        if not first:
            first["yes"] = True
            reset_peak()
            state["steady"] = 0

    real_load = models.loaders["transformer"]

    def load_transformer():
        m = real_load()
        m.register_forward_pre_hook(on_first_step)
        return m
    models.loaders["transformer"] = load_transformer

    if os.environ.get("STAGELOAD_SOCKET"):
        with stageload.guard(quiet=True) as g:
            info["job_id"] = g.job_id
            out_t = pipe(3)
    else:
        out_t = pipe(3)
    peaks[state["stage"]] = status("VmHWM") - baseline
    info["stage_peaks"] = peaks
    info["denoise_steady_peak"] = state["steady"]
    info["loaded_after_call"] = list(models.loaded)
    n = len(EVENTS)
    info["events"] = list(EVENTS)

    def counts():
        return dict(models.load_counts)

    # prompt_embeds: the text encoder never loads
    before = counts()
    emb = torch.randn(16, WIDTH, generator=torch.Generator().manual_seed(11))
    pipe(prompt_embeds=emb)
    info["embeds_loaded"] = {k: counts()[k] - before[k] for k in before}
    # output_type="latent": nothing stays loaded after it
    pipe(prompt_embeds=emb, output_type="latent")
    info["loaded_after_latent"] = list(models.loaded)
    # an exception mid-call, the transformer loaded: the same
    try:
        pipe(prompt_embeds=emb, fail_at_step=1)
        info["failed"] = False
    except RuntimeError:
        info["failed"] = True
    info["loaded_after_exception"] = list(models.loaded)
    info["after_events"] = EVENTS[n:]
    info["history"] = [{k: v for k, v in h.items() if isinstance(v, (int, float, str, list))}
                       for h in models.history]
    att.remove()
    models.close()
    return out_t, info


def main():
    mode, out = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    with torch.no_grad():  # warm-up: the ops' code and thread pools
        Stack(1)(torch.randn(4, WIDTH))
    stageload.release(Stack(1))  # ... and release's own first use
    gc.collect()
    baseline = status("VmRSS")
    reset_peak()
    info = {"job_id": None}
    with torch.inference_mode():
        if mode == "eager":
            pipe = DiffusersLikePipeline(make("text_encoder"), make("transformer"), make("vae"))
            pipe.to("cpu")
            out_t = pipe(3)
            info["events"] = EVENTS
        else:
            out_t, more = run_staged(out, baseline)
            info.update(more)
    peak = max([status("VmHWM") - baseline] + list(info.get("stage_peaks", {}).values()))
    torch.save(out_t.clone(), os.path.join(out, mode + ".pt"))
    info.update({"baseline": baseline, "peak": peak,
                 "sizes": {"text_encoder": 300 * MB, "transformer": 200 * MB, "vae": 20 * MB}})
    with open(os.path.join(out, mode + ".json"), "w") as f:
        json.dump(info, f)


if __name__ == "__main__":
    main()
