"""A miniature diffusion pipeline for test_torch.py, run in a process of
its own so its peak memory is its own:

    python torch_minipipe.py eager|staged OUT_DIR

Three real torch modules of known sizes (float32): a 300 MB "text
encoder", a 200 MB "transformer", a 20 MB "VAE", each made from a seed of
its own so every run has the same weights. The pipeline has the methods a
diffusers pipeline has (encode_prompt, prepare_latents, _unpack_latents
(a static method) and __call__, which reads self.transformer.config before
denoising). eager loads all three up front; staged builds the pipeline
with stand-ins and StagedModels, and hooks the three methods with on_call,
as bench/qwen_image.py does with the real pipeline, inside
stageload.guard() when $STAGELOAD_SOCKET is set.

Writes OUT_DIR/MODE.pt (the output tensor) and OUT_DIR/MODE.json: the
baseline RSS (after import torch and a warm-up of the ops), the peak
(VmHWM after resetting it through /proc/self/clear_refs) per stage and
overall, the order of events (loads, method calls, config reads) and the
job id.
"""

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


class Transformer(Stack):
    config = {"in_channels": 64, "patch_size": 2}


def make(name):
    EVENTS.append("load " + name)
    layers = {"text_encoder": 75, "transformer": 50, "vae": 5}[name]
    torch.manual_seed({"text_encoder": 1, "transformer": 2, "vae": 3}[name])
    m = (Transformer if name == "transformer" else Stack)(layers)
    m.eval()
    return m


class MiniPipeline:
    def __init__(self, text_encoder, transformer, vae):
        self.text_encoder = text_encoder
        self.transformer = transformer
        self.vae = vae

    def encode_prompt(self, prompt_ids):
        EVENTS.append("encode_prompt")
        g = torch.Generator().manual_seed(int(prompt_ids))
        x = torch.randn(16, WIDTH, generator=g)
        return self.text_encoder(x)

    def prepare_latents(self, channels, seed):
        EVENTS.append("prepare_latents")
        g = torch.Generator().manual_seed(seed)
        return torch.randn(channels, WIDTH, generator=g)

    @staticmethod
    def _unpack_latents(latents):
        EVENTS.append("_unpack_latents")
        return latents.reshape(-1, WIDTH).contiguous()

    def __call__(self, prompt_ids, steps=4, seed=7):
        emb = self.encode_prompt(prompt_ids)
        EVENTS.append("read transformer.config")
        channels = self.transformer.config["in_channels"]
        latents = self.prepare_latents(channels, seed)
        cond = emb.mean(dim=0, keepdim=True)
        for _ in range(steps):
            latents = latents - 0.1 * self.transformer(latents + cond)
        return self.vae(self._unpack_latents(latents))


def main():
    mode, out = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    with torch.no_grad():  # warm-up: the ops' code and thread pools
        Stack(1)(torch.randn(4, WIDTH))
    stageload.release(Stack(1))  # ... and release's own first use
    baseline = status("VmRSS")
    reset_peak()
    peaks = {}
    job_id = None
    with torch.no_grad():
        if mode == "eager":
            pipe = MiniPipeline(make("text_encoder"), make("transformer"), make("vae"))
            out_t = pipe(3)
        else:
            models = stageload.StagedModels(
                {"text_encoder": lambda: make("text_encoder"),
                 "transformer": lambda: make("transformer")},
                {"encode": ["text_encoder"], "denoise": ["transformer"], "decode": []})
            pipe = MiniPipeline(None, None, make("vae"))
            pipe.text_encoder = stageload.stand_in(models, "text_encoder", {"hidden": WIDTH})
            pipe.transformer = stageload.stand_in(models, "transformer", Transformer.config,
                                                  dtype=torch.float32,
                                                  device=torch.device("cpu"))

            def enter(stage):
                def before(*args, **kwargs):
                    if models.stage is not None:  # the peak of the stage that ends
                        peaks[models.stage] = status("VmHWM") - baseline
                        reset_peak()
                    models.enter(stage)
                return before

            stageload.on_call(pipe, "encode_prompt", before=enter("encode"))
            stageload.on_call(pipe, "prepare_latents", before=enter("denoise"))
            stageload.on_call(pipe, "_unpack_latents", before=enter("decode"))
            if os.environ.get("STAGELOAD_SOCKET"):
                with stageload.guard(quiet=True) as g:
                    job_id = g.job_id
                    out_t = pipe(3)
            else:
                out_t = pipe(3)
            peaks[models.stage] = status("VmHWM") - baseline
            models.close()
    peak = max([status("VmHWM") - baseline] + list(peaks.values()))
    torch.save(out_t, os.path.join(out, mode + ".pt"))
    with open(os.path.join(out, mode + ".json"), "w") as f:
        json.dump({"baseline": baseline, "peak": peak, "stage_peaks": peaks,
                   "events": EVENTS, "job_id": job_id,
                   "sizes": {"text_encoder": 300 * MB, "transformer": 200 * MB,
                             "vae": 20 * MB}}, f)


if __name__ == "__main__":
    main()
