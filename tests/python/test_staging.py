"""Staging without torch: on_call hooks compose and remove() restores;
StagedModels loads and releases per stage, reports its stages and names
unknown stages and models; a stand-in's config never loads. Objects that
are not torch modules stand for the models here; test_torch.py has the
torch ones."""

import json
import subprocess
import sys
import warnings

import pytest

import stageload
from stageload.staging import NotLoaded, UnknownName

from conftest import sltest


class Pipe:
    def __init__(self):
        self.calls = []

    def encode(self, x, scale=1):
        self.calls.append(("encode", x, scale))
        return x * scale

    @staticmethod
    def unpack(x):
        return [x]


def test_import_does_not_import_torch():
    code = ("import sys, stageload\n"
            "from stageload import StagedModels, on_call, stand_in, release\n"
            "assert 'torch' not in sys.modules, 'stageload imported torch'\n"
            "assert 'stageload.staging' in sys.modules\n"
            "print('ok')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    r = subprocess.run([sys.executable, "-c", "import sys, stageload; "
                        "print('stageload.staging' in sys.modules)"],
                       capture_output=True, text=True)
    assert r.stdout.strip() == "False", "import stageload loaded the staging module"


def test_on_call_hooks_compose_and_remove_restores():
    p, other = Pipe(), Pipe()
    order = []
    h1 = stageload.on_call(p, "encode", before=lambda *a, **k: order.append(("b1", a, k)),
                           after=lambda r: order.append(("a1", r)))
    h2 = stageload.on_call(p, "encode", before=lambda *a, **k: order.append(("b2", a, k)),
                           after=lambda r: order.append(("a2", r)))
    assert p.encode(3, scale=2) == 6
    assert order == [("b1", (3,), {"scale": 2}), ("b2", (3,), {"scale": 2}), ("a2", 6),
                     ("a1", 6)]
    assert p.calls == [("encode", 3, 2)]
    # the instance only: the class and another instance are untouched
    order.clear()
    assert other.encode(1) == 1 and order == []
    assert "encode" not in vars(other) and Pipe.encode.__name__ == "encode"
    # remove the first: the second still runs
    h1.remove()
    h1.remove()  # twice is harmless
    assert p.encode(1) == 1 and [o[0] for o in order] == ["b2", "a2"]
    h2.remove()
    assert "encode" not in vars(p), "the instance kept a wrapper"
    order.clear()
    assert p.encode(4) == 4 and order == []
    assert p.encode.__func__ is Pipe.encode


def test_on_call_static_method_and_instance_attribute():
    p = Pipe()
    seen = []
    h = stageload.on_call(p, "unpack", before=lambda x: seen.append(x))
    assert p.unpack(5) == [5] and seen == [5]
    h.remove()
    assert "unpack" not in vars(p)
    # an instance attribute that was there is put back
    own = lambda x: x + 1  # noqa: E731
    p.step = own
    h = stageload.on_call(p, "step", after=lambda r: seen.append(("after", r)))
    assert p.step(1) == 2 and seen[-1] == ("after", 2)
    h.remove()
    assert p.step is own
    # an exception goes through, and after does not run
    def bad(x):
        raise RuntimeError("no")
    p.bad = bad
    h = stageload.on_call(p, "bad", after=lambda r: seen.append("after bad"))
    with pytest.raises(RuntimeError):
        p.bad(1)
    assert "after bad" not in seen
    h.remove()
    assert p.bad is bad
    # not callable, no hook given, no such method
    boom = Pipe()
    boom.encode = None
    with pytest.raises(TypeError):
        stageload.on_call(boom, "encode", before=print)
    with pytest.raises(ValueError):
        stageload.on_call(p, "encode")
    with pytest.raises(AttributeError):
        stageload.on_call(p, "nothing", before=print)


class Model:
    """A stand-in for a model: counts its calls."""

    def __init__(self, tag):
        self.tag = tag
        self.config = {"real": True}
        self.dtype = "float32"
        self.device = "cpu"

    def __call__(self, x):
        return (self.tag, x)


