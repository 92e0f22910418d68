"""Reliability, fourth round: verdicts a trivial model also reaches, devices the machine lacks,
files the user owns, model options that would exhaust the machine, empty inputs."""

import pytest

import monoidlab as ml
from monoidlab.evaluation import Evaluation


def test_a_verdict_a_majority_class_model_also_reaches_is_never_solved():
    """One class at every scored length (a one-row text test set, a degenerate sample): the
    model at 1.0 is not 'solved', and the verdict says why."""
    acc = {"task": {3: 1.0, 4: 1.0}}
    ev = Evaluation("t", ("task",), 0.99, 1, accuracy=acc,
                    baselines={"majority": {"task": {3: 1.0, 4: 1.0}}})
    assert ev.trivial and not ev.solved
    assert ev.verdict().startswith("not solved: a majority-class model also scores >= 0.99")
    # one length where the baseline falls short is enough for a real verdict
    ev = Evaluation("t", ("task",), 0.99, 8, accuracy=acc,
                    baselines={"majority": {"task": {3: 1.0, 4: 0.75}}})
    assert not ev.trivial and ev.solved


def test_loading_on_a_device_the_machine_lacks_names_the_device(tiny_ldru_run):
    """extract_automaton(run, device="cuda") on a machine without CUDA says that, not that the
    checkpoint is unsafe."""
    import torch

    from monoidlab.errors import InputError

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(InputError, match="device 'cuda': CUDA is not available"):
        ml.extract_automaton(tiny_ldru_run, device="cuda")
    with pytest.raises(InputError, match="device 'gpu7': not a device torch knows"):
        from monoidlab.training.run_folder import read_checkpoint

        read_checkpoint(tiny_ldru_run / "checkpoint.pt", "gpu7")


def test_text_sample_never_replaces_the_users_files(tmp_path, capsys):
    """An existing train.csv is the user's: refused, named, kept byte for byte; --overwrite
    replaces both files."""
    from monoidlab.cli import main

    (tmp_path / "train.csv").write_text("my data\n")
    code = main(["text-sample", str(tmp_path), "--layout", "ag_news", "--rows", "10"])
    err = capsys.readouterr().err
    assert code != 0 and "train.csv exists; refusing to replace it (--overwrite" in err
    assert (tmp_path / "train.csv").read_text() == "my data\n"
    assert not (tmp_path / "test.csv").exists()
    assert main(["text-sample", str(tmp_path), "--layout", "ag_news", "--rows", "10",
                 "--overwrite"]) in (0, None)
    assert len((tmp_path / "train.csv").read_text().splitlines()) == 10


def test_empty_and_degenerate_inputs_get_clear_errors(tiny_ldru_run):
    from monoidlab.errors import InputError

    lang = ml.load_language("dyck-2")
    train = ml.sample(lang, range(2, 9), 30, seed=0)
    empty = ml.sample(lang, range(20, 24), 0, seed=1)
    with pytest.raises(InputError, match="coverage_gap: the test batch is empty"):
        ml.coverage_gap(lang, train, empty)
    with pytest.raises(InputError, match="coverage_gap: the train batch is empty"):
        ml.coverage_gap(lang, empty, train)
    with pytest.raises(InputError, match="sampled_coverage: the batch is empty"):
        ml.sampled_coverage(empty)
    with pytest.raises(InputError, match="extract_monoid: lengths must be >= 1"):
        ml.extract_monoid(tiny_ldru_run, lengths="0:0")


