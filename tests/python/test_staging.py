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


def test_staged_models_load_and_release_per_stage():
    models, made = staged()
    models.enter("encode")
    assert made == ["text_encoder"] and models.loaded == ("text_encoder",)
    te = models["text_encoder"]
    assert te("x") == ("text_encoder", "x")
    models.enter("encode")  # the same stage again: nothing happens
    assert made == ["text_encoder"]
    models.enter("both")  # the text encoder stays, the transformer comes
    assert made == ["text_encoder", "transformer"] and models["text_encoder"] is te
    models.enter("denoise")
    assert models.loaded == ("transformer",)
    with pytest.raises(NotLoaded) as e:
        models["text_encoder"]
    assert "stage 'denoise' does not list it" in str(e.value) and "encode" in str(e.value)
    models.enter("decode")
    assert models.loaded == ()
    models.enter("encode")  # released models load again
    assert made == ["text_encoder", "transformer", "text_encoder"]
    assert models.load_counts == {"text_encoder": 2, "transformer": 1}
    assert [h["stage"] for h in models.history] == ["encode", "encode", "both", "denoise",
                                                     "decode", "encode"]
    assert models.history[3]["released"] == ["text_encoder"]
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
        stageload.StagedModels({"a": lambda: None}, {"s": ["a"]}).enter("s")


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
    assert models["transformer"].extra == 5 and s._stand_in_name == "transformer"
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
    assert made == ["text_encoder"] and any("not recorded" in str(x.message) for x in w)