def staged():
    made = []

    def loader(name):
        def load():
            made.append(name)
            return Model(name)
        return load

    models = stageload.StagedModels(
        {"text_encoder": loader("text_encoder"), "transformer": loader("transformer")},
        {"encode": ["text_encoder"], "denoise": ["transformer"], "decode": [],
         "both": ["text_encoder", "transformer"]}, report=False)
    return models, made


def enters(models):
    return [h for h in models.history if h["event"] == "enter"]


def test_staged_models_load_when_used_and_release_per_stage():
    models, made = staged()
    models.enter("encode")
    assert made == [] and models.loaded == (), "enter loaded a model nobody used"
    te = models["text_encoder"]  # the first use loads it
    assert made == ["text_encoder"] and models.loaded == ("text_encoder",)
    assert te("x") == ("text_encoder", "x")
    models.enter("encode")  # the same stage again: nothing happens
    assert made == ["text_encoder"]
    models.enter("both")  # the text encoder stays; the transformer loads when used
    assert made == ["text_encoder"] and models["text_encoder"] is te
    models.enter("denoise")
    assert models.loaded == (), "the text encoder stayed into a stage that does not list it"
    with pytest.raises(NotLoaded) as e:
        models["text_encoder"]
    assert "stage 'denoise' does not list it" in str(e.value) and "encode" in str(e.value)
    assert models["transformer"]("y") == ("transformer", "y")
    models.enter("decode")
    assert models.loaded == ()
    models.enter("encode", preload=True)  # today's eager form; released models load again
    assert made == ["text_encoder", "transformer", "text_encoder"]
    assert models.load_counts == {"text_encoder": 2, "transformer": 1}
    assert [h["stage"] for h in enters(models)] == ["encode", "encode", "both", "denoise",
                                                     "decode", "encode"]
    assert enters(models)[3]["released"] == ["text_encoder"]
    assert enters(models)[5]["loaded"] == ["text_encoder"]
    loads = [h for h in models.history if h["event"] == "load"]
    assert [h["name"] for h in loads] == made
    assert all(h["seconds"] >= 0 and h["peak"] > 0 for h in loads)
    models.close()
    assert models.loaded == ()


def test_staged_models_errors_name_what_is_known():
    models, _ = staged()
    with pytest.raises(UnknownName) as e:
        models.enter("upscale")
    assert str(e.value) == "no stage 'upscale' (stages: encode, denoise, decode, both)"
    with pytest.raises(UnknownName) as e:
        models["vae"]
    assert str(e.value) == "no model 'vae' (models: text_encoder, transformer)"
    assert isinstance(e.value, KeyError)
    with pytest.raises(NotLoaded) as e:
        models["transformer"]
    assert "no stage entered yet" in str(e.value)
    with pytest.raises(UnknownName) as e:
        stageload.StagedModels({"a": lambda: 1}, {"s": ["a", "b"]})
    assert "stage 's' needs model 'b', which has no loader" in str(e.value)
    with pytest.raises(TypeError):
        stageload.StagedModels({"a": lambda: 1}, {"s": "a"})
    with pytest.raises(TypeError):
        stageload.StagedModels({"a": 1}, {"s": ["a"]})
    with pytest.raises(ValueError):
        stageload.StagedModels({"a": lambda: None}, {"s": ["a"]}).enter("s", preload=True)


def test_enter_marks_meters_and_reports_to_the_job(env, tmp_path):
    """Each enter() is a stage of the running MemoryMeter and of the job
    this process runs in (inside a guard)."""
    models, _ = staged()
    models.report = True
    trace = str(tmp_path / "t.jsonl")
    with stageload.guard(quiet=True) as g:
        with stageload.MemoryMeter(trace, interval=0.1, source="local") as m:
            for s in ("encode", "denoise", "decode"):
                models.enter(s)
                n = m.lines
                sltest.poll(lambda: m.lines > n + 1, what="meter lines")
        jid = g.job_id
    with stageload.Client() as c:
        st = c.show(jid)["stages"]
    assert [s["name"] for s in st] == ["encode", "denoise", "decode"]
    with open(trace) as f:
        stages = [json.loads(x).get("stage") for x in f][1:]
    # The meter's thread may sample once before the first enter(); from
    # that enter on, every line carries a stage, in the order entered.
    stages = stages[stages.index("encode"):]
    assert [s for i, s in enumerate(stages) if i == 0 or stages[i - 1] != s] == \
        ["encode", "denoise", "decode"]