@pytest.mark.parametrize("call, keyword, now", [
    (lambda: ml.exact_coverage("parity", [3], offset_buffer=2), "offset_buffer",
     "offsets=Offsets.random(N)"),
    (lambda: ml.exact_coverage("parity", [3], distribution="uniform"), "distribution",
     "sampler="),
    (lambda: ml.min_training_length("parity", [9], offset_buffer=8), "offset_buffer",
     "offsets=Offsets.random(N)"),
    (lambda: ml.min_training_length("parity", [9], train_offsets="random"), "train_offsets",
     "offsets="),
    (lambda: ml.sample("parity", [3], 4, method="uniform"), "method", "sampler="),
    (lambda: __import__("monoidlab.coverage.exact", fromlist=["x"]).node_table(
        "balanced", [3], offset_buffer=4), "offset_buffer", "offsets=Offsets.random(N)"),
])
def test_a_removed_keyword_names_what_replaced_it(call, keyword, now):
    from monoidlab.errors import InputError

    with pytest.raises(InputError, match=f"the argument '{keyword}' was removed; use "
                                         f"{now.replace('(', '[(]').replace(')', '[)]')}"):
        call()


@pytest.mark.parametrize("argv, said", [
    (["coverage", "parity", "--train-offsets", "random"], "--train-offsets is now --offsets"),
    (["min-length", "parity", "--train-offsets=random"], "--train-offsets is now --offsets"),
    (["probe", "runs/x", "--extrakt"], "unknown option --extrakt (did you mean '--extract'?)"),
    (["coverage", "parity", "stray"], "unexpected argument 'stray'"),
])
def test_unknown_and_renamed_cli_options_are_named_with_the_commands_help(argv, said, capsys):
    from monoidlab.cli import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and said in err and f"monoidlab {argv[0]} --help" in err


# Integer options that do not set a size (a count threshold, a divisor, a cap the string
# length already bounds), each with why; every other integer option of every model must be
# refused up front at an absurd value.
NOT_SIZES = {
    ("mlp-ldru-snap", "dead_code"): "a count below which a code is re-seeded",
    ("pr-lstm-snap", "dead_code"): "a count below which a code is re-seeded",
    ("rir-grc", "chunk"): "capped by the string: a chunk longer than the string is the string",
    ("gated-deltanet", "chunk_size"): "capped by the string length",
    ("transformer", "max_len"): "a cap on string lengths (learned positions count as "
                                "parameters of their own option)",
    ("decoder-lm", "max_len"): "a cap on string lengths",
    ("transform-tree", "anneal_steps"): "a number of training steps, not a size",
}


def _int_options():
    import dataclasses

    from monoidlab.models import REGISTRY, model_spec

    for name in REGISTRY:
        o = model_spec(name).make_options({})
        for f in dataclasses.fields(o):
            v = getattr(o, f.name)
            if isinstance(v, int) and not isinstance(v, bool):
                yield name, f.name


@pytest.mark.parametrize("model, option", list(_int_options()))
def test_every_size_option_of_every_model_is_bounded_before_anything_is_allocated(
        model, option):
    """Walks the registry: each integer option at 10^8 is refused in one line (by the option's
    own check, or by the memory it implies) before the model is built; the options that do
    not set a size (NOT_SIZES) build and run a step on tiny strings at 10^4."""
    import torch

    from monoidlab.errors import InputError
    from monoidlab.models import model_spec
    from monoidlab.models.memory import ACTIVATIONS, check_model_memory

    assert model in ACTIVATIONS, f"{model}: no activation formula in models/memory.py"
    classes = 3 if model == "decoder-lm" else 2
    check_model_memory(model, 3, classes, {}, 64, 40)  # the defaults fit
    if (model, option) in NOT_SIZES:
        m = model_spec(model).build(3, classes, {option: 10**4})
        out = m(torch.zeros(2, 8, dtype=torch.long), torch.full((2,), 8))
        assert out.shape[0] == 2
        return
    with pytest.raises(InputError) as exc:
        check_model_memory(model, 3, classes, {option: 10**8}, 64, 40)
    assert "\n" not in str(exc.value)
    assert option in str(exc.value) or "limits=False" in str(exc.value)


def test_the_trainer_refuses_a_huge_option_and_limits_false_lifts_it():
    from monoidlab.errors import ConfigError
    from monoidlab.training import RunConfig, train

    cfg = RunConfig(language="parity", model="stack-rnn", steps=1,
                    model_options={"stack_size": 10**8})
    with pytest.raises(ConfigError, match=r"stack_size 100000000, stack_cell 8\) need about .* TiB"):
        train(cfg, progress=False)
    from monoidlab.models.memory import check_model_memory

    check_model_memory("stack-rnn", 3, 2, {"stack_size": 10**8}, 64, 40, limits=False)


