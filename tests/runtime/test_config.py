"""Bad configs and bad specs fail with one clear error before anything runs."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from runtime_support import dag_golden, dag_program, dag_specs

from pypto.errors import RuntimeConfigError
from pypto.runtime import RunConfig, TensorSpec, run


def test_swimlane_true_means_level_4_and_range_is_checked():
    assert RunConfig(enable_chip_swimlane=True).swimlane_level == 4
    assert RunConfig(enable_chip_swimlane=2).swimlane_level == 2
    for bad in (5, -1, 2.5, "4"):
        with pytest.raises(ValueError, match="enable_chip_swimlane"):
            RunConfig(enable_chip_swimlane=bad)


def test_l2_alias_warns_and_maps_and_conflicts():
    with pytest.warns(DeprecationWarning, match="enable_l2_swimlane"):
        cfg = RunConfig(enable_l2_swimlane=3)
    assert cfg.swimlane_level == 3
    with pytest.warns(DeprecationWarning):
        assert RunConfig(enable_l2_swimlane=True).swimlane_level == 4
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="both set"):
        RunConfig(enable_chip_swimlane=2, enable_l2_swimlane=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RunConfig(enable_chip_swimlane=1)  # no warning without the alias


def test_l2_alias_is_no_field_reads_silently_and_warns_when_assigned():
    cfg = RunConfig(enable_chip_swimlane=2)
    assert "enable_l2_swimlane" not in {f.name for f in dataclasses.fields(cfg)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cfg.enable_l2_swimlane == 2
        assert dataclasses.replace(cfg, enable_chip_swimlane=3).swimlane_level == 3
    with pytest.warns(DeprecationWarning, match="enable_l2_swimlane"):
        cfg.enable_l2_swimlane = True
    assert cfg.swimlane_level == 4


def test_upstreams_new_fields_have_upstreams_defaults():
    cfg = RunConfig()
    assert (cfg.device_id, cfg.enable_pmu, cfg.enable_dump_args, cfg.enable_scope_stats,
            cfg.dump_ptoas_passes, cfg.dump_passes, cfg.codegen_only) == (
        0, 0, 0, False, False, False, False)
    assert cfg.not_simulated == {} and not cfg.any_dfx and not cfg.save_kernels


@pytest.mark.parametrize("kw, error, match", [
    ({"device_id": -1}, ValueError, "device_id must be >= 0"),
    ({"device_id": "1"}, TypeError, "device_id must be an int"),
    ({"enable_pmu": -2}, ValueError, "enable_pmu must be >= 0"),
    ({"enable_pmu": 2.0}, TypeError, "enable_pmu must be an int"),
    ({"enable_dump_args": 3}, ValueError, r"enable_dump_args must be in \[0, 2\]"),
    ({"enable_dump_args": "full"}, TypeError, "enable_dump_args must be an int"),
    ({"enable_scope_stats": "yes"}, TypeError, "enable_scope_stats must be a bool"),
    ({"dump_ptoas_passes": 2}, TypeError, "dump_ptoas_passes must be a bool"),
    ({"codegen_only": None}, TypeError, "codegen_only must be a bool"),
    ({"enable_chip_swimlane": "4"}, TypeError, "enable_chip_swimlane must be an int"),
    ({"enable_chip_swimlane": 5}, ValueError, r"enable_chip_swimlane must be in \[0, 4\]"),
    ({"platform": 3}, TypeError, "platform must be a str"),
])
def test_a_bad_value_is_one_clear_error_of_upstreams_kind(kw, error, match):
    with pytest.raises(error, match=match) as info:
        RunConfig(**kw)
    assert isinstance(info.value, RuntimeConfigError)
    assert "\n" not in str(info.value)


def test_settings_the_simulator_cannot_honour_are_accepted_and_listed():
    cfg = RunConfig(enable_pmu=2, enable_dump_args=True, enable_scope_stats=True,
                    dump_ptoas_passes=True, device_id=3)
    assert cfg.enable_dump_args == 1 and cfg.device_id == 3
    assert cfg.not_simulated == {"enable_pmu": 2, "enable_dump_args": 1,
                                 "enable_scope_stats": True, "dump_ptoas_passes": True}
    assert cfg.any_dfx and cfg.save_kernels    # DFX keeps the kernels beside dfx_outputs/


def test_hardware_platform_is_refused_clearly():
    with pytest.raises(RuntimeConfigError, match="not available here"):
        RunConfig(platform="a2a3")
    with pytest.raises(RuntimeConfigError, match="unknown platform"):
        RunConfig(platform="tpu")
    assert RunConfig(platform="a5sim").clock_freq_hz == 1_000_000_000
    assert RunConfig().clock_freq_hz == 50_000_000


@pytest.mark.parametrize(
    "kw, msg",
    [
        ({"runtime": "ring"}, "unknown runtime"),
        ({"rtol": -1}, "rtol"),
        ({"num_aic_cores": 0, "num_aiv_cores": 0}, "at least one core"),
        ({"num_sched_threads": 0}, "num_sched_threads"),
    ],
)
def test_bad_config_values(kw, msg):
    with pytest.raises(RuntimeConfigError, match=msg):
        RunConfig(**kw)


def test_unknown_dtype_is_rejected_at_spec_creation():
    with pytest.raises(RuntimeConfigError, match="dtype"):
        TensorSpec("a", (4,), "float99")
    with pytest.raises(RuntimeConfigError, match="unsupported dtype"):
        TensorSpec("a", (4,), "complex64")


def _run_expecting_error(specs, tmp_path, match):
    called = []

    def golden(t, p):
        called.append(1)

    work = tmp_path / "w"
    with pytest.raises(RuntimeConfigError, match=match):
        run(dag_program(), specs, golden, RunConfig(work_dir=str(work), enable_chip_swimlane=4))
    assert not called, "golden ran before the spec error"
    assert not work.exists(), "work dir created before the spec error"


def test_shape_mismatch_with_signature(tmp_path):
    specs = dag_specs()
    specs[0] = dict(specs[0], shape=(32, 64))
    _run_expecting_error(specs, tmp_path, r"'a' has shape \(32, 64\).*\(64, 64\)")


def test_dtype_mismatch_with_signature(tmp_path):
    specs = dag_specs()
    specs[1] = dict(specs[1], dtype="float16")
    _run_expecting_error(specs, tmp_path, "'b' has dtype float16")


def test_missing_output_flag_and_missing_param(tmp_path):
    specs = [dict(s, is_output=False) for s in dag_specs()]
    _run_expecting_error(specs, tmp_path, "no output")
    _run_expecting_error(dag_specs()[1:], tmp_path, "no tensor spec for parameter 'a'")
    extra = dag_specs() + [{"name": "zz", "shape": (2,), "dtype": "float32"}]
    _run_expecting_error(extra, tmp_path, "'zz' is not a parameter")


def test_init_value_forms():
    assert (TensorSpec("a", (2, 3), "float32", init_value=1.5).create() == 1.5).all()
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    made = TensorSpec("a", (2, 3), "float32", init_value=arr).create()
    assert (made == arr).all() and made is not arr
    assert TensorSpec("a", (2, 3), "float32", init_value=np.random.rand).create().shape == (2, 3)
    assert (
        TensorSpec("a", (2, 3), "float32", init_value=lambda: arr * 2).create() == arr * 2
    ).all()
    assert (TensorSpec("o", (2, 3), "float32", init_value=7, is_output=True).create() == 0).all()
    with pytest.raises(RuntimeConfigError, match="shape"):
        TensorSpec("a", (2, 2), "float32", init_value=arr)
    with pytest.raises(RuntimeConfigError, match="returned shape"):
        TensorSpec("a", (2, 2), "float32", init_value=lambda: arr).create()


def test_golden_failure_and_mismatch_are_reported_not_raised(tmp_path):
    def bad_golden(t, p):
        raise KeyError("nope")

    r = run(
        dag_program(),
        dag_specs(),
        bad_golden,
        RunConfig(work_dir=str(tmp_path / "g"), compile_profiling=True),
    )
    assert not r.passed and "golden raised KeyError" in r.error
    assert r.profile is not None and (tmp_path / "g" / "report" / "pipeline_profile.json").exists()

    def wrong_golden(t, p):
        dag_golden(t, p)
        t["f"][3, 5] += 1.0

    r = run(dag_program(), dag_specs(), wrong_golden, RunConfig(work_dir=str(tmp_path / "m")))
    assert not r.passed
    assert "output 'f': 1 of 4096 elements differ" in r.error
    assert "index (3, 5)" in r.error and "47" in r.error


@pytest.mark.parametrize("replace, words", [
    (lambda t: t.__setitem__("f", np.zeros((3, 3), np.float32)), "got shape (3, 3)"),
    (lambda t: t.pop("f"), "removed by golden"),
    (lambda t: t.__setitem__("f", [[1.0]]), "got list"),
    (lambda t: t.__setitem__("f", np.full(t["f"].shape, "x", dtype=object)), "dtype object"),
], ids=["other_shape", "removed", "not_an_array", "object_dtype"])
def test_golden_that_breaks_an_output_fails_the_run_with_the_report_written(tmp_path, replace,
                                                                            words):
    def golden(t, p):
        dag_golden(t, p)
        replace(t)

    r = run(dag_program(), dag_specs(), golden,
            RunConfig(work_dir=str(tmp_path / "w"), compile_profiling=True))
    assert not r.passed and "golden output 'f'" in r.error and words in r.error, r.error
    assert (tmp_path / "w" / "report" / "pipeline_profile.json").exists()
    assert (tmp_path / "w" / "report" / "trace.json").exists()