def test_stand_in_config_never_loads(tmp_path):
    models, made = staged()
    cfg = tmp_path / "transformer"
    cfg.mkdir()
    (cfg / "config.json").write_text(json.dumps({"in_channels": 64, "guidance_embeds": False,
                                                 "axes": [16, 56, 56]}))
    s = stageload.stand_in(models, "transformer", str(cfg / "config.json"), dtype="bf16",
                           device="mps")
    s2 = stageload.stand_in(models, "transformer", str(cfg))  # its directory
    d = stageload.stand_in(models, "text_encoder", {"hidden_size": 3584})
    assert s.config.in_channels == 64 and s.config["axes"] == [16, 56, 56]
    assert s.config.guidance_embeds is False and s2.config.in_channels == 64
    assert d.config.hidden_size == 3584 and dict(d.config) == {"hidden_size": 3584}
    assert s.dtype == "bf16" and s.device == "mps"
    with pytest.raises(AttributeError):
        s.config.out_channels
    with pytest.raises(AttributeError):
        s.config.in_channels = 3
    # private names and special names are probes: they never load
    assert not hasattr(s, "_reset_stateful_cache") and not hasattr(s, "__deepcopy__")
    assert "not loaded" in repr(s)
    assert made == [] and models.loaded == ()
    # any other use loads through the StagedModels, and goes to the model
    assert s("x") == ("transformer", "x") and made == ["transformer"]
    assert s.tag == "transformer" and s.config.in_channels == 64  # config stays the file's
    s.extra = 5
    assert models.load("transformer").extra == 5 and s._stand_in_name == "transformer"
    # dtype and device not given: the model's
    assert d.dtype == "float32" and made == ["transformer", "text_encoder"]
    with pytest.raises(UnknownName):
        stageload.stand_in(models, "vae", {})
    with pytest.raises(TypeError):
        stageload.stand_in(models, "transformer", 42)


def test_stage_report_without_a_daemon_warns_and_goes_on(monkeypatch, tmp_path):
    monkeypatch.setenv("STAGELOAD_JOB_ID", "12345")
    monkeypatch.setenv("STAGELOAD_SOCKET", str(tmp_path / "nothing.sock"))
    models, made = staged()
    models.report = True
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        models.enter("encode")
    assert made == [] and any("not recorded" in str(x.message) for x in w)


class Pipeline:
    """A pipeline with the call structure of diffusers' QwenImagePipeline:
    encode_prompt is always called and uses the text encoder only without
    prompt_embeds; prepare_latents, then the transformer per step;
    output_type="latent" skips the static _unpack_latents and the decode;
    a failure may come mid-call; maybe_free_model_hooks() probes every
    component with hasattr at the end."""

    def __init__(self, text_encoder, transformer):
        self.text_encoder = text_encoder
        self.transformer = transformer
        self.seen = []

    def components(self):
        return {"text_encoder": self.text_encoder, "transformer": self.transformer}

    def encode_prompt(self, prompt, prompt_embeds=None):
        if prompt_embeds is None:
            prompt_embeds = self.text_encoder(prompt)
        return prompt_embeds

    def prepare_latents(self, channels):
        return [0] * channels

    @staticmethod
    def _unpack_latents(latents):
        return list(latents)

    @classmethod
    def check(cls, x):
        return x

    def __call__(self, prompt, prompt_embeds=None, output_type="pil", fail_at=None, steps=2):
        emb = self.encode_prompt(prompt, prompt_embeds=prompt_embeds)
        latents = self.prepare_latents(self.transformer.config.in_channels)
        for i in range(steps):
            if fail_at == i:
                raise RuntimeError("failed at step %d" % i)
            latents = [self.transformer((emb, x))[1][1] + 1 for x in latents]
        if output_type == "latent":
            out = latents
        else:
            out = ("image", self._unpack_latents(latents))
        for c in self.components().values():  # diffusers' maybe_free_model_hooks()
            hasattr(c, "_reset_stateful_cache")
        return out