def test_a_best_pt_written_before_a_config_key_existed_still_belongs_to_its_run(tmp_path):
    """A run resumed by a release that added a config key (here `limits`): its checkpoint.pt
    now carries the key, its best.pt (written before) does not; both are the same config, so
    the best weights load. A best.pt of another config is still refused."""
    import shutil

    from monoidlab.errors import CheckpointError
    from monoidlab.training import RunConfig, load_checkpoint, train
    from monoidlab.training.run_folder import read_checkpoint, save_checkpoint

    cfg = RunConfig(language="parity", model="mlp-ldru", steps=8, batch_size=8, early_stop=1,
                    eval_every=4, val_lengths="9:10", val_samples=4, test_lengths="9:10",
                    test_samples=4, train_lengths="1:8", model_options={"d": 8})
    run = tmp_path / "run"
    train(cfg, run, progress=False)
    best = read_checkpoint(run / "best.pt", need=("model", "step"))
    assert "limits" in best["config"]
    del best["config"]["limits"]  # as a release before the key wrote it
    save_checkpoint(best, run / "best.pt")
    assert load_checkpoint(run)[3]["step"] == best["step"]
    other = tmp_path / "other"
    shutil.copytree(run, other)
    best["config"]["lr"] = 0.5
    save_checkpoint(best, other / "best.pt")
    with pytest.raises(CheckpointError, match="written by another run"):
        load_checkpoint(other)


def test_the_transformation_trees_estimate_follows_its_computation_order():
    """The transformation tree model keeps O(n) per token (the chain walk; the tree order runs
    only under its cap): n = 682 (prefix-4-4 at twice its minimal automaton) fits, as it
    trains; the estimate follows the model's own cap."""
    from monoidlab.models.memory import TREE_ELEMENTS, training_bytes
    from monoidlab.models.transform_tree import TransformTree

    assert TREE_ELEMENTS == TransformTree.tree_elements
    params, acts, _ = training_bytes("transform-tree", 4, 16, {"states": 682}, 64, 40)
    assert params + acts < 2**30


@pytest.mark.parametrize("model", sorted(__import__("monoidlab.models", fromlist=["REGISTRY"])
                                         .REGISTRY))
def test_a_default_sized_model_is_counted_on_the_cpu_as_the_meta_device_counts_it(
        model, monkeypatch):
    """Options no larger than the defaults are counted by a CPU build (milliseconds; the meta
    device's first build imports torch's compiler, 1-2 s a process): the same parameter count
    as the meta build, and the random stream untouched (a run's initialisation unchanged)."""
    import torch

    import monoidlab.models.memory as memory

    classes = 3 if model == "decoder-lm" else 2
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    cpu = memory.training_bytes(model, 3, classes, {}, 64, 40)[0]
    assert torch.equal(torch.rand(3), expected)  # the CPU build drew nothing from the stream
    monkeypatch.setattr(memory, "_default_sized", lambda *a: False)
    assert memory.training_bytes(model, 3, classes, {}, 64, 40)[0] == cpu


@pytest.mark.parametrize("model, options", [("transform-tree", {"states": 16}),
                                            ("mlp-ldru-snap", {"codes": 32}),
                                            ("pr-lstm-snap", {"codes": 64})])
def test_automatic_sizes_of_a_small_language_are_counted_on_the_cpu_alike(
        model, options, monkeypatch):
    import monoidlab.models.memory as memory

    spec = __import__("monoidlab.models", fromlist=["model_spec"]).model_spec(model)
    assert memory._default_sized(spec.make_options(options), spec.make_options({}), 3, 2)
    cpu = memory.training_bytes(model, 3, 2, options, 64, 40)[0]
    monkeypatch.setattr(memory, "_default_sized", lambda *a: False)
    assert memory.training_bytes(model, 3, 2, options, 64, 40)[0] == cpu