HOOKS = {"encode_prompt": "encode", "prepare_latents": "denoise", "_unpack_latents": "decode"}


def staged_pipeline(**kw):
    made = []

    def loader(name):
        def load():
            made.append(name)
            return Model(name)
        return load

    models = stageload.StagedModels(
        {"text_encoder": loader("text_encoder"), "transformer": loader("transformer")},
        {"encode": ["text_encoder"], "denoise": ["transformer"], "decode": []},
        report=False, **kw)
    pipe = Pipeline(stageload.stand_in(models, "text_encoder", {"hidden_size": 8}),
                    stageload.stand_in(models, "transformer", {"in_channels": 4}))
    return models, pipe, made


def test_attach_runs_the_stages_and_ends_the_call():
    models, pipe, made = staged_pipeline()
    att = models.attach(pipe, HOOKS)
    assert type(pipe).__name__ == "Pipeline" and type(pipe).__qualname__ == "Pipeline"
    assert type(pipe).__module__ == Pipeline.__module__ and isinstance(pipe, Pipeline)
    assert type(pipe) is not Pipeline  # its own subclass: __call__ is looked up on the type
    out = pipe("a cat")
    assert out[0] == "image" and made == ["text_encoder", "transformer"]
    assert models.loaded == () and models.stage is None, "a model stayed after the call"
    assert [h["stage"] for h in enters(models)] == ["encode", "denoise", "decode"]
    ends = [h for h in models.history if h["event"] == "end_call"]
    assert len(ends) == 1 and ends[0]["stage"] == "decode" and ends[0]["next"] == "encode"
    # prompt_embeds: encode_prompt runs, the text encoder never loads
    made.clear()
    assert pipe(None, prompt_embeds="emb")[0] == "image"
    assert made == ["transformer"]
    # output_type="latent": no _unpack_latents, no decode stage; the call's
    # end releases the transformer all the same
    made.clear()
    assert pipe(None, prompt_embeds="emb", output_type="latent") == [2, 2, 2, 2]
    assert made == ["transformer"] and models.loaded == ()
    assert enters(models)[-1]["stage"] == "denoise"
    # an exception mid-call: the same
    with pytest.raises(RuntimeError, match="failed at step 1"):
        pipe("a cat", fail_at=1)
    assert models.loaded == () and models.stage is None
    assert Pipeline.__call__ is not type(pipe).__call__  # the class is untouched
    att.remove()
    att.remove()
    assert type(pipe) is Pipeline and "encode_prompt" not in vars(pipe)
    assert "_unpack_latents" not in vars(pipe)
    made.clear()
    pipe("a cat")  # no stages now: the stand-ins load what is used, nothing ends the call
    assert models.loaded == ("text_encoder", "transformer")
    models.close()


def test_attach_nested_calls_end_once_and_class_and_static_methods():
    models, pipe, made = staged_pipeline()

    class Outer(Pipeline):
        def __call__(self, prompt, **kw):
            # a pipeline calling itself (a refiner pass): one call, one end
            first = super().__call__(prompt, output_type="latent")
            assert models.loaded == ("transformer",), "the inner call ended the outer one"
            return super().__call__(prompt, **kw), first

    o = Outer(pipe.text_encoder, pipe.transformer)
    att = models.attach(o, dict(HOOKS, check="decode"))
    o("x")
    assert len([h for h in models.history if h["event"] == "end_call"]) == 1
    assert models.loaded == ()
    assert o.check(3) == 3 and models.stage == "decode"  # a classmethod hook
    att.remove()
    with pytest.raises(ValueError):
        models.attach(o, {})
    with pytest.raises(UnknownName):
        models.attach(o, {"encode_prompt": "upscale"})
    with pytest.raises(AttributeError):
        models.attach(o, {"nothing": "encode"})
    att = models.attach(o, HOOKS)
    with pytest.raises(ValueError, match="attached already"):
        models.attach(o, HOOKS)
    att.remove()


def test_attached_pipeline_pickles_and_copies_as_its_own_class():
    import copy
    import pickle
    models, _, _ = staged_pipeline()
    pipe = Pipeline(Model("te"), Model("tr"))
    att = models.attach(pipe, HOOKS)
    for proto in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(pipe, protocol=proto))
        assert type(back) is Pipeline and sorted(vars(back)) == ["seen", "text_encoder",
                                                                  "transformer"]
        assert back.transformer.tag == "tr"
    c = copy.deepcopy(pipe)
    assert type(c) is Pipeline and "encode_prompt" not in vars(c)
    assert type(pipe) is not Pipeline and "encode_prompt" in vars(pipe)  # still attached
    att.remove()


def test_stand_in_probes_and_to_never_load():
    models, made = staged()
    s = stageload.stand_in(models, "transformer", {"in_channels": 4})
    for name in stageload.staging.PROBES:
        assert not hasattr(s, name), name
        assert getattr(s, name, None) is None
    assert made == [], "a probe loaded the model"
    # with cls: a name the class does not define is a probe too
    c = stageload.stand_in(models, "text_encoder", {}, cls=Model)
    assert not hasattr(c, "generate") and made == []
    assert c("x") == ("text_encoder", "x") and made == ["text_encoder"]
    assert c.tag == "text_encoder"  # loaded: the model's own attributes
    # .to records device and dtype, answers without loading, returns the stand-in
    assert s.to("mps") is s and s.device == "mps" and made == ["text_encoder"]
    assert s.to(device="cpu", dtype="f32") is s and (s.device, s.dtype) == ("cpu", "f32")
    models.close()


class Placeable(Model):
    def to(self, device=None, dtype=None):
        self.moved = (device, dtype)
        return self


def test_stand_in_placement_applies_when_the_model_loads():
    models = stageload.StagedModels({"m": lambda: Placeable("m")}, {"s": ["m"]}, report=False)
    s = stageload.stand_in(models, "m", {}, dtype="bf16")
    s.to(device="mps")
    models.enter("s")
    assert models["m"].moved == ("mps", "bf16")
    s.to(device="cpu")  # loaded: goes to the model now
    assert models["m"].moved == ("cpu", None)
    models.close()


def test_not_listed_and_closed_errors():
    models, made = staged()
    models.enter("denoise")
    with pytest.raises(NotLoaded, match="stage 'denoise' does not list it"):
        models["text_encoder"]
    assert made == []
    models.load("text_encoder")  # loads whatever the stage
    with pytest.raises(NotLoaded, match="does not list it"):
        models["text_encoder"]
    models.close()
    with pytest.raises(NotLoaded) as e:
        models["transformer"]
    assert "closed" in str(e.value) and "no stage entered yet" not in str(e.value)
    with pytest.raises(NotLoaded, match="closed"):
        models.load("transformer")
    models.enter("encode")  # opens them again
    assert models["text_encoder"].tag == "text_encoder"
    models.close()


def probe(avail, total=100 << 30, swap=0, pressure="normal"):
    state = {"available_bytes": avail, "total_bytes": total, "swap_used_bytes": swap,
             "pressure": pressure}
    return state, (lambda: dict(state))


def test_keep_auto_with_room_loads_each_model_once():
    state, mem = probe(80 << 30)
    models, pipe, made = staged_pipeline(keep="auto", memory=mem)
    models.attach(pipe, HOOKS)
    outs = [pipe("a cat") for _ in range(5)]
    assert outs == [outs[0]] * 5
    assert models.load_counts == {"text_encoder": 1, "transformer": 1}
    assert models.loaded == ("text_encoder", "transformer")
    keeps = [h for h in models.history if h["event"] == "keep"]
    assert keeps and all(h["available"] - h["need"] >= h["floor"] for h in keeps)
    assert {h["floor_source"] for h in keeps} == {"10%"}
    assert all(h["floor"] == (100 << 30) // 10 for h in keeps)
    models.close()
    assert models.loaded == ()


@pytest.mark.parametrize("why", ["margin", "swap", "pressure", "pressure_during"])
def test_keep_auto_stages_like_never_when_tight(why):
    state, mem = probe(80 << 30)
    kw = {"margin": "90G"} if why == "margin" else {}
    models, pipe, made = staged_pipeline(keep="auto", memory=mem, **kw)
    att = models.attach(pipe, HOOKS)
    if why in ("swap", "pressure_during"):
        real = pipe.transformer.__call__

        def grow(*a):
            if why == "swap":
                state["swap_used_bytes"] += 1 << 20
            elif not a[0][1]:  # the first step: pressure warn until the watch has seen it
                state["pressure"] = "warn"
                sltest.poll(lambda: models._watch.pressure == "warn", what="the watch's sample")
                state["pressure"] = "normal"
            return real(*a)
        pipe.transformer = type("T", (), {"config": pipe.transformer.config,
                                          "__call__": lambda self, x: grow(x)})()
    if why == "pressure":
        state["pressure"] = "warn"
    for _ in range(3):
        pipe("a cat")
        assert models.loaded == ()
    assert models.load_counts == {"text_encoder": 3, "transformer": 3}
    decisions = [h for h in models.history if h["event"] == "release_decision"]
    assert decisions
    if why in ("margin", "pressure"):  # else denoise only: encode's end may keep the text encoder
        assert not [h for h in models.history if h["event"] == "keep"]
    reason = {"margin": "available - need < floor", "swap": "swap grew during denoise",
              "pressure": "pressure warn", "pressure_during": "pressure warn"}[why]
    assert reason in {h["reason"] for h in decisions}, decisions
    att.remove()
    models.close()


def test_keep_argument_checks():
    with pytest.raises(ValueError):
        stageload.StagedModels({"a": lambda: 1}, {"s": ["a"]}, keep="always")
    with pytest.raises(ValueError):
        stageload.StagedModels({"a": lambda: 1}, {"s": ["a"]}, margin="lots")


def test_keep_auto_reads_the_jobs_numbers(env):
    """Inside a named job, the floor is the job's wait_free share and the
    next stage's peak the daemon's learned one, once a run has taught it."""
    state, mem = probe(80 << 30)
    for run in range(2):
        models, pipe, made = staged_pipeline(keep="auto", memory=mem)
        models.report = True
        with stageload.guard(name="keep-auto-learns", wait_free=5, quiet=True) as g:
            att = models.attach(pipe, HOOKS)
            if run == 0:
                # the first run's stages last until the daemon has sampled
                # each (after attach's hook, which begins the stage)
                def sampled(*a, **k):
                    with stageload.Client() as c:
                        sltest.poll(lambda: (c.show(g.job_id)["stages"] or [{}])[-1].get(
                            "footprint_peak_bytes"), what="a sampled stage")
                for method in HOOKS:
                    stageload.on_call(pipe, method, before=sampled)
            pipe("a cat")
            att.remove()
        models.close()
    with stageload.Client() as c:
        learned = c.show(g.job_id)["learned"]
    decisions = [h for h in models.history if h["event"] in ("keep", "release_decision")]
    assert decisions
    assert {h["floor_source"] for h in decisions} == {"wait_free"}
    assert all(h["floor"] == (100 << 30) * 5 // 100 for h in decisions)
    # the second run's decisions: the first run taught the daemon each stage
    got = {s["name"] for s in learned["stages"] if s["footprint_peak_bytes"]}
    assert got == {"encode", "denoise", "decode"}, learned
    assert all(h["next_peak_source"] == "daemon" and h["next_peak"] > 0 for h in decisions), \
        decisions
